# SPDX-License-Identifier: MIT
"""routes - the suites' endpoint lists, built from the service's own route
table (`yuxi-sandbox routes --json`, src/daemon/router.c), so that a route
added to the table is in every list at once.

- `table()`: the routes, each {"method", "path", "op", "needs": [...]}.
- `api_routes(mode)`: (method, path) of every /api route that exists in
  `mode` (standalone, front, provisioner) and needs an identity, with "x"
  for a path's "{}".
- `thread_requests(tid, path)`: one request for every route of the
  caller's thread (needs "owner"): (name, method, url, kwargs for
  requests). A route the table has and this module cannot make a request
  for fails loudly (`RouteGap`), so no new thread route goes untested.
"""
import json
import os
import subprocess

import yxsvc

PROCESS_ID = "p0123456789abcdef"	# a valid id nobody has
SESSION_ID = "s0123456789abcdef"	# ... a session's
SNAPSHOT_ID = "s00000000000000aa"	# ... a snapshot's


class RouteGap(AssertionError):
    """A thread route of the table without a sample request here."""


_table = None


def table():
    global _table
    if _table is None:
        out = subprocess.run([yxsvc.build_path("yuxi-sandbox"), "routes", "--json"],
                             capture_output=True, text=True, check=True,
                             env=dict(os.environ, YUXI_CONFIG="none")).stdout
        _table = json.loads(out)
    return _table


def api_routes(mode="standalone"):
    return [(r["method"], r["path"].replace("{}", "x")) for r in table()
            if r["path"].startswith("/api/") and mode in r["needs"]
            and ("user" in r["needs"] or "admin" in r["needs"])]


def _sample(r, tid, path):
    """(url, kwargs) of a request for route r of thread tid."""
    q = "thread_id=%s&path=%s" % (tid, path)
    body = {"thread_id": tid}
    op, m = r["op"], r["method"]
    if r["path"] == "/api/threads/{}":
        url = "/api/threads/" + tid
        return url, ({"json": {"metadata": {"k": "pwned"}}} if m == "PATCH" else {})
    if r["path"].startswith("/api/threads/{}/snapshots"):
        url = r["path"].replace("{}", tid, 1).replace("{}", SNAPSHOT_ID)
        return url, ({"json": {"name": "pwned"}} if m == "POST" else {})
    if r["path"] == "/api/execute":
        return r["path"], {"json": dict(body, command="true")}
    if r["path"] == "/api/processes":
        if m == "POST":
            return r["path"], {"json": dict(body, command="true")}
        return r["path"] + "?thread_id=" + tid, {}
    if r["path"] == "/api/processes/{}/resize":
        url = r["path"].replace("{}", PROCESS_ID) + "?thread_id=" + tid
        return url, {"json": {"cols": 80, "rows": 24}}
    if r["path"].startswith("/api/processes/{}"):
        url = r["path"].replace("{}", PROCESS_ID) + "?thread_id=" + tid
        return url, ({"data": b"pwned"} if m == "POST" else {})
    if r["path"] == "/api/services":
        return r["path"] + "?thread_id=" + tid, {}
    if r["path"].startswith("/api/services/{}"):
        return r["path"].replace("{}", "chromium") + "?thread_id=" + tid, {}
    if r["path"] == "/api/sessions":
        if m == "POST":
            return r["path"], {"json": body}
        return r["path"] + "?thread_id=" + tid, {}
    if r["path"] == "/api/sessions/{}/execute":
        return r["path"].replace("{}", SESSION_ID), {"json": dict(body, command="echo pwned")}
    if r["path"].startswith("/api/sessions/{}"):
        return r["path"].replace("{}", SESSION_ID) + "?thread_id=" + tid, {}
    if r["path"] == "/api/threads/{}/previews":
        url = "/api/threads/%s/previews" % tid
        return url, ({"json": {"port": 8000}} if m == "POST" else {})
    if r["path"] == "/api/threads/{}/previews/{}":
        return "/api/threads/%s/previews/8000" % tid, {}
    if op in ("fs_write",):
        return r["path"], {"json": dict(body, path=path, content="pwned", overwrite=True)}
    if op in ("fs_edit",):
        return r["path"], {"json": dict(body, path=path, old_string="secret",
                                        new_string="pwned")}
    if op in ("fs_delete",):
        return r["path"], {"json": dict(body, path=path)}
    if op in ("fs_glob", "fs_grep"):
        return r["path"] + "?thread_id=%s&pattern=%s" % (tid, "*" if op == "fs_glob" else "secret"), {}
    if op == "fs_upload":
        return r["path"] + "?" + q, {"data": b"pwned",
                                     "headers": {"Content-Type": "application/octet-stream"}}
    if op in ("fs_ls", "viewer_tree"):
        return r["path"] + "?thread_id=" + tid, {}
    if op in ("fs_cat", "fs_download", "viewer_file", "viewer_download"):
        return r["path"] + "?" + q, {}
    raise RouteGap("no sample request for %s %s (%s): add one to tests/lib/routes.py"
                   % (m, r["path"], op))


def thread_requests(tid, path="/workspace/a.txt", mode="standalone"):
    """One request per route of the caller's thread, DELETE of the thread last."""
    out = []
    for r in table():
        if "owner" not in r["needs"] or mode not in r["needs"]:
            continue
        url, kw = _sample(r, tid, path)
        name = r["op"] if r["op"] not in ("processes", "process") else \
            "%s_%s" % (r["op"], r["method"].lower())
        out.append((name, r["method"], url, kw))
    out.sort(key=lambda e: e[0] == "thread_delete")
    return out
