"""Forgetting on a curve: strength as a pure function of time, and the tick that brings every
memory's layer up to a moment."""
