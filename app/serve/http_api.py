"""``mnemoscope serve``: the store over HTTP (Starlette on uvicorn), JSON in and out.

The endpoints are the operations of :class:`~mnemoscope.serve.operations.Operations` (the
MCP tools), checked against the same signatures; MCP's streamable-HTTP transport runs
at ``/mcp`` in the same process. Every answer is JSON: ``{"ok": true, ...}`` or
``{"ok": false, "error": "...", "status": N}`` with a status that fits (400 malformed
request, 401 no or wrong token, 403 a scope or origin this server refuses, 404 unknown
memory or conversation, 409 the database is busy or read-only, 413 body too large, 422
arguments that do not fit, 503 the database server unreachable: the message says so and
``Retry-After`` when to try again), never a stack trace.

Bound to loopback, the API answers only requests addressed to a loopback name and from
no foreign web page (Host and Origin are checked, so a web page cannot reach it through
DNS rebinding or a cross-site form). Bound to anything else it requires a bearer token.
"""

from __future__ import annotations

import hmac
import ipaddress
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
from mnemoscope.store.model import json_input
from mnemoscope.store.model.errors import NotFound, StoreError, Unavailable
from mnemoscope.store.model.errors import ValidationError as StoreValidationError
from pydantic import ValidationError as PydanticValidationError
from pydantic import validate_call
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from .. import __version__
from .operations import CALLER, Operations, ScopeRefused

log = logging.getLogger("mnemoscope.http")
MAX_BODY = 2 * 1024 * 1024
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "[::1]")
# path → (method, tool); GET endpoints take their arguments from the query string.
ENDPOINTS = {
    "/brief": ("GET", "brief"),
    "/stats": ("GET", "stats"),
    "/recall": ("POST", "recall"),
    "/remember": ("POST", "remember"),
    "/update": ("POST", "update"),
    "/forget": ("POST", "forget"),
    "/capture": ("POST", "capture"),
    "/compile": ("POST", "compile_prompt"),
    "/resolve_citations": ("POST", "resolve_citations"),
    "/tick": ("POST", "tick"),
}


class HttpError(Exception):
    def __init__(self, status: int, message: str, **extra: Any) -> None:
        super().__init__(message)
        self.status = status
        self.extra = extra


REFUSAL_LOG_EVERY_S = 60.0  # a refusal at the door (host, origin, token, size) is logged once a minute per reason
RETRY_AFTER_S = 2  # what a 503 (the database server unreachable) tells the client to wait


def error_response(status: int, message: str, **extra: Any) -> JSONResponse:
    # a message quoting what was sent (a lone surrogate, say) is sent as text that can be
    message = message.encode("utf-8", "backslashreplace").decode("utf-8")
    headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
    if status == 503:
        headers = {"Retry-After": str(RETRY_AFTER_S)}
    return JSONResponse({"ok": False, "status": status, "error": message, **extra}, status_code=status,
                        headers=headers)


def _status_for(exc: BaseException) -> int:
    if isinstance(exc, Unavailable):
        return 503
    if isinstance(exc, NotFound):
        return 404
    if isinstance(exc, ScopeRefused):
        return 403
    if isinstance(exc, (StoreValidationError, PydanticValidationError)):
        return 422
    return 409  # busy, read-only, already done: the request was fine, the state is not


def _pydantic_message(exc: PydanticValidationError) -> str:
    parts = []
    for err in exc.errors():
        where = ".".join(str(p) for p in err["loc"]) or "body"
        parts.append(f"{where}: {err['msg']}")
    return "; ".join(parts)


async def _arguments(request: Request, method: str) -> dict[str, Any]:
    if method == "GET":
        return dict(request.query_params)  # pydantic turns "5" into 5 where a number is due
    # Only JSON, even for an empty body: a web page may send text/plain, a form or no
    # content type without asking first (a "simple" request), and none of them may write.
    if request.headers.get("content-type", "").split(";")[0].strip().lower() != "application/json":
        raise HttpError(400, "send the arguments as JSON with Content-Type: application/json")
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_BODY:
            raise HttpError(413, f"the request body is over {MAX_BODY // (1024 * 1024)} MiB")
    if not body.strip():
        return {}
    try:
        data = json_input.loads(body)
    except json_input.BadJson as exc:
        verb = "is " if str(exc).startswith(("not ", "nested ")) else ""
        raise HttpError(400, f"the body {verb}{exc}") from None
    if not isinstance(data, dict):
        raise HttpError(400, f"the body must be a JSON object of arguments, got {type(data).__name__}")
    return data


def endpoint(ops: Operations, tool: str, method: str) -> Callable[[Request], Awaitable[JSONResponse]]:
    checked = validate_call(ops.bound(tool))

    async def handle(request: Request) -> JSONResponse:
        started = time.perf_counter()
        caller = {"client": request.headers.get("user-agent") or ops.client, "door": "http", "logged": False}
        args: dict[str, Any] = {}
        try:
            args = await _arguments(request, method)

            def run() -> dict[str, Any]:
                CALLER.set(caller)
                try:
                    return ops.call(tool, checked, args)
                except PydanticValidationError as exc:
                    if not caller["logged"]:
                        ops.log(tool, args, started, error=_pydantic_message(exc))
                    raise

            result = await anyio.to_thread.run_sync(run)
        except HttpError as exc:
            ops.log(tool, args, started, error=str(exc), caller=caller)
            return error_response(exc.status, str(exc))
        except PydanticValidationError as exc:
            return error_response(422, _pydantic_message(exc))
        except StoreError as exc:
            extra = {"field": exc.field} if isinstance(exc, StoreValidationError) else {}
            return error_response(_status_for(exc), str(exc), **extra)
        except Exception as exc:  # a bug of ours: say so in JSON, keep serving, log it for the owner
            log.exception("%s failed", tool)
            return error_response(500, f"internal error in {tool}: {type(exc).__name__}; the server log has "
                                       "the details")
        return JSONResponse({"ok": True, **result})

    return handle


class McpBodies:
    """MCP's streamable HTTP at ``/mcp``, with each POST's body read first as stdio reads a
    line (:func:`.mcp_stdio.refusal`): a message the SDK would refuse with a misleading
    reason ("unexpected end of hex escape" for a lone surrogate), or take nested deeper
    than the other doors take (its parser goes to about 200 levels), is answered 400 with
    the JSON-RPC error and its id, and logged when it was a tool call; the rest goes on."""

    def __init__(self, app: ASGIApp, ops: Operations) -> None:
        from .mcp_stdio import called_tool, refusal

        self.app, self.ops, self.refusal, self.called_tool = app, ops, refusal, called_tool

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("path") != "/mcp" or scope.get("method") != "POST":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        body, more = b"", True
        while more:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            body += message.get("body", b"")
            more = message.get("more_body", False)
            if len(body) > MAX_BODY:
                await error_response(413, f"the request body is over {MAX_BODY // (1024 * 1024)} MiB")(
                    scope, receive, send)
                return
        line = body.decode("utf-8", "replace")
        answer = self.refusal(line)
        if answer is not None:
            tool = self.called_tool(line)
            if tool is not None:
                headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
                caller = {"client": headers.get("user-agent", "")[:60] or self.ops.client, "door": "mcp"}
                await anyio.to_thread.run_sync(lambda: self.ops.log(tool, {}, started, caller=caller,
                                                                    error=answer["error"]["message"]))
            await JSONResponse(answer, status_code=400)(scope, receive, send)
            return
        sent = False

        async def replay() -> Any:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)


class Guard:
    """Refuses, before any route runs: requests without the token (when there is one),
    requests addressed to a non-loopback Host or sent from a foreign Origin (when
    bound to loopback), and bodies over the size limit."""

    def __init__(self, app: ASGIApp, *, token: str | None, loopback: bool,
                 on_refusal: Callable[[str, int, str, dict[str, str]], None] | None = None) -> None:
        self.app = app
        self.token = token
        self.loopback = loopback
        self.on_refusal = on_refusal  # (path, status, message, headers): README says refused calls are logged
        self._logged: dict[tuple[int, str], float] = {}  # refusal -> when it was last logged

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        refusal = self._refusal(headers, scope.get("path", ""))
        if refusal is not None and refusal[0] == 401 and scope.get("path") == "/health":
            # A liveness probe needs no token; what the memory holds (counts, scopes, trust) does.
            await JSONResponse({"ok": True, "version": __version__})(scope, receive, send)
            return
        if refusal is not None:
            if self.on_refusal is not None and self._first_in_a_while(refusal):
                await anyio.to_thread.run_sync(self.on_refusal, scope.get("path", ""), *refusal, headers)
            await error_response(*refusal)(scope, receive, send)
            return
        await self.app(scope, receive, send)

    def _first_in_a_while(self, refusal: tuple[int, str]) -> bool:
        """Whether to log this refusal: one line per status and reason (which names the
        origin or host) every REFUSAL_LOG_EVERY_S. A web page can send a thousand
        requests a second; a line each would grow the file and push what agents did out
        of the bounded log."""
        now = time.monotonic()
        if now - self._logged.get(refusal, -REFUSAL_LOG_EVERY_S) < REFUSAL_LOG_EVERY_S:
            return False
        if len(self._logged) >= 1000:
            self._logged.clear()
        self._logged[refusal] = now
        return True

    def _refusal(self, headers: dict[str, str], path: str) -> tuple[int, str] | None:
        if self.loopback:
            host = headers.get("host", "")
            name = (host.rsplit(":", 1)[0] if not host.endswith("]") else host).lower()  # names ignore case
            if name not in LOOPBACK_HOSTS:
                return 403, f"this server answers only requests addressed to 127.0.0.1 or localhost, not {host!r}"
            origin = headers.get("origin")
            if origin is not None and origin.lower() not in _own_origins(host.lower()):
                return 403, f"requests from web pages ({origin}) are refused"
            # A browser marks every request it sends (an <img>'s GET has no Origin, but this):
            # only the server's own pages and what a person types in the address bar pass.
            site = headers.get("sec-fetch-site")
            if site is not None and site not in ("same-origin", "none"):
                return 403, f"requests from web pages (Sec-Fetch-Site: {site}) are refused"
        if self.token is not None:
            given = headers.get("authorization", "")
            if not hmac.compare_digest(given.encode(), f"Bearer {self.token}".encode()):
                return 401, "this server needs 'Authorization: Bearer <token>' (the token it was started with)"
        length = headers.get("content-length")
        if length and length.isdigit() and int(length) > MAX_BODY:
            return 413, f"the request body is over {MAX_BODY // (1024 * 1024)} MiB"
        return None


def _own_origins(host: str) -> set[str]:
    """The origins of pages this server itself would serve: a loopback name with the port
    the request was sent to, compared whole (a prefix match let ``localhost.attacker.example`` in)."""
    port = host.rsplit(":", 1)[1] if host.rsplit(":", 1)[-1].isdigit() and not host.endswith("]") else ""
    return {f"http://{name}" + (f":{port}" if port else "") for name in LOOPBACK_HOSTS}


def is_loopback(host: str) -> bool:
    """``host`` names this machine only (127.0.0.0/8, ::1, localhost)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def build_app(ops: Operations, *, token: str | None = None, loopback: bool = True) -> ASGIApp:
    """The ASGI app: the JSON endpoints, MCP at ``/mcp``, behind the guard."""
    from mcp.server.transport_security import TransportSecuritySettings

    from .mcp_server import build_server

    server = build_server(ops)

    async def health(_request: Request) -> JSONResponse:
        def counts() -> dict[str, Any]:
            return ops.store.stats(scopes=(*ops.scopes, "global"), trust=ops.trust)["layers"]

        try:
            layers = await anyio.to_thread.run_sync(counts)
        except Unavailable as exc:
            return error_response(503, str(exc))
        return JSONResponse({"ok": True, "version": __version__, "counts": layers, "scopes": list(ops.scopes),
                             "trust": ops.trust})

    server.custom_route("/health", methods=["GET"])(health)
    for path, (method, tool) in ENDPOINTS.items():
        server.custom_route(path, methods=[method])(endpoint(ops, tool, method))
    # The guard already checks Host and Origin for every path, /mcp included.
    app = server.streamable_http_app(
        host="127.0.0.1", transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False))

    async def not_routed(request: Request, exc: Exception) -> JSONResponse:
        """Starlette's own 404 and 405 (plain text) as JSON, like every other answer."""
        status = getattr(exc, "status_code", 500)
        path = request.url.path
        if status == 404:
            message = f"there is no {path}; the endpoints are /health, {', '.join(ENDPOINTS)} and /mcp"
        elif status == 405:
            message = f"{path} takes {(getattr(exc, 'headers', None) or {}).get('Allow', 'another method')}, " \
                      f"not {request.method}"
        else:
            message = f"{path}: {getattr(exc, 'detail', exc)}"
        response = error_response(status, message)
        response.headers.update(getattr(exc, "headers", None) or {})
        return response

    app.add_exception_handler(StarletteHTTPException, not_routed)
    def refused(path: str, status: int, message: str, headers: dict[str, str]) -> None:
        tool = ENDPOINTS.get(path, (None, path.strip("/") or "http"))[1]
        caller = {"client": headers.get("user-agent", "")[:60] or "http", "door": "http"}
        ops.log(tool, {}, time.perf_counter(), error=f"refused ({status}): {message}", caller=caller)

    return Guard(McpBodies(app, ops), token=token, loopback=loopback, on_refusal=refused)


def run_http(ops: Operations, *, host: str, port: int, token: str | None) -> None:
    import uvicorn

    app = build_app(ops, token=token, loopback=is_loopback(host))
    uvicorn.run(app, host=host, port=port, log_level="warning", server_header=False)
