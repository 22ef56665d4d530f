# SPDX-License-Identifier: MIT
"""Group 1 (identity and authorization), background processes
(docs/api.md "Background processes"): another user gets exactly the 404 of
an unknown thread on every process route of a foreign thread - list,
start, one process, its output, its stdin, DELETE - and can neither see,
feed nor stop alice's process, nor start one in her sandbox. Control: the
daemon built with YX_CONTROL_UNSAFE and YX_CONTROL_OFF=procowner skips the
owner check of these routes; the same requests must then reach alice's
process (the test can fail)."""
import time

import pytest

from secfix import _sec_session, engine_up, foreign_routes_404, stack, stats  # noqa: F401

G = 1
pytestmark = pytest.mark.skipif(not engine_up(), reason="no engine or test image")


def routes(tid, pid):
    q = "?thread_id=" + tid
    return [
        ("list", "GET", "/api/processes" + q, {}),
        ("start", "POST", "/api/processes", {"json": {"thread_id": tid, "command": "echo pwned"}}),
        ("get", "GET", "/api/processes/%s%s" % (pid, q), {}),
        ("output", "GET", "/api/processes/%s/output%s&offset=0" % (pid, q), {}),
        ("stdin", "POST", "/api/processes/%s/stdin%s" % (pid, q), {"data": b"pwned\n"}),
        ("delete", "DELETE", "/api/processes/%s%s" % (pid, q), {}),
    ]


def alice_process(svc):
    tid = svc.new_thread("alice")
    r = svc.request("alice", "POST", "/api/processes",
                    json={"thread_id": tid, "command": "echo secret-of-alice; cat"})
    assert r.status_code == 201, r.text
    return tid, r.json()["process_id"]


def alice_state(svc, tid, pid):
    r = svc.request("alice", "GET", "/api/processes/%s/output?thread_id=%s&wait_ms=500" % (pid, tid))
    assert r.status_code == 200, r.text
    r2 = svc.request("alice", "GET", "/api/processes?thread_id=" + tid)
    return r.json(), [p["process_id"] for p in r2.json()["processes"]]


def test_foreign_process_routes_404():
    svc = stack("prod")
    tid, pid = alice_process(svc)
    foreign_routes_404(svc, G, "process", lambda t: routes(t, pid), tid)
    # alice's process untouched: still running, nothing written to it, one process
    out, pids = alice_state(svc, tid, pid)
    leak = out["running"] is not True or "pwned" in out["data"] or pids != [pid]
    stats.case(G, leak=leak, what="foreign requests changed alice's process: %r %r" % (out, pids))
    assert not leak, (out, pids)
    assert out["data"] == "secret-of-alice\n"


def test_control_procowner_leaks():
    c = stack("control", off="procowner")
    tid, pid = alice_process(c)
    seen = {}
    for name, m, u, kw in routes(tid, pid):
        if name == "delete":
            continue
        r = c.request("bob", m, u, **kw)
        seen[name] = (r.status_code, r.text)
    time.sleep(0.3)
    out, pids = alice_state(c, tid, pid)
    read = seen["output"][0] == 200 and "secret-of-alice" in seen["output"][1]
    fed = "pwned" in out["data"]
    started = len(pids) == 2
    r = c.request("bob", "DELETE", "/api/processes/%s?thread_id=%s" % (pid, tid))
    _, after = alice_state(c, tid, pid) if r.status_code != 200 else (None, [])
    stopped = r.status_code == 200 and pid not in after
    ok = stats.control(G, read and fed and started and stopped,
                       "procowner off: read=%s fed=%s started=%s stopped=%s" %
                       (read, fed, started, stopped))
    assert ok, seen
