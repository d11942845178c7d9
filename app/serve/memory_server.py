"""The official MCP memory server's tools (@modelcontextprotocol/server-memory), on
``mnemoscope mcp --tools memory-server``: the same names, arguments and answers, over the
store's knowledge graph (:mod:`mnemoscope.store.agents.knowledge_graph`), so that an agent
prompted for them works unchanged. Each answers as that server does: the JSON of its
result as text (indented by two spaces) and the result as ``structuredContent``, under an
``outputSchema`` of the same shape; the delete tools say so in a sentence.

Scope and trust are the server's (:class:`~.operations.Operations`), as for every tool:
the graph is what the caller may see, and writes go to its first scope. Every call is in
the activity log. A call's lists are bounded (the server's own are not).
"""

# No ``from __future__ import annotations``: the MCP SDK and pydantic read these signatures.

import functools
import json
from collections.abc import Callable
from typing import Annotated, Any

from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from mnemoscope.store.agents.knowledge_graph import Graph
from mnemoscope.store.model.errors import StoreError
from mnemoscope.store.model.memory import MAX_NAME_CHARS
from pydantic import Field
from pydantic import ValidationError as PydanticValidationError
from typing_extensions import TypedDict

from .operations import CALLER, LIMITS, Operations

MAX_ITEMS = 1000  # entities, relations, observations or names in one call
MAX_TEXT = LIMITS.max_text_chars
Name = Annotated[str, Field(max_length=MAX_NAME_CHARS)]
Text = Annotated[str, Field(max_length=MAX_TEXT)]


class Entity(TypedDict):
    name: Annotated[Name, Field(description="what the entity is called")]
    entityType: Annotated[Annotated[str, Field(max_length=100)], Field(description="what kind of thing it is")]
    observations: Annotated[list[Text], Field(max_length=MAX_ITEMS, description="what is known about it, "
                                              "one statement each")]


Relation = TypedDict("Relation", {
    "from": Annotated[Name, Field(description="the entity the relation starts at")],
    "to": Annotated[Name, Field(description="the entity the relation ends at")],
    "relationType": Annotated[Annotated[str, Field(max_length=100)],
                              Field(description="how the first relates to the second, in active voice")],
})


class Observations(TypedDict):
    entityName: Annotated[Name, Field(description="the entity to add them to")]
    contents: Annotated[list[Text], Field(max_length=MAX_ITEMS, description="the observations to add")]


class Deletion(TypedDict):
    entityName: Annotated[Name, Field(description="the entity that has them")]
    observations: Annotated[list[Text], Field(max_length=MAX_ITEMS, description="the observations to delete")]


class Added(TypedDict):
    entityName: str
    addedObservations: list[str]


class GraphOut(TypedDict):
    entities: list[Entity]
    relations: list[Relation]


class EntitiesOut(TypedDict):
    entities: list[Entity]


class RelationsOut(TypedDict):
    relations: list[Relation]


class AddedOut(TypedDict):
    results: list[Added]


class DoneOut(TypedDict):
    success: bool
    message: str


def _items(kind: Any, what: str) -> Any:
    return Annotated[list[kind], Field(max_length=MAX_ITEMS, description=what)]


READS = {"read_graph", "search_nodes", "open_nodes"}
DELETES = {"delete_entities", "delete_observations", "delete_relations"}
TOOLS = ("create_entities", "create_relations", "add_observations", "delete_entities", "delete_observations",
         "delete_relations", "read_graph", "search_nodes", "open_nodes")
TITLES = {"create_entities": "Create entities", "create_relations": "Create relations",
          "add_observations": "Add observations", "delete_entities": "Delete entities",
          "delete_observations": "Delete observations", "delete_relations": "Delete relations",
          "read_graph": "Read the graph", "search_nodes": "Search nodes", "open_nodes": "Open nodes"}


class MemoryServerTools:
    """The memory server's tools over one :class:`Operations` (its store, scopes and trust)."""

    def __init__(self, ops: Operations) -> None:
        self.ops = ops

    def _graph(self) -> Graph:
        return Graph(self.ops.store, self.ops.scopes, self.ops.trust)

    def _client(self) -> str:
        return (CALLER.get() or {}).get("client") or self.ops.client

    def create_entities(self, entities: _items(Entity, "the entities to create")) -> Annotated[CallToolResult, EntitiesOut]:
        """Create entities in the knowledge graph, each with its type and observations (an
        entity whose name is taken already is left as it is)."""
        return self._graph().create_entities(entities)

    def create_relations(self, relations: _items(Relation, "the relations to create")) -> Annotated[
            CallToolResult, RelationsOut]:
        """Create relations between entities of the knowledge graph, each in active voice
        (one that exists already is not made twice)."""
        return self._graph().create_relations(relations)

    def add_observations(self, observations: _items(Observations, "what to add to which entity")) -> Annotated[
            CallToolResult, AddedOut]:
        """Add observations to entities that exist in the knowledge graph."""
        return self._graph().add_observations(observations)

    def delete_entities(self, entityNames: _items(Name, "the names of the entities to delete")) -> Annotated[  # noqa: N803
            CallToolResult, DoneOut]:
        """Delete entities from the knowledge graph, with their observations and every
        relation they are in."""
        return self._graph().delete_entities(entityNames, client=self._client())

    def delete_observations(self, deletions: _items(Deletion, "which observations to delete from which entity")
                            ) -> Annotated[CallToolResult, DoneOut]:
        """Delete given observations from entities of the knowledge graph."""
        return self._graph().delete_observations(deletions, client=self._client())

    def delete_relations(self, relations: _items(Relation, "the relations to delete")) -> Annotated[
            CallToolResult, DoneOut]:
        """Delete relations from the knowledge graph."""
        return self._graph().delete_relations(relations)

    def read_graph(self) -> Annotated[CallToolResult, GraphOut]:
        """Read the whole knowledge graph: every entity with its observations, and every relation."""
        return {**self._graph().read(), "memory_ids": []}

    def search_nodes(self, query: Annotated[str, Field(max_length=2000, description=(
            "what to look for in the entities' names, types and observations"))]) -> Annotated[
            CallToolResult, GraphOut]:
        """Search the knowledge graph for entities whose name, type or an observation holds
        the query, with the relations they are in."""
        return {**self._graph().search(query), "memory_ids": []}

    def open_nodes(self, names: _items(Name, "the names of the entities to open")) -> Annotated[
            CallToolResult, GraphOut]:
        """Open the named entities of the knowledge graph, with the relations they are in."""
        return {**self._graph().open(names), "memory_ids": []}


def _answer(name: str, result: dict[str, Any]) -> CallToolResult:
    """The answer as the memory server gives it: its JSON as text, beside the structure."""
    result = {k: v for k, v in result.items() if k != "memory_ids"}
    if name in DELETES:
        text = result["message"]
    elif name in READS:
        text = json.dumps(result, ensure_ascii=False, indent=2)
    else:
        text = json.dumps(next(iter(result.values())), ensure_ascii=False, indent=2)
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=result)


def tool(tools: MemoryServerTools, name: str) -> Callable[..., CallToolResult]:
    """The tool ``name`` as the MCP server registers it: logged, its refusals tool errors."""
    method = getattr(tools, name)

    @functools.wraps(method)
    def call(**kwargs: Any) -> CallToolResult:
        try:
            return _answer(name, tools.ops.call(name, method, kwargs))
        except (StoreError, PydanticValidationError) as exc:
            raise ToolError(str(exc)) from None

    call.__doc__ = method.__doc__ and " ".join(method.__doc__.split())
    return call


def annotations(name: str) -> ToolAnnotations:
    return ToolAnnotations(title=TITLES[name], readOnlyHint=name in READS, destructiveHint=name in DELETES,
                           idempotentHint=name in READS | DELETES, openWorldHint=False)
