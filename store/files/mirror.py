"""A readable mirror of the memory: a folder of markdown pages that opens as an Obsidian vault.

``Overview.md`` lists the strongest memories of each layer and every page; ``entities/``
has one page per person, group, topic, tool or project with what is remembered about
it; ``topics/`` one page per topic a memory is filed under (a topic that is also an
entity shares the entity's page); ``diary/`` one page per month with the events and
reflections of each day. Pages link to each other as ``[[Name]]``.

A mirror is meant to be read, synced and put in git, so by default it leaves out every
memory above ``medium`` (``trust`` chooses another level): a page, an entity, a topic, an
alias or a link appears only through a memory the mirror shows. An entity's aliases came
with the memory that first named it, and are shown only when that memory is within trust.

The mirror is a pure function of what is stored: no clock, no generation time, every
list in a fixed order, so the same database gives byte-identical files and the folder
can live in git.

Writing it touches only what it wrote: the marker file ``.mnemoscope-mirror`` records
each page with a hash of its content, and a page is rewritten or removed only while it
still holds that. Nothing is written, removed or read through a link (see
:mod:`safe_folder`), and page names are shortened to fit every platform.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import unicodedata
from collections import defaultdict
from contextlib import ExitStack
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from ..model.errors import StoreError
from ..model.memory import LAYERS, NAME_FORBIDDEN, SENSITIVITY_RANK, Memory
from ..recall.ranking import _trust_rank
from .safe_folder import SafeFolder

if TYPE_CHECKING:
    from ..store import MemoryStore

MARKER = ".mnemoscope-mirror"
FOLDERS = ("entities", "topics", "diary")
STRONGEST_PER_LAYER = 12
DIARY_KINDS = ("event", "reflection")
KIND_ORDER = ("fact", "lesson", "skill", "reflection", "event")
ENTITY_HEADINGS = {"person": "People", "group": "Groups", "project": "Projects", "tool": "Tools",
                   "place": "Places", "file": "Files", "other": "Other"}  # topics are listed with topics
# What a file name may not hold: what some platform or Obsidian's links refuse, and every
# character no name may hold (model.NAME_FORBIDDEN: controls, line separators, direction
# marks), so a name stored before that rule, or by another program, cannot reorder a file
# name ('invoice\u202efdp.exe') or break a listing's line.
_UNSAFE = re.compile(r'[\\/:*?"<>|#^\[\]\ud800-\udfff' + NAME_FORBIDDEN.pattern[1:])
# A page title's UTF-8 bytes at most. With " (99)" and ".md" it stays far below every
# platform's limit on one name: 255 bytes on Linux and APFS, 255 UTF-16 units on Windows
# and HFS+ (a UTF-16 unit is never fewer bytes in UTF-8, and NFD at most triples a
# syllable's units), so one long title cannot fail the whole mirror.
NAME_BYTES = 150
# Names Windows gives to devices, with any extension: a page named so could not be opened
# there, and a mirror is meant to be carried (in git) to any machine.
_RESERVED = {"CON", "PRN", "AUX", "NUL", *(f"{p}{n}" for p in ("COM", "LPT") for n in "123456789¹²³")}


@dataclass
class MirrorResult:
    out: Path
    written: list[str]   # pages written or rewritten (relative paths)
    unchanged: int
    removed: list[str]   # pages of an earlier mirror that no longer exist
    memories: int        # memories the mirror shows
    kept: list[str] = field(default_factory=list)  # files a person wrote or edited, left as they are


def _page_name(name: str) -> str:
    """A file name for a page titled ``name``: the same for the same name, short enough
    for every platform, never a Windows device name. A shortened name ends in a hash of
    the whole one, so two long names that start alike stay apart."""
    clean = unicodedata.normalize("NFC", _UNSAFE.sub("-", name)).strip().lstrip(".") or "untitled"
    if len(clean) > 100 or len(clean.encode("utf-8")) > NAME_BYTES:
        digest = hashlib.sha256(name.encode("utf-8", "replace")).hexdigest()[:8]
        cut = clean.encode("utf-8")[:NAME_BYTES - 10].decode("utf-8", "ignore")
        clean = f"{cut.rstrip(' .')}~{digest}"
    if clean.split(".")[0].rstrip(" ").upper() in _RESERVED:
        clean = "_" + clean
    return clean


def _day(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%d")


class _Pages:
    """Page titles by lower-cased name, so each name has one page and links find it."""

    def __init__(self) -> None:
        self.by_key: dict[str, str] = {}
        self.titles: set[str] = set()

    def add(self, key: str, name: str) -> str:
        title = _page_name(name)
        n = 2
        while title.casefold() in self.titles:  # folders on Windows and macOS ignore case
            title = f"{_page_name(name)} ({n})"
            n += 1
        self.titles.add(title.casefold())
        self.by_key[key] = title
        return title

    def link(self, key: str, label: str | None = None) -> str:
        title = self.by_key[key]
        return f"[[{title}]]" if label is None or label == title else f"[[{title}|{label}]]"


DEFAULT_TRUST = "medium"


def shown_memories(store: MemoryStore, *, trust: str | None = DEFAULT_TRUST,
                   include_archived: bool = False) -> list[Memory]:
    """The memories a mirror shows: none above ``trust`` (all when None), archived only when asked."""
    limit = _trust_rank(trust) if trust is not None else len(SENSITIVITY_RANK)
    return [m for m in store.list(include_archived=include_archived) if SENSITIVITY_RANK[m.sensitivity] <= limit]


def _first_named_at(store: MemoryStore) -> dict[str, str]:
    """Entity id → the sensitivity of the memory that first named it (which brought its aliases)."""
    rows = store.tables.rows("SELECT x.dst, m.sensitivity FROM edges x JOIN memories m ON m.id = x.src "
                             "WHERE x.edge = 'mentions_entity' ORDER BY x.created_at DESC, x.src DESC")
    return {r["dst"]: r["sensitivity"] for r in rows}  # the last written wins: the earliest edge


def build_mirror(store: MemoryStore, *, trust: str | None = DEFAULT_TRUST,
                 include_archived: bool = False) -> dict[str, str]:
    """The mirror's pages as {relative path: markdown}. Memories more sensitive than
    ``trust`` are left out (all are shown when it is None), with the aliases they brought;
    archived ones only when asked."""
    memories = shown_memories(store, trust=trust, include_archived=include_archived)
    limit = _trust_rank(trust) if trust is not None else len(SENSITIVITY_RANK)
    first_named_at = _first_named_at(store)
    memories.sort(key=lambda m: (-m.strength, m.id))
    entities = sorted(store.entities(), key=lambda e: (e.name.lower(), e.scope != "global", e.id))
    by_name: dict[str, list] = defaultdict(list)
    for e in entities:
        by_name[e.name].append(e)

    about: dict[str, list[Memory]] = defaultdict(list)   # entity name -> memories mentioning it
    for m in memories:
        for name in m.entities:
            about[name].append(m)
    filed: dict[str, list[Memory]] = defaultdict(list)   # topic (lower) -> memories
    topic_names: dict[str, str] = {}
    for m in memories:
        if m.topic:
            filed[m.topic.lower()].append(m)
            topic_names.setdefault(m.topic.lower(), m.topic)

    pages = _Pages()
    entity_kind: dict[str, str] = {}
    for name in sorted(about, key=lambda n: (n.lower(), n)):
        pages.add("e:" + name, name)
        entity_kind[name] = by_name[name][0].kind if by_name.get(name) else "other"
    entity_keys = {n.lower(): "e:" + n for n in about}
    topic_key: dict[str, str] = {}
    for low in sorted(filed):
        topic_key[low] = entity_keys.get(low) or "t:" + low
        if topic_key[low] not in pages.by_key:
            pages.add(topic_key[low], topic_names[low])

    def bullet(m: Memory, *, skip: str | None = None, show_topic: bool = True) -> str:
        parts = [m.text.replace("\r", " ").replace("\n", " ").strip(), f"*{m.kind}*", f"strength {m.strength:.2f}"]
        if m.layer == "archived":
            parts.append("archived")
        if m.scope != "global":
            parts.append(f"`{m.scope}`")
        if m.topic and show_topic and topic_key.get(m.topic.lower()) != skip:
            parts.append("topic " + pages.link(topic_key[m.topic.lower()], m.topic))
        links = [pages.link("e:" + n, n) for n in m.entities if "e:" + n != skip]
        if links:
            parts.append("with " + ", ".join(links))
        return "- " + " · ".join(parts) + f" <!-- {m.id} -->"

    def by_kind(ms: list[Memory], skip: str | None = None) -> list[str]:
        lines: list[str] = []
        for kind in KIND_ORDER:
            group = [m for m in ms if m.kind == kind]
            if group:
                lines += ["", f"## {kind.capitalize()}s" if kind != "skill" else "## Skills", ""]
                lines += [bullet(m, skip=skip) for m in group]
        return lines

    out: dict[str, str] = {}
    for name in about:
        key = "e:" + name
        ent = by_name.get(name, [None])[0]
        head = [f"# {name}", "", f"{entity_kind[name]} · {len(about[name])} memories"]
        if ent is not None and ent.aliases and SENSITIVITY_RANK.get(first_named_at.get(ent.id, "low"), 99) <= limit:
            head.append("also called " + ", ".join(sorted(ent.aliases)))
        lines = head + by_kind(about[name], skip=key)
        extra = [m for m in filed.get(name.lower(), []) if name not in m.entities]
        if extra:
            lines += ["", "## Also filed under this topic", ""] + [bullet(m, skip=key) for m in extra]
        out[f"entities/{pages.by_key[key]}.md"] = "\n".join(lines) + "\n"
    for low, ms in filed.items():
        key = topic_key[low]
        if key.startswith("e:"):
            continue
        lines = [f"# {topic_names[low]}", "", f"topic · {len(ms)} memories"] + by_kind(ms, skip=key)
        out[f"topics/{pages.by_key[key]}.md"] = "\n".join(lines) + "\n"

    months: dict[str, dict[str, list[Memory]]] = defaultdict(lambda: defaultdict(list))
    for m in sorted((m for m in memories if m.kind in DIARY_KINDS), key=lambda m: (m.created_at, m.id)):
        day = _day(m.created_at)
        months[day[:7]][day].append(m)
    for month, days in months.items():
        lines = [f"# Diary {month}"]
        for day, ms in days.items():
            weekday = datetime.strptime(day, "%Y-%m-%d").strftime("%A")
            lines += ["", f"## {day} ({weekday})", ""] + [bullet(m) for m in ms]
        out[f"diary/{month}.md"] = "\n".join(lines) + "\n"

    lines = ["# Memory overview", "",
             f"{len(memories)} memories" + (" (archived included)" if include_archived else "")
             + (f", sensitivity up to {trust}" if trust is not None else "") + "."]
    for layer in LAYERS:
        ms = [m for m in memories if m.layer == layer][:STRONGEST_PER_LAYER]
        if ms:
            lines += ["", f"## Strongest: {layer}", ""] + [bullet(m) for m in ms]
    for kind, heading in ENTITY_HEADINGS.items():
        names = sorted((n for n in about if entity_kind[n] == kind), key=lambda n: (n.lower(), n))
        if names:
            lines += ["", f"## {heading}", ""] + [f"- {pages.link('e:' + n, n)} ({len(about[n])})" for n in names]
    # Topics are the topics memories are filed under and the entities of kind topic.
    topics = {low: (pages.link(topic_key[low], topic_names[low]), len(filed[low])) for low in filed}
    for n in about:
        if entity_kind[n] == "topic" and n.lower() not in topics:
            topics[n.lower()] = (pages.link("e:" + n, n), len(about[n]))
    if topics:
        lines += ["", "## Topics", ""] + [f"- {link} ({count})" for _, (link, count) in sorted(topics.items())]
    if months:
        lines += ["", "## Diary", ""] + [f"- [[{month}]]" for month in sorted(months, reverse=True)]
    out["Overview.md"] = "\n".join(lines) + "\n"
    return dict(sorted(out.items()))


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _read_record(root: SafeFolder) -> dict[str, list[str]]:
    """What the last mirror wrote: {relative path: sha256 of each content it may hold}.
    A marker from before the record (plain text) records nothing."""
    raw = root.read(MARKER)
    try:
        pages = json.loads(raw or b"{}").get("pages", {})
    except (ValueError, AttributeError):
        return {}
    if not isinstance(pages, dict):
        return {}
    return {rel: [h for h in hs if isinstance(h, str)] for rel, hs in pages.items()
            if isinstance(rel, str) and isinstance(hs, list) and _recordable(rel)}


def _recordable(rel: str) -> bool:
    """A path the mirror could have written: the overview, or a page right inside one of its folders."""
    if rel == "Overview.md":
        return True
    folder, _, name = rel.partition("/")
    return folder in FOLDERS and name.endswith(".md") and not name.startswith(".") and not any(
        c in name for c in "/\\\x00:")


def _write_record(root: SafeFolder, pages: dict[str, list[str]]) -> None:
    record = {"note": "This folder is a Mnemoscope mirror; `mnemoscope mirror` rewrites it. It removes or "
                      "rewrites only the pages listed here, and only while they hold what it wrote.",
              "pages": dict(sorted(pages.items()))}
    root.write(MARKER, (json.dumps(record, indent=1, ensure_ascii=False) + "\n").encode("utf-8"))


def write_mirror(store: MemoryStore, out: str | os.PathLike, *, trust: str | None = DEFAULT_TRUST,
                 include_archived: bool = False) -> MirrorResult:
    """Write the mirror into the folder ``out``: new or changed pages are written, pages of
    an earlier mirror that no longer exist are removed, and nothing else is touched.

    The mirror records each page it writes, with a hash of what it wrote, in its marker
    file; it rewrites or removes only recorded pages that still hold exactly that. A page
    a person edited, or a file it did not write, is kept and listed in ``kept``. It never
    writes, removes or looks through a link (a symbolic link or a Windows junction): the
    folder, its sub-folders and its pages must be plain. A folder that holds other files
    and no earlier mirror is refused."""
    root = Path(out)
    pages = build_mirror(store, trust=trust, include_archived=include_archived)
    written, unchanged, removed, kept = [], 0, [], []
    try:
        with ExitStack() as open_folders:
            top = open_folders.enter_context(SafeFolder(root))
            names = top.names()
            if names and MARKER not in names:
                raise StoreError(f"{root} is not empty and holds no earlier mirror; choose an empty or new folder")
            record = _read_record(top)
            folders = {"": top, **{name: open_folders.enter_context(top.sub(name)) for name in FOLDERS}}

            def place(rel: str) -> tuple[SafeFolder, str]:
                folder, _, name = rel.rpartition("/")
                return folders[folder], name

            # Every entry is read (and every link refused) before the first write.
            current = {rel: place(rel)[0].read(place(rel)[1]) for rel in sorted(set(pages) | set(record))}
            plan: dict[str, bytes] = {}
            for rel, text in pages.items():
                data, have = text.encode("utf-8"), current[rel]
                if have == data:
                    unchanged += 1
                elif have is None or _digest(have) in record.get(rel, ()):
                    plan[rel] = data
                else:
                    kept.append(rel)
            stale = [rel for rel in record if rel not in pages and current[rel] is not None]
            kept += [rel for rel in stale if _digest(current[rel]) not in record[rel]]
            final = {rel: [_digest(text.encode("utf-8"))] for rel, text in pages.items() if rel not in kept}
            if plan:  # record old and new contents first: a mirror stopped half-way still knows its pages
                during = {rel: sorted({*record.get(rel, ()), _digest(data)}) for rel, data in plan.items()}
                _write_record(top, {**{r: h for r, h in record.items() if r not in kept}, **during})
            for rel, data in plan.items():
                place(rel)[0].write(place(rel)[1], data)
                written.append(rel)
            for rel in stale:
                if rel not in kept:
                    place(rel)[0].remove(place(rel)[1])
                    removed.append(rel)
            if plan or final != record:
                _write_record(top, final)
    except OSError as exc:
        raise StoreError(f"cannot write the mirror to {root}: {exc.strerror or exc}") from None
    return MirrorResult(root, written, unchanged, sorted(removed),
                        len(shown_memories(store, trust=trust, include_archived=include_archived)), sorted(kept))
