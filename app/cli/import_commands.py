"""``import`` and ``export``: Mnemoscope's own JSONL, and the memory other tools keep
(the MCP memory server, basic-memory, Letta, mem0; see mnemoscope.store.importers).

An import writes all of a file or nothing; ``--dry-run`` shows what it would do and
writes nothing. Both report where each part of the file went and what was left out.
"""

from __future__ import annotations

import os

import click
from mnemoscope.store import KINDS, LAYERS, SENSITIVITIES
from mnemoscope.store.curation import privacy
from mnemoscope.store.importers import basic_memory, detect, formats, import_file, mcp_memory, mem0
from mnemoscope.store.importers.jsonl import POLICIES
from mnemoscope.store.importers.jsonl_export import count_lines
from mnemoscope.store.importers.jsonl_preview import preview_jsonl
from mnemoscope.store.importers.report import ExportReport

from .group import cli, client_option, db_option, db_path, emit_json, json_option, open_store
from .store_commands import _snapshot_first, logged


class FormatChoice(click.Choice):
    """The import formats, read from their one list (store/importers/formats.py) when the
    command runs, not when this module is imported."""

    def __init__(self) -> None:
        super().__init__([])

    @property
    def choices(self):  # noqa: D102 - click reads it for the check, the message and the help
        return formats.names()

    @choices.setter
    def choices(self, value) -> None:
        pass


def _progress(label: str):
    """Progress on standard error, once a percent, for imports big enough to wait for."""
    shown = {"last": -1}

    def report(done: int, total: int) -> None:
        pct = done * 100 // max(total, 1)
        if total >= 2000 and pct != shown["last"]:
            shown["last"] = pct
            click.echo(f"\r{label}: {pct}% ({done:,} of {total:,})", err=True, nl=pct == 100)

    return report


@cli.command("import")
@db_option
@click.argument("path", metavar="PATH")
@click.option("--format", "fmt", type=FormatChoice(), help="the file's format (default: recognised from "
              "the file; a file of another format is refused with the one it looks like)")
@click.option("--scope", metavar="SCOPE", help="scope of what is imported (default: global; mem0 items take "
              "their user, agent or run id)")
@click.option("--dry-run", is_flag=True, help="read the file and say what would be imported; write nothing")
@click.option("--sensitivity", type=click.Choice(SENSITIVITIES), help="sensitivity of every memory imported "
              "(default: low; a Mnemoscope JSONL line keeps its own); the privacy check then says what should be "
              "more sensitive still")
@click.option("--on-conflict", type=click.Choice(POLICIES), default="skip", show_default=True,
              help="jsonl only: what to do with an id that exists")
@click.option("--partial", is_flag=True,
              help="import the good lines or records even if some are bad, and list each one left out (by default "
              "one bad line imports nothing); exits 1 when any was")
@client_option
@json_option
def import_command(path: str, fmt: str | None, scope: str | None, dry_run: bool, sensitivity: str | None,
                   on_conflict: str, partial: bool, client_name: str, as_json: bool) -> None:
    """Import memories from a file: Mnemoscope JSONL, an MCP memory server's memory.jsonl,
    a basic-memory folder, a Letta agent file, a mem0 export or OpenMemory's zip. All of it
    is imported, or nothing if anything in it is bad (each bad line or field is listed).

    Mnemoscope JSONL is one JSON object a line; only "text" is needed:

    \b
      {"text": "Mara is allergic to peanuts", "kind": "fact", "importance": 0.9,
       "who": "Mara", "topic": "food", "scope": "global", "sensitivity": "low",
       "tags": ["health"], "entities": ["Mara"], "created_at": "2026-03-01T09:00:00Z"}

    kind is one of fact, lesson, skill, reflection, event; importance runs from 0 to 1.
    A line without an "id" gets one made from its content, so importing the same file
    again skips it. The lines "mnemoscope export" writes import as they are.

    Another tool's file or folder imported again is brought in step: what it changed is
    updated, what it no longer has is forgotten (restorable), the rest is not written;
    --dry-run lists the changes first."""
    seen = detect(path)
    if fmt == "jsonl" and seen not in (None, "jsonl"):
        raise click.ClickException(f"{path} is not {formats.by_name('jsonl').noun}: it looks like "
                                   f"{formats.by_name(seen).noun}; import it with --format {seen}")
    fmt = fmt or seen
    if fmt in (None, "jsonl") and not dry_run:
        if sensitivity:
            raise click.UsageError("--sensitivity is for other tools' files; each line of a Mnemoscope JSONL "
                                   "export keeps its own sensitivity")
        _import_jsonl(path, on_conflict, partial, client_name, as_json)
        return
    if on_conflict != "skip":
        raise click.UsageError("--on-conflict is for jsonl; importing another tool's file again brings the "
                               "memories it gave in step with it")
    with _store_for(dry_run) as store:
        if dry_run and fmt == "jsonl":
            result = preview_jsonl(store, path)
        elif dry_run:
            result = import_file(store, path, fmt, scope=scope, dry_run=True, sensitivity=sensitivity,
                                 partial=partial)
        else:
            with logged(store, "import", {"file": path, "format": fmt, "scope": scope, "sensitivity": sensitivity},
                        client_name) as ids:
                result = import_file(store, path, fmt, scope=scope, progress=_progress("importing"),
                                     sensitivity=sensitivity, partial=partial,
                                     before_changes=lambda _result: _snapshot_first(store, import_policy="overwrite"))
                ids.extend(result.ids[:200])
    if as_json:
        emit_json(result.to_dict())
    else:
        _import_report(result)
    if getattr(result, "bad", 0):
        click.get_current_context().exit(1)


def _import_report(result) -> None:
    click.echo(result.summary())
    for what, n in result.placed.items():
        click.echo(f"  {n:>7,}  {what}")
    changes = getattr(result, "changes", [])
    if changes:
        click.echo("in step with the source (as imported before):" if not result.dry_run else
                   "would bring in step with the source (as imported before):")
        for change in changes[:200]:
            click.echo(f"  {change}")
        if len(changes) > 200:
            click.echo(f"  … and {len(changes) - 200} more (--json lists them all)")
        if result.retired:
            click.echo("  (a retired memory is forgotten: mnemoscope restore ID brings it back)")
    if result.left_out:
        click.echo("left out:")
        for item in result.left_out[:200]:
            click.echo(f"  {item}")
        if len(result.left_out) > 200:
            click.echo(f"  … and {len(result.left_out) - 200} more (--json lists them all)")
    _privacy_report(result.findings, result.dry_run)


def _privacy_report(findings: list, dry_run: bool) -> None:
    """What the privacy check found in what came in, on standard error, with the one
    command that raises it (an agent may be served an imported memory at once)."""
    if not findings:
        return
    flagged = {}
    for f in findings:
        flagged.setdefault(f.memory_id, []).append(f)
    click.echo(f"privacy: {len(flagged)} imported {'memory' if len(flagged) == 1 else 'memories'} should be more "
               "sensitive than imported:", err=True)
    for mid, found in list(flagged.items())[:20]:
        what = ", ".join(sorted({f"{f.what} ({f.where}) needs {f.needed}" for f in found}))
        click.echo(f"  {mid}: {what}", err=True)
    if len(flagged) > 20:
        click.echo(f"  … and {len(flagged) - 20} more", err=True)
    if dry_run:
        click.echo("  import with --sensitivity, or import and then raise them: mnemoscope privacy-check --raise",
                   err=True)
    else:
        click.echo("  raise them to what they need: mnemoscope privacy-check --raise", err=True)


def _store_for(dry_run: bool):
    """The database to import into; for a dry run into a database not made yet, an empty
    one in memory (what it would hold is what the file gives), so nothing is created."""
    from mnemoscope.store import DatabaseRefused, MemoryStore, on_server

    path = db_path()
    if dry_run and path is not None and not on_server(path) and not os.path.exists(path):
        return MemoryStore(":memory:")
    try:
        return open_store(create=not dry_run, read_only=dry_run)
    except DatabaseRefused as exc:
        if not (dry_run and on_server(path or "") and exc.reason == "unreadable"):
            raise
        # A PostgreSQL database Mnemoscope has not written yet: what it would hold is what
        # the file gives (one of an older schema: compared with none of its memories).
        click.echo(f"note: {exc}; the dry run compares with an empty memory", err=True)
        return MemoryStore(":memory:")


def _import_jsonl(path: str, on_conflict: str, partial: bool, client_name: str, as_json: bool) -> None:
    with open_store(create=True) as store, logged(store, "import", {"file": path, "on_conflict": on_conflict},
                                                  client_name):
        from .meaning_commands import _run, backfill_first

        _snapshot_first(store, import_policy=on_conflict)
        backfill_first(store)
        report = _run(store, "embedding the import",
                      lambda progress: store.import_jsonl(path, policy=on_conflict, partial=partial, progress=progress))
    if as_json:
        emit_json(report.to_dict())
    else:
        click.echo(report.summary())
        for number, reason in report.errors:
            click.echo(f"  line {number}: {reason}", err=True)
    if report.errors:
        click.get_current_context().exit(1)


@cli.command("export")
@db_option
@click.option("--out", metavar="FILE", help="file to write (default: standard output); written whole or not at "
              "all, never through a link")
@click.option("--format", "fmt", type=click.Choice(["jsonl", "mcp-memory", "mem0", "basic-memory"]), default="jsonl",
              show_default=True,
              help="jsonl: everything (every field of every memory, every entity and relation); mcp-memory: the "
              "MCP memory server's memory.jsonl (every memory as an observation); mem0: mem0's get_all() answer "
              "(every field kept in each item's metadata); basic-memory: a folder of notes (--out names a new or "
              "empty folder). The report counts what a format cannot carry")
@click.option("--kind", type=click.Choice(KINDS), help="jsonl only")
@click.option("--layer", type=click.Choice(LAYERS), help="jsonl only")
@click.option("--scope")
@json_option
def export_command(out: str | None, fmt: str, kind: str | None, layer: str | None, scope: str | None,
                   as_json: bool) -> None:
    """Export memories: as JSONL (every memory, entity and relation, so an import gives
    the same back), or for another tool: an MCP memory server file, mem0's memories, a
    basic-memory folder; each imports back as what it carried. A report on standard error (with
    --json, on standard output when --out is given) says what went where and what the
    format could not carry."""
    if fmt != "jsonl" and (kind or layer):
        raise click.UsageError("--kind and --layer are for the jsonl format")
    with open_store() as store:
        if fmt == "basic-memory":
            if out is None:
                raise click.UsageError("--format basic-memory writes a folder of notes: name it with --out")
            report = basic_memory.export(store, out, scope=scope)
        elif fmt in ("mcp-memory", "mem0"):
            report = (mcp_memory if fmt == "mcp-memory" else mem0).export(store, out, scope=scope)
        else:
            report = _jsonl_export(store, out, kind, layer, scope)
        texts = [m.text for m in store.list(kind=kind, layer=layer, scope=scope, with_links=False)]
    if out is None:
        click.echo(report.data, nl=fmt != "jsonl" and bool(report.data))
    if as_json and out is not None:
        emit_json(report.to_dict())
    else:
        for line in report.lines():
            click.echo(line, err=True)
    warning = privacy.output_warning(texts, "the export")
    if warning:
        click.echo(f"warning: {warning}; see 'mnemoscope privacy-check --all'", err=True)


def _jsonl_export(store, out: str | None, kind: str | None, layer: str | None, scope: str | None) -> ExportReport:
    data = store.export_jsonl(out, kind=kind, layer=layer, scope=scope)
    report = ExportReport("jsonl", out, data=data)
    report.written, report.entities, report.relations = count_lines(data)
    report.memories = report.written
    report.place("memory -> line with every field, its entities and links", report.written)
    report.place("entity -> entity line", report.entities)
    report.place("relation -> relation line", report.relations)
    return report
