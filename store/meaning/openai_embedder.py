"""Vectors from an OpenAI-compatible ``/embeddings`` endpoint (``[embedder] model = "openai"``):
a deadline for the whole call, no redirect followed, the key never shown.
"""

from __future__ import annotations

import http.client
import json
import math
import socket
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from contextlib import suppress

import numpy as np

from .embedding import EmbeddingError, prepare, unit_rows


class OpenAIEmbedder:
    """An OpenAI-compatible embeddings endpoint: POST ``{url}/embeddings`` (``url`` is
    the API's base, e.g. ``http://127.0.0.1:11434/v1``)."""

    meaningful = True

    def __init__(self, url: str, name: str, key: str = "", timeout: float = 30.0, dim: int = 0) -> None:
        if not url.startswith(("http://", "https://")):
            raise EmbeddingError(f"[embedder] url must start with http:// or https://, got {url!r}")
        if not name:
            raise EmbeddingError("[embedder] name (the endpoint's model) is empty; set it in the store's config")
        self.url = url.rstrip("/")
        if not self.url.endswith("/v1"):
            self.url += "/v1"
        self.name, self.key, self.timeout = name, key, timeout
        self._dim = dim

    @property
    def dim(self) -> int:
        if not self._dim:
            self.embed(["dimension probe"])
        return self._dim

    @property
    def id(self) -> str:
        return f"openai:{self.url}:{self.name}:{self.dim}"

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        batch = [prepare(t) for t in texts]
        if not batch:
            return np.zeros((0, self._dim), dtype=np.float32)
        where = f"the embeddings endpoint {self.url}/embeddings"
        body = json.dumps({"model": self.name, "input": batch}).encode()
        headers = {"Content-Type": "application/json"}
        if self.key:
            headers["Authorization"] = f"Bearer {self.key}"
        request = urllib.request.Request(self.url + "/embeddings", data=body, headers=headers, method="POST")
        deadline = _Deadline(self.timeout)
        try:
            with deadline, deadline.opener().open(request, timeout=self.timeout) as response:
                raw = deadline.read(response, 64 * 1024 * 1024)
        except _Redirected as exc:
            raise EmbeddingError(f"{where} answered a redirect (HTTP {exc.code}) to {exc.location}; Mnemoscope "
                                 "follows none (the key would go with it): set [embedder] url to where the "
                                 "endpoint is") from None
        except urllib.error.HTTPError as exc:
            detail = exc.read(300).decode("utf-8", "replace")
            raise EmbeddingError(f"{where} answered HTTP {exc.code}: {detail}; check [embedder] url, name "
                                 "and key_env in the store's config") from None
        except (TimeoutError, OSError, http.client.HTTPException) as exc:
            reason = "the whole answer took too long" if deadline.expired else getattr(exc, "reason", exc)
            raise EmbeddingError(f"{where} did not answer ({reason}) within {self.timeout:g} s; check that it "
                                 "runs, or [embedder] url and timeout in the store's config") from None
        try:
            data = json.loads(raw)["data"]
            rows = sorted(data, key=lambda d: d["index"])
            vectors = [[float(x) for x in r["embedding"]] for r in rows]
        except (ValueError, KeyError, TypeError) as exc:
            raise EmbeddingError(f"{where} answered something that is not an embeddings response "
                                 f"({type(exc).__name__}: {exc}): {raw[:120]!r}; check [embedder] url (the "
                                 "API's base, ending in /v1) and name in the store's config") from None
        if len(vectors) != len(batch) or not vectors or len({len(v) for v in vectors}) != 1:
            raise EmbeddingError(f"{where} answered {len(vectors)} vectors of lengths "
                                 f"{sorted({len(v) for v in vectors})} for {len(batch)} texts")
        if not all(math.isfinite(x) for v in vectors for x in v):
            raise EmbeddingError(f"{where} answered a vector with a value that is not a finite number")
        dim = len(vectors[0])
        if self._dim and dim != self._dim:
            raise EmbeddingError(f"{where} answered {dim}-dimensional vectors, expected {self._dim}")
        self._dim = dim
        return unit_rows(np.array(vectors, dtype=np.float32), dim, where)


class _Redirected(Exception):
    def __init__(self, code: int, location: str) -> None:
        super().__init__(code, location)
        self.code, self.location = code, location


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """No redirect is followed: urllib would send the Authorization header on to any
    origin (and turn the POST into a GET)."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):  # noqa: ANN001 (urllib's signature)
        raise _Redirected(code, newurl[:200])


class _Deadline:
    """One deadline for a whole request (connecting, the headers, the body): a socket
    timeout bounds each read only, so an answer trickled a byte a second held a remember,
    a recall or an import for minutes despite ``timeout = 2``. When the deadline passes,
    the connection's socket is shut down, which ends whatever read is waiting on it."""

    def __init__(self, seconds: float) -> None:
        self.seconds, self.expired = seconds, False
        self.ends = time.monotonic() + seconds
        self.lock = threading.Lock()
        self.connections: list[http.client.HTTPConnection] = []
        self.timer = threading.Timer(seconds, self._expire)
        self.timer.daemon = True

    def __enter__(self) -> _Deadline:
        self.timer.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.timer.cancel()

    def _expire(self) -> None:
        with self.lock:
            self.expired = True
            for conn in self.connections:
                _shut(conn)

    def tracked(self, base: type) -> type:
        """``base`` (an HTTP connection class) whose connections the deadline can shut."""
        deadline = self

        class Tracked(base):  # type: ignore[misc, valid-type]
            def connect(self) -> None:
                super().connect()
                with deadline.lock:
                    deadline.connections.append(self)
                    if deadline.expired:
                        _shut(self)

        return Tracked

    def opener(self) -> urllib.request.OpenerDirector:
        deadline = self

        class Http(urllib.request.HTTPHandler):
            def http_open(self, req):  # noqa: ANN001, ANN201 (urllib's signature)
                return self.do_open(deadline.tracked(http.client.HTTPConnection), req)

        class Https(urllib.request.HTTPSHandler):
            def https_open(self, req):  # noqa: ANN001, ANN201
                return self.do_open(deadline.tracked(http.client.HTTPSConnection), req,
                                    context=self._context)

        return urllib.request.build_opener(Http(), Https(), _NoRedirect())

    def read(self, response, limit: int) -> bytes:  # noqa: ANN001 (an http.client response)
        chunks, size = [], 0
        while size < limit:
            if time.monotonic() >= self.ends:
                raise TimeoutError("the whole answer took too long")
            chunk = response.read1(min(65536, limit - size)) if hasattr(response, "read1") else response.read(
                min(65536, limit - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        return b"".join(chunks)


def _shut(conn: http.client.HTTPConnection) -> None:
    sock = conn.sock
    if sock is not None:
        with suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)
