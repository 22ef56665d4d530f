# SPDX-License-Identifier: MIT
"""Argument checks done before any request: a wrong type raises
``TypeError``, a wrong value ``ValueError``, with the argument's name.
The service checks everything again; these only catch what is surely
wrong (docs/api.md's rules), so that no request is sent for it."""

from __future__ import annotations

import re
from collections.abc import Mapping

_ID = re.compile(r"[A-Za-z0-9_-]{1,128}")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# A command's env (docs/api.md "POST /api/execute"): at most this many
# entries, this many bytes of names and values (UTF-8) in all.
ENV_MAX = 64
ENV_BYTES = 32 * 1024


def string(name: str, v: object, *, empty: bool = False) -> str:
    if not isinstance(v, str):
        raise TypeError("%s must be a string, not %s" % (name, type(v).__name__))
    if not empty and v == "":
        raise ValueError("%s must not be empty" % name)
    return v


def thread_id(v: object, name: str = "thread_id") -> str:
    s = string(name, v)
    if not _ID.fullmatch(s):
        raise ValueError("%s must match [A-Za-z0-9_-]{1,128}: %r" % (name, s))
    return s


def process_id(v: object) -> str:
    return thread_id(v, "process_id")


def session_id(v: object) -> str:
    return thread_id(v, "session_id")


# A terminal's columns and rows (docs/api.md "On a terminal").
PTY_MAX = 1000


def pty(v: object) -> dict[str, int]:
    """A terminal size: a ``(cols, rows)`` pair or a mapping with ``cols``
    and ``rows``, each an integer 1..1000."""
    if isinstance(v, Mapping):
        if set(v) != {"cols", "rows"}:
            raise ValueError("pty must have exactly cols and rows, got %s" % sorted(v))
        cols, rows = v["cols"], v["rows"]
    elif isinstance(v, tuple | list) and len(v) == 2:
        cols, rows = v
    else:
        raise TypeError("pty must be (cols, rows) or {\"cols\", \"rows\"}, not %s"
                        % type(v).__name__)
    return {"cols": integer("cols", cols, low=1, high=PTY_MAX),
            "rows": integer("rows", rows, low=1, high=PTY_MAX)}


def path(v: object, name: str = "path") -> str:
    s = string(name, v)
    if "\0" in s:
        raise ValueError("%s must not contain NUL" % name)
    return s


def opt_path(v: object, name: str = "path") -> str | None:
    return None if v is None else path(v, name)


def integer(name: str, v: object, *, low: int = 0, high: int | None = None) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise TypeError("%s must be an integer, not %s" % (name, type(v).__name__))
    if v < low or (high is not None and v > high):
        raise ValueError("%s must be %s, got %d"
                         % (name, ">= %d" % low if high is None else "in %d..%d" % (low, high), v))
    return v


def opt_int(name: str, v: object, *, low: int = 0, high: int | None = None) -> int | None:
    return None if v is None else integer(name, v, low=low, high=high)


def boolean(name: str, v: object) -> bool:
    if not isinstance(v, bool):
        raise TypeError("%s must be True or False, not %s" % (name, type(v).__name__))
    return v


def str_map(name: str, v: object) -> dict[str, str] | None:
    if v is None:
        return None
    if not isinstance(v, Mapping):
        raise TypeError("%s must be a mapping of strings to strings" % name)
    out: dict[str, str] = {}
    for k, x in v.items():
        if not isinstance(k, str) or not isinstance(x, str):
            raise TypeError("%s must map strings to strings: %r: %r" % (name, k, x))
        out[k] = x
    return out


def cwd(v: object) -> str | None:
    """A command's working directory: a non-empty path without NUL (which
    directory of the namespace it names only the service can tell)."""
    return None if v is None else path(v, "cwd")


def env(v: object) -> dict[str, str] | None:
    """A command's variables, as the service takes them: a mapping of at
    most 64 names ``[A-Za-z_][A-Za-z0-9_]*`` to strings without NUL, 32 KiB
    of names and values (UTF-8) in all."""
    if v is None:
        return None
    if not isinstance(v, Mapping):
        raise TypeError("env must be a mapping of strings to strings, not %s"
                        % type(v).__name__)
    out: dict[str, str] = {}
    size = 0
    for k, x in v.items():
        if not isinstance(k, str) or not isinstance(x, str):
            raise TypeError("env must map strings to strings: %r: %r" % (k, x))
        if not _ENV_NAME.fullmatch(k):
            raise ValueError("env names must match [A-Za-z_][A-Za-z0-9_]*: %r" % k)
        if "\0" in x:
            raise ValueError("env value of %s must not contain NUL" % k)
        try:
            size += len(k) + len(x.encode("utf-8"))
        except UnicodeEncodeError:
            raise ValueError("env value of %s is not valid Unicode text" % k) from None
        out[k] = x
        if len(out) > ENV_MAX:
            raise ValueError("env: at most %d entries" % ENV_MAX)
        if size > ENV_BYTES:
            raise ValueError("env: at most 32 KiB of names and values in all")
    return out
