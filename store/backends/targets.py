"""Where a store's database is, as a person writes it: a file's path (``:memory:`` for
none), or a PostgreSQL server's ``postgresql://`` URL; and what of a URL may be shown."""

from __future__ import annotations

import os
import re
from typing import Any
from urllib.parse import unquote, urlsplit

from ..model.errors import DatabaseRefused, StoreError

URL_SCHEMES = ("postgresql://", "postgres://")
CONNECT_TIMEOUT_S = 3
# A dead server (no reply at all) is noticed in about idle + interval × count seconds; a write
# whose bytes go unacknowledged gives up after tcp_user_timeout (ms). The URL's query overrides them.
KEEPALIVE = {"keepalives": 1, "keepalives_idle": 5, "keepalives_interval": 2, "keepalives_count": 2,
             "tcp_user_timeout": 10000}
# After a failed reconnect, calls fail at once for as long as it took, at most this long: a refused
# connection (the server is down) costs nothing to retry, a timeout should not pile up.


def on_server(target: Any) -> bool:
    """Whether ``target`` (a store, a path or a URL) is a database on a server, not a file."""
    path = getattr(target, "path", target)
    return isinstance(path, str) and path.startswith(URL_SCHEMES)


def shown(target: str | os.PathLike) -> str:
    """``target`` as it may be shown and logged: a server's URL without its password, a
    file's path as given."""
    return redact(target) if on_server(target) else os.fspath(target)


def refuse_on_server(target: Any, what: str, instead: str) -> None:
    """Refuse, in one line, an operation the server's backend does not do yet."""
    if on_server(target):
        raise StoreError(f"not yet supported on PostgreSQL: {what} ({instead}); nothing was written")


# Query parameters libpq reads a secret from (postgresql://u@host/db?password=…).
SECRET_PARAMS = frozenset({"password", "sslpassword"})


def redact(url: str) -> str:
    """The URL without its password, whether in the userinfo (``u:pw@``) or the query
    (``?password=pw``, percent-encoded or not): what is shown, logged and stored as the path."""
    try:
        parts = urlsplit(url)
        secret_in_userinfo = parts.password is not None
    except ValueError:
        return _redact_by_hand(url)
    query = [pair for pair in parts.query.split("&") if pair]
    kept = [pair for pair in query if unquote(pair.partition("=")[0]).strip().lower() not in SECRET_PARAMS]
    if not secret_in_userinfo and len(kept) == len(query):
        return url
    netloc = parts.netloc
    if secret_in_userinfo:
        userinfo, host = netloc.rsplit("@", 1)
        user = userinfo.split(":", 1)[0]
        netloc = f"{user + '@' if user else ''}{host}"
    out = f"{parts.scheme}://{netloc}{parts.path}"
    if kept:
        out += "?" + "&".join(kept)
    return out + (f"#{parts.fragment}" if parts.fragment else "")


def _redact_by_hand(url: str) -> str:
    """A URL urlsplit cannot read (a bad port): everything between :// and @ and every
    secret parameter's value go, so its error message holds no password either."""
    url = re.sub(r"(://)[^/@?#]*@", lambda m: m.group(1) + "***@", url, count=1)
    return re.sub(r"(?i)((?:^|[?&])(?:ssl)?pass(?:%77|w)ord=)[^&#]*", r"\1***", url)


def parse_url(url: str) -> dict[str, Any]:
    """The connection parameters of a ``postgresql://user[:password]@host[:port]/dbname``
    URL; a URL that does not parse is refused, naming what is wrong (never its password)."""
    shown = redact(url)
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise DatabaseRefused(shown, "not_a_database", f"cannot use {shown}: not a PostgreSQL URL ({exc}); "
                              "write postgresql://user@host:port/dbname") from None
    dbname = unquote(parts.path.lstrip("/"))
    if not parts.hostname or not dbname or "/" in dbname:
        raise DatabaseRefused(shown, "not_a_database",
                              f"cannot use {shown}: a PostgreSQL URL needs a host and a database name, "
                              "as in postgresql://user@host:port/dbname")
    params: dict[str, Any] = {"host": parts.hostname, "dbname": dbname, "connect_timeout": CONNECT_TIMEOUT_S,
                              **KEEPALIVE}
    if port is not None:
        params["port"] = port
    if parts.username:
        params["user"] = unquote(parts.username)
    if parts.password is not None:
        params["password"] = unquote(parts.password)
    # Anything else (sslmode, passfile …) as libpq knows it; PGPASSWORD and ~/.pgpass
    # are libpq's own: a password not in the URL is looked up there.
    for pair in filter(None, parts.query.split("&")):
        key, _, value = pair.partition("=")
        params[unquote(key)] = unquote(value)
    return params
