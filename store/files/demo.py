"""The demo memories and the default database location."""

from __future__ import annotations

import json
import os
from importlib import resources
from typing import TYPE_CHECKING, Any

from ..model.memory import iso, parse_time

if TYPE_CHECKING:
    from ..importers.jsonl import ImportReport
    from ..store import MemoryStore

_TIME_FIELDS = ("created_at", "updated_at", "ref_time", "last_recalled_at")


def demo_lines() -> list[str]:
    return resources.files("mnemoscope.resources.demo").joinpath("memories.jsonl").read_text(encoding="utf-8").splitlines()


def rebased_demo(now: float) -> list[str]:
    """The demo memories with every time shifted so the demo's newest moment is ``now``:
    the ages (and so the layers) are the same whenever the demo is loaded."""
    records = [json.loads(line) for line in demo_lines() if line.strip()]
    anchor = max(parse_time(r[f], f) for r in records for f in _TIME_FIELDS if r.get(f))
    shift = now - anchor
    out = []
    for r in records:
        for f in _TIME_FIELDS:
            if r.get(f):
                r[f] = iso(parse_time(r[f], f) + shift)
        r["recall_events"] = [iso(parse_time(t, "recall_events") + shift) for t in r.get("recall_events", [])]
        out.append(json.dumps(r, ensure_ascii=False, sort_keys=True))
    return out


def load_demo(store: MemoryStore, now: Any = None) -> ImportReport:
    """Import the demo memories (ages relative to ``now``) and tick once."""
    from ..importers.jsonl import import_jsonl

    now = store.tables.now(now)
    report = import_jsonl(store, rebased_demo(now), policy="skip", now=now)
    store.tick(now)
    return report


def default_db_path() -> str:
    """The inspector's default database, in the user data directory."""
    override = os.environ.get("MNEMOSCOPE_HOME")
    if override:
        base = override
    else:
        from platformdirs import user_data_dir

        base = user_data_dir("Mnemoscope", appauthor=False)
    return os.path.join(base, "memories.db")


def open_default(path: str | None = None) -> MemoryStore:
    """Open ``path`` (default: the user's database), creating it from the demo when new."""
    from ..store import MemoryStore

    path = path or default_db_path()
    fresh = not os.path.exists(path)
    if fresh:
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    store = MemoryStore(path)
    if fresh:
        load_demo(store)
    return store
