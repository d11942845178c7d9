"""The store's command-line half: init, demo, remember, recall, tick, stats, brief,
capture, import, export, eval."""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from store import KINDS, SENSITIVITIES, MemoryStore
from store.demo import default_db_path, load_demo, open_default
from store.errors import StoreError
from store.jsonl import POLICIES
from store.recall import hits_json


def open_store(args: argparse.Namespace, *, create: bool = False) -> MemoryStore:
    """The database named by ``--db`` (which must exist unless ``create``), else the default one."""
    path = getattr(args, "db", None)
    if path is None:
        return open_default()
    if not create and not os.path.exists(path):
        raise StoreError(f"{path} does not exist; create it with 'mnemoscope --db {path} init' (or 'demo')")
    return MemoryStore(path)


def cmd_init(args: argparse.Namespace) -> int:
    path = args.db or default_db_path()
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with MemoryStore(path) as store:
        print(f"ready: {store.path} ({store.count()} memories)")
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    path = args.db or default_db_path()
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with MemoryStore(path) as store:
        report = load_demo(store)
        print(f"demo memories: {report.summary()} into {store.path}")
        print("layers: " + ", ".join(f"{k} {v}" for k, v in store.stats()["layers"].items()))
    return 0


def cmd_remember(args: argparse.Namespace) -> int:
    with open_store(args, create=True) as store:
        result = store.remember(args.text, kind=args.kind, importance=args.importance, who=args.who or "",
                                topic=args.topic or "", scope=args.scope, sensitivity=args.sensitivity,
                                tags=args.tag, entities=args.entity, pinned=args.pin)
        print(result.message)
    return 0


def cmd_recall(args: argparse.Namespace) -> int:
    with open_store(args) as store:
        hits = store.recall(args.query, k=args.k, scope=args.scope, trust=args.trust, explain=args.explain,
                            reinforce=args.reinforce)
        if args.json:
            print(hits_json(hits))
            return 0
        if not hits:
            print("nothing relevant remembered")
        for h in hits:
            text = "[redacted: " + h.sensitivity + "]" if h.redacted else h.text
            print(f"[{h.score:.3f}] ({h.kind}, {h.layer}) {text}")
            if args.explain:
                print(f"    why: {json.dumps(h.why, ensure_ascii=False)}")
    return 0


def cmd_tick(args: argparse.Namespace) -> int:
    with open_store(args) as store:
        report = store.tick(advance_days=args.advance_days)
        print(f"tick {report.tick_id}: {report.summary()}; {report.changed} memories updated")
        print("layers: " + ", ".join(f"{k} {v}" for k, v in report.layer_counts.items()))
    return 0


def cmd_stats(args: argparse.Namespace) -> int:
    with open_store(args) as store:
        stats = store.stats()
        if args.json:
            print(json.dumps(stats, ensure_ascii=False, indent=2))
            return 0
        print(f"{stats['path']}: {stats['memories']} memories, {stats['entities']} entities")
        print("layers: " + ", ".join(f"{k} {v}" for k, v in stats["layers"].items()))
        print("kinds:  " + ", ".join(f"{k} {v}" for k, v in stats["kinds"].items()))
        print("scopes: " + ", ".join(f"{k} {v}" for k, v in stats["scopes"].items()))
        if stats["clock_offset_days"]:
            print(f"clock:  advanced {stats['clock_offset_days']:g} days")
    return 0


def cmd_brief(args: argparse.Namespace) -> int:
    with open_store(args) as store:
        print(store.brief(limit=args.limit, scope=args.scope, trust=args.trust) or "(nothing to brief)")
    return 0


def cmd_capture(args: argparse.Namespace) -> int:
    try:
        if args.file == "-":
            raw = sys.stdin.read()
        else:
            with open(args.file, encoding="utf-8") as fh:
                raw = fh.read()
    except OSError as exc:
        raise StoreError(f"cannot read {args.file}: {exc.strerror or exc}") from None
    try:
        payload = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise StoreError(f"capture content in {args.file} is not valid JSON: {exc}") from None
    kwargs: dict[str, Any] = {"source_kind": args.source_kind, "scope": args.scope,
                              "sensitivity": args.sensitivity, "source": args.source or ""}
    content = payload
    if isinstance(payload, dict) and "content" in payload:  # a full request with options
        content = payload["content"]
        for key in ("source", "source_kind", "context", "reason_to_remember", "proposed_kind", "summary", "tags",
                    "scope", "sensitivity", "timestamp", "importance"):
            if key in payload:
                kwargs[key] = payload[key]
    with open_store(args, create=True) as store:
        result = store.capture(content, **kwargs)
        print(f"captured {result.primary.id} ({result.primary.kind}): {result.primary.text}")
        if result.created_entities:
            print("new entities: " + ", ".join(e.name for e in result.created_entities))
        print(f"edges written: {len(result.edges)}")
    return 0


def cmd_import(args: argparse.Namespace) -> int:
    with open_store(args, create=True) as store:
        report = store.import_jsonl(args.file, policy=args.on_conflict)
        print(report.summary())
        for number, reason in report.errors:
            print(f"  line {number}: {reason}", file=sys.stderr)
    return 1 if report.errors else 0


def cmd_export(args: argparse.Namespace) -> int:
    with open_store(args) as store:
        data = store.export_jsonl(args.out, kind=args.kind, layer=args.layer, scope=args.scope)
        if args.out is None:
            sys.stdout.write(data)
        else:
            print(f"exported {data.count(chr(10))} memories to {args.out}", file=sys.stderr)
    return 0


def cmd_eval(args: argparse.Namespace) -> int:
    from store.evaluation import run_eval

    report = run_eval(args.cases)
    if args.json:
        print(json.dumps(report, ensure_ascii=False, indent=2))
    else:
        print(f"cases: {report['cases']} ({report['negative_cases']} that must find nothing)")
        print(f"recall@1: {report['recall@1']:.3f}")
        print(f"recall@3: {report['recall@3']:.3f}")
        print(f"negatives clean: {report['negatives_clean']:.3f}")
        for miss in report["misses"]:
            print(f"  miss: {miss}")
    return 0


def add_store_commands(sub: Any) -> None:
    def parser(name: str, help_text: str, func) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help_text, description=help_text[0].upper() + help_text[1:] + ".")
        p.add_argument("--db", metavar="PATH", default=argparse.SUPPRESS, help="memory database")
        p.set_defaults(func=func)
        return p

    parser("init", "create an empty memory database (or check an existing one)", cmd_init)
    parser("demo", "load the demo memories into the database", cmd_demo)

    p = parser("remember", "write one memory (near-duplicates reinforce instead)", cmd_remember)
    p.add_argument("text")
    p.add_argument("--kind", choices=KINDS, default="fact")
    p.add_argument("--importance", type=float, default=0.5, help="0 to 1")
    p.add_argument("--who")
    p.add_argument("--topic")
    p.add_argument("--scope", default="global", help="global, group:ID or private:ID")
    p.add_argument("--sensitivity", choices=SENSITIVITIES, default="low")
    p.add_argument("--tag", action="append", default=[], help="a tag (repeatable)")
    p.add_argument("--entity", action="append", default=[], help="an entity the memory mentions (repeatable)")
    p.add_argument("--pin", action="store_true", help="pinned memories never fade")

    p = parser("recall", "find the memories most relevant to a query", cmd_recall)
    p.add_argument("query")
    p.add_argument("-k", type=int, default=5, help="how many (default 5)")
    p.add_argument("--scope", default="global", help="the caller's scope: sees it and global")
    p.add_argument("--trust", choices=SENSITIVITIES, default="medium", help="maximum sensitivity shown")
    p.add_argument("--explain", action="store_true", help="show each part of the score")
    p.add_argument("--json", action="store_true")
    p.add_argument("--reinforce", action="store_true", help="count this as a recall (writes)")

    p = parser("tick", "run the forgetting clock: write strengths and layers", cmd_tick)
    p.add_argument("--advance-days", type=float, metavar="N", help="move the store's clock N days first")

    p = parser("stats", "counts per layer, kind and scope", cmd_stats)
    p.add_argument("--json", action="store_true")

    p = parser("brief", "the wake-up brief: the strongest, most important facts", cmd_brief)
    p.add_argument("--limit", type=int, default=5)
    p.add_argument("--scope", default="global")
    p.add_argument("--trust", choices=SENSITIVITIES, default="medium")

    p = parser("capture", "capture arbitrary JSON content as a memory", cmd_capture)
    p.add_argument("file", help="JSON file, or - for standard input")
    p.add_argument("--source-kind", default="event",
                   choices=("observation", "tool_output", "event", "agent_turn", "working_state"))
    p.add_argument("--source")
    p.add_argument("--scope", default="global")
    p.add_argument("--sensitivity", choices=SENSITIVITIES, default="low")

    p = parser("import", "import memories from JSONL", cmd_import)
    p.add_argument("file")
    p.add_argument("--on-conflict", choices=POLICIES, default="skip", help="what to do with an existing id")

    p = parser("export", "export memories as JSONL", cmd_export)
    p.add_argument("--out", metavar="FILE", help="file to write (default: standard output)")
    p.add_argument("--kind", choices=KINDS)
    p.add_argument("--layer", choices=("habit", "fading", "edge", "archived"))
    p.add_argument("--scope")

    p = parser("eval", "measure recall@1 and recall@3 on the evaluation set", cmd_eval)
    p.add_argument("--cases", metavar="FILE", help="evaluation JSONL (default: the bundled set)")
    p.add_argument("--json", action="store_true")
