"""Keeping a memory honest: conflicts and changes of habit, claims, duplicates, and the privacy
check."""
