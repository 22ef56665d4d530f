# SPDX-License-Identifier: MIT
"""Background processes: ``/api/processes``, its output long-poll, stdin,
kill, and a terminal's size (``pty``, ``resize``)."""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from typing import Any, cast

from . import _check
from ._transport import Transport
from .types import Process, ProcessOutput, Pty, StdinResult

WAIT_MS_MAX = 30000
# Seconds between asks when the service answered a long-poll at once.
WAIT_CAPPED_PAUSE = 0.2


class ProcessesAPI:
    _t: Transport

    def start_process(self, thread_id: str, command: str, *, timeout: int | None = None,
                      cwd: str | None = None,
                      env: Mapping[str, str] | None = None,
                      pty: tuple[int, int] | Mapping[str, int] | None = None) -> Process:
        """Start ``command`` in the background (``/bin/sh -c``); ``timeout``
        its lifetime in seconds (default and cap: the service's
        ``YUXI_PROCESS_LIFETIME``); ``cwd`` and ``env`` as for
        :meth:`execute`. ``pty``: ``(cols, rows)`` (or a mapping with
        ``cols`` and ``rows``, each 1..1000) runs it on a pseudo-terminal of
        that size instead of pipes: its output is what the terminal shows
        (CR LF, escape sequences), its stdin what is typed; see
        :meth:`resize_process`."""
        body: dict[str, Any] = {"thread_id": _check.thread_id(thread_id),
                                "command": _check.string("command", command)}
        if timeout is not None:
            body["timeout"] = _check.integer("timeout", timeout, low=1)
        if cwd is not None:
            body["cwd"] = _check.cwd(cwd)
        if env is not None:
            body["env"] = _check.env(env)
        if pty is not None:
            body["pty"] = _check.pty(pty)
        return cast(Process, self._t.request("POST", "/api/processes", json_body=body,
                                             ok=(201,)).json())

    def list_processes(self, thread_id: str) -> list[Process]:
        """The thread's processes, oldest first."""
        q = {"thread_id": _check.thread_id(thread_id)}
        return cast(list[Process],
                    self._t.request("GET", "/api/processes", query=q).json()["processes"])

    def get_process(self, thread_id: str, process_id: str) -> Process:
        q = {"thread_id": _check.thread_id(thread_id)}
        pid = _check.process_id(process_id)
        return cast(Process, self._t.request("GET", "/api/processes/" + pid, query=q).json())

    def process_output(self, thread_id: str, process_id: str, *, offset: int = 0,
                       wait_ms: int = 0, max_bytes: int | None = None) -> ProcessOutput:
        """One read of the output from ``offset``; with ``wait_ms`` (at most
        30000) it waits that long for something new while the process runs."""
        q: dict[str, object] = {
            "thread_id": _check.thread_id(thread_id),
            "offset": _check.integer("offset", offset),
            "wait_ms": _check.integer("wait_ms", wait_ms, high=WAIT_MS_MAX),
            "max_bytes": _check.opt_int("max_bytes", max_bytes, low=1),
        }
        pid = _check.process_id(process_id)
        return cast(ProcessOutput, self._t.request(
            "GET", "/api/processes/%s/output" % pid, query=q,
            timeout=wait_ms / 1000.0 + self._t.timeout).json())

    def iter_process_output(self, thread_id: str, process_id: str, *, offset: int = 0,
                            wait_ms: int = 10000,
                            max_bytes: int | None = None) -> Iterator[ProcessOutput]:
        """Long-poll the output: yields each read that brought data (its
        ``data``, ``offset``, ``dropped``, ...), until the process has
        ended and everything it wrote was read."""
        _check.integer("wait_ms", wait_ms, low=1, high=WAIT_MS_MAX)
        return self._iter_output(thread_id, process_id, offset, wait_ms, max_bytes)

    def _iter_output(self, thread_id: str, process_id: str, offset: int, wait_ms: int,
                     max_bytes: int | None) -> Iterator[ProcessOutput]:
        while True:
            out = self.process_output(thread_id, process_id, offset=offset,
                                      wait_ms=wait_ms, max_bytes=max_bytes)
            more = out["next_offset"] != offset
            offset = out["next_offset"]
            if out["data"] or out.get("dropped"):
                yield out
            if not out["running"] and not more:
                return
            if out.get("wait_capped") and not more:
                time.sleep(WAIT_CAPPED_PAUSE)	# the service had no slot to wait in

    def write_stdin(self, thread_id: str, process_id: str, data: bytes | str, *,
                    eof: bool = False) -> StdinResult:
        """Write ``data`` (a string is sent as UTF-8) to the process's
        standard input; ``eof=True`` closes it afterwards."""
        if isinstance(data, str):
            data = data.encode("utf-8")
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise TypeError("data must be bytes or str, not %s" % type(data).__name__)
        q = {"thread_id": _check.thread_id(thread_id),
             "eof": True if _check.boolean("eof", eof) else None}
        pid = _check.process_id(process_id)
        return cast(StdinResult, self._t.request(
            "POST", "/api/processes/%s/stdin" % pid, query=q, body=bytes(data)).json())

    def close_stdin(self, thread_id: str, process_id: str) -> StdinResult:
        """Close the process's standard input."""
        return self.write_stdin(thread_id, process_id, b"", eof=True)

    def kill_process(self, thread_id: str, process_id: str) -> Process:
        """Kill the process's whole group (if it runs) and forget it; returns
        its last state with ``forgotten``."""
        q = {"thread_id": _check.thread_id(thread_id)}
        pid = _check.process_id(process_id)
        return cast(Process, self._t.request("DELETE", "/api/processes/" + pid,
                                             query=q).json())

    def resize_process(self, thread_id: str, process_id: str, cols: int, rows: int) -> Pty:
        """Change the terminal size of a process started with ``pty`` (each
        1..1000); its foreground process group gets SIGWINCH. Returns
        ``{"cols", "rows"}``. ``BadRequestError`` for a process not on a
        terminal, ``ConflictError`` (``not_running``) for one that ended."""
        q = {"thread_id": _check.thread_id(thread_id)}
        pid = _check.process_id(process_id)
        size = _check.pty((cols, rows))
        return cast(Pty, self._t.request("POST", "/api/processes/%s/resize" % pid, query=q,
                                         json_body=size).json())
