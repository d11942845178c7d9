"""The store's commands: init, demo, remember, recall, update, forget, restore, tick,
stats, brief, capture, activity, eval (import and export: import_commands).

Commands that write are recorded in the activity log as the command line's calls;
commands that only look write nothing.
"""

from __future__ import annotations

import json
import os
import sys
import time
from contextlib import AbstractContextManager
from typing import Any

import click
from mnemoscope.store import KINDS, SENSITIVITIES, MemoryStore
from mnemoscope.store.agents import activity as activity_log
from mnemoscope.store.agents.capture import SOURCE_KINDS, parse_capture_request
from mnemoscope.store.files.backup import is_bulk_change, snapshot_before_bulk_change
from mnemoscope.store.files.demo import default_db_path, load_demo

from .group import (
    CLI_CLIENT,
    Failure,
    cli,
    client_option,
    db_option,
    db_path,
    emit_json,
    json_option,
    open_store,
)


def logged(store: MemoryStore, tool: str, args: dict[str, Any], client: str = CLI_CLIENT) -> AbstractContextManager[list[str]]:
    """Record a write command in the activity log, with the memory ids it appends to the
    yielded list, whether it succeeds or fails."""
    return activity_log.logged(store, client=client, door="cli", tool=tool, scope=str(args.get("scope") or ""),
                               trust=str(args.get("trust") or ""), args=args)


def _snapshot_first(store: MemoryStore, **change: Any) -> None:
    """A bulk change a person starts is preceded by a snapshot (store.backup)."""
    if not is_bulk_change(**change):
        return
    path = snapshot_before_bulk_change(store)
    if path is not None:
        click.echo(f"snapshot before the change: {path}", err=True)


def _create_at(path: str | None) -> str:
    from mnemoscope.store import on_server

    if path is not None and on_server(path):
        return path
    path = path or default_db_path()
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    return path


@cli.command("init")
@db_option
@json_option
def init_command(as_json: bool) -> None:
    """Create an empty memory database (or check an existing one)."""
    with MemoryStore(_create_at(db_path())) as store:
        if as_json:
            emit_json({"path": store.path, "memories": store.count()})
        else:
            click.echo(f"ready: {store.path} ({store.count()} memories)")


@cli.command("demo")
@db_option
@json_option
def demo_command(as_json: bool) -> None:
    """Load the demo memories into the database."""
    with MemoryStore(_create_at(db_path())) as store:
        report = load_demo(store)
        layers = store.stats()["layers"]
        if as_json:
            emit_json({"path": store.path, "imported": report.imported, "layers": layers})
            return
        click.echo(f"demo memories: {report.summary()} into {store.path}")
        click.echo("layers: " + ", ".join(f"{k} {v}" for k, v in layers.items()))


@cli.command("remember")
@db_option
@click.argument("text")
@click.option("--kind", type=click.Choice(KINDS), default="fact", show_default=True)
@click.option("--importance", type=click.FloatRange(0, 1), default=0.5, show_default=True, help="0 to 1")
@click.option("--who", default="", help="the person it is about")
@click.option("--topic", default="")
@click.option("--scope", default="global", show_default=True, help="global, group:ID or private:ID")
@click.option("--sensitivity", type=click.Choice(SENSITIVITIES), default="low", show_default=True)
@click.option("--tag", "tags", multiple=True, help="a tag (repeatable)")
@click.option("--entity", "entities", multiple=True, help="an entity the memory mentions (repeatable)")
@click.option("--pin", is_flag=True, help="pinned memories never fade")
@click.option("--allow-duplicate", is_flag=True, help="add it even if a memory says the same")
@client_option
@json_option
def remember_command(text: str, client_name: str, as_json: bool, allow_duplicate: bool, **fields: Any) -> None:
    """Write one memory (a near-duplicate, by characters or meaning, reinforces the existing one instead)."""
    from .meaning_commands import backfill_first

    fields = dict(fields, tags=list(fields["tags"]), entities=list(fields["entities"]),
                  pinned=fields.pop("pin"))
    with open_store(create=True) as store, logged(store, "remember", {"text": text, **fields}, client_name) as ids:
        backfill_first(store)
        result = store.remember(text, **fields, dedupe=not allow_duplicate)
        ids.append(result.memory.id)
    if as_json:
        emit_json(result.to_dict())
    else:
        click.echo(result.message)


@cli.command("recall")
@db_option
@click.argument("query")
@click.option("-k", type=click.IntRange(1, 1000), default=5, show_default=True, help="how many")
@click.option("--scope", default="global", show_default=True, help="the caller's scope: sees it and global")
@click.option("--trust", type=click.Choice(SENSITIVITIES), default="medium", show_default=True,
              help="maximum sensitivity shown")
@click.option("--explain", is_flag=True, help="show each part of the score")
@click.option("--reinforce", is_flag=True, help="count this as a recall (writes)")
@click.option("--min-relevance", type=click.FloatRange(0, 1), default=None,
              help="leave out hits under this relevance (0-1; default: none, recall ranks)")
@client_option
@json_option
def recall_command(query: str, k: int, scope: str, trust: str, explain: bool, reinforce: bool,
                   min_relevance: float | None, client_name: str, as_json: bool) -> None:
    """Find the memories most relevant to a query, best first, each with its relevance
    (writes nothing unless --reinforce)."""
    with open_store() as store:
        if reinforce:
            with logged(store, "recall", {"query": query, "k": k, "scope": scope, "trust": trust},
                        client_name) as ids:
                hits = store.recall(query, k=k, scope=scope, trust=trust, explain=explain, reinforce=True,
                                    min_relevance=min_relevance)
                ids.extend(h.id for h in hits)
        else:
            hits = store.recall(query, k=k, scope=scope, trust=trust, explain=explain, min_relevance=min_relevance)
        meaning = store.vector_status()
    if hits.note:
        click.echo(f"note: {hits.note}", err=True)
    # What recall by meaning could not use (memories without a vector, another model's): said
    # on standard error, so that the hits (and --json's list) stay as they are.
    if not meaning.complete:
        click.echo(f"note: {meaning.note()}", err=True)
    if as_json:
        emit_json([h.to_dict() for h in hits])
        return
    if not hits:
        click.echo("nothing relevant remembered")
    for h in hits:
        text = "[redacted: " + h.sensitivity + "]" if h.redacted else h.text
        outdated = f" (possibly outdated: {h.outdated_by} is newer and says otherwise)" if h.outdated_by else ""
        click.echo(f"[{h.score:.3f}] {h.id} ({h.kind}, {h.layer}, relevance {h.relevance:.2f}) {text}{outdated}")
        if explain:
            click.echo(f"    why: {json.dumps(h.why, ensure_ascii=False)}")
    if explain:
        click.echo(f"meaning: {meaning.note()}")


@cli.command("update")
@db_option
@click.argument("memory_id")
@click.option("--text")
@click.option("--kind", type=click.Choice(KINDS))
@click.option("--importance", type=click.FloatRange(0, 1))
@click.option("--who")
@click.option("--topic")
@click.option("--scope")
@click.option("--sensitivity", type=click.Choice(SENSITIVITIES))
@click.option("--tag", "tags", multiple=True, help="replace the tags (repeatable)")
@click.option("--pin/--unpin", "pinned", default=None, help="pin (never fades) or unpin")
@client_option
@json_option
def update_command(memory_id: str, client_name: str, as_json: bool, **fields: Any) -> None:
    """Change fields of a memory; what is not given stays."""
    changes = {k: v for k, v in fields.items() if v is not None and v != ()}
    if "tags" in changes:
        changes["tags"] = list(changes["tags"])
    if not changes:
        raise click.UsageError("give at least one field to change, e.g. --text or --importance")
    with open_store() as store, logged(store, "update", {"memory_id": memory_id, **changes}, client_name) as ids:
        result = store.update(memory_id, **changes)
        ids.append(memory_id)
    if as_json:
        emit_json(result.to_dict())
    else:
        click.echo(f"updated {memory_id}: {', '.join(sorted(changes))}")


@cli.command("forget")
@db_option
@click.argument("memory_id")
@client_option
@json_option
def forget_command(memory_id: str, client_name: str, as_json: bool) -> None:
    """Forget a memory; 'restore' (or the inspector's Activity view) brings it back."""
    with open_store() as store, logged(store, "forget", {"memory_id": memory_id}, client_name) as ids:
        deleted = activity_log.forget(store, memory_id, client=client_name)
        ids.append(memory_id)
    if as_json:
        emit_json(deleted.to_dict())
    else:
        click.echo(f"forgot {memory_id}: {deleted.row['text']}  (undo: mnemoscope restore {memory_id})")


@cli.command("restore")
@db_option
@click.argument("memory_id", required=False)
@client_option
@json_option
def restore_command(memory_id: str | None, client_name: str, as_json: bool) -> None:
    """Bring back a forgotten memory; without an id, list the ones that can come back."""
    with open_store() as store:
        if memory_id is None:
            items = activity_log.forgotten(store)
            if as_json:
                emit_json([{"memory_id": f.memory_id, "at": f.at, "client": f.client, "text": f.text}
                           for f in items])
            elif not items:
                click.echo("nothing forgotten that can be restored")
            for f in [] if as_json else items:
                click.echo(f"{f.memory_id}  by {f.client or '?'}: {f.text}")
            return
        with logged(store, "restore", {"memory_id": memory_id}, client_name) as ids:
            memory = activity_log.restore_forgotten(store, memory_id)
            ids.append(memory_id)
    if as_json:
        emit_json({"restored": memory.id, "memory": memory.to_dict()})
    else:
        click.echo(f"restored {memory.id}: {memory.text}")


@cli.command("tick")
@db_option
@click.option("--advance-days", type=click.FloatRange(0, 36500), metavar="N",
              help="move the store's clock N days forward first")
@client_option
@json_option
def tick_command(advance_days: float | None, client_name: str, as_json: bool) -> None:
    """Run the forgetting clock: write strengths and layers."""
    with open_store() as store, logged(store, "tick", {"advance_days": advance_days}, client_name):
        _snapshot_first(store, advance_days=advance_days)
        report = store.tick(advance_days=advance_days)
    if as_json:
        emit_json(report.to_dict())
        return
    click.echo(f"tick {report.tick_id}: {report.summary()}; {report.changed} memories updated")
    click.echo("layers: " + ", ".join(f"{k} {v}" for k, v in report.layer_counts.items()))


@cli.command("stats")
@db_option
@json_option
def stats_command(as_json: bool) -> None:
    """Counts per layer, kind and scope."""
    from ..default_database import default_database

    chosen = None if db_path() is not None else default_database()
    with open_store() as store:
        stats = store.stats()
        meaning = store.vector_status().to_dict()
        ranked = store.recall_status()
        recall_by = ranked.to_dict() if ranked is not None else {
            "embedder": meaning["embedder"], "note": store.recall_note or "recall ranks by the similarity vectors"}
    if as_json:
        emit_json(dict(stats, vectors=meaning, recall_vectors=recall_by,
                       default_database=chosen.to_dict() if chosen else None))
        return
    click.echo(f"{stats['path']}: {stats['memories']} memories, {stats['entities']} entities")
    if chosen is not None:
        click.echo(f"the default database: {chosen.why} (the window and agents without --db use it)")
    engine = stats["backend"]
    click.echo(f"backend: {engine['backend']} {engine['server_version']}"
               + (f", extensions {', '.join(f'{k} {v}' for k, v in engine['extensions'].items())}"
                  if engine["extensions"] else "") + f"; vectors: {engine['vectors']}")
    for label in ("layers", "kinds", "scopes"):
        click.echo(f"{label + ':':7} " + ", ".join(f"{k} {v}" for k, v in stats[label].items()))
    if stats["clock_offset_days"]:
        click.echo(f"clock:  advanced {stats['clock_offset_days']:g} days")
    click.echo(f"meaning: {meaning['note']}")
    click.echo(f"recall:  {recall_by['note']}")


@cli.command("brief")
@db_option
@click.option("--limit", type=click.IntRange(1, 1000), default=5, show_default=True)
@click.option("--scope", default="global", show_default=True)
@click.option("--trust", type=click.Choice(SENSITIVITIES), default="medium", show_default=True)
@json_option
def brief_command(limit: int, scope: str, trust: str, as_json: bool) -> None:
    """The wake-up brief: the strongest, most important facts."""
    with open_store() as store:
        text = store.brief(limit=limit, scope=scope, trust=trust)
    if as_json:
        emit_json({"brief": text})
    else:
        click.echo(text or "(nothing to brief)")


@cli.command("capture")
@db_option
@click.argument("file")
@click.option("--source-kind", type=click.Choice(SOURCE_KINDS), default="event", show_default=True)
@click.option("--source", default="")
@click.option("--scope", default="global", show_default=True)
@click.option("--sensitivity", type=click.Choice(SENSITIVITIES), default="low", show_default=True)
@click.option("--allow-duplicate", is_flag=True, help="store it even if a memory already says the same")
@client_option
@json_option
def capture_command(file: str, source_kind: str, source: str, scope: str, sensitivity: str, client_name: str,
                    as_json: bool, allow_duplicate: bool) -> None:
    """Capture arbitrary JSON content (a FILE, or - for standard input) as a memory.

    The JSON is the content itself, or a request object with "content" and any of
    source, source_kind, context, reason_to_remember, proposed_type (or proposed_kind),
    summary, tags, scope, sensitivity, timestamp, importance; any other key is refused."""
    try:
        raw = sys.stdin.read() if file == "-" else open(file, encoding="utf-8").read()  # noqa: SIM115
    except (OSError, UnicodeDecodeError) as exc:
        raise Failure(f"cannot read {file}: {getattr(exc, 'strerror', None) or exc}") from None
    try:
        payload = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise Failure(f"capture content in {file} is not valid JSON: {exc}") from None
    kwargs: dict[str, Any] = {"source_kind": source_kind, "scope": scope, "sensitivity": sensitivity,
                              "source": source, "allow_duplicate": allow_duplicate}
    content = payload
    if isinstance(payload, dict) and "content" in payload:  # a full request with options
        content, options = parse_capture_request(payload)  # an unknown key is refused, not dropped
        kwargs.update(options)
    from .meaning_commands import backfill_first

    with open_store(create=True) as store:
        backfill_first(store)  # so that a repeat is found by meaning too
        with logged(store, "capture", {"file": file, **kwargs}, client_name) as ids:
            result = store.capture(content, **kwargs)
            ids.append(result.primary.id)
    if as_json:
        emit_json(result.to_dict())
        return
    if not result.created:
        click.echo(result.message)
        return
    click.echo(f"captured {result.primary.id} ({result.primary.kind}): {result.primary.text}")
    if result.created_entities:
        click.echo("new entities: " + ", ".join(e.name for e in result.created_entities))
    click.echo(f"edges written: {len(result.edges)}")


@cli.command("activity")
@db_option
@click.option("--limit", type=click.IntRange(1, 100_000), default=30, show_default=True)
@click.option("--client", help="only this client's calls")
@click.option("--tool", help="only calls of this tool")
@click.option("--trust", type=click.Choice(SENSITIVITIES), default="medium", show_default=True,
              help="show the texts of calls up to this sensitivity; above it, only what was called")
@json_option
def activity_command(limit: int, client: str | None, tool: str | None, trust: str, as_json: bool) -> None:
    """The newest calls agents (and write commands) made, newest first."""
    with open_store() as store:
        entries = activity_log.recent(store, limit, client=client, tool=tool, trust=trust)
    if as_json:
        emit_json([e.to_dict() for e in entries])
        return
    if not entries:
        click.echo("no activity recorded")
    for e in entries:
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(e.when))
        status = "ok" if e.ok else f"refused: {e.error}"
        ids = f" → {', '.join(e.memory_ids[:5])}{' …' if len(e.memory_ids) > 5 else ''}" if e.memory_ids else ""
        click.echo(f"{when}  {e.client} [{e.door}] {e.tool}({e.summary}){ids}  {e.duration_ms:.1f} ms  {status}")


@cli.command("eval")
@click.option("--cases", metavar="FILE", help="evaluation JSONL (default: the bundled set)")
@json_option
def eval_command(cases: str | None, as_json: bool) -> None:
    """Measure recall@1, recall@3 and MRR on the evaluation set and on the paraphrase set
    (recall by meaning), each with hash beside the default embedder."""
    from mnemoscope.store.recall.evaluation import run_eval, run_paraphrase_eval

    keyword = [run_eval(cases, embedder=spec) for spec in ("hash", None)]
    report = keyword[1]
    paraphrase = [run_paraphrase_eval(spec) for spec in ("hash", None)]
    if as_json:
        emit_json(dict(report, keyword=keyword, paraphrase=paraphrase))
        return
    click.echo(f"cases: {report['cases']} ({report['negative_cases']} that the memories do not answer; "
               "abstention AUC: how well relevance tells those apart)")
    click.echo(f"  {'embedder':46} recall@1  recall@3  MRR    abstention AUC")
    for r in keyword:
        auc = "-" if r["abstention_auc"] is None else f"{r['abstention_auc']:.3f}"
        click.echo(f"  {r['embedder']:46} {r['recall@1']:.3f}     {r['recall@3']:.3f}     {r['mrr']:.3f}  {auc}")
    for miss in report["misses"]:
        click.echo(f"  miss ({report['embedder']}): {miss}")
    click.echo(f"paraphrases ({paraphrase[0]['queries']} queries sharing no word with their answers):")
    click.echo(f"  {'embedder':46} recall@1  recall@3  MRR")
    for p in paraphrase:
        click.echo(f"  {p['embedder']:46} {p['recall@1']:.3f}     {p['recall@3']:.3f}     {p['mrr']:.3f}")
