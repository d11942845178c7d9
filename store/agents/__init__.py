"""What agents did and cite: the activity log, conversations' citation maps, answer provenance,
capture, and the MCP memory server's knowledge graph."""
