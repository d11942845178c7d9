"""OpenMemory's export (mem0's app: ``POST /api/v1/backup/export``), read as a mem0 export.

The zip holds ``memories.json`` (``user``, ``apps``, ``categories``, ``memories`` with
``id``, ``content``, ``metadata``, ``state``, ``app_id``, ``category_ids`` and times,
``memory_categories``, ``status_history``, ``access_controls``, ``export_meta``) and
``memories.jsonl.gz`` (each memory a line: ``id``, ``content``, ``metadata``, ``state``,
``app``, ``categories`` by name, times). See :mod:`.mem0` for what each becomes.

A zip is untrusted: a member's size is taken from its header and then read no further
than that and the import's limit (a member that inflates past it, a zip bomb, is refused
by name), and only the two members are read.
"""

from __future__ import annotations

import gzip
import io
import os
import zipfile
from typing import TYPE_CHECKING, Any

from ..model.errors import ValidationError
from ..model.memory import parse_time, validate_scope
from .source import MAX_FILE_BYTES, decode, jsonl_lines, parse_json, read_plain

if TYPE_CHECKING:
    from ..store import MemoryStore
    from .plan import ImportPlan

DOCUMENT = "memories.json"
LINES = "memories.jsonl.gz"
ACTIVE = "active"


def is_zip(path: Any) -> bool:
    try:
        return read_plain(path, 4) == b"PK\x03\x04"
    except OSError:
        return False


def _members(archive: zipfile.ZipFile) -> dict[str, zipfile.ZipInfo]:
    """The export's members by their file name, wherever in the zip they stand."""
    found: dict[str, zipfile.ZipInfo] = {}
    for info in archive.infolist():
        name = info.filename.rsplit("/", 1)[-1]
        if not info.is_dir() and name in (DOCUMENT, LINES) and name not in found:
            found[name] = info
    return found


def is_export(path: Any) -> bool:
    """Whether ``path`` is a zip with OpenMemory's ``memories.json`` or ``memories.jsonl.gz``."""
    try:
        with zipfile.ZipFile(io.BytesIO(read_plain(path, MAX_FILE_BYTES))) as archive:
            return bool(_members(archive))
    except (OSError, zipfile.BadZipFile, ValueError):
        return False


def _read_member(archive: zipfile.ZipFile, info: zipfile.ZipInfo) -> bytes:
    if info.file_size > MAX_FILE_BYTES:
        raise ValidationError(info.filename, f"is {info.file_size:,} bytes unpacked; an import takes at most "
                                             f"{MAX_FILE_BYTES:,}")
    with archive.open(info) as fh:
        data = fh.read(info.file_size + 1)
    if len(data) > info.file_size:
        raise ValidationError(info.filename, "unpacks to more than its header says; refused")
    return data


def _gunzip(data: bytes, name: str) -> bytes:
    with gzip.GzipFile(fileobj=io.BytesIO(data)) as fh:
        out = fh.read(MAX_FILE_BYTES + 1)
    if len(out) > MAX_FILE_BYTES:
        raise ValidationError(name, f"unpacks to over {MAX_FILE_BYTES:,} bytes; an import takes at most that")
    return out


def read_zip(store: MemoryStore, path: Any, plan: ImportPlan, *, now: float | None = None) -> ImportPlan:
    """OpenMemory's export zip: its ``memories.json``, else its ``memories.jsonl.gz``."""
    try:
        with zipfile.ZipFile(io.BytesIO(read_plain(path, MAX_FILE_BYTES + 1))) as archive:
            members = _members(archive)
            if not members:
                plan.error(1, f"is a zip without OpenMemory's {DOCUMENT} or {LINES}")
                return plan
            if DOCUMENT in members:
                doc = parse_json(decode(_read_member(archive, members[DOCUMENT]), DOCUMENT))
                if LINES in members:
                    plan.place(f"{LINES}: the same memories as {DOCUMENT} -> read from {DOCUMENT}")
                return read_doc(store, doc, plan, now=now, where=DOCUMENT)
            text = decode(_gunzip(_read_member(archive, members[LINES]), LINES), LINES)
    except (zipfile.BadZipFile, EOFError, OSError, gzip.BadGzipFile) as exc:
        plan.error(1, f"is not a zip this import can read: {exc}")
        return plan
    except ValidationError as exc:
        plan.error(1, str(exc))
        return plan
    except ValueError as exc:  # not JSON
        plan.error(DOCUMENT, str(exc))
        return plan
    errors: list[tuple[Any, str]] = []
    rows = [(n, row) for n, row in jsonl_lines(text, errors)]
    for n, why in errors:
        plan.error(f"{LINES}:{n}", why)
    at = store.tables.now(now)
    for n, row in rows:
        where = f"{LINES}:{n}"
        try:
            if not isinstance(row, dict):
                raise ValidationError("line", "must be a JSON object")
            cats = row.get("categories") or []
            _memory(store, plan, where, row, plan.scope, [c for c in cats if isinstance(c, str)],
                    row.get("app") if isinstance(row.get("app"), str) else None, at)
        except ValidationError as exc:
            plan.error(where, str(exc))
    return plan


def read_doc(store: MemoryStore, doc: dict[str, Any], plan: ImportPlan, *, now: float | None = None,
             where: str = DOCUMENT) -> ImportPlan:
    """OpenMemory's ``memories.json``: each active memory in its user's scope."""
    at = store.tables.now(now)
    user = doc.get("user") if isinstance(doc.get("user"), dict) else {}
    scope = plan.scope
    if not plan.scope_given and isinstance(user.get("user_id"), str) and user["user_id"].strip():
        try:
            scope = validate_scope(f"user:{user['user_id'].strip()}", "user.user_id")
        except ValidationError as exc:
            plan.error(f"{where}: user", str(exc))
            return plan
    apps = {a.get("id"): a.get("name") for a in doc.get("apps") or [] if isinstance(a, dict)}
    categories = {c.get("id"): c.get("name") for c in doc.get("categories") or [] if isinstance(c, dict)}
    states: dict[str, int] = {}
    for i, mem in enumerate(doc.get("memories") or []):
        at_where = f"{where}: memories[{i}]"
        if not isinstance(mem, dict):
            plan.error(at_where, "must be an object")
            continue
        state = mem.get("state") or ACTIVE
        if state != ACTIVE:
            states[str(state)] = states.get(str(state), 0) + 1
            continue
        ids = mem.get("category_ids") or []
        cats = [categories.get(c) for c in ids if isinstance(categories.get(c), str)] if isinstance(ids, list) else []
        app = apps.get(mem.get("app_id"))
        try:
            _memory(store, plan, at_where, mem, scope, cats, app if isinstance(app, str) else None, at)
        except ValidationError as exc:
            plan.error(at_where, str(exc))
    for state, n in states.items():
        plan.leave_out(f"{where}: memories", f"{n} {state} memor{'y' if n == 1 else 'ies'}",
                       "not active in OpenMemory: it serves none of them to an app")
    for key in ("status_history", "access_controls"):
        if doc.get(key):
            plan.leave_out(f"{where}: {key}", f"{len(doc[key])} {key.replace('_', ' ')}",
                           "OpenMemory's own bookkeeping, not memory")
    return plan


def _memory(store: MemoryStore, plan: ImportPlan, where: str, mem: dict[str, Any], scope: str, cats: list[str],
            app: str | None, at: float) -> None:
    text = mem.get("content")
    if not isinstance(text, str):
        raise ValidationError("content", f"must be a string, got {type(text).__name__}")
    metadata = mem.get("metadata")
    if metadata is not None and not isinstance(metadata, dict):
        raise ValidationError("metadata", "must be an object")
    created = parse_time(mem["created_at"], "created_at") if mem.get("created_at") else at
    updated = parse_time(mem["updated_at"], "updated_at") if mem.get("updated_at") else created
    tags = [c.strip()[:64] for c in cats if c.strip()] + ([f"app:{app}"[:64]] if app else [])
    context = {"openmemory": {k: v for k, v in (("id", mem.get("id")), ("app", app), ("metadata", metadata or None))
                              if v is not None}}
    rec = plan.memory(store, str(mem.get("id") or text), scope=scope, text=text, created=created, updated=updated,
                      kind="fact", tags=list(dict.fromkeys(tags))[: store.config.limits.max_tags],
                      source=f"openmemory:{os.path.basename(plan.source)}", context=context)
    if rec:
        plan.place(f"OpenMemory memory -> memory (fact) in scope {scope}")
    else:
        plan.leave_out(where, f"memory {text[:60]!r}", "an earlier memory has the same id; the first is kept")
