"""Commands for the person who owns the memory: backup, restore-backup, mirror,
privacy-check, conflicts, supersede and keep-both."""

from __future__ import annotations

from pathlib import Path

import click
from mnemoscope.store import SENSITIVITIES
from mnemoscope.store.curation import conflicts as conflict_check
from mnemoscope.store.curation import privacy, resolving
from mnemoscope.store.files import backup as backups
from mnemoscope.store.files.mirror import shown_memories, write_mirror

from .group import (
    Failure,
    chosen_db,
    cli,
    client_option,
    db_option,
    emit_json,
    json_option,
    open_store,
)
from .store_commands import logged


def _current_path() -> str:
    """The database file a snapshot is restored into (a PostgreSQL memory: refused, it is
    restored by copying the snapshot into a new database)."""
    path = chosen_db()
    backups.refuse_in_place(path)
    return path


@cli.command("copy")
@click.argument("source", metavar="SRC")
@click.argument("target", metavar="DST")
@json_option
def copy_command(source: str, target: str, as_json: bool) -> None:
    """Copy a whole memory (memories, vectors, entities, edges, ticks, activity, forgotten
    memories) from SRC to DST, each a file or a postgresql:// URL; DST must be new or empty."""
    import os

    from mnemoscope.store import MemoryStore, on_server
    from mnemoscope.store.files.copying import copy_memory

    if not on_server(source) and not os.path.isfile(source):
        raise Failure(f"{source} does not exist; nothing was copied")
    with MemoryStore(source, read_only=True) as src, MemoryStore(target) as dst:
        report = copy_memory(src, dst)
    if as_json:
        emit_json({"source": report.source, "target": report.target, "counts": report.counts})
    else:
        click.echo(report.summary())


@cli.command("backup")
@db_option
@click.option("--to", "to_dir", metavar="DIR",
              help="folder of snapshots (default: <database file name>-backups beside it)")
@click.option("--keep", type=click.IntRange(1, 100_000), default=backups.DEFAULT_KEEP, show_default=True,
              help="how many snapshots to keep; older ones are removed")
@click.option("--list", "list_only", is_flag=True, help="list the snapshots, take none")
@json_option
def backup_command(to_dir: str | None, keep: int, list_only: bool, as_json: bool) -> None:
    """Snapshot the database (consistent while agents write), checked and named by time.
    Only this database's own snapshots are listed and rotated. A PostgreSQL memory's
    snapshot is a logical copy into an SQLite file (--to is needed: it has no file to keep
    them beside); restore one with `mnemoscope copy SNAPSHOT postgresql://…/new-database`."""
    from mnemoscope.store import on_server

    on_a_server = on_server(chosen_db())
    if on_a_server and to_dir is None:
        raise Failure(backups.NO_FOLDER_ON_SERVER)
    with open_store() as store:
        path = store.path
        if list_only:
            if on_a_server:
                found, older = backups.server_snapshots(store, to_dir), []
            else:
                found = backups.snapshots(path, to_dir)
                older = backups.older_snapshots(path) if to_dir is None else []
            if as_json:
                emit_json({"snapshots": [str(p) for p in found], "older_layout": [str(p) for p in older]})
            else:
                for p in found:
                    click.echo(str(p))
                for p in older:
                    click.echo(f"{p}  (older folder, shared by every database named {Path(path).stem}.*)")
            return
        result = backups.backup(store, to_dir, keep)
    if as_json:
        emit_json({"snapshot": str(result.path), "removed": [str(p) for p in result.removed],
                   "cleaned": [str(p) for p in result.cleaned], "older_layout": [str(p) for p in result.older_layout]})
        return
    click.echo(f"snapshot {result.path} (integrity ok)")
    if result.removed:
        click.echo(f"removed {len(result.removed)} older snapshots (keeping {keep})")
    if result.cleaned:
        click.echo(f"removed {len(result.cleaned)} unfinished snapshot{'s' if len(result.cleaned) > 1 else ''} "
                   f"an interrupted backup left: {', '.join(p.name for p in result.cleaned)}")
    if result.older_layout:
        click.echo(f"note: {len(result.older_layout)} snapshots in {result.older_layout[0].parent}, the folder earlier "
                   f"versions shared between every database named {Path(path).stem}.*, "
                   "are left as they are; they are listed with --list and can still be restored", err=True)


@cli.command("restore-backup")
@db_option
@click.argument("snapshot", type=click.Path(dir_okay=False))
@click.option("--yes", is_flag=True, help="replace the database (without it, only show what differs)")
@click.option("--to", "to_dir", metavar="DIR", help="where the replaced database is kept as a snapshot")
@click.option("--keep", type=click.IntRange(1, 100_000), default=backups.DEFAULT_KEEP, show_default=True)
@json_option
def restore_backup_command(snapshot: str, yes: bool, to_dir: str | None, keep: int, as_json: bool) -> None:
    """Show what differs between the database and a snapshot; with --yes, put the snapshot back
    (the replaced database becomes a snapshot itself)."""
    current = _current_path()
    if not Path(current).is_file():
        raise Failure(f"{current} does not exist; there is nothing to restore into")
    if yes:
        result = backups.restore(current, snapshot, confirm=True, to_dir=to_dir, keep=keep)
        diff, kept = result.comparison, result.safety_snapshot
    else:
        diff, kept = backups.compare(current, snapshot), None
    if as_json:
        emit_json({"restored": yes, "replaced_kept_in": str(kept) if kept else None, "summary": diff.summary(),
                   "current": vars(diff.current), "snapshot": vars(diff.snapshot),
                   "only_current": [i for i, _ in diff.only_current],
                   "only_snapshot": [i for i, _ in diff.only_snapshot], "changed": diff.changed})
        return
    click.echo(f"{'':<12}{'current':>10}{'snapshot':>10}")
    click.echo(f"{'memories':<12}{diff.current.memories:>10}{diff.snapshot.memories:>10}")
    for part in ("layers", "kinds"):
        for name, n in getattr(diff.current, part).items():
            click.echo(f"  {name:<10}{n:>10}{getattr(diff.snapshot, part)[name]:>10}")
    for label, rows in (("only in the current database", diff.only_current),
                        ("only in the snapshot", diff.only_snapshot)):
        for mid, text in rows:
            click.echo(f"{label}: {mid}  {text[:80]}")
    for mid in diff.changed:
        click.echo(f"changed: {mid}")
    click.echo(diff.summary())
    if yes:
        click.echo(f"restored {snapshot} into {current}; the replaced database is kept as {kept}")
    else:
        click.echo("nothing was replaced; add --yes to restore this snapshot")


@cli.command("mirror")
@db_option
@click.option("--out", required=True, metavar="DIR", help="folder to write (new, empty, or an earlier mirror)")
@click.option("--trust", type=click.Choice(SENSITIVITIES), default="medium", show_default=True,
              help="leave out memories (and their aliases) more sensitive than this")
@click.option("--include-archived", is_flag=True, help="also show archived memories")
@json_option
def mirror_command(out: str, trust: str, include_archived: bool, as_json: bool) -> None:
    """Write the memory as markdown pages (an overview, entities, topics, a diary) that open as
    an Obsidian vault; the same database gives the same files."""
    with open_store() as store:
        result = write_mirror(store, out, trust=trust, include_archived=include_archived)
        shown = shown_memories(store, trust=trust, include_archived=include_archived)
    warning = privacy.output_warning([m.text for m in shown], "the mirror")
    if as_json:
        emit_json({"out": str(result.out), "memories": result.memories, "written": result.written,
                   "unchanged": result.unchanged, "removed": result.removed, "kept": result.kept,
                   "privacy_warning": warning})
    else:
        click.echo(f"mirrored {result.memories} memories to {result.out}: {len(result.written)} pages written, "
                   f"{result.unchanged} unchanged, {len(result.removed)} removed")
        for rel in result.kept:
            click.echo(f"kept {rel}: it is not what the mirror last wrote there (edited, or not the mirror's); "
                       "remove it to have it rewritten")
    if warning:
        click.echo(f"warning: {warning}; see 'mnemoscope privacy-check --all'", err=True)


@cli.command("privacy-check")
@db_option
@click.option("--all", "all_findings", is_flag=True,
              help="also list what memories hold that their sensitivity already covers")
@click.option("--raise", "raise_them", is_flag=True,
              help="raise every flagged memory to the sensitivity its content needs (one transaction)")
@client_option
@json_option
def privacy_check_command(all_findings: bool, raise_them: bool, client_name: str, as_json: bool) -> None:
    """Find credentials, phone numbers, e-mail addresses, card numbers and IBANs in memories
    (their text and what their context keeps) and in the activity log's rows (as
    ``activity:ID``) marked less sensitive than they need; one line per finding, never the
    whole secret. Exits 1 when it finds any (after ``--raise``: any left, the log's)."""
    if raise_them:
        if all_findings:
            raise click.UsageError("--raise raises what needs it; leave out --all")
        with open_store() as store, logged(store, "privacy_raise", {}, client_name) as ids:
            raised = privacy.raise_findings(store, privacy.check(store))
            ids.extend(r.after.id for r in raised)
            left = privacy.check(store) + privacy.check_activity(store)
        for r in raised:
            click.echo(f"{r.after.id}: {r.before.sensitivity} -> {r.after.sensitivity}")
        click.echo(f"raised {len(raised)} {'memory' if len(raised) == 1 else 'memories'}")
        for f in left:
            click.echo(f.line())
        if left:
            click.echo(f"{len(left)} findings left (the activity log's rows are cleared by forgetting)", err=True)
            click.get_current_context().exit(1)
        return
    with open_store() as store:
        findings = privacy.check(store, all_findings=all_findings)
        findings += privacy.check_activity(store, all_findings=all_findings)
    if as_json:
        emit_json([vars(f) for f in findings])
    else:
        for f in findings:
            click.echo(f.line())
        click.echo(f"{len(findings)} findings" if findings else "no findings", err=True)
    if findings:
        click.get_current_context().exit(1)


@cli.command("conflicts")
@db_option
@click.option("--include-archived", is_flag=True, help="also look at archived memories")
@json_option
def conflicts_command(include_archived: bool, as_json: bool) -> None:
    """Pairs of memories that say different things about the same subject, newest first."""
    with open_store() as store:
        found = conflict_check.scan(store, include_archived=include_archived)
    if as_json:
        emit_json([c.to_dict() for c in found])
        return
    for c in found:
        click.echo(f"{c.newer} (newer) vs {c.older}  {c.subject}, {c.slot}")
        click.echo(f"    {c.newer_text}")
        click.echo(f"    {c.older_text}")
    click.echo(f"{len(found)} conflicts" if found else "no conflicts", err=True)


def _pair_change(tool: str, change, first: str, second: str, client_name: str):
    """Run ``change(store, first, second)`` as one logged write; returns what it returned."""
    with open_store() as store, logged(store, tool, {"first": first, "second": second}, client_name) as ids:
        result = change(store, first, second)
        ids += [first, second]
    return result


@cli.command("supersede")
@db_option
@click.argument("newer")
@click.argument("older")
@client_option
@json_option
def supersede_command(newer: str, older: str, client_name: str, as_json: bool) -> None:
    """Mark NEWER as replacing OLDER: OLDER is archived and no longer recalled."""
    result = _pair_change("supersede", resolving.supersede, newer, older, client_name)
    if as_json:
        emit_json({"newer": newer, "older": older, "edges": [list(e) for e in result.edges]})
    else:
        click.echo(f"{newer} supersedes {older}; {older} is archived")


@cli.command("keep-both")
@db_option
@click.argument("first")
@click.argument("second")
@client_option
@json_option
def keep_both_command(first: str, second: str, client_name: str, as_json: bool) -> None:
    """Keep both memories of a pair 'conflicts' lists: they are no longer flagged."""
    edges = _pair_change("keep-both", resolving.keep_both, first, second, client_name)
    if as_json:
        emit_json({"kept": [first, second], "edges": [list(e) for e in edges]})
    else:
        click.echo(f"{first} and {second} are both kept; the pair is no longer flagged")
