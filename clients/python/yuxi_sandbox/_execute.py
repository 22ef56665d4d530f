# SPDX-License-Identifier: MIT
"""Commands: ``POST /api/execute``, plain and streamed (NDJSON)."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any, Literal, cast, overload

from . import _check, errors
from ._transport import Stream, Transport
from .types import ExecEvent, ExecResult

# The most a command may run (the service caps execute's timeout here).
EXEC_TIMEOUT_MAX = 600
# Seconds the client waits beyond a command's own timeout.
EXEC_GRACE = 30


class ExecStream:
    """The events of a streamed command, yielded as the command writes:
    ``{"type": "output", "data": ...}`` any number of times, then one
    ``{"type": "exit", "exit_code", ...}``. A stream that ends with an
    error event raises :class:`~yuxi_sandbox.errors.StreamError` instead.
    Closing it (``close()``, ``with``, or dropping the iterator) before the
    end hangs up, and the service kills the command. ``request_id`` is the
    answer's id; ``result`` is the exit event once it has come (a
    session's also carries ``cwd`` and ``session_ended``)."""

    def __init__(self, stream: Stream, path: str = "/api/execute") -> None:
        self._s = stream
        self._path = path
        self._lines = stream.lines()
        self.request_id = stream.request_id
        self.result: dict[str, Any] | None = None

    def __iter__(self) -> Iterator[ExecEvent]:
        return self

    def __next__(self) -> ExecEvent:
        for line in self._lines:
            if not line.strip():
                continue
            try:
                ev = json.loads(line.decode("utf-8"))
            except (ValueError, UnicodeDecodeError):
                self.close()
                raise errors.TransportError("execute: not an NDJSON event: %r" % line[:200],
                                            method="POST", path=self._path) from None
            if ev.get("type") == "error":
                self.close()
                raise errors.stream_error(ev.get("error"), method="POST", path=self._path)
            if ev.get("type") == "exit":
                self.result = ev
                for _ in self._lines:	# the last event: read the answer's end,
                    pass		# so the connection can be kept
            return cast(ExecEvent, ev)
        if self.result is None:
            raise errors.TransportError("execute: the stream ended without an exit event",
                                        method="POST", path=self._path)
        raise StopIteration

    def close(self) -> None:
        self._s.close()

    def __enter__(self) -> ExecStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self._s.close()
        except Exception:
            pass


class ExecuteAPI:
    _t: Transport

    @overload
    def execute(self, thread_id: str, command: str, *, timeout: int | None = None,
                cwd: str | None = None, env: Mapping[str, str] | None = None,
                stream: Literal[False] = False) -> ExecResult: ...

    @overload
    def execute(self, thread_id: str, command: str, *, timeout: int | None = None,
                cwd: str | None = None, env: Mapping[str, str] | None = None,
                stream: Literal[True]) -> ExecStream: ...

    def execute(self, thread_id: str, command: str, *, timeout: int | None = None,
                cwd: str | None = None, env: Mapping[str, str] | None = None,
                stream: bool = False) -> ExecResult | ExecStream:
        """Run ``command`` with ``/bin/sh -c`` in the thread's sandbox
        (started on first use). ``timeout``: seconds, default the thread's
        profile's (the service caps it at 600). ``cwd``: its working
        directory, a directory of the thread's namespace (default the
        workspace; relative paths are under it). ``env``: variables set
        over the sandbox's environment (at most 64 names
        ``[A-Za-z_][A-Za-z0-9_]*``, 32 KiB in all; checked before any
        request). A failing command is a result with its ``exit_code``,
        not an exception; a ``cwd`` or ``env`` the service refuses raises
        ``BadRequestError`` (``invalid_path``, ``cwd_not_found``,
        ``invalid_env``). With ``stream=True`` the answer is an
        :class:`ExecStream` of events as the command writes."""
        body: dict[str, Any] = {"thread_id": _check.thread_id(thread_id),
                                "command": _check.string("command", command)}
        if timeout is not None:
            body["timeout"] = _check.integer("timeout", timeout, low=1)
        if cwd is not None:
            body["cwd"] = _check.cwd(cwd)
        if env is not None:
            body["env"] = _check.env(env)
        _check.boolean("stream", stream)
        wait = min(timeout or EXEC_TIMEOUT_MAX, EXEC_TIMEOUT_MAX) + EXEC_GRACE
        if stream:
            body["stream"] = True
            return ExecStream(self._t.open_stream("POST", "/api/execute", json_body=body,
                                                  timeout=wait))
        return cast(ExecResult, self._t.request("POST", "/api/execute", json_body=body,
                                                timeout=wait).json())
