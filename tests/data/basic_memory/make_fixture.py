"""Write the notes in project/ with basic-memory's own markdown writer (the MarkdownProcessor
its tools and its memory.json importer write every note with).

basic-memory needs Python 3.12 and its command line does not start on 3.11 (its repository
classes use PEP 695 generics), but its markdown modules do. Made here, in a throwaway venv
(not the project's), offline:

    python3 -m venv /tmp/bmvenv
    /tmp/bmvenv/bin/pip install --ignore-requires-python --only-binary=:all: 'numpy<=2.4.6' basic-memory
    HOME=$(mktemp -d) /tmp/bmvenv/bin/python tests/data/basic_memory/make_fixture.py

(pip chose basic-memory 0.12.3 here.) The file times are then set to fixed values, so the
tests do not depend on when the fixture was made.
"""

import asyncio
import os
import shutil
from datetime import datetime
from pathlib import Path

from basic_memory.markdown import EntityParser, MarkdownProcessor
from basic_memory.markdown.schemas import EntityFrontmatter, EntityMarkdown, Observation, Relation

HERE = Path(__file__).parent
PROJECT = HERE / "project"
NOTES = [
    ("coffee/Coffee Brewing Methods.md",
     {"title": "Coffee Brewing Methods", "type": "note", "permalink": "coffee/coffee-brewing-methods",
      "tags": ["coffee", "brewing"]},
     "# Coffee Brewing Methods\n\nNotes from the tasting with Mara. We used the [[Gooseneck Kettle]] for all of them.\n",
     [Observation(category="method", content="Pour over gives more flavour clarity than French press",
                  tags=["pourover"]),
      Observation(category="tip", content="Water at 96 °C extracts best", tags=["temperature"],
                  context="measured with a probe"),
      Observation(category="preference", content="Mara likes a 1:16 ratio", tags=None)],
     [Relation(type="pairs_with", target="Chocolate Desserts"),
      Relation(type="relates_to", target="Coffee Bean Origins", context="same tasting")]),
    ("coffee/Coffee Bean Origins.md",
     {"title": "Coffee Bean Origins", "type": "note", "permalink": "coffee/coffee-bean-origins"},
     "# Coffee Bean Origins\n",
     [Observation(category="fact", content="Ethiopian beans taste of blueberries", tags=["ethiopia"])],
     [Relation(type="part_of", target="Coffee Brewing Methods")]),
    ("people/Mara Lindqvist.md",
     {"title": "Mara Lindqvist", "type": "person", "permalink": "people/mara-lindqvist"},
     "# Mara Lindqvist\n\nLeads the parser team.\n",
     [Observation(category="health", content="Allergic to peanuts", tags=["allergy"]),
      Observation(category="work", content="Moved the parser to Zig", tags=None)],
     [Relation(type="drinks", target="Coffee Brewing Methods")]),
]
TIMES = {"coffee/Coffee Brewing Methods.md": datetime(2026, 3, 1, 9, 0), "coffee/Coffee Bean Origins.md":
         datetime(2026, 3, 2, 10, 0), "people/Mara Lindqvist.md": datetime(2026, 3, 3, 11, 0)}


async def main() -> None:
    if PROJECT.exists():
        shutil.rmtree(PROJECT)
    processor = MarkdownProcessor(EntityParser(PROJECT))
    for rel, meta, content, observations, relations in NOTES:
        note = EntityMarkdown(frontmatter=EntityFrontmatter(metadata=meta), content=content,
                              observations=observations, relations=relations)
        await processor.write_file(PROJECT / rel, note)
    for rel, when in TIMES.items():
        stamp = when.timestamp()
        os.utime(PROJECT / rel, (stamp, stamp))


if __name__ == "__main__":
    asyncio.run(main())
