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
  modification time;
- everything else (headings aside: prose, code, tables) is not an observation, and the
  report lists each note's left-out text by its line numbers.
Files that are not ``.md`` and folders starting with ``.`` are listed as left out.
"""

from __future__ import annotations

import os
import re
from datetime import date, datetime
from typing import TYPE_CHECKING, Any

from ..errors import ImportRefused, NotPlainFile, StoreError, ValidationError
from ..model import parse_time
from . import frontmatter
from .plan import ImportPlan, check_name, check_relation, entity_kind
from .source import TooLarge, decode, read_plain

if TYPE_CHECKING:
    from ..store import MemoryStore

FORMAT = "basic-memory"
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
        etype = meta.get("type") if isinstance(meta.get("type"), str) else "note"
        kind = entity_kind(etype)
        title = plan.entity(title, "topic" if kind == "other" and etype == "note" else kind)
        plan.place("note -> entity")
        parsed.append((rel, meta, body, first, title, created, updated))
        # What links name a note by: its permalink (basic-memory's [[projects/orion]]) and
        # its frontmatter aliases; both become the entity's aliases.
        try:
            names = [check_name(a, "aliases") for a in _aliases_of(meta)]
            permalink = meta.get("permalink") if isinstance(meta.get("permalink"), str) else permalink_of(rel)
            names.append(check_name(permalink, "permalink"))
        except ValidationError as exc:
            plan.error(f"{rel}:1", f"frontmatter: {exc}")
            continue
        for name in names:
            plan.alias(title, name)
    for rel, meta, body, first, title, created, updated in parsed:
        _note(store, plan, rel, meta, body, first, title, created, updated)
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
        _relate(plan, title, "links_to", check_name(m["target"].split("|")[0], "link target"))
    if not text:
        plan.leave_out(f"{rel}:{number}", "an observation with only tags", "no text to remember")
        return
    category = match["category"].strip()
    ctx = {"basic_memory": {"file": rel, "line": number, "permalink": meta.get("permalink"), "category": category,
                            **({"context": context} if context else {})}}
    rec = plan.memory(store, f"{rel}\x1f{text}", text=text, created=created + order * 0.001,
                      updated=updated + order * 0.001, entities=(title,), kind="fact", topic=category[:200],
                      tags=list(dict.fromkeys([*note_tags, *tags]))[: store.config.limits.max_tags],
                      source=f"basic-memory:{rel}", context=ctx)
    if rec:
        plan.place("observation -> memory (fact) mentioning the note's entity")
    else:
        plan.leave_out(f"{rel}:{number}", "observation", "the same text twice in one note")


def _relate(plan: ImportPlan, src: str, rtype: str, target: str) -> None:
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
