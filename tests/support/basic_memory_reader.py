"""Read a basic-memory project folder with basic-memory's own parser (EntityParser) and
print each note as basic-memory sees it, as JSON: run by tests/importers/test_exports.py with a
Python that has basic-memory (BASIC_MEMORY_PYTHON; basic-memory needs Python 3.12 for its
command line, but its markdown modules load on 3.11: see tests/data/basic_memory/make_fixture.py)."""

import asyncio
import json
import sys
from pathlib import Path

from basic_memory.markdown import EntityParser


async def main(root):
    parser = EntityParser(Path(root))
    out = {}
    for path in sorted(Path(root).rglob("*.md")):
        note = await parser.parse_file(path.relative_to(root))
        out[str(path.relative_to(root))] = {
            "title": note.frontmatter.title, "type": note.frontmatter.type,
            "metadata": {k: str(v) for k, v in note.frontmatter.metadata.items()},
            "observations": [{"category": o.category, "content": o.content, "tags": o.tags or []} for o in note.observations],
            "relations": [{"type": r.type, "target": r.target} for r in note.relations]}
    print(json.dumps(out, ensure_ascii=False))
asyncio.run(main(sys.argv[1]))
