# SPDX-License-Identifier: MIT
"""Sessions and terminals in the Python client, and YuxiSandbox's session
mode, against the real service over HTTPS (docs/api.md "Sessions", "On a
terminal"; docs/python.md).

Client: a shell's state (cd, variables, functions) carried from command to
command, plain and streamed, its cwd in the answer; a command's own exit
code; a timeout that leaves the session usable; `exit 3` ending it
(SessionNotFoundError afterwards); a second command meanwhile
(SessionBusyError); the per-thread limit (SessionLimitError); list, get,
delete; another user's thread. Processes on a terminal: `tty; stty size`
at the asked size, a resize seen by a running WINCH trap, the refusals.

Adapter: with session=True `cd` and `export` carry over, without it they
do not (also exactly as the brief has it, `cd /tmp && export A=1`, on an
instance without the command path policy and with the busybox image,
whose shell is sh); a session lost (deleted, its sandbox destroyed) or
ended is made again with a note; a timeout keeps the state; concurrent
commands of one backend are serialised; close() deletes the session.
"""
import asyncio
import threading
import time

import pytest
import yxsvc
from conftest import thread_id

import yuxi_sandbox
from yuxi_sandbox import errors

WS = "/home/yuxi/user-data/workspace"


@pytest.fixture(scope="module")
def tid(c):
    t = c.create_thread(thread_id("ss"))["thread_id"]
    yield t
    c.delete_thread(t)


# --- client: sessions ------------------------------------------------------------------
def test_session_keeps_state(c, tid):
    s = c.create_session(tid)
    sid = s["session_id"]
    assert sid.startswith("s") and s["state"] == "running" and s["shell"] == "bash"
    assert s["cwd"] == WS and s["commands"] == 0
    r = c.session_execute(tid, sid, "mkdir -p deep && cd deep && export A=41 && "
                          "f() { echo fn$((A+1)); }")
    assert (r["exit_code"], r["cwd"], r["session_ended"]) == (0, WS + "/deep", False), r
    r = c.session_execute(tid, sid, "pwd; echo $A; f")
    assert r["output"] == "%s/deep\n41\nfn42\n" % WS and r["exit_code"] == 0
    # a command's own exit code; the shell goes on
    r = c.session_execute(tid, sid, "(exit 3)")
    assert (r["exit_code"], r["session_ended"]) == (3, False)
    # streamed: the exit event has cwd and session_ended too
    with c.session_execute(tid, sid, "cd ..; echo $A", stream=True) as st:
        data = "".join(ev["data"] for ev in st if ev["type"] == "output")
    assert data == "41\n"
    assert st.result["cwd"] == WS and st.result["session_ended"] is False
    got = c.get_session(tid, sid)
    assert got["cwd"] == WS and got["commands"] == 4 and got["busy"] is False
    assert sid in [x["session_id"] for x in c.list_sessions(tid)]
    # a plain execute is a fresh shell: none of it
    assert c.execute(tid, 'pwd; echo "[$A]"')["output"] == WS + "\n[]\n"
    gone = c.delete_session(tid, sid)
    assert gone["forgotten"] is True
    with pytest.raises(errors.SessionNotFoundError) as ei:
        c.get_session(tid, sid)
    assert (ei.value.status, ei.value.code) == (404, "session_not_found")
    assert isinstance(ei.value, errors.NotFoundError) and ei.value.request_id


def test_session_timeout_keeps_state_and_exit_ends(c, tid):
    sid = c.create_session(tid, cwd="/mnt/user-data/outputs", env={"B": "7"})["session_id"]
    r = c.session_execute(tid, sid, 'pwd; echo "$B"; B=8')
    assert r["output"] == "/home/yuxi/user-data/outputs\n7\n"
    r = c.session_execute(tid, sid, "sleep 30", timeout=1)
    assert (r["timed_out"], r["exit_code"], r["session_ended"]) == (True, 124, False)
    assert c.session_execute(tid, sid, "echo $B")["output"] == "8\n"
    r = c.session_execute(tid, sid, "read x; echo got=$?")	# stdin is at EOF
    assert r["output"] == "got=1\n"
    r = c.session_execute(tid, sid, "exit 3")
    assert (r["exit_code"], r["session_ended"]) == (3, True)
    with pytest.raises(errors.SessionNotFoundError) as ei:
        c.session_execute(tid, sid, "echo gone")
    assert "ended" in ei.value.message
    st = [x for x in c.list_sessions(tid) if x["session_id"] == sid][0]
    assert (st["state"], st["end_reason"], st["exit_code"]) == ("ended", "exit", 3)
    c.delete_session(tid, sid)


def test_session_busy(c, tid):
    sid = c.create_session(tid)["session_id"]
    done = []
    th = threading.Thread(target=lambda: done.append(
        c.session_execute(tid, sid, "sleep 2; echo slept")))
    th.start()
    try:
        assert yxsvc.wait_for(lambda: c.get_session(tid, sid)["busy"], 10, 0.05)
        t0 = time.monotonic()
        with pytest.raises(errors.SessionBusyError) as ei:
            c.session_execute(tid, sid, "echo second")
        assert time.monotonic() - t0 < 1.0	# at once, not after the first
        assert (ei.value.status, ei.value.code) == (409, "session_busy")
        assert isinstance(ei.value, errors.ConflictError)
    finally:
        th.join()
    assert done[0]["output"] == "slept\n"
    c.delete_session(tid, sid)


def test_session_limit_and_other_users(c, make_client):
    t = c.create_thread(thread_id("sl"))["thread_id"]
    try:
        made = [c.create_session(t, shell="bash")["session_id"] for _ in range(4)]
        assert c.get_session(t, made[0])["shell"] == "bash"
        with pytest.raises(errors.SessionLimitError) as ei:
            c.create_session(t)
        assert (ei.value.status, ei.value.code) == (429, "session_limit")
        assert isinstance(ei.value, errors.RateLimitError)
        bob = make_client("bob")
        with pytest.raises(errors.NotFoundError) as ei:
            bob.session_execute(t, made[0], "true")
        assert ei.value.code == "not_found"	# the thread, as for every route
        c.delete_session(t, made[0])
        c.create_session(t)	# room again
    finally:
        c.delete_thread(t)


# --- client: processes on a terminal ----------------------------------------------------
def _output_until(c, tid, pid, want, secs=10):
    """The process's output from 0 until it holds `want` (or it ended, or
    `secs` passed)."""
    out, off = "", 0
    end = time.monotonic() + secs
    while want not in out and time.monotonic() < end:
        o = c.process_output(tid, pid, offset=off, wait_ms=1000)
        out += o["data"]
        if not o["running"] and o["next_offset"] == off:
            break
        off = o["next_offset"]
    return out


def test_pty_size_and_resize(c, tid):
    p = c.start_process(tid, "tty; stty size", pty=(101, 33))
    assert p["pty"] == {"cols": 101, "rows": 33}
    out = _output_until(c, tid, p["process_id"], "33 101")
    assert "/dev/pts/" in out and "33 101\r\n" in out, repr(out)
    c.kill_process(tid, p["process_id"])
    p = c.start_process(tid, "trap 'stty size' WINCH; echo ready; "
                        "while :; do sleep 0.1; done", pty={"cols": 80, "rows": 24})
    pid = p["process_id"]
    try:
        assert "ready" in _output_until(c, tid, pid, "ready")
        assert c.resize_process(tid, pid, 120, 40) == {"cols": 120, "rows": 40}
        assert "40 120" in _output_until(c, tid, pid, "40 120")
    finally:
        c.kill_process(tid, pid)
    # not on a terminal: 400; ended: 409 not_running
    q = c.start_process(tid, "sleep 30")
    with pytest.raises(errors.BadRequestError):
        c.resize_process(tid, q["process_id"], 80, 24)
    c.kill_process(tid, q["process_id"])
    e = c.start_process(tid, "true", pty=(80, 24))
    assert yxsvc.wait_for(
        lambda: c.get_process(tid, e["process_id"])["state"] == "exited", 10, 0.05)
    with pytest.raises(errors.ConflictError) as ei:
        c.resize_process(tid, e["process_id"], 80, 24)
    assert ei.value.code == "not_running"
    c.kill_process(tid, e["process_id"])


# --- the adapter's session mode ----------------------------------------------------------
def test_adapter_session_mode_keeps_state_default_does_not(YuxiSandbox, opts):
    t = thread_id("am")
    sess = YuxiSandbox.create(**opts, thread_id=t, session=True)
    plain = YuxiSandbox.create(**opts, thread_id=t)
    try:
        assert sess.session is True and plain.session is False and sess.session_id is None
        r = sess.execute("cd /home/yuxi/user-data/outputs && export A=1 && f() { echo f$A; }")
        assert (r.output, r.exit_code) == ("", 0)
        r = sess.execute("pwd; echo $A; f")
        assert r.output == "/home/yuxi/user-data/outputs\n1\nf1\n", r.output
        plain.execute("cd /home/yuxi/user-data/outputs && export A=1")
        r = plain.execute('pwd; echo "[$A]"')
        assert r.output == WS + "\n[]\n", r.output
        # a timeout kills the command, the state stays
        r = sess.execute("sleep 30", timeout=1)
        assert r.exit_code == 124 and "timed out" in r.output
        assert sess.execute("echo $A").output == "1\n"
        with pytest.raises(ValueError):
            sess.execute("true", cwd="sub")
        with pytest.raises(ValueError):
            sess.execute("true", env={"X": "1"})
    finally:
        sid = sess.session_id
        sess.close()
        plain.close()
        c = yuxi_sandbox.Client(opts["url"], opts["token"], ca_file=opts["ca_file"])
        with pytest.raises(errors.SessionNotFoundError):	# close() deleted it
            c.get_session(t, sid)
        c.delete_thread(t)


def test_adapter_session_lost_and_ended_are_made_again(YuxiSandbox, opts, svc):
    sb = YuxiSandbox.create(**opts, thread_id=thread_id("al"), session=True,
                            cwd="/mnt/user-data/outputs", env={"START": "s"})
    c = sb.client
    try:
        r = sb.execute('pwd; echo "$START"; export A=1')
        assert r.output == "/home/yuxi/user-data/outputs\ns\n"
        first = sb.session_id
        # deleted behind the backend's back: made again, with a note
        c.delete_session(sb.id, first)
        r = sb.execute('pwd; echo "[${A:-}]"')
        assert r.output.startswith("[Shell session restarted: the previous session is gone"), r
        assert r.output.endswith("/home/yuxi/user-data/outputs\n[]\n"), r.output
        assert sb.session_id not in (None, first) and r.exit_code == 0
        assert sb.execute("echo again").output == "again\n"	# no note now
        # the sandbox destroyed (its keeper gone): the session is lost
        sandbox = c.get_thread(sb.id)["sandbox"]["sandbox_id"]
        a = svc.request("admin", "DELETE", "/api/admin/sandboxes/" + sandbox)
        assert a.status_code in (200, 204), a.text
        r = sb.execute("export A=2; echo ran")
        assert r.output.startswith("[Shell session restarted:") and r.output.endswith("ran\n")
        assert sb.execute("echo $A").output == "2\n"
        # a command that ends the shell says so; the next one is in a new shell
        r = sb.execute("exit 3")
        assert r.exit_code == 3 and "ended the shell session (exit code 3)" in r.output
        assert sb.session_id is None
        r = sb.execute('echo "[${A:-}]"')
        assert r.output == ("[Shell session restarted: the command before ended the shell "
                            "(exit code 3). Its working directory, variables and functions "
                            "are gone; this command ran in a new shell.]\n[]\n"), r.output
    finally:
        sb.delete()


async def test_adapter_session_concurrent_commands_serialised(YuxiSandbox, opts):
    """deepagents may run tool calls in parallel: the backend runs them one
    after the other in its session instead of answering session_busy."""
    sb = YuxiSandbox.create(**opts, thread_id=thread_id("ac"), session=True)
    try:
        rs = await asyncio.gather(*[sb.aexecute("sleep 0.3; echo n%d" % i) for i in range(4)])
        assert [r.output for r in rs] == ["n%d\n" % i for i in range(4)]
        assert all(r.exit_code == 0 for r in rs)
    finally:
        sb.delete()


def test_adapter_session_as_the_brief_has_it(YuxiSandbox, factory):
    """`cd /tmp && export A=1`, then `pwd; echo $A`: on an instance without
    the command path policy (strict refuses /tmp) and with the busybox
    test image, whose only shell is sh."""
    s = factory(YUXI_COMMAND_PATH_POLICY="off")
    o = {"url": s.url, "token": s.tokens["alice"], "ca_file": s.cert}
    sess = YuxiSandbox.create(**o, thread_id=thread_id("tmp"), session=True)
    plain = YuxiSandbox(**o, thread_id=sess.id)
    try:
        for b in (sess, plain):
            assert b.execute("cd /tmp && export A=1").exit_code == 0
        assert sess.execute("pwd; echo $A").output == "/tmp\n1\n"
        assert plain.execute("pwd; echo $A").output == WS + "\n\n"
        shell = sess.client.get_session(sess.id, sess.session_id)["shell"]
        assert shell == "sh"
    finally:
        sess.delete()
