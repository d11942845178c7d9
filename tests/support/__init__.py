"""What the tests share: helpers, the throwaway PostgreSQL servers, test doubles, the MCP
memory server's client; the fixtures are in tests/conftest.py."""
