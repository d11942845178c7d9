"""The agents' doors state the store's own limits: every bound in the MCP tools' input
schemas (which the HTTP API checks too) is the one store/model/memory.py enforces, so a value
the store takes is never refused at the door and one it refuses never gets past it."""

import anyio
import pytest
from mnemoscope.serve.mcp_server import build_server
from mnemoscope.serve.operations import Operations
from mnemoscope.store import MemoryStore
from mnemoscope.store.agents.conversations import MAX_CONVERSATION_ID_CHARS
from mnemoscope.store.model.config import Limits
from mnemoscope.store.model.errors import ValidationError
from mnemoscope.store.model.memory import (
    MAX_ID_CHARS,
    MAX_NAME_CHARS,
    MAX_REASON_CHARS,
    MAX_SCOPE_CHARS,
    MAX_TAG_CHARS,
)
from pydantic import ValidationError as PydanticValidationError
from pydantic import validate_call

LIMITS = Limits()
# argument → (the string's maxLength, the list's maxItems or None)
BOUNDS = {
    "text": (LIMITS.max_text_chars, None),
    "summary": (LIMITS.max_text_chars, None),
    "memory_id": (MAX_ID_CHARS, None),
    "scope": (MAX_SCOPE_CHARS, None),
    "who": (MAX_NAME_CHARS, None),
    "topic": (MAX_NAME_CHARS, None),
    "source": (MAX_NAME_CHARS, None),
    "entities": (MAX_NAME_CHARS, None),
    "tags": (MAX_TAG_CHARS, LIMITS.max_tags),
    "reason_to_remember": (MAX_REASON_CHARS, None),
    "conversation_id": (MAX_CONVERSATION_ID_CHARS, None),
}


def _branch(schema):
    """The schema of the value, not of its ``null`` alternative."""
    for option in schema.get("anyOf", [schema]):
        if option.get("type") != "null":
            return option
    raise AssertionError(schema)


@pytest.fixture()
def ops():
    store = MemoryStore()
    yield Operations(store)
    store.close()


def test_every_bounded_argument_of_every_tool_states_the_stores_limit(ops):
    tools = anyio.run(build_server(ops).list_tools)
    seen = set()
    for tool in tools:
        for name, schema in tool.input_schema["properties"].items():
            if name not in BOUNDS:
                continue
            seen.add(name)
            length, items = BOUNDS[name]
            value = _branch(schema)
            if value.get("type") == "array":
                assert value["items"]["maxLength"] == length, (tool.name, name)
                if items is not None:
                    assert value["maxItems"] == items, (tool.name, name)
            else:
                assert value["maxLength"] == length, (tool.name, name)
    assert seen == set(BOUNDS)  # every limit is met somewhere, so none of them is checked against nothing


@pytest.mark.parametrize(("field", "limit"), [("tags", MAX_TAG_CHARS), ("scope", MAX_SCOPE_CHARS)])
def test_the_door_and_the_store_refuse_at_the_same_length(ops, field, limit):
    remember = validate_call(ops.bound("remember"))
    ops.scopes = ("global", "s" * limit)

    def value(n):
        return ["t" * n] if field == "tags" else "s" * n

    made = remember(text=f"The longest {field} the store takes passes the door.", **{field: value(limit)})
    stored = ops.store.get(made["id"])
    assert (stored.tags if field == "tags" else stored.scope) == value(limit)
    with pytest.raises(PydanticValidationError):
        remember(text=f"One {field} character more is refused at the door.", **{field: value(limit + 1)})
    with pytest.raises(ValidationError):
        ops.store.remember(f"One {field} character more is refused by the store.", **{field: value(limit + 1)})
