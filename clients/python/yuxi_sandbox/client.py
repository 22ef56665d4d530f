# SPDX-License-Identifier: MIT
"""``Client``: the whole HTTP API of yuxi-sandbox (docs/api.md) over one
kept-alive HTTPS connection.

Each area of the API is a mixin of its own module (``_threads``,
``_execute``, ``_processes``, ``_sessions``, ``_files``) using the one
transport (``_transport``); a new area (previews) is a new mixin listed
here.
"""

from __future__ import annotations

import ssl
from typing import Any

from ._execute import ExecuteAPI
from ._files import FilesAPI
from ._processes import ProcessesAPI
from ._sessions import SessionsAPI
from ._threads import ThreadsAPI
from ._transport import Transport


class Client(ThreadsAPI, ExecuteAPI, ProcessesAPI, SessionsAPI, FilesAPI):
    """A client of one yuxi-sandbox service, as one user.

    ``url``: the service behind nginx, ``https://host[:port][/prefix]``;
    ``token``: the user's bearer token; ``ca_file``: PEM file of the CA of
    the service's certificate (default: the system's CAs; or pass a whole
    ``ssl_context``); ``timeout``: seconds to wait for an ordinary answer
    (execute and long-polls add their own time); ``retries`` and
    ``retry_budget``: how often and how long in all (seconds) a ``503`` /
    ``429`` with ``Retry-After`` is asked again.

    Thread safety: a client may be shared by threads. It keeps one idle
    keep-alive connection; a call takes it for its duration, and a call
    made meanwhile (another thread, or inside a streamed execute's loop)
    opens one of its own. For many calls in parallel, one client per
    thread keeps one connection each.
    """

    def __init__(self, url: str, token: str, ca_file: str | None = None,
                 timeout: float = 60.0, *, retries: int = 5, retry_budget: float = 60.0,
                 ssl_context: ssl.SSLContext | None = None) -> None:
        self._t = Transport(url, token, ca_file=ca_file, ssl_context=ssl_context,
                            timeout=timeout, retries=retries, retry_budget=retry_budget)

    @property
    def transport(self) -> Transport:
        """The HTTP layer (its ``on_retry`` hook, its settings)."""
        return self._t

    def health(self) -> dict[str, Any]:
        """``GET /healthz``: ``{"status", ...}`` (no identity needed)."""
        ans = self._t.request("GET", "/healthz", ok=(200, 503))
        out: dict[str, Any] = ans.json()
        return out

    def close(self) -> None:
        """Close the kept-alive connection (the client stays usable)."""
        self._t.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
