"""Mnemoscope under the frameworks agents are built with: LangGraph's ``BaseStore``
(``mnemoscope.adapters.langgraph``, the ``langgraph`` extra) and LangChain's
``BaseRetriever`` (``mnemoscope.adapters.langchain``, the ``langchain`` extra).

Each adapter is a thin translation: the store does the work, and every call is written to
the activity log under the adapter's client name, so the inspector shows framework
traffic as it shows MCP traffic.
"""
