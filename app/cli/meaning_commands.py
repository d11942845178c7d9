"""Commands for recall by meaning: ``reembed`` (switch models, or embed what has no
vector yet) and the backfill a writing command runs first, with a progress bar."""

from __future__ import annotations

import sys

import click
from mnemoscope.store import MemoryStore

from .group import cli, db_option, emit_json, json_option, open_store


def _run(store: MemoryStore, label: str, job) -> object:
    bar = None

    def progress(done: int, total: int) -> None:
        nonlocal bar
        if bar is None:
            bar = click.progressbar(length=total, label=label, file=sys.stderr)
            bar.__enter__()
        bar.update(done - bar.pos)

    try:
        return job(progress=progress)
    finally:
        if bar is not None:
            bar.__exit__(None, None, None)


def backfill_first(store: MemoryStore) -> None:
    """Embed the memories that have no vector yet (a database from before vectors), with
    a progress bar on standard error; a database whose vectors are another model's is
    left as it is (``mnemoscope reembed`` switches)."""
    if store.read_only:
        return
    status = store.vector_status()
    if status.memories > status.with_vector and status.unavailable:
        click.echo(f"{status.memories - status.with_vector} memories are left without a vector for a later "
                   f"backfill (they are found by keywords until then): {status.unavailable}", err=True)
    elif status.memories > status.with_vector and (status.stored_by in (None, status.embedder)
                                                   or not status.with_vector):
        report = _run(store, "embedding memories", store.backfill)
        for mid, why in report.skipped:
            click.echo(f"  {mid} has no vector: {why}", err=True)
        if report.failed:
            click.echo(report.note(), err=True)


@cli.command("reembed")
@db_option
@click.option("--only-missing", is_flag=True, help="keep the vectors there are; embed only the memories without one")
@json_option
def reembed_command(only_missing: bool, as_json: bool) -> None:
    """Embed every memory again with the configured embedders (after a change of model:
    --embedder, [embedder] model or recall_model), replacing the vectors; resumable. The
    recall vectors follow the similarity ones (multilingual-e5-small: ~30 ms a memory)."""
    with open_store() as store:
        job = store.backfill if only_missing else store.reembed
        report = _run(store, "embedding memories", job)
        status = store.vector_status()
        recall_report = recall_status = None
        if store.recall_status() is not None:
            recall_report = _run(store, "recall vectors", lambda progress: job(progress=progress, of="recall"))
            recall_status = store.recall_status()
    if as_json:
        out = {"embedded": report.embedded, "skipped": [{"id": i, "reason": r} for i, r in report.skipped],
               "seconds": round(report.seconds, 2), **status.to_dict()}
        if recall_report is not None:
            out["recall"] = {"embedded": recall_report.embedded, "seconds": round(recall_report.seconds, 2),
                             **recall_status.to_dict()}
        emit_json(out)
        return
    click.echo(f"embedded {report.embedded} memories in {report.seconds:.1f} s with {status.embedder}")
    if recall_report is not None:
        click.echo(f"recall vectors: {recall_report.embedded} memories in {recall_report.seconds:.1f} s with "
                   f"{recall_status.embedder}")
        if recall_report.failed:
            click.echo(recall_report.note(), err=True)
    for mid, why in report.skipped:
        click.echo(f"  {mid} has no vector: {why}", err=True)
