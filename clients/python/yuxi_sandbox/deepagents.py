# SPDX-License-Identifier: MIT
"""``YuxiSandbox``: a deepagents sandbox backend over the yuxi-sandbox service.

A subclass of deepagents' ``BaseSandbox`` (``deepagents.backends.sandbox``;
deepagents is an optional dependency, needed only for this module) where
nothing goes through a shell script: ``execute`` is ``POST /api/execute``,
``upload_files``/``download_files`` the upload and download routes, and
``ls``, ``read``, ``write``, ``edit``, ``glob``, ``grep`` and ``delete`` one
request each to the service's file API (which never starts or wakes a
container). The async variants run the same calls in a worker thread.

With ``session=True`` every ``execute`` of the backend runs in one shell
session of the thread (``/api/sessions``, docs/api.md "Sessions"), so that
``cd``, variables and functions carry over from one command to the next;
the session is made at the first command and made again, with a note in
that command's output, when it was lost or ended. The default is
deepagents' stateless ``execute``.

Results follow the deepagents 0.7.8 protocol and ``BaseSandbox``'s words
(``File '<p>': file_not_found``, ``Error: String not found in file: ...``,
the empty-file reminder, the 500 KiB page cap); where the service and
``BaseSandbox`` differ, and which of LangChain's standard sandbox tests
this follows the protocol against, is in docs/python.md.

Paths are the service's namespace (``/home/yuxi/user-data``,
``/home/yuxi/skills`` and their aliases, docs/api.md "Paths"); answers
spell a path the way the caller spelled the directory it asked about.
"""

from __future__ import annotations

import asyncio
import base64
import codecs
import io
import re
import threading
from collections.abc import Mapping
from typing import Any

try:
    from deepagents.backends.protocol import (
        EditResult, ExecuteResponse, FileDownloadResponse, FileInfo, FileUploadResponse,
        GlobResult, GrepMatch, GrepResult, LsResult, ReadResult, WriteResult)
    from deepagents.backends.protocol import DeleteResult as _DeleteResult
    from deepagents.backends.sandbox import BaseSandbox
    from deepagents.backends.utils import _get_backend_read_file_type, normalize_read_bounds
except ImportError as _e:  # pragma: no cover - depends on the environment
    raise ImportError("yuxi_sandbox.deepagents needs the deepagents package "
                      "(deepagents.backends.sandbox): %s" % _e) from _e

from deepagents.backends import sandbox as _base

# BaseSandbox.read's limits and notice (as deepagents 0.7.8 has them when
# a version does not export them).
MAX_BINARY_BYTES: int = getattr(_base, "MAX_BINARY_BYTES", 500 * 1024)
MAX_OUTPUT_BYTES: int = getattr(_base, "MAX_OUTPUT_BYTES", 500 * 1024)
TRUNCATION_MSG: str = getattr(_base, "TRUNCATION_MSG", (
    "\n\n[Output was truncated due to size limits. This paginated read result exceeded "
    "the sandbox stdout limit. Continue reading with a larger offset or smaller limit to "
    "inspect the rest of the file.]"))

from . import _check, _globmatch
from .client import Client
from .errors import APIError, SessionNotFoundError, YuxiSandboxError

__all__ = ["YuxiSandbox", "EMPTY_CONTENT_WARNING"]

#: What ``BaseSandbox.read`` answers for an empty file.
EMPTY_CONTENT_WARNING = "System reminder: File exists but has empty contents"

# Text up to this size is written with the write route (JSON); larger
# content, or content the JSON body limit refuses, is uploaded as bytes.
WRITE_INLINE_MAX = 1024 * 1024
# The service's cap on matches of one grep or glob (broker max_results).
RESULTS_CAP = 1000
# The most lines one cat may ask for (the service accepts up to 2^31).
LINES_MAX = 2**31
# BaseSandbox counts the lines of a file only up to this size.
LINE_COUNT_MAX_BYTES = 1024 * 1024
_PAST_END = re.compile(r"past the end of the file \((\d+) lines?\)")
_THREAD: Any = object()	# delete() without a path: the thread
# Codes of a 400 answer to execute about its cwd or env (not the command).
_EXEC_OPTION_CODES = frozenset({"invalid_env", "invalid_path", "cwd_not_found"})
# What a command's output starts with when it ran in a new session that
# replaced one whose state is gone (session mode).
NEW_SESSION_NOTE = ("[Shell session restarted: %s. Its working directory, variables "
                    "and functions are gone; this command ran in a new shell.]\n")
# What ends the output of a command that ended its session's shell.
ENDED_NOTE = ("\n\n[This command ended the shell session (exit code %d): the next "
              "command runs in a new shell, without this one's working directory, "
              "variables and functions.]")


def _norm(p: str) -> str:
    """Drop empty and ``.`` components: ``/a//b/./`` -> ``/a/b``."""
    parts = [s for s in p.split("/") if s not in ("", ".")]
    if p.startswith("/"):
        return "/" + "/".join(parts)
    return "/".join(parts) or "."


def _respell(canon: str, canon_base: str, caller_base: str) -> str:
    """``canon`` under ``canon_base`` in the caller's spelling of that base
    (an absolute one; a relative caller base keeps canonical paths)."""
    if not caller_base.startswith("/"):
        return canon
    if canon == canon_base:
        return caller_base
    if canon_base == "/":
        return canon
    if canon.startswith(canon_base + "/"):
        rest = canon[len(canon_base) + 1:]
        return "/" + rest if caller_base == "/" else caller_base + "/" + rest
    return canon


def _file_error(e: YuxiSandboxError) -> str:
    """deepagents' ``FileOperationError`` for a failed upload or download,
    or the service's own words when none fits."""
    if isinstance(e, APIError):
        if e.code in ("file_not_found", "is_directory", "invalid_path"):
            return e.code
        if e.code in ("path_not_allowed", "read_only") or (e.code == "" and e.status == 403):
            return "permission_denied"
        if e.code == "" and e.status == 404:
            return "file_not_found"
        return "%s: %s" % (e.code or "HTTP %d" % e.status, e.message)
    return str(e)


def _lines_of(text: str) -> list[str]:
    """The lines of a text, as Python's universal newlines read them."""
    return [ln.rstrip("\n") for ln in io.StringIO(text, newline=None)]


def _page(lines: list[str], total: int, offset: int, size: int) -> ReadResult:
    """A read result of ``lines`` (the window from ``offset``, without
    terminators) of a file of ``total`` lines and ``size`` bytes, capped
    at MAX_OUTPUT_BYTES as ``BaseSandbox.read`` caps it; like it, a page
    that ends before the end of a file over 1 MiB leaves ``total_lines``
    unknown."""
    budget = MAX_OUTPUT_BYTES - len(TRUNCATION_MSG.encode("utf-8"))
    parts: list[str] = []
    used = returned = 0
    truncated = False
    for ln in lines:
        piece = ln if returned == 0 else "\n" + ln
        n = len(piece.encode("utf-8"))
        if used + n > budget:
            truncated = True
            left = budget - used
            if left > 0:
                prefix = piece.encode("utf-8")[:left].decode("utf-8", errors="ignore")
                parts.append(prefix)
            break
        parts.append(piece)
        used += n
        returned += 1
    text = "".join(parts) + (TRUNCATION_MSG if truncated else "")
    consumed = returned + (1 if truncated else 0)	# lines read, the cut one too
    if truncated and returned == 0:
        returned = 1
    end = offset + returned
    known: int | None = total
    if offset + consumed < total and size > LINE_COUNT_MAX_BYTES:
        known = None
    return ReadResult(file_data={"content": text, "encoding": "utf-8"}, total_lines=known,
                      start_line=offset + 1, end_line=end,
                      next_offset=end if known is None or end < known else None)


class YuxiSandbox(BaseSandbox):
    """A deepagents backend for one thread of a yuxi-sandbox service.

    ``YuxiSandbox(url=, token=, thread_id=, ca_file=None, timeout=None)``
    attaches to an existing thread (no request is made);
    :meth:`create` makes the thread first. ``timeout`` is the default
    seconds one command may run (the service's profile default when None;
    ``execute(timeout=)`` overrides it). ``cwd`` and ``env`` are the
    working directory and variables of every :meth:`execute` (default the
    workspace and the sandbox's environment; ``execute(cwd=, env=)``
    replaces the directory and sets variables over these), checked as the
    service checks them when given. ``session=True`` runs every
    :meth:`execute` in one shell session of the thread (state carries over;
    ``cwd`` and ``env`` are then where that shell starts and what it starts
    with). ``client`` shares an existing :class:`~yuxi_sandbox.Client`
    instead of making one; ``client_timeout``, ``retries`` and
    ``retry_budget`` are the made client's.
    """

    def __init__(self, *, url: str | None = None, token: str | None = None,
                 thread_id: str, ca_file: str | None = None, timeout: int | None = None,
                 cwd: str | None = None, env: Mapping[str, str] | None = None,
                 client: Client | None = None, client_timeout: float = 60.0,
                 retries: int = 5, retry_budget: float = 60.0, session: bool = False) -> None:
        if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, int)
                                    or timeout <= 0):
            raise ValueError("timeout must be a positive number of seconds")
        self._cwd = _check.cwd(cwd)
        self._env = _check.env(env)
        self._tid = _check.thread_id(thread_id)
        self._session = _check.boolean("session", session)
        # session mode: the session's id once made, why the last one is gone
        # (for the next command's note), one command at a time
        self._sid: str | None = None
        self._gone: str | None = None
        self._sess_lock = threading.Lock()
        if client is None:
            if url is None or token is None:
                raise TypeError("YuxiSandbox needs url and token, or a client")
            client = Client(url, token, ca_file, client_timeout, retries=retries,
                            retry_budget=retry_budget)
        self._c = client
        self._timeout = timeout

    @classmethod
    def create(cls, *, url: str, token: str, thread_id: str | None = None,
               ca_file: str | None = None, agent_id: str | None = None,
               agent_config_id: str | None = None, metadata: dict[str, str] | None = None,
               timeout: int | None = None, idle_timeout: int | None = None,
               cwd: str | None = None, env: Mapping[str, str] | None = None,
               session: bool = False, **kw: Any) -> YuxiSandbox:
        """Create the thread (the service makes an id when ``thread_id`` is
        None; an existing thread of the caller's is taken as it is) and
        return its backend. ``metadata`` and ``idle_timeout`` are passed to
        the service when given; ``cwd`` and ``env`` are the backend's
        defaults for :meth:`execute` (checked before any request);
        ``session`` as for the constructor."""
        _check.cwd(cwd)
        _check.env(env)
        _check.boolean("session", session)
        client = kw.pop("client", None) or Client(
            url, token, ca_file, kw.pop("client_timeout", 60.0),
            retries=kw.pop("retries", 5), retry_budget=kw.pop("retry_budget", 60.0))
        if kw:
            raise TypeError("unknown arguments: %s" % ", ".join(sorted(kw)))
        rec = client.create_thread(thread_id, agent_id=agent_id,
                                   agent_config_id=agent_config_id, metadata=metadata,
                                   idle_timeout=idle_timeout)
        return cls(thread_id=rec["thread_id"], timeout=timeout, cwd=cwd, env=env,
                   client=client, session=session)

    @property
    def id(self) -> str:
        """The thread id."""
        return self._tid

    @property
    def client(self) -> Client:
        """The HTTP API client this backend uses."""
        return self._c

    @property
    def cwd(self) -> str | None:
        """The default working directory of :meth:`execute` (None: the workspace)."""
        return self._cwd

    @property
    def env(self) -> dict[str, str] | None:
        """A copy of the default variables of :meth:`execute` (None: none)."""
        return None if self._env is None else dict(self._env)

    @property
    def session(self) -> bool:
        """True when every :meth:`execute` runs in one shell session."""
        return self._session

    @property
    def session_id(self) -> str | None:
        """The id of the session commands run in now (session mode; None
        before the first command and after one ended it)."""
        return self._sid

    def close(self) -> None:
        """Delete the backend's session (session mode) and close the
        kept-alive connection; the thread and its files stay."""
        with self._sess_lock:
            sid, self._sid = self._sid, None
        try:
            if sid is not None:
                self._c.delete_session(self._tid, sid)
        except YuxiSandboxError:
            pass	# gone already, or the service is: nothing to free
        finally:
            self._c.close()

    def delete_thread(self) -> None:
        """Delete the thread: its sandbox (and sessions), then all its files."""
        self._sid = None
        self._c.delete_thread(self._tid)
        self._c.close()

    # --- execute ---------------------------------------------------------------
    def execute(self, command: str, *, timeout: int | None = None, cwd: str | None = None,
                env: Mapping[str, str] | None = None) -> ExecuteResponse:
        """Run ``command`` in the thread's sandbox; stdout and stderr as
        written. Its working directory is ``cwd``, else the backend's, else
        ``/home/yuxi/user-data/workspace``; ``env`` is set over the
        backend's ``env`` (deepagents' own tools pass neither). A command
        killed at its timeout has exit code 124 and a note; output the
        service cut at its limit a note naming the file holding all of it.
        A failed request is an error result (exit code 1), except bad
        ``cwd``/``env``: checked before any request (``TypeError``,
        ``ValueError``), and the service's refusal of them raises
        ``BadRequestError`` (``invalid_path``, ``cwd_not_found``,
        ``invalid_env``): they are the caller's settings, which no command
        can repair.

        In session mode the command runs in the backend's session (see
        :meth:`_session_execute`); a per-call ``cwd`` or ``env`` raises
        ``ValueError`` there (the shell has its own: ``cd``, ``export``)."""
        t = timeout if timeout is not None else self._timeout
        if t is not None and t <= 0:
            t = None	# "no timeout" is not offered: the service's default
        if self._session:
            if cwd is not None or env is not None:
                raise ValueError("execute(cwd=, env=) is not available in session mode: "
                                 "the session's shell keeps its own directory and "
                                 "variables (run cd or export in a command)")
            return self._session_execute(command, t)
        wd = _check.cwd(cwd) if cwd is not None else self._cwd
        extra = _check.env(env)
        variables = self._env if extra is None else _check.env({**(self._env or {}), **extra})
        try:
            r = self._c.execute(self._tid, command, timeout=t, cwd=wd, env=variables)
        except (TypeError, ValueError) as e:
            return ExecuteResponse(output="Error: %s" % e, exit_code=1)
        except APIError as e:
            if e.status == 400 and e.code in _EXEC_OPTION_CODES:
                raise
            return ExecuteResponse(output="Error executing command: %s" % e, exit_code=1)
        except YuxiSandboxError as e:
            return ExecuteResponse(output="Error executing command: %s" % e, exit_code=1)
        return self._response(r, t)

    @staticmethod
    def _response(r: Mapping[str, Any], t: int | None, note: str = "") -> ExecuteResponse:
        """The ``ExecuteResponse`` of a command's answer: its output after
        ``note``, and a note each for a timeout and a cut output."""
        out = note + r["output"]
        if r.get("timed_out"):
            out += "\n\n[Command timed out after %s seconds: its process group was killed.]" % (
                t if t is not None else "the default number of")
        if r.get("truncated"):
            out += "\n\n[Output truncated by the sandbox service"
            out += ("; the whole output is in %s.]" % r["full_output_path"]
                    if r.get("full_output_path") else ".]")
        if r.get("session_ended"):
            out += ENDED_NOTE % r["exit_code"]
        return ExecuteResponse(output=out, exit_code=r["exit_code"],
                               truncated=bool(r.get("truncated")))

    def _session_execute(self, command: str, t: int | None) -> ExecuteResponse:
        """``command`` in the backend's session, one at a time. The session
        is made at the first command (where the backend's ``cwd`` and
        ``env`` say) and made again when the service answers
        ``session_not_found`` (its shell ended, idled out or was deleted,
        or the sandbox was recreated; nothing ran) or the last command
        ended it: the command then runs in the new shell, its output
        starting with a note that the old shell's state is gone. A
        timed-out command is killed and the session keeps its state.
        Failed requests are error results (exit code 1) as in
        :meth:`execute`; the service's refusal of the backend's ``cwd`` or
        ``env`` raises ``BadRequestError``."""
        with self._sess_lock:
            try:
                for _ in range(2):
                    note = ""
                    if self._sid is None:
                        s = self._c.create_session(self._tid, cwd=self._cwd, env=self._env)
                        self._sid = s["session_id"]
                        if self._gone is not None:
                            note, self._gone = NEW_SESSION_NOTE % self._gone, None
                    try:
                        r = self._c.session_execute(self._tid, self._sid, command, timeout=t)
                        break
                    except SessionNotFoundError as e:
                        self._sid = None
                        self._gone = "the previous session is gone (%s)" % e.message
                else:	# a new session gone at once: do not loop
                    return ExecuteResponse(output="Error executing command: the shell "
                                           "session was lost twice in a row (%s)" % self._gone,
                                           exit_code=1)
            except (TypeError, ValueError) as e:
                return ExecuteResponse(output="Error: %s" % e, exit_code=1)
            except APIError as e:
                if e.status == 400 and e.code in _EXEC_OPTION_CODES:
                    raise
                return ExecuteResponse(output="Error executing command: %s" % e, exit_code=1)
            except YuxiSandboxError as e:
                return ExecuteResponse(output="Error executing command: %s" % e, exit_code=1)
            if r.get("session_ended"):
                self._sid = None
                self._gone = ("the command before ended the shell (exit code %d)"
                              % r["exit_code"])
            return self._response(r, t, note)

    # --- upload, download ------------------------------------------------------
    def upload_files(self, files: list[tuple[str, bytes]]) -> list[FileUploadResponse]:
        """Each file through ``POST /api/filesystem/upload`` (parents made,
        an existing file replaced); per-file errors as deepagents' codes."""
        out = []
        for path, content in files:
            if not isinstance(path, str) or not path.startswith("/"):
                out.append(FileUploadResponse(path=path, error="invalid_path"))
                continue
            try:
                self._c.upload(self._tid, path, content)
                out.append(FileUploadResponse(path=path, error=None))
            except (TypeError, ValueError):
                out.append(FileUploadResponse(path=path, error="invalid_path"))
            except YuxiSandboxError as e:
                out.append(FileUploadResponse(path=path, error=_file_error(e)))
        return out

    def download_files(self, paths: list[str]) -> list[FileDownloadResponse]:
        """Each file through ``GET /api/filesystem/download`` (nginx sends it)."""
        out = []
        for path in paths:
            if not isinstance(path, str) or not path.startswith("/"):
                out.append(FileDownloadResponse(path=path, content=None, error="invalid_path"))
                continue
            try:
                data = self._c.download(self._tid, path)
                out.append(FileDownloadResponse(path=path, content=data, error=None))
            except (TypeError, ValueError):
                out.append(FileDownloadResponse(path=path, content=None, error="invalid_path"))
            except YuxiSandboxError as e:
                out.append(FileDownloadResponse(path=path, content=None, error=_file_error(e)))
        return out

    # --- ls ----------------------------------------------------------------------
    def ls(self, path: str) -> LsResult:
        """One level of a directory (``GET /api/filesystem/ls``); ``/`` is
        the namespace root with its two entries."""
        try:
            r = self._c.ls(self._tid, path or "/")
        except YuxiSandboxError as e:
            return LsResult(error="Path '%s': %s" % (path, self._path_error(e)))
        base = _norm(path or "/")
        entries: list[FileInfo] = []
        for ent in r["entries"]:
            info: FileInfo = {"path": _respell(ent["path"], r["path"], base),
                              "is_dir": bool(ent["is_dir"]), "size": int(ent.get("size") or 0)}
            mtime = ent.get("modified_at")
            if mtime:
                info["modified_at"] = mtime
            entries.append(info)
        return LsResult(entries=entries)

    @staticmethod
    def _path_error(e: YuxiSandboxError) -> str:
        """``BaseSandbox``'s word for a failed directory operation."""
        if isinstance(e, APIError):
            if e.code == "file_not_found":
                return "path_not_found"
            if e.code == "invalid_path" and e.message.startswith("not a directory"):
                return "not_a_directory"
            if e.code == "path_not_allowed":
                return "permission_denied"
            if e.code in ("invalid_path", "bad_request"):
                return "%s: %s" % (e.code, e.message)
        return str(e)

    # --- read --------------------------------------------------------------------
    def read(self, file_path: str, offset: int = 0, limit: int = 2000) -> ReadResult:
        """Lines ``[offset, offset+limit)`` of a text file through
        ``GET /api/filesystem/cat?format=raw`` (one request), or a
        non-text file (by extension) base64-encoded through the download
        route; as ``BaseSandbox.read`` answers."""
        offset, limit = normalize_read_bounds(offset, limit)
        if _get_backend_read_file_type(file_path) != "text":
            return self._read_binary(file_path)
        try:
            r = self._c.read(self._tid, file_path, offset=offset,
                             limit=min(max(limit, 1), LINES_MAX), format="raw")
        except YuxiSandboxError as e:
            if isinstance(e, APIError):
                m = _PAST_END.search(e.message) if e.code == "bad_request" else None
                if m is not None:
                    if int(m.group(1)) == 0:
                        return ReadResult(file_data={"content": EMPTY_CONTENT_WARNING,
                                                     "encoding": "utf-8"})
                    if limit <= 0:
                        return ReadResult(file_data={"content": "", "encoding": "utf-8"},
                                          no_lines_requested=True)
                    return ReadResult(error="File '%s': Line offset %d exceeds file length "
                                      "(%s lines)" % (file_path, offset, m.group(1)))
                if e.code in ("binary_file", "payload_too_large"):
                    # NUL bytes (text to deepagents if valid UTF-8) or over
                    # the service's 10 MiB: decide on the bytes themselves
                    return self._read_local(file_path, offset, limit)
            return ReadResult(error="File '%s': %s" % (file_path, self._read_error(e)))
        if r["total_lines"] == 0:
            return ReadResult(file_data={"content": EMPTY_CONTENT_WARNING, "encoding": "utf-8"})
        content = r["content"]
        if r["cut_lines"] or "\ufffd" in content or "\r" in content.replace("\r\n", ""):
            # lines over the service's 2000 bytes, bytes that are not UTF-8
            # (deepagents answers base64 then), a lone \r (a line break to
            # Python): the whole file decides
            return self._read_local(file_path, offset, limit)
        if limit <= 0:
            return ReadResult(file_data={"content": "", "encoding": "utf-8"},
                              no_lines_requested=True)
        lines = content.split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        return _page([ln[:-1] if ln.endswith("\r") else ln for ln in lines],
                     r["total_lines"], offset, r["size"])

    @staticmethod
    def _read_error(e: YuxiSandboxError) -> str:
        if isinstance(e, APIError):
            if e.code == "file_not_found":
                return "file_not_found"
            if e.code == "is_directory" or (e.code == "bad_request"
                                            and "regular" in e.message):
                return "not_a_file"
            if e.code in ("path_not_allowed",) or (e.code == "" and e.status == 403):
                return "permission_denied"
            return "%s: %s" % (e.code or "HTTP %d" % e.status, e.message)
        return str(e)

    def _read_local(self, file_path: str, offset: int, limit: int) -> ReadResult:
        """``BaseSandbox.read`` done here on the file's bytes (download)."""
        try:
            raw = self._c.download(self._tid, file_path)
        except YuxiSandboxError as e:
            return ReadResult(error="File '%s': %s" % (file_path, self._read_error(e)))
        if not raw:
            return ReadResult(file_data={"content": EMPTY_CONTENT_WARNING, "encoding": "utf-8"})
        try:
            codecs.getincrementaldecoder("utf-8")().decode(raw[:8192], final=False)
        except UnicodeDecodeError:
            return ReadResult(file_data={"content": base64.b64encode(raw).decode("ascii"),
                                         "encoding": "base64"})
        if limit <= 0:
            return ReadResult(file_data={"content": "", "encoding": "utf-8"},
                              no_lines_requested=True)
        try:
            lines = _lines_of(raw.decode("utf-8"))
        except UnicodeDecodeError:
            return ReadResult(error="File '%s': not valid UTF-8 text" % file_path)
        if offset >= len(lines):
            return ReadResult(error="File '%s': Line offset %d exceeds file length (%d lines)"
                              % (file_path, offset, len(lines)))
        return _page(lines[offset:offset + limit], len(lines), offset, len(raw))

    def _read_binary(self, file_path: str) -> ReadResult:
        """An image, audio, video or document file: its bytes, base64, when
        at most MAX_BINARY_BYTES (only that much plus one is fetched)."""
        try:
            raw = self._c.download(self._tid, file_path, max_bytes=MAX_BINARY_BYTES + 1)
        except YuxiSandboxError as e:
            return ReadResult(error="File '%s': %s" % (file_path, self._read_error(e)))
        if not raw:
            return ReadResult(file_data={"content": EMPTY_CONTENT_WARNING, "encoding": "utf-8"})
        if len(raw) > MAX_BINARY_BYTES:
            return ReadResult(error="File '%s': Binary file exceeds maximum preview size of "
                              "%d bytes" % (file_path, MAX_BINARY_BYTES))
        return ReadResult(file_data={"content": base64.b64encode(raw).decode("ascii"),
                                     "encoding": "base64"})

    # --- write, edit, delete -----------------------------------------------------
    def write(self, file_path: str, content: str) -> WriteResult:
        """Create or overwrite a file, parents made (deepagents 0.7.8):
        ``POST /api/filesystem/write`` with ``overwrite``, or the upload
        route for content over 1 MiB or over the service's JSON limit."""
        try:
            data = content.encode("utf-8")
            if len(data) <= WRITE_INLINE_MAX:
                try:
                    self._c.write(self._tid, file_path, content, overwrite=True)
                    return WriteResult(path=file_path)
                except APIError as e:
                    if e.status != 413:
                        raise
            self._c.upload(self._tid, file_path, data)
            return WriteResult(path=file_path)
        except (TypeError, ValueError) as e:
            return WriteResult(error="Failed to write file '%s': %s" % (file_path, e))
        except YuxiSandboxError as e:
            return WriteResult(error="Failed to write file '%s': %s" % (file_path, _file_error(e)))

    def edit(self, file_path: str, old_string: str, new_string: str,
             replace_all: bool = False) -> EditResult:  # noqa: FBT001, FBT002
        """Replace ``old_string`` once (it must be unique) or everywhere:
        ``POST /api/filesystem/edit``. As ``BaseSandbox.edit``, an LF-only
        ``old_string`` not found is tried again in the CRLF form (and a CRLF
        one in the LF form), so files with CRLF line ends can be edited with
        what ``read`` showed."""
        if old_string == "":
            return self._edit_empty(file_path, new_string)
        tries = [(old_string, new_string)]
        crlf = (old_string.replace("\r\n", "\n").replace("\n", "\r\n"),
                new_string.replace("\r\n", "\n").replace("\n", "\r\n"))
        lf = (old_string.replace("\r\n", "\n"), new_string.replace("\r\n", "\n"))
        for v in (crlf, lf):
            if v[0] not in [t[0] for t in tries]:
                tries.append(v)
        for old, new in tries:
            try:
                r = self._c.edit(self._tid, file_path, old, new, replace_all=replace_all)
                return EditResult(path=file_path, occurrences=r["occurrences"])
            except (TypeError, ValueError) as e:
                return EditResult(error="Error editing file '%s': %s" % (file_path, e))
            except APIError as e:
                if e.code == "string_not_found":
                    continue
                return EditResult(error=self._edit_error(e, file_path, old_string))
            except YuxiSandboxError as e:
                return EditResult(error="Error editing file '%s': %s" % (file_path, e))
        return EditResult(error="Error: String not found in file: '%s'" % old_string)

    @staticmethod
    def _edit_error(e: APIError, file_path: str, old_string: str) -> str:
        if e.code == "file_not_found":
            return "Error: File '%s' not found" % file_path
        if e.code == "ambiguous_match":
            return ("Error: String '%s' appears multiple times. Use replace_all=True to "
                    "replace all occurrences." % old_string)
        if e.code == "binary_file":
            return "Error: File '%s' is not a text file" % file_path
        if e.code == "is_directory" or (e.code == "bad_request" and "regular" in e.message):
            return "Error: '%s' is not a regular file" % file_path
        if e.code in ("path_not_allowed", "read_only"):
            return "Error: Permission denied editing file '%s'" % file_path
        return "Error editing file '%s': %s" % (file_path, e.message)

    def _edit_empty(self, file_path: str, new_string: str) -> EditResult:
        """An empty ``old_string``: fills an empty file (it occurs once
        there, as ``BaseSandbox`` counts), and is ambiguous in any other."""
        try:
            r = self._c.read(self._tid, file_path, limit=1, format="raw")
            size = r["size"]
        except APIError as e:
            if e.code != "bad_request" or not _PAST_END.search(e.message):
                return EditResult(error=self._edit_error(e, file_path, ""))
            size = 0
        except YuxiSandboxError as e:
            return EditResult(error="Error editing file '%s': %s" % (file_path, e))
        if size:
            return EditResult(error="Error: String '' appears multiple times. Use "
                              "replace_all=True to replace all occurrences.")
        w = self.write(file_path, new_string)
        return EditResult(error=w.error) if w.error else EditResult(path=file_path,
                                                                    occurrences=1)

    def delete(self, file_path: str = _THREAD) -> _DeleteResult:
        """``delete(path)``: delete a file or a directory with everything in
        it (``POST /api/filesystem/delete``, recursive; symlinks are removed,
        never followed). ``delete()`` without a path deletes the thread
        (:meth:`delete_thread`)."""
        if file_path is _THREAD:
            self.delete_thread()
            return _DeleteResult(path=None)
        try:
            self._c.delete(self._tid, file_path, recursive=True)
            return _DeleteResult(path=file_path)
        except APIError as e:
            if e.code == "file_not_found":
                return _DeleteResult(error="Error: '%s' not found" % file_path)
            return _DeleteResult(error="Error deleting file '%s': %s" % (file_path, e.message))
        except (YuxiSandboxError, TypeError, ValueError) as e:
            return _DeleteResult(error="Error deleting file '%s': %s" % (file_path, e))

    # --- glob, grep ----------------------------------------------------------------
    def glob(self, pattern: str, path: str | None = None) -> GlobResult:
        """Regular files matching ``pattern`` below ``path`` (default ``/``,
        both roots) with absolute paths, as the deepagents 0.7.8 protocol
        has it: a pattern without ``/`` matches the file name at any depth,
        one with ``/`` the path relative to ``path``; leading-dot names only
        where the pattern's part starts with a dot; ``**`` does not enter
        dot-directories. One ``GET /api/filesystem/glob`` for a superset,
        narrowed here by those rules."""
        search = path or "/"
        if not isinstance(pattern, str) or pattern == "":
            return GlobResult(matches=None, error="Path '%s': empty pattern" % search)
        alts = _globmatch.candidates(pattern)
        if alts is None:
            return GlobResult(matches=None, error="Path '%s': pattern_too_broad" % search)
        ask = pattern.lstrip("/") if "/" in pattern else "**/" + pattern
        try:
            r = self._c.glob(self._tid, ask, search)
        except YuxiSandboxError as e:
            return GlobResult(matches=None, error="Path '%s': %s" % (search, self._path_error(e)))
        base = r["path"]
        root = search.rstrip("/")
        out: list[FileInfo] = []
        for m in r["matches"]:
            if m.get("type", "file") != "file":
                continue
            rel = m["path"][1:] if base == "/" else m["path"][len(base) + 1:]
            if not rel or not _globmatch.matches(rel, pattern, alts):
                continue
            info: FileInfo = {"path": root + "/" + rel, "is_dir": False,
                              "size": int(m.get("size") or 0)}
            mtime = m.get("modified_at")
            if mtime:
                info["modified_at"] = mtime
            out.append(info)
        return GlobResult(matches=out, truncated=bool(r.get("truncated")))

    def grep(self, pattern: str, path: str | None = None, glob: str | None = None, *,
             max_count: int | None = None) -> GrepResult:
        """Lines containing the literal ``pattern`` (``GET
        /api/filesystem/grep``) in files below ``path`` (default the
        workspace) or in that one file; ``glob`` filters the files (without
        ``/`` by name, with ``/`` by the path relative to ``path``).
        ``max_count`` caps the matches: ``truncated`` only when more exist."""
        ask = 0
        if max_count is not None:
            if isinstance(max_count, bool) or not isinstance(max_count, int) or max_count < 0:
                return GrepResult(error="max_count must be a non-negative integer")
            ask = max_count + 1 if max_count + 1 <= RESULTS_CAP else 0
        try:
            r = self._c.grep(self._tid, pattern, path, glob=glob or None,
                             max_count=ask or None)
        except YuxiSandboxError as e:
            return GrepResult(error="Path '%s': %s" % (path or ".", self._path_error(e)))
        except (TypeError, ValueError) as e:
            return GrepResult(error="Path '%s': %s" % (path or ".", e))
        base = _norm(path) if path else r["path"]
        matches: list[GrepMatch] = [
            {"path": _respell(m["path"], r["path"], base), "line": m["line"], "text": m["text"]}
            for m in r["matches"]]
        truncated = bool(r.get("truncated"))
        if max_count is not None and ask:
            truncated = len(matches) > max_count or (
                truncated and r.get("truncated_reason") != "results")
            matches = matches[:max_count]
        return GrepResult(matches=matches, truncated=truncated)

    # --- async: the same calls in a worker thread ------------------------------------
    async def aexecute(self, command: str, *, timeout: int | None = None,  # noqa: ASYNC109
                       cwd: str | None = None, env: Mapping[str, str] | None = None
                       ) -> ExecuteResponse:
        return await asyncio.to_thread(self.execute, command, timeout=timeout, cwd=cwd,
                                       env=env)

    async def aupload_files(self, files: list[tuple[str, bytes]]) -> list[FileUploadResponse]:
        return await asyncio.to_thread(self.upload_files, files)

    async def adownload_files(self, paths: list[str]) -> list[FileDownloadResponse]:
        return await asyncio.to_thread(self.download_files, paths)

    async def als(self, path: str) -> LsResult:
        return await asyncio.to_thread(self.ls, path)

    async def aread(self, file_path: str, offset: int = 0, limit: int = 2000) -> ReadResult:
        return await asyncio.to_thread(self.read, file_path, offset, limit)

    async def awrite(self, file_path: str, content: str) -> WriteResult:
        return await asyncio.to_thread(self.write, file_path, content)

    async def aedit(self, file_path: str, old_string: str, new_string: str,
                    replace_all: bool = False) -> EditResult:  # noqa: FBT001, FBT002
        return await asyncio.to_thread(self.edit, file_path, old_string, new_string,
                                       replace_all)

    async def adelete(self, file_path: str) -> _DeleteResult:
        return await asyncio.to_thread(self.delete, file_path)

    async def aglob(self, pattern: str, path: str | None = None) -> GlobResult:
        return await asyncio.to_thread(self.glob, pattern, path)

    async def agrep(self, pattern: str, path: str | None = None, glob: str | None = None, *,
                    max_count: int | None = None) -> GrepResult:
        return await asyncio.to_thread(self.grep, pattern, path, glob, max_count=max_count)
