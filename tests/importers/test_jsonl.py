"""JSONL import and export keep every memory whole: any text, all or nothing, refused at the door."""

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mnemoscope.store import ImportRefused, MemoryStore, ValidationError

SEPARATORS = "\u2028\u2029\u0085\r\x0b\x0c\x1c\x1d\x1e"


@pytest.mark.parametrize("sep", list(SEPARATORS))
def test_a_line_separator_inside_text_survives_export_and_import(store, tmp_path, sep):
    store.remember(f"a{sep}b", memory_id="m1")
    data = store.export_jsonl()
    assert data.count("\n") == 1 and sep not in data  # escaped, so one memory is one line
    path = tmp_path / "out.jsonl"
    path.write_text(data, encoding="utf-8")
    with MemoryStore(str(tmp_path / "copy.db")) as copy:
        report = copy.import_jsonl(str(path))
        assert report.imported == 1 and not report.errors
        assert copy.get("m1").text == f"a{sep}b"
        assert copy.export_jsonl() == data


# Any text a person could type: every plane, no lone surrogates, no NUL (refused on entry).
_TEXT = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), min_size=1, max_size=60)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=_TEXT.filter(lambda t: t.strip()))
def test_any_text_round_trips_byte_identically(text):
    with MemoryStore() as a, MemoryStore() as b:
        a.remember(text, memory_id="m1", now=1_700_000_000)
        data = a.export_jsonl()
        report = b.import_jsonl(data, now=1_700_000_000)
        assert report.imported == 1 and not report.errors
        assert b.get("m1").text == a.get("m1").text
        assert b.export_jsonl().encode("utf-8") == data.encode("utf-8")


def test_import_splits_lines_on_newline_only(store):
    raw = json.dumps({"id": "x", "text": "one\u2028two"}, ensure_ascii=False)  # a raw U+2028 in the line
    assert "\u2028" in raw
    report = store.import_jsonl(raw + "\r\n" + json.dumps({"id": "y", "text": "three"}) + "\r\n")
    assert report.imported == 2 and store.get("x").text == "one\u2028two"


BAD_LINES = [
    json.dumps({"id": "a", "text": "A good memory.", "kind": "fact"}),
    "{broken",
    json.dumps({"id": "b", "text": "x", "kind": "gossip"}),
    json.dumps({"id": "c", "text": "y", "importance": 7}),
    json.dumps({"id": "", "text": "an empty id"}),  # a line without an id gets one; an empty id is refused
    json.dumps({"id": "a", "text": "dup"}),
    json.dumps(["not", "object"]),
    json.dumps({"id": "d", "text": "nul\u0000byte"}),
    json.dumps({"id": "e", "text": "good too"}),
]


def test_a_file_with_a_bad_line_imports_nothing_and_lists_every_bad_line(store, tmp_path):
    path = tmp_path / "in.jsonl"
    path.write_text("\n".join(BAD_LINES) + "\n", encoding="utf-8")
    with pytest.raises(ImportRefused) as exc:
        store.import_jsonl(str(path))
    assert store.count() == 0 and store.entities() == []
    bad = dict(exc.value.errors)
    assert set(bad) == {2, 3, 4, 5, 6, 7, 8}
    assert "JSON" in bad[2] and "kind" in bad[3] and "importance" in bad[4] and "id" in bad[5]
    assert "line 1" in bad[6] and "NUL" in bad[8]
    message = str(exc.value)
    assert "nothing was imported" in message and "7 bad line" in message
    for number in bad:
        assert f"line {number}:" in message


def test_partial_import_takes_the_good_lines_and_reports_the_bad(store):
    report = store.import_jsonl("\n".join(BAD_LINES), partial=True)
    assert report.imported == 2 and {m.id for m in store.list()} == {"a", "e"}
    assert {n for n, _ in report.errors} == {2, 3, 4, 5, 6, 7, 8}


def test_a_utf8_byte_order_mark_is_accepted(store, tmp_path):
    path = tmp_path / "bom.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps({"id": "a", "text": "hello"}).encode() + b"\n")
    assert store.import_jsonl(str(path)).imported == 1
    assert store.import_jsonl("\ufeff" + json.dumps({"id": "b", "text": "again"})).imported == 1


@pytest.mark.parametrize("record, field", [
    ({"id": "a", "text": "lone \ud800 surrogate"}, "text"),
    ({"id": "a", "text": "fine", "who": "\udfff"}, "who"),
    ({"id": "a", "text": "fine", "tags": ["ok", "\ud83d"]}, "tags"),
    ({"id": "a\udc00", "text": "fine"}, "id"),
    ({"id": "a", "text": "fine", "entities": [{"name": "Ana", "aliases": ["\ud800"]}]}, "entities.aliases"),
    ({"id": "a", "text": "fine", "created_at": 1e15}, "created_at"),
    ({"id": "a", "text": "fine", "created_at": -5}, "created_at"),
    ({"id": "a", "text": "fine", "updated_at": "0100-01-01T00:00:00Z"}, "updated_at"),
    ({"id": "a", "text": "fine", "last_recalled_at": 253402300800}, "last_recalled_at"),
    ({"id": "a", "text": "fine", "recall_events": ["1969-12-31T23:59:59Z"]}, "recall_events"),
])
def test_values_that_would_poison_later_work_are_refused_with_line_and_field(store, record, field):
    line = json.dumps(record)  # json escapes a lone surrogate as \udXXX; loading it gives it back
    with pytest.raises(ImportRefused) as exc:
        store.import_jsonl(line)
    (number, reason), = exc.value.errors
    assert number == 1 and reason.startswith(field + ":"), reason
    assert store.count() == 0
    assert store.export_jsonl() == ""


@pytest.mark.parametrize("kwargs, field", [
    ({"text": "lone \ud800"}, "text"),
    ({"text": "fine", "topic": "\udc00"}, "topic"),
    ({"text": "fine", "now": 1e15}, "now"),
    ({"text": "fine", "now": "1900-01-01T00:00:00Z"}, "now"),
    ({"text": "fine", "memory_id": "\ud800"}, "id"),
    ({"text": "fine", "entities": ["\ud800"]}, "entities"),
])
def test_remember_refuses_the_same_values(store, kwargs, field):
    kwargs = dict(kwargs)  # the parameters are shared by the SQLite and PostgreSQL runs
    text = kwargs.pop("text")
    with pytest.raises(ValidationError) as exc:
        store.remember(text, **kwargs)
    assert exc.value.field == field
    assert store.count() == 0


def test_capture_refuses_a_lone_surrogate_with_the_field(store):
    with pytest.raises(ValidationError) as exc:
        store.capture({"text": "bad \ud800 text"})
    assert exc.value.field == "text"
    with pytest.raises(ValidationError) as exc:
        store.capture("x", summary="fine", reason_to_remember="\udc00")
    assert exc.value.field == "reason_to_remember"
    assert store.count() == 0


def test_a_database_with_a_time_written_by_an_older_version_can_still_be_backed_up(store):
    store.remember("an old import", memory_id="old")
    store.conn.execute("UPDATE memories SET created_at = 1e15 WHERE id = 'old'")  # as the old import let in
    data = store.export_jsonl()
    assert json.loads(data)["created_at"] == 1e15
    with pytest.raises(ImportRefused) as exc:
        MemoryStore().import_jsonl(data)
    assert exc.value.errors[0][1].startswith("created_at:")


def test_a_merge_keeps_the_larger_recall_count_and_the_later_reinforcement(store):
    """A merged record that was recalled more elsewhere brings its recalls (store/importers/jsonl.py
    ``_merge``); on PostgreSQL this once failed: SQLite's two-argument max() is not there."""
    store.remember("Mara likes green tea.", memory_id="m1", now="2026-01-01T00:00:00Z")
    rec = json.loads(store.export_jsonl())
    rec.update(recall_count=5, ref_time="2026-02-01T00:00:00.000Z")
    report = store.import_jsonl(json.dumps(rec), policy="merge")
    assert report.merged == 1 and not report.errors
    merged = store.get("m1")
    assert merged.recall_count == 5 and merged.ref_time == 1769904000.0  # 2026-02-01
