"""Recall evaluation: recall@1, recall@3 and MRR of the demo memories on a JSONL case set.

A case is ``{"query": ..., "expect": [ids], "scope": ..., "trust": ...}``. Recall ranks
every time, so a case that expects nothing is not passed or failed: the cases that expect
nothing and the others together give ``abstention_auc``, how well the top hit's relevance
tells them apart (store/recall/relevance.py).
"""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

from ..model.config import StoreConfig
from ..model.errors import StoreError
from ..store import MemoryStore

DEMO_NOW = "2026-11-19T12:00:00Z"


def abstention_auc(answerable: list[float], nothing: list[float]) -> float | None:
    """How well the top hit's relevance tells a question the memories answer from one they do
    not: the chance that an answerable question's top relevance is above an "expects
    nothing" one's (ties count half). None without both kinds. A measure reported beside
    recall, never a gate: recall ranks every time."""
    if not answerable or not nothing:
        return None
    wins = sum((a > b) + 0.5 * (a == b) for a in answerable for b in nothing)
    return wins / (len(answerable) * len(nothing))


CASES_RESOURCE = ("mnemoscope.resources.demo", "recall_eval.jsonl")  # shipped with the demo memories


def load_cases(path: str | None = None) -> list[dict[str, Any]]:
    """The evaluation cases in ``path``, or the ones shipped with the program."""
    if path is None:
        package, name = CASES_RESOURCE
        text, where = resources.files(package).joinpath(name).read_text(encoding="utf-8"), name
    else:
        try:
            with open(path, encoding="utf-8") as fh:
                text, where = fh.read(), path
        except FileNotFoundError:
            raise StoreError(f"evaluation set {path} not found; pass --cases FILE") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise StoreError(f"cannot read the evaluation set {path}: {exc}") from None
    cases = []
    for number, line in enumerate(text.split("\n"), 1):
        if not line.strip():
            continue
        try:
            case = json.loads(line)
        except json.JSONDecodeError as exc:
            raise StoreError(f"{where} line {number} is not valid JSON: {exc}") from None
        if not isinstance(case, dict) or not isinstance(case.get("query"), str) \
                or not isinstance(case.get("expect"), list):
            raise StoreError(f"{where} line {number}: a case needs 'query' (text) and 'expect' (list of ids)")
        cases.append(case)
    return cases


def run_eval(path: str | None = None, config: StoreConfig | None = None, embedder: Any = None) -> dict[str, Any]:
    from ..files.demo import load_demo

    cases = load_cases(path)
    store = _store(config, embedder)
    load_demo(store, now=DEMO_NOW)
    hit1 = hit3 = positives = negatives = 0
    rr = 0.0
    misses = []
    tops: dict[bool, list[float]] = {True: [], False: []}
    for case in cases:
        hits = store.recall(case["query"], k=3, scope=case.get("scope", "global"),
                            trust=case.get("trust", "medium"), now=DEMO_NOW)
        ids = [h.id for h in hits]
        tops[bool(case["expect"])].append(hits[0].relevance if hits else 0.0)
        if case["expect"]:
            positives += 1
            expected = set(case["expect"])
            rank = next((i for i, mid in enumerate(ids, 1) if mid in expected), None)
            rr += 1 / rank if rank else 0.0
            if ids[:1] and ids[0] in expected:
                hit1 += 1
            if expected & set(ids[:3]):
                hit3 += 1
            else:
                misses.append(f"{case['query']!r}: expected {sorted(expected)}, got {ids}")
        else:
            negatives += 1
    store.close()
    return {
        "embedder": ranked_by(store), "cases": len(cases), "positive_cases": positives, "negative_cases": negatives,
        "recall@1": hit1 / positives if positives else 0.0, "recall@3": hit3 / positives if positives else 0.0,
        "mrr": rr / positives if positives else 0.0,  # over the first 3 hits, as recall@3
        "abstention_auc": abstention_auc(tops[True], tops[False]), "misses": misses,
    }


PARAPHRASE_RESOURCE = ("mnemoscope.resources.demo", "paraphrase_eval.jsonl")


def _store(config: StoreConfig | None, embedder: Any) -> MemoryStore:
    """An empty store in memory with ``embedder`` (an Embedder or a model spec) for recall
    and likeness both, or the store's defaults when None or ``"default"``."""
    from ..meaning.embedder_spec import from_spec

    if embedder is None or embedder == "default":
        return MemoryStore(":memory:", config=config)
    return MemoryStore(":memory:", config=config, embedder=from_spec(embedder) if isinstance(embedder, str)
                       else embedder)


def ranked_by(store: MemoryStore) -> str:
    """The id of the model a store's recall ranks by meaning with."""
    return (store.recall_embedder or store.embedder).id


def run_paraphrase_eval(embedder: Any = None, path: str | None = None,
                        config: StoreConfig | None = None) -> dict[str, Any]:
    """Recall@1, recall@3 and MRR (over the first 10 hits) of the paraphrase set: queries
    that share no content word with the memory they ask for, in five languages, each
    language a scope of its own (one user's memories), with distractors. The questions whose
    ``expect`` is empty give, with the others, ``abstention_auc`` (the recall figures count
    only the others). ``embedder`` is an Embedder or a model spec
    (None: the default)."""

    if path is None:
        package, name = PARAPHRASE_RESOURCE
        text = resources.files(package).joinpath(name).read_text(encoding="utf-8")
    else:
        try:
            with open(path, encoding="utf-8") as fh:
                text = fh.read()
        except OSError as exc:
            raise StoreError(f"cannot read the paraphrase set {path}: {exc}") from None
    rows = [json.loads(line) for line in text.splitlines() if line.strip()]
    store = _store(config, embedder)
    for r in rows:
        if "memory" in r:
            store.remember(r["text"], memory_id=r["memory"], scope=f"group:{r['lang']}", dedupe=False,
                           now=DEMO_NOW)
    queries = [r for r in rows if "query" in r and r["expect"]]
    nothing = [r for r in rows if "query" in r and not r["expect"]]
    hit1 = hit3 = 0
    rr = 0.0
    misses = []
    tops: dict[bool, list[float]] = {True: [], False: []}
    for q in nothing:
        hits = store.recall(q["query"], k=10, scope=f"group:{q['lang']}", now=DEMO_NOW)
        tops[False].append(hits[0].relevance if hits else 0.0)
    for q in queries:
        hits = store.recall(q["query"], k=10, scope=f"group:{q['lang']}", now=DEMO_NOW)
        tops[True].append(hits[0].relevance if hits else 0.0)
        ids = [h.id for h in hits]
        expected = set(q["expect"])
        rank = next((i for i, mid in enumerate(ids, 1) if mid in expected), None)
        hit1 += rank == 1
        hit3 += rank is not None and rank <= 3
        rr += 1 / rank if rank else 0.0
        if rank is None or rank > 3:
            misses.append(f"{q['query']!r}: expected {sorted(expected)}, got {ids[:3]}")
    store.close()
    n = len(queries) or 1
    return {"embedder": ranked_by(store), "queries": len(queries), "recall@1": hit1 / n, "recall@3": hit3 / n,
            "mrr": rr / n, "negative_cases": len(nothing),
            "abstention_auc": abstention_auc(tops[True], tops[False]), "misses": misses}
