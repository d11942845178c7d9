"""The tables and their migrations: one connection, its transactions and the rows every
operation shares (internal to the store: app/ never imports this package)."""
