"""A basic-memory project folder: markdown notes with frontmatter, observations and
relations.

A note (``*.md``) becomes an entity named by its frontmatter ``title`` (else the file
name); its frontmatter ``type`` becomes our kind where one fits (``note`` and the rest:
``topic``). In its body:
- each observation line ``- [category] text #tag … (context)`` becomes one memory (a
  fact) that mentions the note's entity: ``topic`` = the category, ``tags`` = the
  ``#tags`` (with the note's frontmatter tags), the trailing ``(context)`` kept in the
  memory's context with the note's permalink and file;
- each relation line ``- relation_type [[Target]] (context)`` becomes an edge
  ``relation:relation_type`` from the note's entity to the target's (a target with no
  note of its own becomes an entity of kind ``other``); a ``[[link]]`` inside other text
  becomes ``relation:links_to``, as basic-memory reads it; a relation's ``(context)`` has
  no place on an edge and is listed as left out;
- times come from frontmatter ``created``/``modified`` where present, else the file's
  modification time; frontmatter ``aliases`` (and the note's permalink) become the
  entity's aliases; any other frontmatter field is listed as left out, with how many
  notes have it;
- everything else (headings aside: prose, code, tables) is not an observation, and the
  report lists each note's left-out text by its line numbers.
Files that are not ``.md`` and folders starting with ``.`` are listed as left out.
"""

from __future__ import annotations

import json
import os
import re
import secrets
from datetime import date, datetime
from typing import TYPE_CHECKING, Any

from ..model.errors import ImportRefused, NotPlainFile, StoreError, ValidationError
from ..model.memory import parse_time, validate_scope
from . import frontmatter
from .plan import ImportPlan, check_name, check_relation, entity_kind
from .report import ExportReport, snapshot
from .source import TooLarge, decode, read_plain

if TYPE_CHECKING:
    from ..store import MemoryStore

FORMAT = "basic-memory"
SCOPE_KEY = "mnemoscope_scope"  # frontmatter: the scope of a note Mnemoscope exported
ENTITY_SCOPE_KEY = "mnemoscope_entity_scope"  # ... and of its entity, where that is another
# The frontmatter an import reads (the rest is listed as left out, by field).
READ_KEYS = {"title", "type", "permalink", "tags", "aliases", "created", "created_at", "date", "modified", "updated",
             "updated_at", SCOPE_KEY, ENTITY_SCOPE_KEY}
MAX_NOTE_BYTES = 8 << 20
# The patterns are written so that no run of spaces can be split two ways (a lazy group
# before \s* or \s+ backtracked quadratically: one line of 20,000 spaces took a second).
OBSERVATION = re.compile(r"^\s*[-*]\s+\[(?P<category>[^\[\]]+)\]\s+(?P<text>.*\S)\s*$")
RELATION = re.compile(r"^\s*[-*]\s+(?P<type>[^\[\]()#\s]+(?:\s+[^\[\]()#\s]+)*+)\s+\[\[(?P<target>[^\[\]]+)\]\]"
                      r"(?:\s*\((?P<context>[^()]*)\))?\s*$")
LINK = re.compile(r"\[\[(?P<target>[^\[\]]+)\]\]")
TAG = re.compile(r"(?<!\S)#(?P<tag>[^\s#()\[\]]+)")
CONTEXT = re.compile(r"(?<!\s)\s*\((?P<context>[^()]*)\)\s*$")
FENCE = re.compile(r"^\s*(```|~~~)")
# A note linked in from elsewhere (/etc/passwd, a secret, a FIFO that never ends) is not the
# project's; a linked folder may loop back on itself.
LINK_WHY = "a link; an import never reads through a link, so nothing outside the folder is read"


def looks_like(path: str) -> bool:
    if not os.path.isdir(path):
        return False
    for _root, dirs, files in os.walk(path):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        if any(f.endswith(".md") for f in files):
            return True
    return False


def _notes(folder: str, plan: ImportPlan) -> list[str]:
    found = []
    for root, dirs, files in os.walk(folder):
        for d in sorted(dirs):
            if d.startswith("."):
                plan.leave_out(os.path.relpath(os.path.join(root, d), folder) + "/", "folder",
                               "hidden folders are not notes")
            elif os.path.islink(os.path.join(root, d)):
                plan.leave_out(os.path.relpath(os.path.join(root, d), folder) + "/", "folder", LINK_WHY)
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and not os.path.islink(os.path.join(root, d)))
        for f in sorted(files):
            rel = os.path.relpath(os.path.join(root, f), folder)
            if os.path.islink(os.path.join(root, f)):
                plan.leave_out(rel, "file", LINK_WHY)
            elif f.endswith(".md"):
                found.append(rel)
            elif not f.startswith("."):
                plan.leave_out(rel, "file", "not a markdown note")
    return found


def _frontmatter(text: str) -> tuple[dict[str, Any], list[str], int]:
    """(frontmatter, body lines, line number of the first body line)."""
    lines = text.split("\n")
    if lines and lines[0].strip() == "---":
        for i in range(1, len(lines)):
            if lines[i].strip() == "---":
                meta = frontmatter.parse("\n".join(lines[1:i]))
                if not isinstance(meta, dict):
                    raise ValidationError("frontmatter", "must be a mapping of keys to values")
                return meta, lines[i + 1:], i + 2
        raise ValidationError("frontmatter", "starts with '---' but never ends")
    return {}, lines, 1


def _time(meta: dict[str, Any], keys: tuple[str, ...], fallback: float) -> float:
    for key in keys:
        value = meta.get(key)
        if isinstance(value, date) and not isinstance(value, datetime):
            value = datetime(value.year, value.month, value.day)
        if value is not None:
            return parse_time(value if not isinstance(value, str) else value.strip(), key)
    return fallback


def read(store: MemoryStore, path: str | os.PathLike, plan: ImportPlan, *, now: float | None = None) -> ImportPlan:
    folder = str(path)
    if not os.path.isdir(folder):
        raise StoreError(f"{folder} is not a folder; a basic-memory project is a folder of markdown notes")
    parsed = []
    dropped: dict[str, int] = {}  # frontmatter fields nothing here keeps: the notes that have each
    for rel in _notes(folder, plan):
        full = os.path.join(folder, rel)
        try:
            data = read_plain(full, MAX_NOTE_BYTES + 1, name=rel, follow=False, refuse_over=MAX_NOTE_BYTES)
            if len(data) > MAX_NOTE_BYTES:  # it grew since its size was read
                raise TooLarge(rel, len(data), MAX_NOTE_BYTES)
            mtime = os.path.getmtime(full)
        except TooLarge as exc:
            plan.error(f"{rel}:1", f"is {exc.size:,} bytes; a note may be at most {MAX_NOTE_BYTES:,}")
            continue
        except NotPlainFile as exc:
            plan.leave_out(rel, "file", LINK_WHY if exc.what == "a link" else f"not a plain file ({exc.what})")
            continue
        except OSError as exc:
            plan.error(f"{rel}:1", f"cannot be read: {exc.strerror or exc}")
            continue
        try:
            text = decode(data, rel).replace("\r\n", "\n")
        except ImportRefused as exc:
            line, reason = exc.errors[0]
            plan.error(f"{rel}:{line}", reason)
            continue
        try:
            meta, body, first = _frontmatter(text)
            title = check_name(meta.get("title") or os.path.splitext(os.path.basename(rel))[0], "title")
            created = _time(meta, ("created", "created_at", "date"), round(mtime, 3))
            updated = _time(meta, ("modified", "updated", "updated_at"), max(created, round(mtime, 3)))
        except ValidationError as exc:
            plan.error(f"{rel}:1", f"frontmatter: {exc}".replace("\n", " ")[:300])
            continue
        for key in meta:
            if key not in READ_KEYS:
                dropped[key] = dropped.get(key, 0) + 1
        etype = meta.get("type") if isinstance(meta.get("type"), str) else "note"
        note_scope = None
        if isinstance(meta.get(SCOPE_KEY), str):  # a note Mnemoscope exported: its memories' scope
            try:
                note_scope = validate_scope(meta[SCOPE_KEY].strip(), SCOPE_KEY)
            except ValidationError as exc:
                plan.error(f"{rel}:1", f"frontmatter: {exc}")
                continue
        entity_scope = note_scope
        if note_scope is not None and isinstance(meta.get(ENTITY_SCOPE_KEY), str):
            try:
                entity_scope = validate_scope(meta[ENTITY_SCOPE_KEY].strip(), ENTITY_SCOPE_KEY)
            except ValidationError as exc:
                plan.error(f"{rel}:1", f"frontmatter: {exc}")
                continue
        if etype == SCOPE_TYPE and note_scope is not None:
            plan.place(f"note of type {SCOPE_TYPE} -> its memories in that scope, naming no entity")
            parsed.append((rel, meta, body, first, None, created, updated, note_scope))
            continue
        kind = entity_kind(etype)
        title = plan.entity(title, "topic" if kind == "other" and etype == "note" else kind, entity_scope)
        plan.place("note -> entity")
        parsed.append((rel, meta, body, first, title, created, updated, note_scope))
        # What links name a note by: its permalink (basic-memory's [[projects/orion]]) and
        # its frontmatter aliases; both become the entity's aliases.
        try:
            names = [check_name(a, "aliases") for a in _aliases_of(meta)]
            permalink = meta.get("permalink") if isinstance(meta.get("permalink"), str) else permalink_of(rel)
            if note_scope is None or "permalink" in meta:  # (a note we exported links by title only)
                names.append(check_name(permalink, "permalink"))
        except ValidationError as exc:
            plan.error(f"{rel}:1", f"frontmatter: {exc}")
            continue
        for name in names:
            plan.alias(title, name)
    for key, n in sorted(dropped.items()):
        plan.leave_out("frontmatter", f"field {key!r} of {n} note{'s' if n > 1 else ''}",
                       "no place for it here: the note keeps it")
    for rel, meta, body, first, title, created, updated, note_scope in parsed:
        own = plan.scope
        plan.scope = note_scope or own
        try:
            _note(store, plan, rel, meta, body, first, title, created, updated)
        finally:
            plan.scope = own
    return plan


def _note(store: MemoryStore, plan: ImportPlan, rel: str, meta: dict[str, Any], body: list[str], first: int,
          title: str, created: float, updated: float) -> None:
    note_tags = meta.get("tags") or []
    if isinstance(note_tags, str):
        note_tags = [t.strip() for t in note_tags.replace(",", " ").split() if t.strip()]
    note_tags = [str(t) for t in note_tags if isinstance(t, (str, int))]
    prose: list[int] = []
    fenced = False
    order = 0
    for offset, line in enumerate(body):
        number = first + offset
        where = f"{rel}:{number}"
        if FENCE.match(line):
            fenced = not fenced
            prose.append(number)
            continue
        if fenced or not line.strip() or line.lstrip().startswith("#") and not line.lstrip().startswith("#["):
            if fenced:
                prose.append(number)
            continue
        try:
            obs = OBSERVATION.match(line)
            rel_match = None if obs else RELATION.match(line)
            if obs:
                order += 1
                _observation(store, plan, obs, rel, number, title, note_tags, meta, created, updated, order)
            elif rel_match:
                target = check_name(rel_match["target"].split("|")[0], "relation target")
                rtype = check_relation(rel_match["type"], "relation type")
                _relate(plan, title, rtype, target)
                if rel_match["context"]:
                    plan.leave_out(where, f"context {rel_match['context'].strip()!r} of relation {rtype}",
                                   "an edge between entities holds no text")
            else:
                links = [m["target"].split("|")[0] for m in LINK.finditer(line)]
                for target in links:
                    _relate(plan, title, "links_to", check_name(target, "link target"))
                prose.append(number)
        except ValidationError as exc:
            plan.error(where, str(exc))
    if prose:
        plan.leave_out(rel, f"{len(prose)} line(s) of text that are not observations or relations "
                            f"(lines {_ranges(prose)})", "one memory per observation; prose stays in the note")


def _observation(store: MemoryStore, plan: ImportPlan, match: re.Match, rel: str, number: int, title: str,
                 note_tags: list[str], meta: dict[str, Any], created: float, updated: float, order: int) -> None:
    text = match["text"]
    context = None
    found = CONTEXT.search(text)
    if found and found.start() > 0:
        context, text = found["context"].strip(), text[: found.start()]
    tags = [m["tag"] for m in TAG.finditer(text)]
    text = TAG.sub("", text).strip() if tags else text.strip()
    for m in LINK.finditer(text):
        if title is not None:
            _relate(plan, title, "links_to", check_name(m["target"].split("|")[0], "link target"))
    if not text:
        plan.leave_out(f"{rel}:{number}", "an observation with only tags", "no text to remember")
        return
    category = match["category"].strip()
    ctx = {"basic_memory": {"file": rel, "line": number, "permalink": meta.get("permalink"), "category": category,
                            **({"context": context} if context else {})}}
    rec = plan.memory(store, f"{rel}\x1f{text}", slot=f"{rel}\x1f{number}", text=text,
                      created=created + order * 0.001,
                      updated=updated + order * 0.001, entities=(title,) if title else (), kind="fact",
                      topic=category[:200],
                      tags=list(dict.fromkeys([*note_tags, *tags]))[: store.config.limits.max_tags],
                      source=f"basic-memory:{rel}", context=ctx)
    if rec:
        plan.place("observation -> memory (fact) mentioning the note's entity")
    else:
        plan.leave_out(f"{rel}:{number}", "observation", "the same text twice in one note")


def _relate(plan: ImportPlan, src: str | None, rtype: str, target: str) -> None:
    if src is None:
        plan.leave_out(f"a note of type {SCOPE_TYPE}", f"{rtype} [[{target}]]", "a scope's note is no entity")
        return
    name = plan.find(target)
    if name is None:
        name = plan.entity(target, "other")
        plan.place("relation target without a note -> entity (kind other)")
    if plan.relate(src, rtype, name):
        plan.place("relation -> edge relation:<type> between entities")


def permalink_of(rel: str) -> str:
    """The permalink basic-memory gives a note that names none: its path without ``.md``,
    lower case, each run of spaces or underscores one hyphen."""
    stem = rel[:-3] if rel.lower().endswith(".md") else rel
    parts = [re.sub(r"[\s_]+", "-", part.strip()).lower() for part in stem.replace("\\", "/").split("/")]
    return "/".join(p for p in parts if p)


def _aliases_of(meta: dict[str, Any]) -> list[str]:
    value = meta.get("aliases")
    if isinstance(value, str):
        value = [value]
    return [a.strip() for a in value or [] if isinstance(a, str) and a.strip()]


def _ranges(numbers: list[int]) -> str:
    out: list[str] = []
    start = prev = numbers[0]
    for n in [*numbers[1:], None]:
        if n is not None and n == prev + 1:
            prev = n
            continue
        out.append(str(start) if start == prev else f"{start}-{prev}")
        if n is not None:
            start = prev = n
    return ", ".join(out[:20]) + (" …" if len(out) > 20 else "")


# A note of this type stands for a scope: its observations are the scope's memories that
# name no entity; importing the folder puts them back in that scope, naming no entity.
SCOPE_TYPE = "mnemoscope_scope"
# basic-memory's own note types for our entity kinds (a topic is its "note").
NOTE_TYPES = {"topic": "note"}
# What basic-memory would read otherwise in an observation's text: a trailing "(context)"
# or a " #word" (a tag).
_MISREAD = re.compile(r"\([^()]*\)\s*$|(?<!\S)#[^\s#()\[\]]")


def _quoted(value: str) -> str:
    import json

    return json.dumps(value, ensure_ascii=False)


def export(store: MemoryStore, out: str | os.PathLike, *, scope: str | None = None) -> ExportReport:
    """Every memory (of ``scope``, when given) as an observation in a basic-memory project
    folder ``out``, made if missing, never written through a link: one note per entity
    (``SCOPE/Title.md``: frontmatter title, type, aliases, created, modified; then its
    observations ``- [topic] text #tag`` and relations ``- type [[Target]]``), and one note
    of type :data:`SCOPE_TYPE` per scope for the memories that name no entity. A memory
    naming several entities is an observation of the first and links to the others."""
    from pathlib import Path

    from ..files.safe_folder import SafeFolder

    snap = snapshot(store, scope)
    report = ExportReport(FORMAT, str(out), memories=len(snap.memories))
    # A note per entity and scope of its memories (an entity's memories of another scope
    # than its own go in a note of the same title in that scope's folder: an import gives
    # each memory its note's scope back); one per scope for the memories naming none.
    notes: dict[tuple[str | None, str], dict[str, Any]] = {}  # (entity id or None, scope) -> note

    def note_of(eid: str | None, in_scope: str) -> dict[str, Any]:
        key = (eid, in_scope)
        if key not in notes:
            ent = snap.entities[eid] if eid is not None else {"name": in_scope, "kind": None, "aliases": [],
                                                              "created_at": None}
            notes[key] = {"title": ent["name"], "type": SCOPE_TYPE if eid is None else NOTE_TYPES.get(
                ent["kind"], ent["kind"]), "scope": in_scope, "aliases": ent["aliases"], "times": [ent["created_at"]],
                "observations": [], "relations": [], "entity_scope": ent.get("scope", in_scope)}
        return notes[key]

    for eid, ent in snap.entities.items():
        if scope is None or ent["scope"] == scope:
            note_of(eid, ent["scope"])
    changed = broken = kinds = extra = 0
    for row in snap.memories:
        named = snap.mentions.get(row["id"], [])
        note = note_of(named[0] if named else None, row["scope"])
        report.place("memory -> observation in the note of the entity it names" if named else
                     f"memory naming no entity -> observation in its scope's note (type {SCOPE_TYPE})")
        text = row["text"]
        if "\n" in text or "\r" in text:
            text = " ".join(text.split())
            broken += 1
        changed += bool(_MISREAD.search(text))
        tags = [t for t in json.loads(row["tags"] or "[]") if re.fullmatch(r"[^\s#()\[\]]+", t)]
        kinds += row["kind"] != "fact"
        category = (row["topic"] or row["kind"]).replace("[", "(").replace("]", ")")
        extra += max(0, len(named) - 1)
        note["observations"].append(f"- [{category}] {text}" + "".join(f" #{t}" for t in tags))
        note["times"] += [row["created_at"], row["updated_at"]]
        report.written += 1
    for a, rel, b in snap.relations:
        if any(k[0] == a for k in notes) and any(k[0] == b for k in notes):
            note_of(a, snap.entities[a]["scope"])["relations"].append(
                f"- {rel.replace(' ', '_')} [[{snap.entities[b]['name']}]]")
            report.relations += 1
    report.entities = len({eid for eid, _ in notes if eid is not None})
    folders: dict[str, SafeFolder] = {}  # scope -> its folder
    taken: dict[str, set[str]] = {}
    target = Path(out)
    if target.is_symlink():
        raise StoreError(f"cannot write {out}: it is a link; Mnemoscope never writes through a link")
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise StoreError(f"cannot write {out}: a basic-memory export goes to a new or empty folder "
                         "(so no note of yours is overwritten and none of an earlier export is left behind)")
    # Written into a hidden folder beside it, renamed when every note is there: a full disk
    # or a kill midway leaves no folder that looks like an export (a kill may leave the
    # hidden one).
    hidden = f".{target.name}.{secrets.token_hex(4)}.partial"
    try:
        with SafeFolder(target.parent) as parent:
            try:
                with parent.sub(hidden) as root:
                    _write_notes(notes, root, folders, taken, report)
                parent.rename(hidden, target.name)
            except BaseException:
                if parent.kind(hidden) == "other":
                    parent.remove_tree(hidden)
                raise
    except OSError as exc:
        raise StoreError(f"cannot write {out}: {exc.strerror or exc}; nothing was written") from None
    report.place("entity -> note", report.entities)
    report.lose("line breaks inside a memory", broken, "an observation is one line: they became spaces")
    report.lose("texts basic-memory reads otherwise", changed, "a trailing (…) is read as context, a #word as a tag")
    report.lose("links to a second entity", extra, "an observation is in one note")
    report.lose("kind other than fact", kinds, "an observation is a fact; its kind became its category")
    rows = snap.memories
    report.lose("sensitivity above low", sum(r["sensitivity"] not in ("low", "public") for r in rows),
                "imported at the import's --sensitivity")
    report.lose("times of each memory", len(rows), "a note has one created and one modified time")
    report.lose("importance, who, pinned, recalls", len(rows), "an observation is text, a category and tags")
    return report


def _write_notes(notes: dict[Any, dict[str, Any]], root: Any, folders: dict[str, Any], taken: dict[str, set[str]],
                 report: ExportReport) -> None:
    """Each note in its scope's folder of ``root``. Folders and notes are named apart
    where case is not told apart (Windows, macOS): group:A and group:a are two folders."""
    from ..files.mirror import _page_name
    from .jsonl import _time

    names: set[str] = set()  # the folders' names, lower-cased
    try:
        for note in notes.values():
            scope = note["scope"]
            if scope not in folders:
                stem = _page_name(scope)
                folder, n = stem, 1
                while folder.lower() in names:
                    n += 1
                    folder = f"{stem} ({n})"
                names.add(folder.lower())
                folders[scope] = root.sub(folder)
                taken[scope] = set()
            sub = folders[scope]
            stem = _page_name(note["title"])
            name, n = f"{stem}.md", 1
            while name.lower() in taken[scope]:  # two titles the file system cannot tell apart
                n += 1
                name = f"{stem} ({n}).md"
            taken[scope].add(name.lower())
            times = [t for t in note["times"] if t is not None]
            meta = [f"title: {_quoted(note['title'])}", f"type: {_quoted(note['type'])}",
                    f"{SCOPE_KEY}: {_quoted(note['scope'])}"]
            if note["entity_scope"] != note["scope"]:
                meta.append(f"{ENTITY_SCOPE_KEY}: {_quoted(note['entity_scope'])}")
            if note["aliases"]:
                meta += ["aliases:", *(f"- {_quoted(a)}" for a in note["aliases"])]
            if times:
                meta += [f"created: {_time(min(times))}", f"modified: {_time(max(times))}"]
            body = [f"# {note['title']}", ""]
            if note["observations"]:
                body += ["## Observations", *note["observations"], ""]
            if note["relations"]:
                body += ["## Relations", *note["relations"], ""]
            text = "---\n" + "\n".join(meta) + "\n---\n\n" + "\n".join(body)
            sub.write(name, text.encode("utf-8"))
            report.data += text
    finally:
        for sub in folders.values():
            sub.close()
