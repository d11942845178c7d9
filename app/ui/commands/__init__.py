"""Every write of the inspector is an undoable command over one store operation (base.py says
how a command runs, fails and runs long)."""
