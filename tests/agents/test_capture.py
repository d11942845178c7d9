"""capture() as the capture reference describes it."""

import json

import pytest
from mnemoscope.cli import main
from mnemoscope.store import MemoryStore, ValidationError
from mnemoscope.store.agents.capture import parse_capture_request


def test_proposed_type_is_an_alias_of_the_kind(store):
    assert store.capture("use retries with jitter", proposed_type="competence").primary.kind == "skill"
    assert store.capture("we met on Monday", proposed_type="episodic").primary.kind == "event"
    assert store.capture("Go is the team's language", proposed_type="semantic").primary.kind == "fact"
    with pytest.raises(ValidationError, match="proposed_type"):
        store.capture("x y z", proposed_type="dream")
    with pytest.raises(ValidationError, match="proposed_type"):
        store.capture("x y z", proposed_type="semantic", proposed_kind="event")


def test_context_and_reason_are_kept_on_the_record_and_exported(store, tmp_path):
    context = {"thread_id": "session-001", "agent": "build-agent"}
    result = store.capture({"tool": "go test", "args": ["./..."], "result": "auth package passed"},
                           source="build-agent", source_kind="tool_output", context=context,
                           reason_to_remember="Keep successful test context for future auth work",
                           summary="Auth package tests passed", tags=["auth", "tests"], scope="project-auth")
    memory = store.get(result.primary.id)
    assert memory.context == context and memory.reason_to_remember.startswith("Keep successful")
    assert memory.scope == "project-auth"
    record = json.loads(store.export_jsonl().splitlines()[0])  # (then the entity lines)
    assert record["context"] == context and record["reason_to_remember"].startswith("Keep successful")
    with MemoryStore(str(tmp_path / "copy.db")) as copy:
        copy.import_jsonl(store.export_jsonl())
        again = copy.get(result.primary.id)
        assert again.context == context and again.reason_to_remember == memory.reason_to_remember
        assert copy.export_jsonl() == store.export_jsonl()


def nested(levels):
    value = []
    for _ in range(levels - 1):
        value = [value]
    return value


def test_a_context_is_kept_only_as_deep_as_an_export_imports_again(store, tmp_path):
    kept = store.capture("Mara deployed on Friday.", context=nested(99)).primary
    with MemoryStore(str(tmp_path / "copy.db")) as copy:
        copy.import_jsonl(store.export_jsonl())
        assert copy.get(kept.id).context == nested(99)
    before = store.export_jsonl()
    with pytest.raises(ValidationError, match="context: nested deeper than 100 levels"):
        store.capture("Mara deployed again on Monday.", context=nested(100))
    assert store.export_jsonl() == before


def test_entity_payloads_create_entities_with_aliases(store):
    payload = {"kind": "entity", "canonical_name": "auth middleware", "primary_type": "Service",
               "types": ["Service", "Concept"], "aliases": [{"value": "auth layer", "kind": "nickname"}],
               "summary": "Authentication middleware used by the API service"}
    result = store.capture({"text": "The auth middleware now retries", "entities": [payload, "Mara"]})
    names = {e.name: e for e in result.created_entities}
    assert set(names) == {"auth middleware", "Mara"}
    assert names["auth middleware"].aliases == ["auth layer"] and names["auth middleware"].kind == "tool"
    later = store.remember("The auth layer logs every refusal", dedupe=False)
    assert "auth middleware" in later.memory.entities  # found again by its alias
    entity = store.capture(payload, proposed_type="entity")
    assert entity.primary.text == "Authentication middleware used by the API service"
    assert entity.primary.entities == ["auth middleware"] and not entity.created_entities


@pytest.mark.parametrize("request_, field", [
    ({"content": "x", "sensitivty": "hyper"}, "sensitivty"),
    ({"content": "x", "scopes": ["a"]}, "scopes"),
    ({"text": "no content key"}, "content"),
])
def test_unknown_request_keys_are_refused(request_, field):
    with pytest.raises(ValidationError) as exc:
        parse_capture_request(request_)
    assert exc.value.field == field
    if field == "sensitivty":
        assert "sensitivity" in str(exc.value)  # a likely meaning is suggested


def test_unknown_keyword_arguments_are_a_validation_error(store):
    with pytest.raises(ValidationError, match="sensitivty"):
        store.capture("x", sensitivty="hyper")


def test_the_command_line_refuses_a_misspelt_key(tmp_path, capsys):
    db = str(tmp_path / "x.db")
    assert main(["--db", db, "init"]) == 0
    request = tmp_path / "req.json"
    request.write_text(json.dumps({"content": "Ana's diagnosis", "sensitivty": "hyper"}))
    assert main(["--db", db, "capture", str(request)]) == 1
    err = capsys.readouterr().err
    assert "sensitivty" in err and "Traceback" not in err
    assert main(["--db", db, "stats", "--json"]) == 0 and json.loads(capsys.readouterr().out)["memories"] == 0
    request.write_text(json.dumps({"content": {"tool": "go test", "result": "ok"}, "proposed_type": "episodic",
                                   "context": {"thread_id": "t1"}, "reason_to_remember": "auth work",
                                   "scope": "project-auth"}))
    assert main(["--db", db, "capture", str(request), "--json"]) == 0
    mid = json.loads(capsys.readouterr().out)["id"]
    with MemoryStore(db) as store:
        memory = store.get(mid)
        assert memory.context == {"thread_id": "t1"} and memory.scope == "project-auth"


def test_a_trust_context_may_name_several_scopes(store):
    store.remember("auth retries three times", scope="project-auth")
    store.remember("billing retries twice", scope="project-billing")
    store.remember("retries use jitter", scope="global")
    store.remember("secret retries plan", scope="project-secret")
    hits = store.recall("retries", k=10, scope=["project-auth", "project-billing"])
    assert {h.scope for h in hits} == {"project-auth", "project-billing", "global"}
    brief = store.brief(scope=["project-auth"])
    assert "auth retries" in brief and "jitter" in brief and "billing" not in brief
    with pytest.raises(ValidationError, match="scope"):
        store.recall("retries", scope=[])
