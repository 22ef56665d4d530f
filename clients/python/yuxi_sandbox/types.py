# SPDX-License-Identifier: MIT
"""The shapes of the service's answers (docs/api.md), as ``TypedDict``s.

The client returns the parsed JSON objects themselves: fields a newer
service adds are there too, and ``NotRequired`` marks fields the service
sends only sometimes.
"""

from __future__ import annotations

from typing import Literal, NotRequired, TypedDict

__all__ = [
    "SandboxState", "DiskUsage", "Thread", "ExecResult", "OutputEvent", "ExitEvent",
    "ErrorEvent", "ExecEvent", "Pty", "Process", "ProcessOutput", "StdinResult",
    "Session", "SessionExecResult", "SessionExitEvent", "SessionEvent", "FileInfo",
    "Listing", "CatResult", "PathResult", "EditResult", "UploadResult", "DeleteResult",
    "GlobResult", "GrepMatch", "GrepResult",
]


class SandboxState(TypedDict):
    sandbox_id: str | None
    state: str
    container: str | None
    last_used_at: str | None


class DiskUsage(TypedDict):
    quota_bytes: int
    used_bytes: int
    available_bytes: int


class Thread(TypedDict):
    """A thread record; ``sandbox`` and ``disk`` only from ``get_thread``."""
    thread_id: str
    owner: str
    agent_id: str | None
    agent_config_id: str | None
    created_at: str
    host: NotRequired[str]
    metadata: NotRequired[dict[str, str]]
    idle_timeout: NotRequired[int | None]
    sandbox: NotRequired[SandboxState]
    disk: NotRequired[DiskUsage | None]


class ExecResult(TypedDict):
    output: str
    exit_code: int
    truncated: bool
    timed_out: bool
    duration_ms: int
    full_output_path: NotRequired[str]
    refused: NotRequired[str]
    layout_repaired: NotRequired[list[str]]


class OutputEvent(TypedDict):
    type: Literal["output"]
    data: str


class ExitEvent(TypedDict):
    type: Literal["exit"]
    exit_code: int
    truncated: bool
    timed_out: bool
    duration_ms: int
    full_output_path: NotRequired[str]
    refused: NotRequired[str]
    layout_repaired: NotRequired[list[str]]


class ErrorEvent(TypedDict):
    type: Literal["error"]
    error: dict[str, str]


ExecEvent = OutputEvent | ExitEvent


class Pty(TypedDict):
    """A terminal's size: columns and rows, each 1..1000."""
    cols: int
    rows: int


class Process(TypedDict):
    process_id: str
    command: str
    state: Literal["running", "exited", "lost"]
    exit_code: int | None
    timed_out: bool
    timeout: int
    started_at: str
    ended_at: str | None
    output_bytes: int
    pty: NotRequired[Pty]
    forgotten: NotRequired[bool]


class ProcessOutput(TypedDict):
    data: str
    offset: int
    next_offset: int
    dropped: int
    running: bool
    state: str
    exit_code: int | None
    timed_out: bool
    wait_capped: NotRequired[bool]


class StdinResult(TypedDict):
    written: int
    stdin_open: bool


class Session(TypedDict):
    """A session: one long-lived shell of the thread (docs/api.md
    "Sessions"); ``ended_at``, ``end_reason`` (``exit``, ``idle``,
    ``killed``, ``lost``) and ``exit_code`` once it is not running."""
    session_id: str
    thread_id: str
    shell: str | None
    state: Literal["running", "ended", "lost"]
    busy: bool
    cwd: str
    created_at: str
    last_used: str
    commands: int
    ended_at: NotRequired[str | None]
    end_reason: NotRequired[str | None]
    exit_code: NotRequired[int | None]
    forgotten: NotRequired[bool]


class SessionExecResult(ExecResult):
    """A session's command: execute's reply, the shell's working directory
    after it, and whether it ended the shell (then ``exit_code`` is the
    shell's status and the session is over)."""
    cwd: str
    session_ended: bool


class SessionExitEvent(ExitEvent):
    """The exit event of a session's streamed command."""
    cwd: str
    session_ended: bool


SessionEvent = OutputEvent | SessionExitEvent


class FileInfo(TypedDict):
    path: str
    is_dir: bool
    size: int
    modified_at: str | None
    type: NotRequired[str]
    name: NotRequired[str]


class Listing(TypedDict):
    path: str
    entries: list[FileInfo]
    truncated: bool
    truncated_reason: NotRequired[str]


class CatResult(TypedDict):
    path: str
    format: Literal["numbered", "raw"]
    content: str
    start_line: int
    end_line: int
    total_lines: int
    next_offset: int | None
    cut_lines: list[int]
    size: int


class PathResult(TypedDict):
    path: str


class EditResult(TypedDict):
    path: str
    occurrences: int


class UploadResult(TypedDict):
    path: str
    size: int


class DeleteResult(TypedDict):
    path: str
    pending: NotRequired[bool]


class GlobResult(TypedDict):
    path: str
    matches: list[FileInfo]
    truncated: bool
    truncated_reason: NotRequired[str]


class GrepMatch(TypedDict):
    path: str
    line: int
    text: str


class GrepResult(TypedDict):
    path: str
    matches: list[GrepMatch]
    truncated: bool
    truncated_reason: NotRequired[str]
