"""The panes and docks of the main window: each is given the session, reads the store and says
what it must by signals."""
