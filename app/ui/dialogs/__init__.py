"""The window's dialogs: About, an import's question, a job's progress, a database URL."""
