# SPDX-License-Identifier: MIT
"""The agent filesystem: ``/api/filesystem/*`` (docs/api.md "Agent
filesystem"). Paths are the service's: canonical
(``/home/yuxi/user-data/...``, ``/home/yuxi/skills/...``), an alias
(``/workspace/...``, ``/outputs/...``, ``/skills/...``) or relative to the
workspace; answers carry canonical paths. None of these start or wake a
container."""

from __future__ import annotations

from typing import IO, Any, cast

from . import _check
from ._transport import Transport
from .types import (CatResult, DeleteResult, EditResult, GlobResult, GrepResult, Listing,
                    PathResult, UploadResult)

_FS = "/api/filesystem/"


class FilesAPI:
    _t: Transport

    def ls(self, thread_id: str, path: str | None = None) -> Listing:
        """One level of a directory (default the workspace; ``/`` the
        namespace root), sorted by name."""
        q = {"thread_id": _check.thread_id(thread_id), "path": _check.opt_path(path)}
        return cast(Listing, self._t.request("GET", _FS + "ls", query=q).json())

    def read(self, thread_id: str, path: str, *, offset: int = 0, limit: int | None = None,
             format: str = "numbered") -> CatResult:
        """Lines ``[offset, offset+limit)`` of a text file (``cat``):
        ``format="numbered"`` (as ``cat -n``) or ``"raw"`` (the lines with
        their own terminators). ``limit`` defaults to 2000 lines."""
        if format not in ("numbered", "raw"):
            raise ValueError("format must be 'numbered' or 'raw', not %r" % (format,))
        q = {"thread_id": _check.thread_id(thread_id), "path": _check.path(path),
             "offset": _check.integer("offset", offset, high=2**31) or None,
             "limit": _check.opt_int("limit", limit, low=1, high=2**31),
             "format": format if format == "raw" else None}
        return cast(CatResult, self._t.request("GET", _FS + "cat", query=q).json())

    cat = read

    def write(self, thread_id: str, path: str, content: str, *,
              overwrite: bool = False) -> PathResult:
        """Write a whole text file (parents are made); an existing one only
        with ``overwrite=True`` (else ``ConflictError`` ``file_exists``)."""
        body = {"thread_id": _check.thread_id(thread_id), "path": _check.path(path),
                "content": _check.string("content", content, empty=True),
                "overwrite": _check.boolean("overwrite", overwrite)}
        return cast(PathResult, self._t.request("POST", _FS + "write", json_body=body,
                                                ok=(200, 201)).json())

    def edit(self, thread_id: str, path: str, old_string: str, new_string: str, *,
             replace_all: bool = False) -> EditResult:
        """Replace ``old_string`` (it must occur exactly once, or everywhere
        with ``replace_all``); ``ConflictError`` ``string_not_found`` /
        ``ambiguous_match`` otherwise."""
        body = {"thread_id": _check.thread_id(thread_id), "path": _check.path(path),
                "old_string": _check.string("old_string", old_string),
                "new_string": _check.string("new_string", new_string, empty=True),
                "replace_all": _check.boolean("replace_all", replace_all)}
        return cast(EditResult, self._t.request("POST", _FS + "edit", json_body=body).json())

    def glob(self, thread_id: str, pattern: str, path: str | None = None) -> GlobResult:
        """Entries matching ``pattern`` below ``path`` (default the
        workspace; ``/`` both roots), files and directories, sorted."""
        q = {"thread_id": _check.thread_id(thread_id),
             "pattern": _check.path(pattern, "pattern"), "path": _check.opt_path(path)}
        return cast(GlobResult, self._t.request("GET", _FS + "glob", query=q).json())

    def grep(self, thread_id: str, pattern: str, path: str | None = None, *,
             glob: str | None = None, max_count: int | None = None) -> GrepResult:
        """Lines containing the literal ``pattern`` in files below ``path``
        (default the workspace; or one file), optionally only files matching
        ``glob``; at most ``max_count`` matches (1000 at most)."""
        q = {"thread_id": _check.thread_id(thread_id),
             "pattern": _check.path(pattern, "pattern"), "path": _check.opt_path(path),
             "glob": _check.opt_path(glob, "glob"),
             "max_count": _check.opt_int("max_count", max_count, low=1)}
        return cast(GrepResult, self._t.request("GET", _FS + "grep", query=q).json())

    def upload(self, thread_id: str, path: str,
               data: bytes | bytearray | memoryview | IO[bytes]) -> UploadResult:
        """Write bytes to a file (parents are made, an existing file is
        replaced): ``data`` is bytes or a binary file, sent as it is read."""
        if isinstance(data, str):
            raise TypeError("data must be bytes or a binary file; encode text first")
        if not isinstance(data, (bytes, bytearray, memoryview)) and not hasattr(data, "read"):
            raise TypeError("data must be bytes or a binary file, not %s" % type(data).__name__)
        q = {"thread_id": _check.thread_id(thread_id), "path": _check.path(path)}
        return cast(UploadResult, self._t.request("POST", _FS + "upload", query=q, body=data,
                                                  ok=(200, 201)).json())

    def download(self, thread_id: str, path: str, *, max_bytes: int | None = None) -> bytes:
        """A file's bytes (nginx sends them). With ``max_bytes``, at most
        that many from its start (an HTTP range)."""
        q = {"thread_id": _check.thread_id(thread_id), "path": _check.path(path)}
        h: dict[str, str] = {}
        if _check.opt_int("max_bytes", max_bytes, low=1) is not None:
            h["Range"] = "bytes=0-%d" % (cast(int, max_bytes) - 1)
        return self._t.request("GET", _FS + "download", query=q, headers=h,
                               ok=(200, 206)).body

    def delete(self, thread_id: str, path: str, *, recursive: bool = False) -> DeleteResult:
        """Delete a file, a symlink (never followed), an empty directory, or
        with ``recursive`` a directory and everything in it."""
        body: dict[str, Any] = {"thread_id": _check.thread_id(thread_id),
                                "path": _check.path(path),
                                "recursive": _check.boolean("recursive", recursive)}
        return cast(DeleteResult, self._t.request("POST", _FS + "delete",
                                                  json_body=body).json())
