# SPDX-License-Identifier: MIT
"""Sessions: ``/api/sessions``, a long-lived shell of the thread whose
state (working directory, variables, functions, an activated venv) stays
from one command to the next (docs/api.md "Sessions")."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, cast, overload

from . import _check
from ._execute import EXEC_GRACE, EXEC_TIMEOUT_MAX, ExecStream
from ._transport import Transport
from .types import Session, SessionExecResult

SHELLS = ("bash", "sh")


class SessionsAPI:
    _t: Transport

    def create_session(self, thread_id: str, *, shell: str | None = None,
                       cwd: str | None = None,
                       env: Mapping[str, str] | None = None) -> Session:
        """Start a shell in the thread's sandbox (acquired, or created, as
        for execute). ``shell``: ``"bash"`` or ``"sh"`` (default bash when
        the image has it, else sh); ``cwd`` and ``env``: where it starts
        and variables it starts with, checked as for :meth:`execute`.
        Raises :class:`~yuxi_sandbox.errors.SessionLimitError` when the
        thread or the user has as many open sessions as allowed."""
        body: dict[str, Any] = {"thread_id": _check.thread_id(thread_id)}
        if shell is not None:
            if _check.string("shell", shell) not in SHELLS:
                raise ValueError("shell must be 'bash' or 'sh', not %r" % shell)
            body["shell"] = shell
        if cwd is not None:
            body["cwd"] = _check.cwd(cwd)
        if env is not None:
            body["env"] = _check.env(env)
        return cast(Session, self._t.request("POST", "/api/sessions", json_body=body,
                                             ok=(201,)).json())

    @overload
    def session_execute(self, thread_id: str, session_id: str, command: str, *,
                        timeout: int | None = None,
                        stream: Literal[False] = False) -> SessionExecResult: ...

    @overload
    def session_execute(self, thread_id: str, session_id: str, command: str, *,
                        timeout: int | None = None,
                        stream: Literal[True]) -> ExecStream: ...

    def session_execute(self, thread_id: str, session_id: str, command: str, *,
                        timeout: int | None = None,
                        stream: bool = False) -> SessionExecResult | ExecStream:
        """Run ``command`` in the session's shell: execute's answer plus
        ``cwd`` (the shell's directory afterwards) and ``session_ended``
        (the command ended the shell; the session is over). A timeout kills
        the command, not the session. One command at a time:
        :class:`~yuxi_sandbox.errors.SessionBusyError` while another runs;
        :class:`~yuxi_sandbox.errors.SessionNotFoundError` for a session that
        ended or is gone (nothing ran). No ``cwd`` or ``env`` here: run
        ``cd`` or ``export`` in a command. With ``stream=True`` an
        :class:`ExecStream` whose exit event has ``cwd`` and
        ``session_ended`` too."""
        body: dict[str, Any] = {"thread_id": _check.thread_id(thread_id),
                                "command": _check.string("command", command)}
        if timeout is not None:
            body["timeout"] = _check.integer("timeout", timeout, low=1)
        _check.boolean("stream", stream)
        path = "/api/sessions/%s/execute" % _check.session_id(session_id)
        wait = min(timeout or EXEC_TIMEOUT_MAX, EXEC_TIMEOUT_MAX) + EXEC_GRACE
        if stream:
            body["stream"] = True
            return ExecStream(self._t.open_stream("POST", path, json_body=body,
                                                  timeout=wait), path)
        return cast(SessionExecResult, self._t.request("POST", path, json_body=body,
                                                       timeout=wait).json())

    def list_sessions(self, thread_id: str) -> list[Session]:
        """The thread's sessions, oldest first (ended and lost ones too,
        until deleted)."""
        q = {"thread_id": _check.thread_id(thread_id)}
        return cast(list[Session],
                    self._t.request("GET", "/api/sessions", query=q).json()["sessions"])

    def get_session(self, thread_id: str, session_id: str) -> Session:
        """One session: state, ``busy``, ``cwd``, times, commands run."""
        q = {"thread_id": _check.thread_id(thread_id)}
        sid = _check.session_id(session_id)
        return cast(Session, self._t.request("GET", "/api/sessions/" + sid, query=q).json())

    def delete_session(self, thread_id: str, session_id: str) -> Session:
        """Kill the shell and every process of it and forget the session;
        returns its last state with ``forgotten``."""
        q = {"thread_id": _check.thread_id(thread_id)}
        sid = _check.session_id(session_id)
        return cast(Session, self._t.request("DELETE", "/api/sessions/" + sid,
                                             query=q).json())
