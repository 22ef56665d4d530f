# SPDX-License-Identifier: MIT
"""Group 1 (identity and authorization) and group 12 (one tenant against
the others), sessions (docs/api.md "Sessions"): another user gets exactly
the 404 of an unknown thread on every session route of a foreign thread -
list, create, one session, its execute, DELETE - and can neither read nor
use nor end alice's shell; and one user cannot open shells without bound:
YUXI_SESSION_USER_MAX holds across all their threads while another user
still gets theirs.

Controls: the daemon built with YX_CONTROL_UNSAFE and
YX_CONTROL_OFF=procowner skips the owner check of the keeper routes
(processes and sessions): the same requests must then read alice's
secret from her shell, run a command in it and end it; with
YX_CONTROL_OFF=sesslimit the per-user count is skipped: alice must then
get more shells than the limit (the tests can fail)."""

import pytest

from secfix import _sec_session, engine_up, foreign_routes_404, stack, stats  # noqa: F401

pytestmark = pytest.mark.skipif(not engine_up(), reason="no engine or test image")


def routes(tid, sid):
    q = "?thread_id=" + tid
    return [
        ("list", "GET", "/api/sessions" + q, {}),
        ("create", "POST", "/api/sessions", {"json": {"thread_id": tid}}),
        ("get", "GET", "/api/sessions/%s%s" % (sid, q), {}),
        ("execute", "POST", "/api/sessions/%s/execute" % sid,
         {"json": {"thread_id": tid, "command": "echo $SECRET; SECRET=pwned"}}),
        ("delete", "DELETE", "/api/sessions/%s%s" % (sid, q), {}),
    ]


def alice_session(svc):
    tid = svc.new_thread("alice")
    r = svc.request("alice", "POST", "/api/sessions", json={"thread_id": tid})
    assert r.status_code == 201, r.text
    sid = r.json()["session_id"]
    r = svc.request("alice", "POST", "/api/sessions/%s/execute" % sid,
                    json={"thread_id": tid, "command": "SECRET=secret-of-alice"})
    assert r.status_code == 200 and r.json()["exit_code"] == 0, r.text
    return tid, sid


def alice_state(svc, tid, sid):
    """(her secret as her shell has it, the sessions of her thread)."""
    r = svc.request("alice", "POST", "/api/sessions/%s/execute" % sid,
                    json={"thread_id": tid, "command": "echo $SECRET"})
    r2 = svc.request("alice", "GET", "/api/sessions?thread_id=" + tid)
    return (r.json()["output"] if r.status_code == 200 else "<%d>" % r.status_code,
            [x["session_id"] for x in r2.json()["sessions"] if x["state"] == "running"])


def test_foreign_session_routes_404():
    svc = stack("prod")
    tid, sid = alice_session(svc)
    foreign_routes_404(svc, 1, "session", lambda t: routes(t, sid), tid)
    secret, sids = alice_state(svc, tid, sid)
    leak = secret != "secret-of-alice\n" or sids != [sid]
    stats.case(1, leak=leak, what="foreign requests changed alice's session: %r %r" %
               (secret, sids))
    assert not leak, (secret, sids)


def test_control_procowner_leaks_sessions():
    c = stack("control", off="procowner")
    tid, sid = alice_session(c)
    seen = {}
    for name, m, u, kw in routes(tid, sid):
        if name != "delete":
            r = c.request("bob", m, u, **kw)
            seen[name] = (r.status_code, r.text)
    read = seen["execute"][0] == 200 and "secret-of-alice" in seen["execute"][1]
    secret, sids = alice_state(c, tid, sid)
    changed = secret == "pwned\n"
    started = len(sids) == 2
    r = c.request("bob", "DELETE", "/api/sessions/%s?thread_id=%s" % (sid, tid))
    ended = r.status_code == 200 and sid not in alice_state(c, tid, sid)[1]
    ok = stats.control(1, read and changed and started and ended,
                       "procowner off, sessions: read=%s changed=%s started=%s ended=%s" %
                       (read, changed, started, ended))
    assert ok, seen


LIMIT = {"YUXI_SESSION_USER_MAX": "3", "YUXI_SESSION_MAX": "2"}


def open_many(svc, who, n):
    """Try n sessions of `who`, two per thread: the codes answered."""
    codes, tid = [], None
    for i in range(n):
        if i % 2 == 0:
            tid = svc.new_thread(who)
        codes.append(svc.request(who, "POST", "/api/sessions",
                                 json={"thread_id": tid}).status_code)
    return codes


def test_user_session_limit_holds_across_threads():
    svc = stack("prod", **LIMIT)
    codes = open_many(svc, "alice", 6)
    esc = codes.count(201) != 3 or codes.count(429) != 3
    stats.case(12, escape=esc, what="alice's sessions over 3 threads, limit 3: %r" % codes)
    assert not esc, codes
    # another user is not held by alice's sessions
    bob = open_many(svc, "bob", 2)
    assert bob == [201, 201], bob


def test_control_sesslimit_leaks():
    c = stack("control", off="sesslimit", **LIMIT)
    codes = open_many(c, "alice", 6)
    ok = stats.control(12, codes.count(201) > 3,
                       "sesslimit off: alice opened %d sessions, limit 3: %r" %
                       (codes.count(201), codes))
    assert ok, codes
