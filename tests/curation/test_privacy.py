import importlib.util
from pathlib import Path

import pytest
from mnemoscope.store import StoreError
from mnemoscope.store.curation.privacy import check, raise_sensitivity, redact
from mnemoscope.store.curation.privacy_scan import scan_text
from support.helpers import PLANTED, plant_write, unwritten_unless

AWS = "AKIAQ3EGRV7XKJ4PLM2N"
EVAL = Path(__file__).parent.parent / "perf" / "privacy_eval.py"


def _evaluate():
    spec = importlib.util.spec_from_file_location("privacy_eval", EVAL)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.evaluate()


def test_labelled_set_precision_recall_and_no_provider_credential_missed():
    r = _evaluate()
    assert r["texts"] >= 50 and len(r["languages"]) >= 5
    assert r["provider_misses"] == []
    assert r["per_category"]["credential"]["fn"] == 0
    assert r["precision"] >= 0.9 and r["recall"] >= 0.9


def test_a_key_in_a_low_memory_is_one_finding_that_never_shows_the_key(store):
    mid = store.remember(f"Deploy creds: {AWS} for staging; call +44 20 7946 0958.", sensitivity="low").memory.id
    store.remember("Mara likes oolong tea.")
    findings = check(store)
    assert [(f.memory_id, f.category, f.needed) for f in findings] == [
        (mid, "credential", "hyper"), (mid, "phone", "medium")]
    key = findings[0]
    text = store.get(mid).text
    assert text[key.start:key.end] == AWS
    line = key.line()
    assert line.startswith(f"{mid}\tAWS Access Key\tchars 14-34\tAKIA…") and AWS not in line
    assert "sensitivity low, needs hyper" in line
    assert "7946 0958" not in findings[1].line()


def test_a_memory_marked_sensitive_enough_is_not_a_finding(store):
    store.remember(f"Deploy creds: {AWS}", sensitivity="hyper")
    store.remember("Mara's e-mail is mara@example.com", sensitivity="medium")
    assert check(store) == []
    assert {f.category for f in check(store, all_findings=True)} == {"credential", "email"}


@pytest.mark.parametrize(**PLANTED)
def test_check_writes_nothing(store, db_path, planted):
    store.remember(f"token {AWS}")
    with unwritten_unless(planted, db_path):
        assert len(check(store)) == 1
        if planted:
            plant_write(store)


def test_redact_and_raise_sensitivity_are_undoable(store):
    mid = store.remember(f"Deploy creds: {AWS} for staging.", sensitivity="low").memory.id
    [finding] = check(store)
    result = redact(store, finding)
    assert result.after.text == "Deploy creds: [redacted AWS Access Key] for staging."
    assert check(store) == [] and AWS not in store.export_jsonl()
    store.restore_state(result.before)
    assert store.get(mid).text == f"Deploy creds: {AWS} for staging."
    raised = raise_sensitivity(store, finding)
    assert raised.after.sensitivity == "hyper" and check(store) == []
    store.restore_state(raised.before)
    assert store.get(mid).sensitivity == "low"


def test_a_finding_from_before_an_edit_is_refused(store):
    mid = store.remember(f"key {AWS} here").memory.id
    [finding] = check(store)
    store.update(mid, text=f"the key {AWS} is here")
    with pytest.raises(StoreError, match="changed since the privacy check"):
        redact(store, finding)
    assert store.get(mid).text == f"the key {AWS} is here"


def test_demo_memories_hold_nothing_sensitive(demo_store):
    assert check(demo_store, all_findings=True) == []


@pytest.mark.parametrize("text", [
    "Lighthouse release 2.3.1 shipped on 2026-11-19 at 09:30.",
    "The router password is stored in 1Password.",
    "Use the API key from OPENAI_API_KEY, never hard-code it.",
])
def test_ordinary_text_is_not_flagged(text):
    assert scan_text(text) == []


def test_works_without_requests_as_in_the_desktop_bundle():
    # The bundle leaves requests out (packaging/mnemoscope.spec) and its runtime hook puts a
    # stand-in in its place; detect-secrets imports it.
    import subprocess
    import sys

    hook = Path(__file__).parents[2] / "packaging" / "rthook_offline_requests.py"
    code = ("import runpy, sys; sys.modules['requests'] = None\n"
            f"runpy.run_path({str(hook)!r})\n"
            "from mnemoscope.store.curation.privacy import scan_text\n"
            f"print([d.what for d in scan_text('key {AWS} and ghp_' + 'a' * 36)])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                         cwd=Path(__file__).parents[2])
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "['AWS Access Key', 'GitHub Token']"
