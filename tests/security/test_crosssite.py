# SPDX-License-Identifier: MIT
"""Group 1: cross-site requests (docs/api.md "Cross-site requests").

With cookie or basic-auth sign-in a browser attaches the user's
credentials to a form or fetch another site's page sends. The router
refuses a POST or DELETE that the browser marks as cross-site
(Sec-Fetch-Site: cross-site or same-site) or whose Origin names another
host than the request's Host: 403 forbidden "cross-site request refused",
before the handler runs (no thread made, no file written, no command run,
no thread deleted). Requests without those headers (agents, SDKs, curl)
and same-origin ones are served; GET is never refused. Control: the
control daemon with YX_CONTROL_OFF=crosssite serves the cross-site
requests (the leak).
"""
import json
import os
import secrets

from secfix import _sec_session, stack, stats  # noqa: F401

G = 1
# An instance of its own (the value is the suite's default): its sandboxes
# must not show up in the container checks of the shared "prod" stack.
OWN = {"YUXI_SANDBOX_IDLE_TIMEOUT": "30"}

CROSS = [  # headers a browser sends on another site's behalf
    {"Origin": "https://evil.example"},
    {"Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"},
    {"Sec-Fetch-Site": "cross-site"},
    {"Sec-Fetch-Site": "same-site"},
    {"Origin": "null"},
    {"Origin": "https://127.0.0.1.evil.example"},
    {"Origin": "https://evil.example", "Sec-Fetch-Site": "same-origin"},
    {"Origin": "https://localhost"},
    {"Origin": "evil.example"},
]


def same(svc):
    """Headers of requests that must be served: none, or same-origin ones."""
    return [{}, {"Origin": svc.origin}, {"Origin": "https://127.0.0.1"},
            {"Sec-Fetch-Site": "same-origin", "Origin": svc.origin},
            {"Sec-Fetch-Site": "none"}]


def attempts(svc, tid):
    """(name, method, path, kwargs, effect()) of state-changing requests;
    effect() is True when the request did what it asked."""
    wpath = "/workspace/xs-%s.txt" % secrets.token_hex(4)
    ws = os.path.join(svc.saves, "threads", tid, "user-data", "workspace")
    new = "t" + secrets.token_hex(6)
    victim = svc.new_thread("alice")
    return [
        ("create", "POST", "/api/threads", {"json": {"thread_id": new}},
         lambda: os.path.isdir(os.path.join(svc.saves, "threads", new))),
        ("write", "POST", "/api/filesystem/write",
         {"json": {"thread_id": tid, "path": wpath, "content": "x"}},
         lambda: os.path.exists(os.path.join(ws, os.path.basename(wpath)))),
        ("execute", "POST", "/api/execute",
         {"json": {"thread_id": tid, "command": "echo ran >> xs-ran.txt"}},
         lambda: os.path.exists(os.path.join(ws, "xs-ran.txt"))),
        ("delete", "DELETE", "/api/threads/" + victim, {},
         lambda: not os.path.isdir(os.path.join(svc.saves, "threads", victim))),
    ]


def test_cross_site_refused():
    svc = stack("prod", **OWN)
    tid = svc.new_thread("alice")
    for hdrs in CROSS:
        for name, method, path, kw, effect in attempts(svc, tid):
            r = svc.request("alice", method, path, headers=hdrs, **kw)
            ok = r.status_code == 403 and "cross-site request refused" in r.text and \
                not effect()
            stats.case(G, escape=not ok, what="cross-site %s %r -> %d" % (name, hdrs,
                                                                          r.status_code))
            assert ok, (name, hdrs, r.status_code, r.text, effect())
    # GET is not state-changing: served
    r = svc.request("alice", "GET", "/api/threads", headers=CROSS[0])
    assert r.status_code == 200 and tid in r.text
    stats.case(G)


def test_same_origin_and_plain_served():
    svc = stack("prod", **OWN)
    tid = svc.new_thread("alice")
    for hdrs in same(svc):
        for name, method, path, kw, effect in attempts(svc, tid):
            r = svc.request("alice", method, path, headers=hdrs, **kw)
            ok = r.status_code in (200, 201, 204) and effect()
            stats.case(G, escape=False, what="same-origin %s %r -> %d" % (name, hdrs,
                                                                          r.status_code))
            assert ok, (name, hdrs, r.status_code, r.text)
            if name == "execute":
                assert json.loads(r.text)["exit_code"] == 0
                os.unlink(os.path.join(svc.saves, "threads", tid, "user-data", "workspace",
                                       "xs-ran.txt"))


def test_control_crosssite_leaks():
    """Control: the guard off, another site's requests are served."""
    c = stack("control", off="crosssite")
    tid = c.new_thread("alice")
    served = 0
    for name, method, path, kw, effect in attempts(c, tid):
        r = c.request("alice", method, path, headers=CROSS[0], **kw)
        served += r.status_code in (200, 201, 204) and effect()
    assert stats.control(G, served == 4, "crosssite off: %d of 4 served" % served), served
    r = c.request("alice", "POST", "/api/threads", headers={"Sec-Fetch-Site": "cross-site"},
                  json={"thread_id": "t" + secrets.token_hex(6)})
    assert stats.control(G, r.status_code == 201, "crosssite off: Sec-Fetch-Site"), r.text
