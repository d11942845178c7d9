"""An outsider's attack on the agents' doors (issue 32): names that reorder or break lines,
non-object JSON-RPC messages, Host names in capitals, keys given twice. Each test failed
before its fix. The HTTP tests run the real ASGI app in process (starlette's TestClient)."""


import pytest
from mnemoscope.serve.http_api import build_app
from mnemoscope.serve.operations import Operations
from mnemoscope.store import ValidationError
from mnemoscope.store.model.memory import NAME_FORBIDDEN, check_name

# Each shows a name in another order than it is spelt, or breaks a line where
# str.splitlines (and so a listing or a log) breaks one.
HOSTILE_NAMES = ["invoice\u202efdp.exe", "a\u0085b", "x\u2028y", "p\u2029q", "tab\there", "new\nline",
                 "rl\u200fm", "iso\u2066late\u2069", "bell\x07", "del\x7f"]


@pytest.fixture
def api(store):
    from starlette.testclient import TestClient

    with TestClient(build_app(Operations(store, door="http")), base_url="http://127.0.0.1:8765") as client:
        yield client


@pytest.mark.parametrize("name", HOSTILE_NAMES)
def test_one_name_rule_refuses_what_reorders_or_breaks_a_line(name):
    with pytest.raises(ValidationError, match=r"U\+[0-9A-F]{4}"):
        check_name(name, "who")


@pytest.mark.parametrize("name", ["TCP/IP", "CI/CD", "A/B test", "C:\\work", "..", "Zoë Müller", "東京", "👩‍💻 dev"])
def test_every_printable_name_is_kept(name):
    assert check_name(f"  {name} ", "entities") == name


@pytest.mark.parametrize("field", ["who", "topic", "tags", "entities"])
def test_no_door_stores_a_hostile_name(store, api, field):
    ops = Operations(store)
    for name in HOSTILE_NAMES[:4]:
        value = [name] if field in ("tags", "entities") else name
        with pytest.raises(ValidationError, match="U\\+"):
            ops.remember(text=f"A memory with a hostile {field}.", **{field: value})
        answer = api.post("/remember", json={"text": f"A memory with a hostile {field}.", field: value})
        assert answer.status_code == 422 and "U+" in answer.json()["error"], answer.text
    assert store.stats()["memories"] == 0


def test_capture_refuses_a_hostile_entity_or_alias(store):
    ops = Operations(store)
    with pytest.raises(ValidationError, match="U\\+202E"):
        ops.capture(content={"subject": "Ana\u202egpj.exe", "predicate": "likes", "object": "tea"},
                    source_kind="observation")
    with pytest.raises(ValidationError, match="U\\+2028"):
        ops.capture(content={"entities": [{"canonical_name": "Ana", "aliases": ["An\u2028a"]}], "text": "Ana."})
    assert store.stats()["memories"] == 0


def test_mirror_file_names_are_safe_whatever_is_stored(store, tmp_path):
    from mnemoscope.store.files.mirror import write_mirror

    store.remember("Mara keeps the invoices.", topic="invoices", entities=["Mara"])
    # Stored before the rule, or by a program of its own: the mirror still writes no such name.
    store.remember("Another note.", topic="plain")
    with store.tables.write() as conn:
        conn.execute("UPDATE entities SET name = ?", ("invoice\u202efdp.exe",))
        conn.execute("UPDATE memories SET topic = ? WHERE topic = ?", ("x\u2028y\u0085z\u202e", "plain"))
    write_mirror(store, tmp_path / "vault")
    names = [p.name for p in (tmp_path / "vault").rglob("*")]
    assert names and not [n for n in names if NAME_FORBIDDEN.search(n)], names


def test_a_key_given_twice_is_refused_by_the_import_the_preview_and_http(store, api, tmp_path):
    """``"sensitivity": "hyper", "sensitivity": "public"`` was stored public (the last wins)."""
    from mnemoscope.store.importers.jsonl import ImportRefused
    from mnemoscope.store.importers.jsonl_preview import preview_jsonl

    path = tmp_path / "twice.jsonl"
    path.write_text('{"text": "fine"}\n'
                    '{"text": "The VPN password is hunter2.", "sensitivity": "hyper", "sensitivity": "public"}\n'
                    '{"text": "nested", "context": {"a": 1, "a": 2}}\n', encoding="utf-8")
    with pytest.raises(ImportRefused) as previewed:
        preview_jsonl(store, path)
    with pytest.raises(ImportRefused) as imported:
        store.import_jsonl(str(path))
    assert previewed.value.errors == imported.value.errors
    assert [(line, "'sensitivity' twice" in why or "'a' twice" in why) for line, why in imported.value.errors] == [
        (2, True), (3, True)]
    answer = api.post("/remember", content=b'{"text": "tea", "sensitivity": "hyper", "sensitivity": "public"}',
                      headers={"Content-Type": "application/json"})
    assert answer.status_code == 400 and "'sensitivity' twice" in answer.json()["error"], answer.text
    assert store.stats()["memories"] == 0


@pytest.mark.parametrize("host", ["LOCALHOST:8765", "LocalHost", "127.0.0.1:8765"])
def test_a_loopback_host_in_any_case_is_served(store, api, host):
    answer = api.post("/recall", json={"query": "tea"}, headers={"Host": host, "Origin": f"http://{host}"})
    assert answer.status_code == 200, answer.text
    assert api.post("/recall", json={"query": "tea"}, headers={"Host": "LOCALHOST.evil.example"}).status_code == 403


@pytest.mark.parametrize("length", [2047, 3000, 3900])
def test_a_very_long_word_is_remembered_and_recalled_on_both_engines(store, api, length):
    """A word over 2,047 characters was refused on PostgreSQL ("word is too long in
    tsquery", from the duplicate check) though SQLite stored it and a JSONL import into
    the same PostgreSQL took it."""
    word = "x" * (length - 4) + "tail"
    first = store.remember(f"The key is {word} and nothing else.").memory
    again = store.remember(f"The key is {word} and nothing else.").memory
    assert again.id == first.id  # the duplicate check still finds it
    assert [h.id for h in store.recall(word)] == [first.id]
    answer = api.post("/remember", json={"text": f"Another {word}é memory."})
    assert answer.status_code == 200, answer.text
    assert [h.id for h in store.recall("key " + word)][:1] == [first.id]
