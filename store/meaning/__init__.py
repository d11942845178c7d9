"""Meaning: the embedders, the vectors they make and keep in the database, and the bulk and
background jobs that make them."""
