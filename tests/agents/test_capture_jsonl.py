import json

import pytest
from mnemoscope.store import MemoryStore, ValidationError
from mnemoscope.store.files.demo import rebased_demo


def test_capture_observation_becomes_a_fact_with_entities(store):
    store.add_entity("Go", kind="topic")
    result = store.capture({"subject": "user", "predicate": "prefers_language", "object": "go"},
                           source="build-agent", source_kind="observation", tags=["lang"],
                           scope="group:auth", sensitivity="low")
    assert result.primary.kind == "fact" and result.primary.text == "user prefers language go"
    assert result.primary.scope == "group:auth" and result.primary.source_kind == "observation"
    assert [e.name for e in result.created_entities] == ["user"]  # "go" resolved to the known entity Go
    assert set(result.primary.entities) == {"user", "Go"}
    kinds = {e[1] for e in result.edges}
    assert kinds == {"mentions_entity", "mentioned_in"} and len(result.edges) == 4


def test_capture_tool_output_and_working_state(store):
    out = store.capture({"tool_name": "go test", "args": {"packages": ["./pkg/..."]},
                         "result": {"exit_code": 0, "stdout": "ok ./pkg/auth"}}, source_kind="tool_output",
                        summary="Auth package tests passed", reason_to_remember="future auth work")
    assert out.primary.kind == "event" and out.primary.text == "Auth package tests passed"
    assert "go test" in out.primary.entities and out.primary.importance == 0.7
    ws = store.capture({"thread_id": "s1", "state": "executing", "context_summary": "Refactoring auth"},
                       source_kind="working_state")
    assert ws.primary.kind == "event" and "working" in ws.primary.tags and ws.primary.half_life_days == 1.0
    assert store.project(store.now() + 2 * 86400)[ws.primary.id][0] < 0.3


@pytest.mark.parametrize("content, kwargs, field", [
    ({1, 2}, {}, "content"),
    (float("nan"), {}, "content"),
    ({}, {}, "content"),
    ({"x": 1}, {"source_kind": "dream"}, "source_kind"),
    ({"x": 1}, {"scope": "no where"}, "scope"),
    ({"x": 1}, {"sensitivity": "ultra"}, "sensitivity"),
    ({"x": 1}, {"timestamp": "yesterday"}, "timestamp"),
])
def test_capture_bad_input_writes_nothing(store, content, kwargs, field):
    with pytest.raises(ValidationError) as exc:
        store.capture(content, **kwargs)
    assert exc.value.field == field
    assert store.count() == 0 and store.entities() == []


def test_export_import_export_is_byte_identical(demo_store, tmp_path):
    first = demo_store.export_jsonl()
    path = tmp_path / "export.jsonl"
    path.write_text(first, encoding="utf-8")
    with MemoryStore(str(tmp_path / "copy.db")) as copy:
        report = copy.import_jsonl(str(path))
        assert report.imported == 65 and not report.errors
        assert copy.export_jsonl() == first


def test_export_with_a_filter(demo_store):
    lines = demo_store.export_jsonl(kind="skill").splitlines()
    assert lines and all(json.loads(line)["kind"] == "skill" for line in lines)


def test_import_conflict_policies(store):
    store.import_jsonl(json.dumps({"id": "a", "text": "Old text.", "tags": ["x"], "entities": ["Mara"],
                                   "updated_at": "2026-01-01T00:00:00Z", "created_at": "2026-01-01T00:00:00Z"}))
    newer = json.dumps({"id": "a", "text": "New text.", "tags": ["y"], "entities": ["Theo"],
                        "created_at": "2026-01-01T00:00:00Z", "updated_at": "2026-06-01T00:00:00Z"})
    assert store.import_jsonl(newer, policy="skip").skipped == 1 and store.get("a").text == "Old text."
    assert store.import_jsonl(newer, policy="merge").merged == 1
    merged = store.get("a")
    assert merged.text == "New text." and merged.tags == ["x", "y"] and set(merged.entities) == {"Mara", "Theo"}
    assert store.import_jsonl(newer, policy="overwrite").overwritten == 1
    assert store.get("a").tags == ["y"] and store.get("a").entities == ["Theo"]
    with pytest.raises(ValidationError, match="policy"):
        store.import_jsonl(newer, policy="replace")


def test_demo_is_rich_enough(demo_store):
    records = [json.loads(line) for line in rebased_demo(demo_store.now())]
    assert len(records) >= 60
    assert {r["kind"] for r in records} == {"fact", "lesson", "skill", "reflection", "event"}
    assert len({r["scope"] for r in records} - {"global"}) >= 2
    assert sum(r["sensitivity"] in ("high", "hyper") for r in records) >= 3
    assert any(any("\u4e00" <= ch <= "\u9fff" for ch in r["text"]) for r in records)
    assert len(demo_store.entities()) >= 10
    kinds = {e.kind for e in demo_store.entities()}
    assert {"person", "group", "topic", "tool"} <= kinds


def test_capture_refuses_content_over_the_limit_instead_of_cutting_it(store):
    big = {"tool_name": "dump", "result": "x" * 10_000_000}
    with pytest.raises(ValidationError) as exc:
        store.capture(big, source_kind="tool_output")
    assert exc.value.field == "content" and "4000" in str(exc.value) and "summary" in str(exc.value)
    assert store.count() == 0
    kept = store.capture(big, source_kind="tool_output", summary="dump printed ten million x")
    assert kept.primary.text == "dump printed ten million x"
