"""What stands between the network and the play server's games: which requests it answers.

Every request passes `Guard` before any route sees it:

- **Host.** A ``Host`` header that is not a host name or address with an optional port
  (``evil/``, ``evil?x``, ``a@b``) is refused on every address: Starlette before 1.0.1 built
  ``request.url`` from it, so its path could differ from the path the router serves. The
  guard itself reads the path and query the router reads (the ASGI scope's), never
  ``request.url``. On a loopback address the ``Host`` header must name this server (the address
  served, ``localhost``, ``127.0.0.1`` or ``[::1]``, any port): a page elsewhere that points
  its own name at 127.0.0.1 (DNS rebinding) is refused.
- **Origin.** A request that changes something (any method but GET, HEAD, OPTIONS) whose
  ``Origin`` (or, without one, ``Referer``) is not this server's own origin is refused, as
  is one a browser marks ``Sec-Fetch-Site: cross-site``: another web page open in the same
  browser cannot deal games or play moves, even with a ``text/plain`` form post that needs
  no CORS preflight. A request with neither header (a script, curl) is not a web page's.
- **Token.** Served beyond loopback (``--host 0.0.0.0``), every request but the page itself
  and its static files (`is_public`), the API above all, must carry the server's secret
  token (``?token=`` in the URL printed at start, which the page then sends as
  ``X-Rummy500-Token``), since anyone on the network can reach the port and name any host.
- **Size.** A body over `MAX_BODY` bytes is refused (413) from its ``Content-Length`` before
  it is read; `read_body` stops a body without one at the same size.
"""

from __future__ import annotations

import ipaddress
import json
import re
import secrets
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any
from urllib.parse import parse_qs, urlsplit

from starlette.requests import Request

MAX_BODY = 64 * 1024
"""Bytes a request body may hold: a move is a few dozen, "Put down all" a few hundred."""
SAFE_METHODS = ("GET", "HEAD", "OPTIONS")
LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")
TOKEN_HEADER = "x-rummy500-token"
HOST_HEADER = re.compile(r"([a-z0-9._-]+|\[[0-9a-f:.]+\])(:[0-9]{1,5})?", re.IGNORECASE)
"""A ``Host`` header the guard accepts: a name or IPv4 address, or a bracketed IPv6 one, and
an optional port; nothing that could end a URL's authority (``/ ? # @``, spaces, ...)."""

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


class BodyTooLarge(Exception):
    """A request body over `MAX_BODY` bytes (answered 413)."""


def is_loopback(host: str) -> bool:
    """Whether serving on `host` keeps the server to this machine."""
    if host.strip("[]") == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a host name: it may resolve to any interface


def host_name(header: str) -> str:
    """The host of a ``Host`` header without its port: ``[::1]:8000`` -> ``::1``."""
    header = header.strip().lower()
    if header.startswith("["):
        return header[1 : header.find("]")] if "]" in header else header
    return header.rsplit(":", 1)[0] if header.count(":") == 1 else header


class Guard:
    """ASGI middleware applying the checks of the module docstring before `app`.

    Args:
        app: the app guarded.
        host: the address served (``--host``).
        token: the secret every API request must carry, or None (loopback only).
    """

    def __init__(self, app: ASGIApp, host: str, token: str | None) -> None:
        self.app = app
        self.loopback = is_loopback(host)
        self.hosts = {host_name(host), *LOOPBACK_NAMES}
        self.token = token

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        problem = self.refusal(Request(scope))
        if problem is None:
            await self.app(scope, receive, send)
            return
        status, message = problem
        body = json.dumps({"error": message}).encode()
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})

    def refusal(self, request: Request) -> tuple[int, str] | None:
        """Why this request is refused, as (HTTP status, message), or None to answer it."""
        headers = request.headers
        host = headers.get("host")
        if host is not None and not HOST_HEADER.fullmatch(host):
            return 400, (
                f"invalid host header {host[:80]!r}: a host header is a host name or address "
                "and an optional port, such as 192.168.1.5:8000"
            )
        host = host or ""
        if self.loopback and host_name(host) not in self.hosts:
            return 400, (
                f"invalid host header {host[:80]!r}: this server answers only for "
                f"{', '.join(sorted(self.hosts))}"
            )
        if request.method not in SAFE_METHODS:
            why = self._cross_site(headers.get("origin"), headers.get("referer"), host)
            if why is None and headers.get("sec-fetch-site") in ("cross-site", "same-site"):
                why = f"the browser says it comes from another site ({headers['sec-fetch-site']})"
            if why is not None:
                return 403, f"refused: {why}; only this server's own page may change games"
            length = headers.get("content-length", "0")
            if not length.isascii() or not length.isdigit():
                return 400, "the Content-Length header is not a number of bytes"
            if int(length) > MAX_BODY:
                return 413, body_too_large()
        if self.token is not None and not is_public(route_path(request.scope)):
            query = request.scope.get("query_string", b"").decode("latin-1")
            given = headers.get(TOKEN_HEADER) or first(parse_qs(query).get("token"))
            if given is None or not secrets.compare_digest(given.encode(), self.token.encode()):
                return 403, (
                    "this server is open to the network, so every request needs its token: "
                    "open the address with ?token=... that the server printed when it started"
                )
        return None

    @staticmethod
    def _cross_site(origin: str | None, referer: str | None, host: str) -> str | None:
        """Why a request's Origin or Referer is not this server's own, or None."""
        own = f"http://{host}".lower()
        if origin is not None:
            if origin.lower() != own:
                return f"the request comes from the page of {origin[:80]!r}, not from {own}"
            return None
        if referer is not None:
            parts = urlsplit(referer)
            if f"{parts.scheme}://{parts.netloc}".lower() != own:
                return f"the request comes from a page at {referer[:80]!r}, not at {own}"
        return None


def route_path(scope: Scope) -> str:
    """The path the router matches (the scope's, less its ``root_path``, as Starlette's router
    takes it), which is what decides the route that answers; never ``request.url``."""
    path: str = scope["path"]
    root = scope.get("root_path", "")
    if root and path.startswith(root) and path[len(root) : len(root) + 1] in ("", "/"):
        return path[len(root) :]
    return path


def is_public(path: str) -> bool:
    """Whether a server open to the network serves `path` without its token: the page
    (``/``) and its static files (under ``/static/``, which hold no game); every other
    path, the API's and unknown ones alike, needs the token."""
    return path == "/" or path.startswith("/static/")


def first(values: list[str] | None) -> str | None:
    return values[0] if values else None


def body_too_large() -> str:
    return (
        f"the request body is over {MAX_BODY // 1024} KiB: a request carries at most "
        f"{MAX_BODY} bytes (a move is a few dozen)"
    )


async def read_body(request: Request) -> bytes:
    """The request body, refusing (`BodyTooLarge`) one over `MAX_BODY` bytes without reading
    the rest (a chunked body has no Content-Length for the guard to check)."""
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_BODY:
            raise BodyTooLarge(body_too_large())
        chunks.append(chunk)
    return b"".join(chunks)
