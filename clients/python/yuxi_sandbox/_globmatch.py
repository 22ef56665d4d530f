# SPDX-License-Identifier: MIT
"""Glob matching as the deepagents 0.7.8 protocol defines it
(``BackendProtocol.glob``), for narrowing the service's glob answer.

The service's glob (docs/api.md) matches more widely: its wildcards match
a leading dot, its ``**`` enters dot-directories, and a pattern without
``/`` is asked as ``**/<pattern>``. What it answers is a superset of what
deepagents would match; :func:`matches` keeps exactly deepagents' matches:

- ``{a,b}`` alternatives, nested, at most 1000 (a group without a
  top-level comma is literal); ``[^...]`` negates like ``[!...]``;
- a pattern without ``/`` matches the file name, at any depth (under
  dot-directories too);
- a pattern with ``/`` matches the path relative to the search root (a
  leading ``/`` anchors it there); ``**`` is zero or more directories but
  never one whose name starts with a dot, and a trailing ``**`` needs at
  least one name after it; a trailing ``/`` (directories only) matches no
  file;
- a name starting with a dot matches only a pattern part starting with one.
"""

from __future__ import annotations

from fnmatch import fnmatchcase

EXPANSIONS_MAX = 1000


def _group_end(p: str, start: int) -> int:
    depth = 0
    for i in range(start, len(p)):
        if p[i] == "{":
            depth += 1
        elif p[i] == "}":
            depth -= 1
            if depth == 0:
                return i
    return -1


def _split_top(body: str) -> list[str]:
    parts: list[str] = []
    cur: list[str] = []
    depth = 0
    for c in body:
        if c == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
            continue
        depth += (c == "{") - (c == "}")
        cur.append(c)
    parts.append("".join(cur))
    return parts


def _expand(p: str, budget: list[int]) -> list[str] | None:
    start = p.find("{")
    if start < 0:
        return [p]
    end = _group_end(p, start)
    if end < 0:
        return [p]
    head, body, tail = p[:start], p[start + 1:end], p[end + 1:]
    alts = _split_top(body)
    if len(alts) < 2:	# "{a}" is literal; the rest may still expand
        rest = _expand(tail, budget)
        return None if rest is None else [head + "{" + body + "}" + r for r in rest]
    out: list[str] = []
    for a in alts:
        sub = _expand(a + tail, budget)
        if sub is None:
            return None
        for s in sub:
            out.append(head + s)
            budget[0] += 1
            if budget[0] > EXPANSIONS_MAX:
                return None
    return out


def _classes(p: str) -> str:
    """``[^...]`` -> ``[!...]`` (fnmatch reads ``^`` literally)."""
    out, i = [], 0
    while i < len(p):
        if p[i] != "[":
            out.append(p[i])
            i += 1
            continue
        close = p.find("]", i + 2)
        if close < 0:
            out.append(p[i:])
            break
        body = p[i + 1:close]
        if body.startswith("^"):
            body = "!" + body[1:]
        out.append("[" + body + "]")
        i = close + 1
    return "".join(out)


def candidates(pattern: str) -> list[str] | None:
    """The pattern's alternatives, classes normalised; None when it
    expands to more than EXPANSIONS_MAX."""
    alts = _expand(pattern, [0])
    return None if alts is None else [_classes(a) for a in alts]


def _name_ok(name: str, seg: str) -> bool:
    if name.startswith(".") and not seg.startswith("."):
        return False
    return fnmatchcase(name, seg)


def _parts_match(names: list[str], segs: list[str]) -> bool:
    memo: dict[tuple[int, int], bool] = {}

    def at(i: int, j: int) -> bool:
        key = (i, j)
        if key not in memo:
            memo[key] = step(i, j)
        return memo[key]

    def step(i: int, j: int) -> bool:
        while j < len(segs):
            if segs[j] == "**":
                while j < len(segs) and segs[j] == "**":
                    j += 1
                if j == len(segs):
                    rest = names[i:]
                    return bool(rest) and not any(n.startswith(".") for n in rest)
                while True:
                    if at(i, j):
                        return True
                    if i == len(names) or names[i].startswith("."):
                        return False
                    i += 1
            if i >= len(names) or not _name_ok(names[i], segs[j]):
                return False
            i += 1
            j += 1
        return i == len(names)

    return at(0, 0)


def matches(rel: str, pattern: str, alts: list[str]) -> bool:
    """Whether the file at ``rel`` (relative to the search root, ``/``
    separated) matches ``pattern`` (whose :func:`candidates` are ``alts``)."""
    if "/" not in pattern:
        name = rel.rsplit("/", 1)[-1]
        return any(_name_ok(name, a) for a in alts)
    names = [n for n in rel.split("/") if n]
    for a in alts:
        raw = a.lstrip("/").split("/")
        segs = [s for s in raw if s]
        if len(raw) > 1 and raw[-1] == "" and (not segs or segs[-1] != "**"):
            continue	# directories only: never a file
        if _parts_match(names, segs):
            return True
    return False
