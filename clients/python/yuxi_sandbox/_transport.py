# SPDX-License-Identifier: MIT
"""The HTTP(S) layer of the client: one kept-alive connection, bearer
token, the service's CA, JSON in and out, bounded retries.

Connections. The transport keeps at most one idle connection. A request
checks it out (or opens a new one when the slot is empty), and gives it
back when the answer has been read whole and the server did not say it
will close it. So calls from several threads work (each one that finds
the slot taken opens a connection of its own, closed afterwards unless the
slot is free again by then), and a streamed answer being read does not
block other calls. A request sent on a reused connection that the server
had closed meanwhile (nginx's ``keepalive_timeout``) fails before any
answer: it is sent once more on a new connection.

Retries. An answer ``503`` with a ``Retry-After`` header (``capacity``,
``backend_unavailable``: nothing was run), or a ``429`` ``rate_limited`` or
``sandbox_limit`` with one, is asked again after that many seconds (at
most 30 per wait), at most ``retries`` times and ``retry_budget`` seconds
of waiting in all per call; then the last answer is raised.
``429 thread_limit`` is never retried: it only changes when the user
deletes threads.

Ownership: :meth:`Transport.request` returns an :class:`Answer` that owns
its body; :meth:`Transport.open_stream` returns a :class:`Stream` that owns
its connection until it is closed (by reading it to the end, ``close()``
or ``with``).
"""

from __future__ import annotations

import http.client
import json
import os
import socket
import ssl
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterator, Mapping
from typing import IO, Any

from . import errors

__all__ = ["Transport", "Answer", "Stream"]

Body = bytes | bytearray | memoryview | IO[bytes] | None

# 503/429 codes worth asking again after Retry-After.
_RETRY_429 = frozenset({"rate_limited", "sandbox_limit"})
_RETRY_WAIT_MAX = 30.0
# A request on a reused connection that fails this way never reached a
# server that was still listening on it: send it again on a new one.
_STALE = (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError,
          ConnectionAbortedError)


class Answer:
    """A whole answer: ``status``, ``headers`` (lower-case names),
    ``body`` (bytes) and ``request_id``."""

    __slots__ = ("status", "headers", "body", "request_id")

    def __init__(self, status: int, headers: dict[str, str], body: bytes) -> None:
        self.status = status
        self.headers = headers
        self.body = body
        self.request_id = headers.get("x-request-id")

    def json(self) -> Any:
        """The body parsed as JSON (``TransportError`` when it is not)."""
        try:
            return json.loads(self.body.decode("utf-8"))
        except (ValueError, UnicodeDecodeError) as e:
            raise errors.TransportError("answer %d is not JSON: %s" % (self.status, e)) from None


def _headers(resp: http.client.HTTPResponse) -> dict[str, str]:
    return {k.lower(): v for k, v in resp.getheaders()}


class Stream:
    """An answer whose body is read as it arrives, line by line. Owns its
    connection: reading to the end gives it back to the transport,
    ``close()`` before the end closes it (the server then sees its client
    go)."""

    def __init__(self, transport: Transport, conn: http.client.HTTPConnection,
                 resp: http.client.HTTPResponse, method: str, path: str) -> None:
        self._t = transport
        self._conn: http.client.HTTPConnection | None = conn
        self._resp = resp
        self.method = method
        self.path = path
        self.status = resp.status
        self.headers = _headers(resp)
        self.request_id = self.headers.get("x-request-id")

    def lines(self) -> Iterator[bytes]:
        """Each line of the body (without its ``\\n``) as soon as it has
        arrived whole; the last one even without ``\\n``."""
        try:
            while True:
                line = self._resp.readline()
                if not line:
                    break
                yield line.rstrip(b"\n")
        except (OSError, http.client.HTTPException) as e:
            self.close()
            raise errors.TransportError("%s %s: the answer broke off: %s"
                                        % (self.method, self.path, e),
                                        method=self.method, path=self.path) from None
        self._finish()

    def _finish(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            self._t._checkin(conn, self._resp)

    def close(self) -> None:
        """Stop reading; the connection is closed unless the answer was
        read to its end."""
        conn, self._conn = self._conn, None
        if conn is not None:
            if self._resp.isclosed():
                self._t._checkin(conn, self._resp)
            else:
                conn.close()

    def __enter__(self) -> Stream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Transport:
    """HTTP(S) to one service. ``url`` is ``https://host[:port][/prefix]``
    (``http://`` works too, for a service behind another TLS front);
    ``token`` the bearer token; ``ca_file`` a PEM file of the CA that signed
    the service's certificate (default: the system's CAs), or a whole
    ``ssl_context``; ``timeout`` the seconds to wait for the service on an
    ordinary request (connect, and between bytes of the answer)."""

    def __init__(self, url: str, token: str, *, ca_file: str | None = None,
                 ssl_context: ssl.SSLContext | None = None, timeout: float = 60.0,
                 retries: int = 5, retry_budget: float = 60.0,
                 user_agent: str = "yuxi-sandbox-python") -> None:
        if not isinstance(url, str) or not url:
            raise TypeError("url must be a non-empty string")
        if not isinstance(token, str) or not token:
            raise TypeError("token must be a non-empty string")
        if any(c in token for c in "\r\n\0"):
            raise ValueError("token must not contain line breaks or NUL")
        u = urllib.parse.urlsplit(url)
        if u.scheme not in ("https", "http") or not u.hostname:
            raise ValueError("url must be https://host[:port][/prefix] (or http://)")
        if u.query or u.fragment:
            raise ValueError("url must not have a query or fragment")
        if ca_file is not None and not os.path.isfile(ca_file):
            raise ValueError("ca_file %r is not a file" % ca_file)
        for name, v in (("timeout", timeout), ("retry_budget", retry_budget)):
            if isinstance(v, bool) or not isinstance(v, (int, float)) or v <= 0:
                raise ValueError("%s must be a positive number of seconds" % name)
        if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
            raise ValueError("retries must be a non-negative integer")
        self.scheme = u.scheme
        self.host = u.hostname
        self.port = u.port or (443 if u.scheme == "https" else 80)
        self.prefix = u.path.rstrip("/")
        self.timeout = float(timeout)
        self.retries = retries
        self.retry_budget = float(retry_budget)
        self._auth = "Bearer " + token
        self._ua = user_agent
        self._ctx: ssl.SSLContext | None = None
        if self.scheme == "https":
            self._ctx = ssl_context or ssl.create_default_context(cafile=ca_file)
        self._lock = threading.Lock()
        self._idle: http.client.HTTPConnection | None = None
        self._closed = False
        #: called as ``on_retry(answer, wait_seconds)`` before each retry wait
        self.on_retry: Callable[[Answer, float], None] | None = None
        #: waits between retries (tests may replace it)
        self.sleep: Callable[[float], None] = time.sleep

    # --- connections ---------------------------------------------------------
    def _new_conn(self, timeout: float) -> http.client.HTTPConnection:
        if self._ctx is not None:
            return http.client.HTTPSConnection(self.host, self.port, timeout=timeout,
                                               context=self._ctx)
        return http.client.HTTPConnection(self.host, self.port, timeout=timeout)

    def _checkout(self, timeout: float) -> tuple[http.client.HTTPConnection, bool]:
        with self._lock:
            conn, self._idle = self._idle, None
        if conn is None:
            return self._new_conn(timeout), False
        conn.timeout = timeout
        if conn.sock is not None:
            conn.sock.settimeout(timeout)
        return conn, True

    def _checkin(self, conn: http.client.HTTPConnection,
                 resp: http.client.HTTPResponse | None) -> None:
        if resp is None or resp.will_close or conn.sock is None:
            conn.close()
            return
        kept = False
        with self._lock:
            if self._idle is None and not self._closed:
                self._idle, kept = conn, True
        if not kept:
            conn.close()

    def close(self) -> None:
        """Close the idle connection; later requests open a new one."""
        with self._lock:
            conn, self._idle = self._idle, None
        if conn is not None:
            conn.close()

    # --- requests ------------------------------------------------------------
    def target(self, path: str, query: Mapping[str, object] | None = None) -> str:
        """The request target: prefix + path + the query (``None`` values left out)."""
        t = self.prefix + path
        if query:
            q = [(k, _qval(v)) for k, v in query.items() if v is not None]
            if q:
                t += "?" + urllib.parse.urlencode(q, quote_via=urllib.parse.quote)
        return t

    def _send(self, method: str, path: str, target: str, headers: dict[str, str],
              body: Body, timeout: float
              ) -> tuple[http.client.HTTPConnection, http.client.HTTPResponse]:
        """Send one request, once more on a new connection when a reused one
        turns out closed. Returns the connection and the answer's head."""
        pos = _tell(body)
        for attempt in (0, 1):
            conn, reused = self._checkout(timeout)
            try:
                conn.request(method, target, body=body, headers=headers)
                return conn, conn.getresponse()
            except _STALE as e:
                conn.close()
                if reused and attempt == 0 and _rewind(body, pos):
                    continue
                err: Exception = e
            except (OSError, http.client.HTTPException, ssl.SSLError) as e:
                conn.close()
                err = e
            if isinstance(err, socket.timeout):
                why = "no answer within %.0f s" % timeout
            else:
                why = "%s: %s" % (type(err).__name__, err)
            raise errors.TransportError("%s %s: %s" % (method, path, why),
                                        method=method, path=path) from None
        raise AssertionError("unreachable")

    def _headers_for(self, headers: Mapping[str, str] | None, body: Body,
                     json_body: bool) -> dict[str, str]:
        h = {"Authorization": self._auth, "Accept": "application/json",
             "User-Agent": self._ua}
        if json_body:
            h["Content-Type"] = "application/json"
        elif body is not None:
            h["Content-Type"] = "application/octet-stream"
        if body is not None and not isinstance(body, (bytes, bytearray, memoryview)):
            n = _length(body)
            if n is not None:
                h["Content-Length"] = str(n)
        h.update(headers or {})
        return h

    def request(self, method: str, path: str, *, query: Mapping[str, object] | None = None,
                json_body: object = None, body: Body = None,
                headers: Mapping[str, str] | None = None,
                timeout: float | None = None, ok: tuple[int, ...] = (200,)) -> Answer:
        """One call: the answer when its status is in ``ok``, else its
        :class:`~yuxi_sandbox.errors.APIError` (after the retries above).
        ``json_body`` is sent as JSON; ``body`` as raw bytes (bytes or a
        binary file; a file is sent again on a retry only if it can seek)."""
        if json_body is not None:
            body = json.dumps(json_body, ensure_ascii=False).encode("utf-8")
        h = self._headers_for(headers, body, json_body is not None)
        target = self.target(path, query)
        t = max(self.timeout, timeout or 0.0)
        waited = 0.0
        pos = _tell(body)
        attempt = 0
        while True:
            conn, resp = self._send(method, path, target, h, body, t)
            try:
                data = resp.read()
            except (OSError, http.client.HTTPException) as e:
                conn.close()
                raise errors.TransportError("%s %s: the answer broke off: %s"
                                            % (method, path, e), method=method,
                                            path=path) from None
            ans = Answer(resp.status, _headers(resp), data)
            self._checkin(conn, resp)
            if ans.status in ok:
                return ans
            wait = self._retry_wait(ans)
            if (wait is None or attempt >= self.retries or waited + wait > self.retry_budget
                    or not _rewind(body, pos)):
                raise self.error(ans, method, path)
            if self.on_retry is not None:
                self.on_retry(ans, wait)
            self.sleep(wait)
            waited += wait
            attempt += 1

    def open_stream(self, method: str, path: str, *, query: Mapping[str, object] | None = None,
                    json_body: object = None, timeout: float | None = None,
                    ok: tuple[int, ...] = (200,)) -> Stream:
        """As :meth:`request`, but an ``ok`` answer is returned unread, as a
        :class:`Stream`."""
        body = None if json_body is None else json.dumps(json_body, ensure_ascii=False).encode()
        h = self._headers_for(None, body, json_body is not None)
        target = self.target(path, query)
        t = max(self.timeout, timeout or 0.0)
        waited = 0.0
        attempt = 0
        while True:
            conn, resp = self._send(method, path, target, h, body, t)
            if resp.status in ok:
                return Stream(self, conn, resp, method, path)
            try:
                data = resp.read()
            except (OSError, http.client.HTTPException) as e:
                conn.close()
                raise errors.TransportError("%s %s: the answer broke off: %s"
                                            % (method, path, e), method=method,
                                            path=path) from None
            ans = Answer(resp.status, _headers(resp), data)
            self._checkin(conn, resp)
            wait = self._retry_wait(ans)
            if wait is None or attempt >= self.retries or waited + wait > self.retry_budget:
                raise self.error(ans, method, path)
            if self.on_retry is not None:
                self.on_retry(ans, wait)
            self.sleep(wait)
            waited += wait
            attempt += 1

    @staticmethod
    def error(ans: Answer, method: str, path: str) -> errors.APIError:
        """The exception for an error answer."""
        return errors.error_from_answer(ans.status, ans.body, request_id=ans.request_id,
                                        retry_after=ans.headers.get("retry-after"),
                                        method=method, path=path)

    @staticmethod
    def _retry_wait(ans: Answer) -> float | None:
        """Seconds to wait before asking again, or None: not to be retried."""
        if ans.status not in (503, 429):
            return None
        secs = errors.parse_retry_after(ans.headers.get("retry-after"))
        if secs is None:
            return None
        if ans.status == 429:
            try:
                code = json.loads(ans.body.decode("utf-8"))["error"]["code"]
            except (ValueError, UnicodeDecodeError, KeyError, TypeError):
                code = ""
            if code not in _RETRY_429:
                return None
        return min(secs, _RETRY_WAIT_MAX)


def _qval(v: object) -> str:
    if v is True:
        return "1"
    if v is False:
        return "0"
    return str(v)


def _tell(body: Body) -> int | None:
    """Where a file body starts (to send it again), or None."""
    if body is None or isinstance(body, (bytes, bytearray, memoryview)):
        return None
    try:
        return body.tell() if body.seekable() else None
    except (OSError, AttributeError, ValueError):
        return None


def _rewind(body: Body, pos: int | None) -> bool:
    """Make the body sendable again; False when it cannot be."""
    if body is None or isinstance(body, (bytes, bytearray, memoryview)):
        return True
    if pos is None:
        return False
    try:
        body.seek(pos)
        return True
    except (OSError, AttributeError, ValueError):
        return False


def _length(body: Body) -> int | None:
    """Bytes left in a file body, when it can tell."""
    try:
        fd = body.fileno()  # type: ignore[union-attr]
        st = os.fstat(fd)
        pos = body.tell()  # type: ignore[union-attr]
        return max(0, st.st_size - pos)
    except (OSError, AttributeError, ValueError):	# io.UnsupportedOperation too
        pass
    try:
        pos = body.tell()  # type: ignore[union-attr]
        end = body.seek(0, os.SEEK_END)  # type: ignore[union-attr]
        body.seek(pos)  # type: ignore[union-attr]
        return end - pos
    except (OSError, AttributeError, ValueError):
        return None
