"""An HTTP call the guard refuses (a web page's Origin, a foreign Host, no token) is in the
activity log, as README says refused calls are."""

import pytest

pytest.importorskip("starlette")

from mnemoscope.serve.http_api import build_app  # noqa: E402
from mnemoscope.serve.operations import Operations  # noqa: E402
from mnemoscope.store.agents import activity  # noqa: E402
from starlette.testclient import TestClient  # noqa: E402


@pytest.mark.parametrize("headers, token, status, said", [
    ({"Origin": "http://evil.example", "User-Agent": "browser/1"}, None, 403, "web pages (http://evil.example)"),
    ({"Authorization": "Bearer wrong", "User-Agent": "script/2"}, "s3cret", 401, "Bearer"),
])
def test_a_refused_http_call_is_logged(store, headers, token, status, said):
    client = TestClient(build_app(Operations(store, door="http"), token=token), base_url="http://127.0.0.1")
    response = client.post("/recall", json={"query": "tea"}, headers=headers)
    assert response.status_code == status
    [entry] = activity.recent(store, 5)
    assert entry.tool == "recall" and entry.door == "http" and not entry.ok
    assert said in entry.error and entry.client == headers["User-Agent"]
