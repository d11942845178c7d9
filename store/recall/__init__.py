"""Recall that ranks: candidates by words and by meaning among what the caller may see, the
signals of a score, a hit's relevance, and the evaluation of all of it."""
