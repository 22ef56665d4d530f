# SPDX-License-Identifier: MIT
"""Sessions where the sandbox is unusual (issue 29; docs/api.md
"Sessions"): under gVisor (runsc: the shell, its reports through /proc,
the timeout and a terminal's size), and in a pool box (the session's
keeper in a box whose agent directory was swapped in at its assignment).
The session's behaviour itself: tests/stream/test_sessions.py; through a
front: tests/remote/test_remote.py."""
import time

from conftest import need_runsc, wait_for


def sess(c, tid, **body):
    body["thread_id"] = tid
    r = c.post("/api/sessions", json=body)
    assert r.status_code == 201, r.text
    return r.json()


def srun(c, tid, sid, cmd, **kw):
    body = {"thread_id": tid, "command": cmd}
    body.update(kw)
    r = c.post("/api/sessions/%s/execute" % sid, json=body)
    assert r.status_code == 200, r.text
    return r.json()


def session_checks(c, tid):
    s = sess(c, tid)
    sid = s["session_id"]
    srun(c, tid, sid, "mkdir -p deep && cd deep && export A=41 && f() { echo fn$((A+1)); }")
    j = srun(c, tid, sid, "pwd; echo $A; f")
    assert j["output"].split("\n")[1:3] == ["41", "fn42"], j
    assert j["cwd"].endswith("/workspace/deep"), j
    t0 = time.monotonic()
    j = srun(c, tid, sid, "sleep 30", timeout=1)
    assert j["timed_out"] is True and j["session_ended"] is False, j
    assert time.monotonic() - t0 < 5
    assert srun(c, tid, sid, "echo $A")["output"] == "41\n"
    j = srun(c, tid, sid, "exit 3")
    assert j["session_ended"] is True and j["exit_code"] == 3, j
    return s


def test_sessions_and_terminals_under_runsc(factory):
    need_runsc()
    inst = factory(YUXI_SANDBOX_RUNTIME="runsc")
    c = inst.client("alice")
    tid = inst.new_thread()
    session_checks(c, tid)
    assert "gVisor" in inst.execute(tid, "dmesg | head -1").json()["output"]
    r = c.post("/api/processes", json={"thread_id": tid, "command": "tty; stty size",
                                       "pty": {"cols": 101, "rows": 33}})
    assert r.status_code == 201, r.text
    pid = r.json()["process_id"]
    url = "/api/processes/%s/output?thread_id=%s&wait_ms=3000" % (pid, tid)
    assert wait_for(lambda: "33 101" in c.get(url).json()["data"], 20), c.get(url).text
    assert c.get(url).json()["data"].startswith("/dev/pts/")


def test_session_in_a_pool_box(factory):
    inst = factory(YUXI_POOL_SIZE="1")
    assert wait_for(lambda: any(s["state"] == "pooled" for s in inst.sandboxes().values()),
                    300, 0.1), inst.read_log()
    c = inst.client("alice")
    tid = inst.new_thread()
    session_checks(c, tid)
    assert "-pool-" in inst.sandboxes()[tid]["container"], inst.sandboxes()[tid]
