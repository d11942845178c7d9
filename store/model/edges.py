"""The kinds of edge the ``edges`` table holds, by name (its ``edge`` column).

Every edge is stored with its inverse, so either end finds the other by its own id.
Queries put these names into their SQL as literals (not parameters), so that SQLite
plans them exactly as it did the spelt-out names. Migrations (store/schema/migrations.py) keep the
names they were written with.
"""

MENTIONS = "mentions_entity"      # memory → an entity it names
MENTIONED_IN = "mentioned_in"     # entity → a memory that names it
REFERENCES = "references_record"  # memory → a memory it cites
REFERENCED_BY = "referenced_by"   # memory → a memory that cites it
SUPERSEDES = "supersedes"         # newer memory → the older one it replaced (store.conflicts)
SUPERSEDED_BY = "superseded_by"   # older memory → the newer one that replaced it
KEPT = "kept_with"                # a person read both memories and keeps both: they are not a conflict
RELATION = "relation:"           # entity → entity: relation:<type> (an MCP memory or basic-memory relation)
TYPED = "entity_type"            # entity → "type:<its type>": the free-form type a source gave it (entityType)
TYPE_PREFIX = "type:"            # (the other end of a TYPED edge is this and the type, not an id)

EDGE_COLUMNS = ("src", "edge", "dst", "created_at")  # an edge as it is written
