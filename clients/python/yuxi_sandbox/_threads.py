# SPDX-License-Identifier: MIT
"""Threads: ``POST/GET /api/threads``, ``GET/DELETE /api/threads/{id}``."""

from __future__ import annotations

from typing import Any, cast

from . import _check
from ._transport import Transport
from .types import Thread


class ThreadsAPI:
    _t: Transport

    def create_thread(self, thread_id: str | None = None, *, agent_id: str | None = None,
                      agent_config_id: str | None = None,
                      metadata: dict[str, str] | None = None,
                      idle_timeout: int | None = None) -> Thread:
        """Create a thread owned by the caller (``201``), or return the
        caller's existing thread of that id unchanged (``200``). Without
        ``thread_id`` the service makes one (``t-`` + 16 hex digits).
        ``metadata`` (string to string) and ``idle_timeout`` (seconds) are
        sent only when given: a service that does not know them yet ignores
        them."""
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

    def list_threads(self) -> list[Thread]:
        """The caller's threads, newest first (at most 1000)."""
        return cast(list[Thread], self._t.request("GET", "/api/threads").json()["threads"])

    def delete_thread(self, thread_id: str) -> None:
        """Delete the thread: its container, then its files."""
        tid = _check.thread_id(thread_id)
        self._t.request("DELETE", "/api/threads/" + tid, ok=(204,))
