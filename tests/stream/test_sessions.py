# SPDX-License-Identifier: MIT
"""Sessions and terminals (docs/api.md "Sessions", "On a terminal"),
against the real service: a session's shell keeps its state between
commands (cwd, variables, functions, aliases, options, a venv), a command's
exit code is its own, stdin is at end-of-file, background output never
mixes in, a timeout kills the command and keeps the session, a command that
ends the shell ends the session, one command at a time, limits, idleness,
the reaper's bound; it survives worker crashes and a restart and is lost
with its sandbox; and a process on a pseudo-terminal sees its size and its
resize. Under gVisor, through a front and in a pool box: tests/e2e,
tests/remote (the runtime's and the front's harnesses)."""
import os
import signal
import threading
import time

import pytest

from conftest import Service, new_tid, proc_output, proc_read_until, proc_start, proc_url, \
    reaped_after, sandbox_ps, started, wait_for, warm_thread  # noqa: F401

WS = "/home/yuxi/user-data/workspace"
# the service's own image (bash, python3): the test image is busybox's
FULL = os.environ.get("YUXI_PY_IMAGE", "yuxi-sandbox:latest")


@pytest.fixture(scope="module")
def bsvc():
    yield from started(Service(stem="qyxss", overrides={"YUXI_SANDBOX_IMAGE": FULL}))


@pytest.fixture
def bthread(bsvc):
    tid = warm_thread(bsvc)
    yield tid
    bsvc.request("alice", "DELETE", "/api/threads/" + tid)


@pytest.fixture
def bfactory(factory):
    return lambda **kw: factory(YUXI_SANDBOX_IMAGE=FULL, **kw)


def sess_new(s, tid, who="alice", **body):
    b = {"thread_id": tid}
    b.update(body)
    return s.request(who, "POST", "/api/sessions", json=b)


def sess_url(tid, sid="", tail=""):
    return "/api/sessions%s%s?thread_id=%s" % ("/" + sid if sid else "", tail, tid)


def run(s, tid, sid, command, who="alice", **body):
    b = {"thread_id": tid, "command": command}
    b.update(body)
    return s.request(who, "POST", "/api/sessions/%s/execute" % sid, json=b)


def ok(s, tid, sid, command, **body):
    r = run(s, tid, sid, command, **body)
    assert r.status_code == 200, r.text
    return r.json()


def sess_get(s, tid, sid, who="alice"):
    return s.request(who, "GET", sess_url(tid, sid))


@pytest.fixture
def session(bsvc, bthread):
    svc, thread = bsvc, bthread
    r = sess_new(svc, thread)
    assert r.status_code == 201, r.text
    j = r.json()
    assert j["shell"] == "bash" and j["state"] == "running" and j["cwd"] == WS, j
    return thread, j["session_id"]


def test_state_survives_between_commands(bsvc, session):
    svc = bsvc
    tid, sid = session
    j = ok(svc, tid, sid, "mkdir -p deep && cd deep && export A=41 && f() { echo fn$((A+1)); }")
    assert j["exit_code"] == 0 and j["cwd"] == WS + "/deep" and j["session_ended"] is False
    j = ok(svc, tid, sid, "pwd; echo $A; f")
    assert j["output"] == WS + "/deep\n41\nfn42\n", j
    # unexported variables, aliases, options, ulimit
    ok(svc, tid, sid, "B=unexported; alias hi='echo alias-works'; set -o noclobber; ulimit -n 77")
    j = ok(svc, tid, sid, "echo $B; hi; set -o | grep noclobber; ulimit -n; "
                          "sh -c 'echo child:${B:-unset}:$A'")
    assert j["output"] == "unexported\nalias-works\nnoclobber      \ton\n77\nchild:unset:41\n", j
    # a plain execute of the same thread starts from scratch
    r = svc.execute(tid, "echo ${A:-none}; pwd")
    assert r.json()["output"] == "none\n%s\n" % WS
    g = sess_get(svc, tid, sid).json()
    assert g["cwd"] == WS + "/deep" and g["commands"] == 4 and g["busy"] is False, g


def test_venv_stays_active(bsvc, session):
    svc = bsvc
    tid, sid = session
    j = ok(svc, tid, sid, "python3 -m venv --without-pip venv && . venv/bin/activate")
    assert j["exit_code"] == 0, j
    j = ok(svc, tid, sid, "echo $VIRTUAL_ENV; command -v python; type deactivate | head -1")
    assert j["output"] == "%s/venv\n%s/venv/bin/python\ndeactivate is a function\n" % (WS, WS), j


def test_exit_codes_stdin_and_background_output(bsvc, session):
    svc = bsvc
    tid, sid = session
    assert ok(svc, tid, sid, "(exit 3)")["exit_code"] == 3
    assert ok(svc, tid, sid, "false")["exit_code"] == 1
    j = ok(svc, tid, sid, "read x; echo read=$? x=[$x]")
    assert j["output"] == "read=1 x=[]\n", j		# end-of-file, not the next command
    j = ok(svc, tid, sid, "cat; echo cat-done")
    assert j["output"] == "cat-done\n"
    j = ok(svc, tid, sid, "(sleep 0.6; echo LATE-OUTPUT) >/dev/stdout 2>&1 & echo started")
    assert "started" in j["output"] and "LATE" not in j["output"], j
    time.sleep(1.2)
    j = ok(svc, tid, sid, "echo next")
    assert j["output"] == "next\n", j
    # quotes and expansions reach the shell exactly as written
    j = ok(svc, tid, sid, "printf '%s|' 'a'\"'\"'b' \"$((2+3))\" '\\n' ; echo")
    assert j["output"] == "a'b|5|\\n|\n", j
    j = ok(svc, tid, sid, "cat <<'EOF'\nline one\n'quoted' $NOT\nEOF")
    assert j["output"] == "line one\n'quoted' $NOT\n", j


def test_timeout_keeps_the_session(bsvc, session):
    svc = bsvc
    tid, sid = session
    ok(svc, tid, sid, "mkdir -p t && cd t && export KEEP=yes")
    t0 = time.monotonic()
    j = ok(svc, tid, sid, "echo before; sleep 30; echo never", timeout=1)
    took = time.monotonic() - t0
    assert j["timed_out"] is True and j["exit_code"] == 124 and j["session_ended"] is False, j
    assert j["output"] == "before\n" and took < 3, (j, took)
    j = ok(svc, tid, sid, "pwd; echo $KEEP")
    assert j["output"] == WS + "/t\nyes\n", j
    # a loop of the shell's own: interrupted, the session goes on
    t0 = time.monotonic()
    j = ok(svc, tid, sid, "while :; do :; done", timeout=1)
    took = time.monotonic() - t0
    assert j["timed_out"] is True and j["session_ended"] is False and took < 4, (j, took)
    assert ok(svc, tid, sid, "echo $KEEP")["output"] == "yes\n"
    # its processes are gone, an earlier background job is not
    ok(svc, tid, sid, "sleep 1001 &")
    ok(svc, tid, sid, "sleep 1002 | cat", timeout=1)
    ps = sandbox_ps(svc, tid)
    assert "sleep 1001" in ps and "sleep 1002" not in ps, ps


@pytest.mark.parametrize("how,code", [("exit 3", 3), ("exec true", 0), ("kill -9 $$", 137)])
def test_a_command_that_ends_the_shell(bsvc, bthread, how, code):
    svc, thread = bsvc, bthread
    sid = sess_new(svc, thread).json()["session_id"]
    ok(svc, thread, sid, "sleep 1003 &")
    j = ok(svc, thread, sid, how)
    assert j["session_ended"] is True and j["exit_code"] == code, j
    r = run(svc, thread, sid, "echo again")
    assert r.status_code == 404 and r.json()["error"]["code"] == "session_not_found", r.text
    g = sess_get(svc, thread, sid).json()
    assert g["state"] == "ended" and g["end_reason"] == "exit" and g["exit_code"] == code, g
    assert wait_for(lambda: "sleep 1003" not in sandbox_ps(svc, thread), 5)


def test_one_command_at_a_time(bsvc, session):
    svc = bsvc
    tid, sid = session
    res = {}

    def long():
        res["long"] = run(svc, tid, sid, "sleep 2; echo slept")
    th = threading.Thread(target=long)
    th.start()
    assert wait_for(lambda: sess_get(svc, tid, sid).json()["busy"], 5, 0.05)
    t0 = time.monotonic()
    r = run(svc, tid, sid, "echo me too")
    took = time.monotonic() - t0
    th.join()
    assert r.status_code == 409 and r.json()["error"]["code"] == "session_busy", r.text
    assert took < 1.0, took
    assert res["long"].json()["output"] == "slept\n"
    assert ok(svc, tid, sid, "echo free")["output"] == "free\n"


def test_ownership_and_bad_requests(bsvc, session):
    svc = bsvc
    tid, sid = session
    other = warm_thread(svc)
    # another thread's session id: the session is not found in it
    r = run(svc, other, sid, "echo x")
    assert r.status_code == 404 and r.json()["error"]["code"] == "session_not_found"
    assert sess_get(svc, other, sid).status_code == 404
    # another user: the thread's own 404
    r = run(svc, tid, sid, "echo x", who="bob")
    assert r.status_code == 404 and r.json()["error"]["code"] == "not_found", r.text
    assert sess_get(svc, tid, sid, who="bob").status_code == 404
    assert svc.request("bob", "DELETE", sess_url(tid, sid)).status_code == 404
    assert sess_new(svc, tid, who="bob").status_code == 404
    # bad ids, shells, fields
    assert run(svc, tid, "s123", "echo").status_code == 404
    assert run(svc, tid, "p0123456789abcdef", "echo").status_code == 404
    assert sess_new(svc, tid, shell="zsh").status_code == 400
    r = run(svc, tid, sid, "echo", cwd="/tmp")
    assert r.status_code == 400 and "cd" in r.json()["error"]["message"]
    r = run(svc, tid, sid, "x" * 70000)
    assert r.status_code == 413, r.text
    # the command path policy as for execute: refused, nothing runs
    ok(svc, tid, sid, "cd ..")
    j = ok(svc, tid, sid, "cat /etc/shadow")
    assert j["exit_code"] == 126 and j["refused"] == "path_not_allowed", j
    assert j["cwd"] == "/home/yuxi/user-data" and j["session_ended"] is False, j
    assert ok(svc, tid, sid, "echo fine; pwd")["output"] == "fine\n/home/yuxi/user-data\n"


def test_list_delete_and_sh(bsvc, bthread):
    svc, thread = bsvc, bthread
    a = sess_new(svc, thread).json()["session_id"]
    b = sess_new(svc, thread, shell="sh", cwd="/home/yuxi/user-data", env={"GREETING": "hi"}).json()
    assert b["shell"] == "sh" and b["cwd"] == "/home/yuxi/user-data", b
    j = ok(svc, thread, b["session_id"], "echo $GREETING; pwd; cd workspace")
    assert j["output"] == "hi\n/home/yuxi/user-data\n" and j["cwd"] == WS, j
    assert "bash" not in ok(svc, thread, b["session_id"], "echo $BASH_VERSION.")["output"][:-2]
    # a special builtin's error does not make dash drop the report: answered at once
    t0 = time.monotonic()
    j = ok(svc, thread, b["session_id"], "set -o no-such-option")
    assert j["exit_code"] != 0 and j["timed_out"] is False and time.monotonic() - t0 < 2, j
    assert ok(svc, thread, b["session_id"], "echo $GREETING")["output"] == "hi\n"
    ok(svc, thread, a, "sleep 1004 & sleep 1005 &")
    lst = svc.request("alice", "GET", sess_url(thread)).json()["sessions"]
    assert [x["session_id"] for x in lst] == [a, b["session_id"]]
    r = svc.request("alice", "DELETE", sess_url(thread, a))
    assert r.status_code == 200 and r.json()["forgotten"] is True, r.text
    assert wait_for(lambda: "sleep 100" not in sandbox_ps(svc, thread), 5)
    assert sess_get(svc, thread, a).status_code == 404
    assert run(svc, thread, a, "echo").status_code == 404
    assert [x["session_id"] for x in
            svc.request("alice", "GET", sess_url(thread)).json()["sessions"]] == [b["session_id"]]


def test_stream_form_and_output_cap(bfactory):
    factory = bfactory
    s = factory(YUXI_SANDBOX_OUTPUT_LIMIT="4096")
    tid = warm_thread(s)
    sid = sess_new(s, tid).json()["session_id"]
    ok(s, tid, sid, "mkdir -p st && cd st")
    r = s.request("alice", "POST", "/api/sessions/%s/execute" % sid, stream=True,
                  json={"thread_id": tid, "command": "echo one; sleep 0.5; echo two; cd ../..",
                        "stream": True})
    assert r.status_code == 200 and r.headers["Content-Type"].startswith("application/x-ndjson")
    events = [__import__("json").loads(x) for x in r.iter_lines() if x]
    assert "".join(e["data"] for e in events if e["type"] == "output") == "one\ntwo\n"
    last = events[-1]
    assert last["type"] == "exit" and last["cwd"] == "/home/yuxi/user-data" and \
        last["session_ended"] is False, last
    j = ok(s, tid, sid, "seq 1 5000; echo host path: $PWD")
    assert j["truncated"] is True and j["full_output_path"].startswith(
        "/home/yuxi/user-data/large_tool_results/"), j
    assert len(j["output"]) <= 4096 + 200
    full = s.execute(tid, "tail -1 " + j["full_output_path"]).json()["output"]
    assert full == "host path: /home/yuxi/user-data\n", full


def test_limits_and_idleness(bfactory):
    factory = bfactory
    # idle 6 s: the creates between session a's start and its first
    # command must fit in it (bob's sandbox is made first; on a loaded CI
    # machine 3 s once ran out before a was used)
    s = factory(YUXI_SESSION_MAX="2", YUXI_SESSION_USER_MAX="3", YUXI_SESSION_IDLE="6")
    t1, t2 = warm_thread(s), warm_thread(s)
    tb = warm_thread(s, "bob")
    a = sess_new(s, t1).json()["session_id"]
    assert sess_new(s, t1).status_code == 201
    r = sess_new(s, t1)
    assert r.status_code == 429 and r.json()["error"]["code"] == "session_limit", r.text
    assert "YUXI_SESSION_MAX" in r.json()["error"]["message"]
    assert sess_new(s, t2).status_code == 201
    r = sess_new(s, t2)
    assert r.status_code == 429 and "YUXI_SESSION_USER_MAX" in r.json()["error"]["message"], r.text
    # bob is not limited by alice's sessions
    assert sess_new(s, tb, who="bob").status_code == 201
    # idle: a session without a command for 6 s ends; one in use (a
    # command every 0.8 s for 8 s) does not
    for _ in range(10):
        ok(s, t1, a, "true")
        time.sleep(0.8)
    assert sess_get(s, t1, a).json()["state"] == "running"
    assert wait_for(lambda: sess_get(s, t1, a).json()["state"] == "ended", 15, 0.3)
    g = sess_get(s, t1, a).json()
    assert g["end_reason"] == "idle", g
    assert run(s, t1, a, "true").status_code == 404
    # ended sessions free their place
    assert sess_new(s, t2).status_code == 201


def test_reaper_spares_a_thread_whose_session_is_used(bfactory):
    factory = bfactory
    s = factory(YUXI_SANDBOX_IDLE_TIMEOUT="2", YUXI_SANDBOX_IDLE_CHECK_INTERVAL="1",
                YUXI_SESSION_IDLE="6")
    busy, idle = warm_thread(s), warm_thread(s)
    sid = sess_new(s, busy).json()["session_id"]
    t0 = time.monotonic()
    ok(s, busy, sid, "true")
    t_idle, t_busy = reaped_after(s, t0, idle, busy, "reaped while its session was in use", 20)
    print("\nreaper: idle thread reaped after %.1f s, one with a session after %.1f s "
          "(session idle 6 s, sandbox idle 2 s)" % (t_idle, t_busy))
    assert t_idle < 6 <= t_busy + 0.5
    assert sess_get(s, busy, sid).json()["state"] in ("ended", "lost")


def test_survives_workers_and_restart_then_lost(bfactory):
    factory = bfactory
    s = factory()
    tid = warm_thread(s)
    sid = sess_new(s, tid).json()["session_id"]
    ok(s, tid, sid, "mkdir -p sv && cd sv && export SURVIVOR=1")
    # a worker killed in the middle of a command: the command stops, the
    # session stays
    th = threading.Thread(target=lambda: run(s, tid, sid, "sleep 1006"))
    th.start()
    assert wait_for(lambda: "sleep 1006" in sandbox_ps(s, tid), 5, 0.05)
    for w in s.pids_from_log("worker"):
        try:
            os.kill(w, signal.SIGKILL)
        except ProcessLookupError:
            pass
    th.join()
    assert wait_for(lambda: s._healthy(), 15)
    assert wait_for(lambda: "sleep 1006" not in sandbox_ps(s, tid), 5)
    assert wait_for(lambda: not sess_get(s, tid, sid).json()["busy"], 5)
    assert ok(s, tid, sid, "pwd; echo $SURVIVOR")["output"] == WS + "/sv\n1\n"
    # a service restart: the sandbox is adopted, the session rediscovered
    s.halt()
    s.start()
    g = sess_get(s, tid, sid).json()
    assert g["state"] == "running" and g["cwd"] == WS + "/sv", g
    assert ok(s, tid, sid, "echo $SURVIVOR")["output"] == "1\n"
    # the sandbox goes: the session is lost, not forgotten
    box = s.sandboxes()[tid]["sandbox_id"]
    assert s.request("admin", "DELETE", "/api/admin/sandboxes/" + box).status_code == 204
    g = sess_get(s, tid, sid).json()
    assert g["state"] == "lost" and g["end_reason"] == "lost", g
    r = run(s, tid, sid, "echo")
    assert r.status_code == 404 and r.json()["error"]["code"] == "session_not_found"


def test_engine_only_service_refuses_clearly(factory):
    s = factory(YUXI_EXEC_AGENT="off")
    tid = s.new_thread()
    r = sess_new(s, tid)
    assert r.status_code == 503 and r.json()["error"]["code"] == "agent_unavailable", r.text
    assert s.request("alice", "GET", sess_url(tid)).json()["sessions"] == []


# gVisor's terminals generate no signals (docs/api.md "resize"): measured
# with pty.fork() in a runsc container, no SIGWINCH on a resize, ^C a byte
GVISOR_NO_TTY_SIGNALS = pytest.mark.skipif(
    os.environ.get("YUXI_TEST_RUNTIME") == "runsc",
    reason="gVisor's pty line discipline sends no SIGWINCH/SIGINT (docs/api.md)")


@GVISOR_NO_TTY_SIGNALS
def test_process_on_a_terminal(svc, thread):
    # the resize's SIGWINCH prints the new size and ends it (a 30 s wait
    # for it: under gVisor on a loaded machine the resize may come late)
    r = proc_start(svc, thread, "tty; stty size; sh -c 'trap \"stty size; echo done; "
                   "kill $! 2>/dev/null; exit\" WINCH; echo ready; sleep 30 & wait; "
                   "echo no-winch'", pty={"cols": 101, "rows": 33})
    assert r.status_code == 201 and r.json()["pty"] == {"cols": 101, "rows": 33}, r.text
    pid = r.json()["process_id"]
    assert "ready" in proc_read_until(svc, thread, pid, lambda t: "ready" in t)
    r = svc.request("alice", "POST", proc_url(thread, pid, "/resize"),
                    json={"cols": 120, "rows": 40})
    assert r.status_code == 200 and r.json() == {"cols": 120, "rows": 40}, r.text
    text = proc_read_until(svc, thread, pid, lambda t: "done" in t)
    lines = text.replace("\r\n", "\n").split("\n")
    assert lines[0].startswith("/dev/pts/") and lines[1] == "33 101", lines
    assert "40 120" in lines and "done" in lines and "no-winch" not in lines, lines
    assert wait_for(lambda: svc.request("alice", "GET", proc_url(thread, pid)).json()["state"]
                    == "exited", 20, 0.1)
    # resizing an ended process, or one on pipes, is refused
    r = svc.request("alice", "POST", proc_url(thread, pid, "/resize"), json={"cols": 1, "rows": 1})
    assert r.status_code == 409, r.text
    pipe = proc_start(svc, thread, "sleep 5").json()["process_id"]
    r = svc.request("alice", "POST", proc_url(thread, pipe, "/resize"), json={"cols": 1, "rows": 1})
    assert r.status_code == 400, r.text
    assert proc_start(svc, thread, "true", pty={"cols": 0, "rows": 5}).status_code == 400
    assert proc_start(svc, thread, "true", pty={"cols": 5}).status_code == 400


@GVISOR_NO_TTY_SIGNALS
def test_terminal_job_control_and_interrupt(bsvc, bthread):
    svc, thread = bsvc, bthread
    pid = proc_start(svc, thread, "bash --norc -i", pty={"cols": 80, "rows": 24}).json()["process_id"]

    def typed(b):
        r = svc.request("alice", "POST", proc_url(thread, pid, "/stdin"), data=b)
        assert r.status_code == 200, r.text
    typed(b"echo $((6*7))\n")
    assert "42" in proc_read_until(svc, thread, pid, lambda t: "\n42" in t.replace("\r", ""))
    typed(b"sleep 1007\n")
    assert wait_for(lambda: "sleep 1007" in sandbox_ps(svc, thread), 20, 0.05)
    typed(b"\x03")		# ^C: the foreground job's group, not the shell
    assert wait_for(lambda: "sleep 1007" not in sandbox_ps(svc, thread), 20, 0.05)
    typed(b"echo alive-$((1+1))\n")
    assert "alive-2" in proc_read_until(svc, thread, pid, lambda t: "alive-2" in t)
    # DELETE kills the whole terminal session, job-control groups included
    typed(b"sleep 1008 &\n")
    assert wait_for(lambda: "sleep 1008" in sandbox_ps(svc, thread), 5, 0.05)
    assert svc.request("alice", "DELETE", proc_url(thread, pid)).status_code == 200
    assert wait_for(lambda: "sleep 1008" not in sandbox_ps(svc, thread), 5, 0.05)


def test_terminals_are_private_to_their_sandbox(factory):
    svc = factory(YUXI_COMMAND_PATH_POLICY="off")	# to look at /dev/pts
    a, b = warm_thread(svc), warm_thread(svc, "bob")
    pid = proc_start(svc, a, "tty; sleep 30", pty={"cols": 80, "rows": 24}).json()["process_id"]
    mine = proc_read_until(svc, a, pid, lambda t: "/dev/pts/" in t).strip()
    theirs = svc.execute(b, "ls /dev/pts", who="bob").json()["output"].split()
    assert mine.startswith("/dev/pts/")
    assert theirs == ["ptmx"], theirs		# bob's box sees no terminal of alice's
    svc.request("alice", "DELETE", proc_url(a, pid))


def test_auto_shell_is_sh_without_bash(svc, thread):
    """The test image (busybox) has no bash: a session gets sh, keeps its
    state all the same; asking for bash there fails clearly."""
    j = sess_new(svc, thread).json()
    assert j["shell"] == "sh", j
    ok(svc, thread, j["session_id"], "cd ..; X=7")
    assert ok(svc, thread, j["session_id"], "pwd; echo $X")["output"] == "/home/yuxi/user-data\n7\n"
    j = ok(svc, thread, j["session_id"], "sleep 30", timeout=1)
    assert j["timed_out"] is True and j["session_ended"] is False, j
    r = sess_new(svc, thread, shell="bash")
    assert r.status_code == 503 and r.json()["error"]["code"] == "agent_unavailable", r.text
