"""What the attacker got past the privacy check, and what it flagged that is no phone."""

import importlib.util
from pathlib import Path

import pytest
from mnemoscope.store.curation.privacy import check
from mnemoscope.store.curation.privacy_scan import scan_text

EVAL = Path(__file__).parent.parent / "perf" / "privacy_eval.py"
DATA = Path(__file__).parent.parent / "data"


def _evaluate(path):
    spec = importlib.util.spec_from_file_location("privacy_eval", EVAL)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.evaluate(path)


@pytest.mark.parametrize("text, secret", [
    ("aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"),
    ("password: correcthorsebatterystaple", "correcthorsebatterystaple"),
    ("The password is sunflower.", "sunflower"),
    ("DB_PASSWORD=Tr0ub4dor&3", "Tr0ub4dor&3"),
    ("host=db user=ops pwd=k8sadmin77", "k8sadmin77"),
    ("Authorization: Bearer 9f8e7d6c5b4a39281706f5e4d3c2b1a0", "9f8e7d6c5b4a39281706f5e4d3c2b1a0"),
    ("Authorization: Basic bWFyYTpzM2NyZXQ=", "bWFyYTpzM2NyZXQ="),
    ("Log in as admin with password Gr33nTea!", "Gr33nTea!"),
    ("wifi pw: blueberrymuffin", "blueberrymuffin"),
    ("Das WLAN-Passwort lautet Sonnenblume99.", "Sonnenblume99"),
])
def test_each_shape_the_attacker_used_is_a_credential_covering_the_secret(text, secret):
    start = text.index(secret)
    found = [d for d in scan_text(text) if d.category == "credential"]
    assert any(d.start <= start and d.end >= start + len(secret) for d in found), found


@pytest.mark.parametrize("text", [
    "We sold the flat for 1 234 567 890 euros.",
    "The museum had 030 901820 visitors last year.",
    "Der Umsatz lag bei 1 234 567 890 Euro.",
    "The budget is $1 234 567 890.",
])
def test_amounts_and_counts_are_not_phone_numbers(text):
    assert scan_text(text) == []


def test_a_social_security_number_is_a_national_id_that_needs_high_not_a_phone(store):
    [d] = scan_text("Mara's SSN is 078-05-1120.")
    assert (d.category, d.what, d.needed) == ("national_id", "US social security number", "high")
    store.remember("Mara's SSN is 078-05-1120.", sensitivity="medium")
    store.remember("DB_PASSWORD=Tr0ub4dor&3 in staging", sensitivity="high")
    found = sorted((f.category, f.needed, f.preview) for f in check(store))
    assert found == [("credential", "hyper", "Tr…"), ("national_id", "high", "07…")]


@pytest.mark.parametrize("name", ["privacy_eval.jsonl", "privacy_holdout.jsonl"])
def test_precision_and_recall_at_least_095_on_the_labelled_and_the_held_out_set(name):
    r = _evaluate(DATA / name)
    assert {"en", "de", "fr", "es", "zh"} <= set(r["languages"])
    assert r["precision"] >= 0.95 and r["recall"] >= 0.95, (r["misses"], r["false_alarms"])


@pytest.mark.parametrize("text", [
    "Boarding pass: gate 12, seat 23A.",
    "pin: north wall, next to the map",
    "The PIN is blue on the new cards.",
    "max_tokens = 4096",
    "compass=north",
    "The password is stored in the vault; ask Mara.",
    "Set DB_PASSWORD=${DB_PASSWORD} from the environment.",
    "Use Authorization: Bearer <token> from the vault.",
    "Log in with password authentication disabled.",
])
def test_what_only_looks_like_the_new_shapes_is_not_flagged(text):
    assert scan_text(text) == []
