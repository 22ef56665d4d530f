# SPDX-License-Identifier: MIT
"""Threads: ``POST/GET /api/threads``, ``GET/PATCH/DELETE /api/threads/{id}``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from . import _check
from ._transport import Transport
from .types import Thread


class _Unset:
    """The type of UNSET: an argument not given (None means something)."""

    def __repr__(self) -> str:
        return "UNSET"


UNSET = _Unset()


class ThreadsAPI:
    _t: Transport

    def create_thread(self, thread_id: str | None = None, *, agent_id: str | None = None,
                      agent_config_id: str | None = None,
                      metadata: dict[str, str] | None = None,
                      idle_timeout: int | None = None) -> Thread:
        """Create a thread owned by the caller (``201``), or return the
        caller's existing thread of that id unchanged (``200``). Without
        ``thread_id`` the service makes one (``t-`` + 16 hex digits).
        ``metadata`` (string to string: at most 16 keys of
        ``[A-Za-z0-9_.-]{1,64}``, values of at most 256 bytes) and
        ``idle_timeout`` (seconds the sandbox may idle, at most the
        service's ``YUXI_SANDBOX_IDLE_TIMEOUT_MAX``) are sent when given."""
        body: dict[str, Any] = {}
        if thread_id is not None:
            body["thread_id"] = _check.thread_id(thread_id)
        if agent_id is not None:
            body["agent_id"] = _check.string("agent_id", agent_id)
        if agent_config_id is not None:
            if agent_id is None:
                raise ValueError("agent_config_id needs agent_id")
            body["agent_config_id"] = _check.string("agent_config_id", agent_config_id)
        if metadata is not None:
            body["metadata"] = _check.str_map("metadata", metadata)
        if idle_timeout is not None:
            body["idle_timeout"] = _check.integer("idle_timeout", idle_timeout, low=1)
        ans = self._t.request("POST", "/api/threads", json_body=body, ok=(200, 201))
        return cast(Thread, ans.json())

    def get_thread(self, thread_id: str) -> Thread:
        """The caller's thread with its ``sandbox`` and ``disk``;
        ``NotFoundError`` for an unknown thread or another user's."""
        tid = _check.thread_id(thread_id)
        return cast(Thread, self._t.request("GET", "/api/threads/" + tid).json())

    def list_threads(self, *, metadata: Mapping[str, str] | None = None) -> list[Thread]:
        """The caller's threads, newest first (at most 1000); with
        ``metadata``, only those whose metadata has every pair given
        (``metadata.KEY=VALUE`` filters)."""
        meta = _check.str_map("metadata", metadata) or {}
        q = {"metadata." + _check.string("metadata key", k): v for k, v in meta.items()}
        return cast(list[Thread], self._t.request("GET", "/api/threads",
                                                  query=q).json()["threads"])

    def update_thread(self, thread_id: str, *,
                      metadata: Mapping[str, str | None] | None = None,
                      idle_timeout: int | None | _Unset = UNSET) -> Thread:
        """Change a thread's ``metadata`` (a merge patch: a string sets a
        key, ``None`` removes it) and/or ``idle_timeout`` (seconds; ``None``
        goes back to the service's default); returns the new record."""
        tid = _check.thread_id(thread_id)
        body: dict[str, Any] = {}
        if metadata is not None:
            if not isinstance(metadata, Mapping):
                raise TypeError("metadata must be a mapping of strings to strings or None")
            for k, v in metadata.items():
                if not isinstance(k, str) or not (v is None or isinstance(v, str)):
                    raise TypeError("metadata must map strings to strings or None: %r: %r"
                                    % (k, v))
            body["metadata"] = dict(metadata)
        if not isinstance(idle_timeout, _Unset):
            body["idle_timeout"] = _check.opt_int("idle_timeout", idle_timeout, low=1)
        if not body:
            raise ValueError("update_thread needs metadata or idle_timeout")
        return cast(Thread, self._t.request("PATCH", "/api/threads/" + tid,
                                            json_body=body).json())

    def delete_thread(self, thread_id: str) -> None:
        """Delete the thread: its container, then its files."""
        tid = _check.thread_id(thread_id)
        self._t.request("DELETE", "/api/threads/" + tid, ok=(204,))
