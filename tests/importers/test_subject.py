"""#35.4: an imported observation says whom it is about in the prompt an agent gets
("Mara Lindqvist: Is allergic to peanuts"), without changing the stored text; a memory
that already names its entity is sent as it is. Through the real doors, both engines."""

from __future__ import annotations

import json
import os

from mnemoscope.bridge import with_subject
from mnemoscope.cli import main
from mnemoscope.store import MemoryStore

MCP_FILE = os.path.join(os.path.dirname(os.path.dirname(__file__)), "data", "mcp_memory", "memory.jsonl")


def test_the_rule():
    assert with_subject("Speaks Portuguese and English", ["Zoë Müller"]) == "Zoë Müller: Speaks Portuguese and English"
    assert with_subject("Zoë speaks Portuguese", ["Zoë Müller"]) == "Zoë speaks Portuguese"  # a word of the name
    assert with_subject("ZOË MÜLLER speaks", ["Zoë Müller"]) == "ZOË MÜLLER speaks"
    assert with_subject("Uses TCP/IP everywhere", ["TCP/IP"]) == "Uses TCP/IP everywhere"
    assert with_subject("Ships on Fridays", []) == "Ships on Fridays"


def test_a_prompt_says_whom_an_imported_observation_is_about(store_target, capsys):
    with MemoryStore(store_target) as store:
        from mnemoscope.store.importers import import_file

        import_file(store, MCP_FILE)
        store.remember("Mara Lindqvist drinks oat-milk lattes on Mondays", entities=["Mara Lindqvist"])
        stored = {m.text for m in store.list()}
    assert "Is allergic to peanuts" in stored  # the source's words, as it said them
    assert main(["--db", store_target, "preview", "--user-message", "What is Mara allergic to?",
                 "--format", "json"]) == 0
    prompt = json.dumps(json.loads(capsys.readouterr().out), ensure_ascii=False)
    assert "Mara Lindqvist: Is allergic to peanuts" in prompt
    assert "Mara Lindqvist: Mara Lindqvist drinks" not in prompt
    with MemoryStore(store_target) as store:
        assert "Is allergic to peanuts" in {m.text for m in store.list()}


def test_the_mcp_compile_prompt_says_it_too(store_target):
    from mnemoscope.serve.operations import Operations
    from mnemoscope.store.importers import import_file

    with MemoryStore(store_target) as store:
        import_file(store, MCP_FILE)
        ops = Operations(store, scopes=("global",), trust="low")
        answer = ops.compile_prompt(user_message="What is Mara allergic to?", max_tokens=2048)
    assert "Mara Lindqvist: Is allergic to peanuts" in json.dumps(answer, ensure_ascii=False)
