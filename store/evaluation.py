"""Recall evaluation: recall@1 and recall@3 of the demo memories on a JSONL case set.

A case is ``{"query": ..., "expect": [ids], "scope": ..., "trust": ...}``; a case that
expects nothing passes when recall returns nothing.
"""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

from .config import StoreConfig
from .errors import StoreError
from .store import MemoryStore

DEMO_NOW = "2026-11-19T12:00:00Z"


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


def run_eval(path: str | None = None, config: StoreConfig | None = None) -> dict[str, Any]:
    from .demo import load_demo

    cases = load_cases(path)
    store = MemoryStore(":memory:", config=config)
    load_demo(store, now=DEMO_NOW)
    hit1 = hit3 = positives = negatives = clean = 0
    misses = []
    for case in cases:
        hits = store.recall(case["query"], k=3, scope=case.get("scope", "global"),
                            trust=case.get("trust", "medium"), now=DEMO_NOW)
        ids = [h.id for h in hits]
        if case["expect"]:
            positives += 1
            expected = set(case["expect"])
            if ids[:1] and ids[0] in expected:
                hit1 += 1
            if expected & set(ids[:3]):
                hit3 += 1
            else:
                misses.append(f"{case['query']!r}: expected {sorted(expected)}, got {ids}")
        else:
            negatives += 1
            if not ids:
                clean += 1
            else:
                misses.append(f"{case['query']!r}: expected nothing, got {ids}")
    store.close()
    return {
        "cases": len(cases), "positive_cases": positives, "negative_cases": negatives,
        "recall@1": hit1 / positives if positives else 0.0, "recall@3": hit3 / positives if positives else 0.0,
        "negatives_clean": clean / negatives if negatives else 1.0, "misses": misses,
    }
