# SPDX-License-Identifier: MIT
"""Background processes through the real nginx and engine (docs/api.md
"Background processes"): a server started in the background and reached
from a later command, stdin, 1 GiB of output with the service's memory
flat, limits, the reaper's keep-alive bound, long-polls and their worker
cap, survival of a worker crash and of a service restart, "lost" when the
container goes or the keeper is killed from inside (at once under runc and
gVisor alike), a stopped keeper not declared lost, and the engine-only
service's clear refusal."""
import os
import signal
import subprocess
import time

from conftest import (engine_up, new_tid, proc_output, proc_read_until,  # noqa: F401
                      proc_start, proc_url, reaped_after, sandbox_ps, warm_thread,
                      wait_for)
import pytest

pytestmark = pytest.mark.skipif(not engine_up(), reason="no engine or test image")
GIB = 1 << 30


def proc_get(s, tid, pid, who="alice"):
    return s.request(who, "GET", proc_url(tid, pid))


def proc_list(s, tid, who="alice"):
    r = s.request(who, "GET", proc_url(tid))
    assert r.status_code == 200, r.text
    return {p["process_id"]: p for p in r.json()["processes"]}


def proc_kill(s, tid, pid, who="alice"):
    return s.request(who, "DELETE", proc_url(tid, pid))


def test_http_server_in_the_background(factory):
    s = factory(YUXI_SANDBOX_IMAGE="yuxi-sandbox:latest")
    tid = warm_thread(s)
    r = proc_start(s, tid, "python3 -m http.server 8000")
    assert r.status_code == 201, r.text
    p = r.json()
    pid = p["process_id"]
    assert p["state"] == "running" and p["started_at"] and p["exit_code"] is None
    assert s.execute(tid, "echo served > hello.txt").status_code == 200
    fetch = ("python3 -c \"import urllib.request as u; print(u.urlopen("
             "'http://127.0.0.1:8000/hello.txt').read().decode(), end='')\"")
    assert wait_for(lambda: s.execute(tid, fetch).json()["output"] == "served\n", 15, 0.3)
    # the server's access log is in the process's output
    text = proc_read_until(s, tid, pid, lambda t: "GET /hello.txt" in t)
    assert '"GET /hello.txt HTTP/1.1" 200' in text, text
    assert proc_list(s, tid)[pid]["state"] == "running"
    r = proc_kill(s, tid, pid)
    assert r.status_code == 200 and r.json()["forgotten"] is True, r.text
    assert "http.server" not in sandbox_ps(s, tid)
    assert proc_get(s, tid, pid).status_code == 404
    assert pid not in proc_list(s, tid)


def test_stdin_echoed_by_cat(svc, thread):
    r = proc_start(svc, thread, "cat")
    pid = r.json()["process_id"]
    w = svc.request("alice", "POST", proc_url(thread, pid, "/stdin"), data=b"hello\n")
    assert w.status_code == 200 and w.json() == {"written": 6, "stdin_open": True}, w.text
    assert proc_read_until(svc, thread, pid, lambda t: "hello\n" in t) == "hello\n"
    # the last bytes, then end of input: cat ends by itself
    w = svc.request("alice", "POST", proc_url(thread, pid, "/stdin") + "&eof=1", data=b"bye\n")
    assert w.status_code == 200 and w.json() == {"written": 4, "stdin_open": False}, w.text
    assert wait_for(lambda: proc_get(svc, thread, pid).json()["state"] == "exited", 10)
    p = proc_get(svc, thread, pid).json()
    assert p["exit_code"] == 0 and p["ended_at"] and p["output_bytes"] == 10
    j = proc_output(svc, thread, pid, 0).json()
    assert j["data"] == "hello\nbye\n" and j["running"] is False and j["exit_code"] == 0
    # writing to a process that ended
    w = svc.request("alice", "POST", proc_url(thread, pid, "/stdin"), data=b"x")
    assert w.status_code == 409 and w.json()["error"]["code"] == "not_running"
    # DELETE of an ended one sends its lingering keeper away too
    sock = os.path.join(svc.saves, "run", thread, "proc.%s.sock" % pid)
    assert os.path.exists(sock)
    assert proc_kill(svc, thread, pid).status_code == 200
    assert wait_for(lambda: not os.path.exists(sock), 5, 0.1), sock


def test_delete_while_a_long_poll_waits(svc, thread):
    """The waiting reader wakes when the process dies and refreshes its
    record: it must not bring the forgotten process back."""
    import threading
    pid = proc_start(svc, thread, "echo one; sleep 600").json()["process_id"]
    assert proc_read_until(svc, thread, pid, lambda t: "one" in t) == "one\n"
    th = threading.Thread(target=lambda: proc_output(svc, thread, pid, 4, 5000))
    th.start()
    time.sleep(0.3)
    assert proc_kill(svc, thread, pid).status_code == 200
    th.join()
    assert pid not in proc_list(svc, thread)
    assert proc_get(svc, thread, pid).status_code == 404


def rss_kib(pid):
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def keeper_pid(s, tid, marker):
    """Host pid of the keeper of the process whose command has `marker`:
    the parent of that command's shell, from `docker top`."""
    cid = s.containers(thread=tid)[0][0]
    out = subprocess.run(["docker", "top", cid, "-eo", "pid,ppid,args"],
                         capture_output=True, text=True, timeout=30).stdout
    for line in out.splitlines()[1:]:
        pid, ppid, args = line.split(None, 2)
        if args.startswith("/bin/sh -c") and marker in args:
            return int(ppid)
    return 0


def test_gib_of_output_keeps_memory_flat(factory):
    if os.environ.get("YUXI_TEST_RUNTIME") == "runsc":
        pytest.skip("measures the keeper's host RSS: under runsc the keeper is "
                    "a gVisor task, not a host process `docker top` names")
    keep = 1 << 20
    s = factory(YUXI_PROCESS_OUTPUT_KEEP=str(keep))
    tid = warm_thread(s)
    workers = s.pids_from_log("worker")
    before = {w: rss_kib(w) for w in workers}
    cmd = "yes 0123456789abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvwxy | head -c %d" % GIB
    pid = proc_start(s, tid, cmd).json()["process_id"]
    kp = wait_for(lambda: keeper_pid(s, tid, "head -c"), 10, 0.1)
    assert kp, "keeper not found"
    peak_w, peak_k, t0, off = dict(before), 0, time.monotonic(), 0
    while time.monotonic() - t0 < 300:
        # a reader follows the output meanwhile, as a client would
        j = proc_output(s, tid, pid, off, 200, max_bytes=keep).json()
        off = j["next_offset"]
        for w in workers:
            peak_w[w] = max(peak_w[w], rss_kib(w))
        peak_k = max(peak_k, rss_kib(kp))
        if not j["running"]:
            break
    took = time.monotonic() - t0
    p = proc_get(s, tid, pid).json()
    assert p["state"] == "exited" and p["exit_code"] == 0, p
    assert p["output_bytes"] == GIB
    j = proc_output(s, tid, pid, 0, max_bytes=keep).json()
    growth = max(peak_w[w] - before[w] for w in workers)
    print("\n1 GiB written in %.1f s: worker RSS %s KiB before, peak growth %d KiB; "
          "keeper RSS peak %d KiB (ring %d KiB); kept %d bytes from offset %d, dropped %d" %
          (took, sorted(before.values()), growth, peak_k, keep >> 10, len(j["data"]),
           j["offset"], j["dropped"]))
    # what is kept is the last `keep` bytes, the rest reported dropped
    assert j["offset"] == GIB - keep and j["dropped"] == GIB - keep
    assert len(j["data"]) == keep and j["next_offset"] == GIB
    # flat: a worker never holds more than a few of its reads, the keeper
    # its ring (and its binary), whatever was written; under ASan a worker
    # also keeps freed blocks in its quarantine (256 MiB by default), still
    # far below the GiB that went through it
    limit = 16 * 1024
    if os.environ.get("YX_SANITIZED") == "1":
        limit += 256 * 1024
    assert growth < limit, growth
    assert 0 < peak_k < (keep >> 10) + 4 * 1024, peak_k
    proc_kill(s, tid, pid)


def test_limits(factory):
    s = factory(YUXI_PROCESS_MAX="2", YUXI_PROCESS_LIFETIME="3")
    tid = warm_thread(s)
    a = proc_start(s, tid, "sleep 600").json()
    b = proc_start(s, tid, "sleep 601", timeout=1).json()
    assert a["timeout"] == 3 and b["timeout"] == 1
    r = proc_start(s, tid, "sleep 602")
    assert r.status_code == 409 and r.json()["error"]["code"] == "process_limit", r.text
    assert "YUXI_PROCESS_MAX" in r.json()["error"]["message"]
    # the lifetime (capped at YUXI_PROCESS_LIFETIME) kills the group: 124
    assert wait_for(lambda: all(p["state"] == "exited" for p in proc_list(s, tid).values()), 10)
    for p in proc_list(s, tid).values():
        assert p["exit_code"] == 124 and p["timed_out"] is True, p
    assert "sleep 60" not in sandbox_ps(s, tid)
    assert proc_start(s, tid, "sleep 603").status_code == 201
    for body, status, code in [
            ({"command": "true", "timeout": 0}, 400, "bad_request"),
            ({"command": ""}, 400, "bad_request"),
            ({"command": "cat /etc/shadow"}, 403, "path_not_allowed"),
            ({"command": "true", "thread_id": "../x"}, 400, "invalid_thread_id")]:
        b = {"thread_id": tid}
        b.update(body)
        r = s.request("alice", "POST", "/api/processes", json=b)
        assert r.status_code == status and r.json()["error"]["code"] == code, (body, r.text)
    for url in [proc_url(tid, "pffffffffffffffff"), proc_url(tid, "x"),
                proc_url(tid, "p0000000000000000", "/output")]:
        r = s.request("alice", "GET", url)
        assert r.status_code == 404 and r.json()["error"]["code"] == "not_found", (url, r.text)


def test_long_poll_and_its_worker_cap(factory):
    s = factory(YUXI_WORKERS="3", YUXI_PROCESS_WAITERS="1")
    tid = warm_thread(s)
    pid = proc_start(s, tid, "sleep 1; echo late; sleep 600").json()["process_id"]
    t0 = time.monotonic()
    j = proc_output(s, tid, pid, 0, 20000).json()
    took = time.monotonic() - t0
    assert j["data"] == "late\n" and j["running"] is True and 0.5 < took < 5, (j, took)
    # nothing more: the wait ends at wait_ms with no data
    t0 = time.monotonic()
    j = proc_output(s, tid, pid, j["next_offset"], 1500).json()
    assert j["data"] == "" and 1.4 < time.monotonic() - t0 < 5
    # two long-polls at once with one slot: one waits, the other answers
    # at once; a command still gets a worker meanwhile
    import threading
    res = []

    def poll():
        t = time.monotonic()
        res.append((proc_output(s, tid, pid, 5, 3000).json(), time.monotonic() - t))
    th = [threading.Thread(target=poll) for _ in range(2)]
    for t in th:
        t.start()
    time.sleep(0.5)
    t0 = time.monotonic()
    assert s.execute(tid, "echo free").json()["output"] == "free\n"
    plain = time.monotonic() - t0
    for t in th:
        t.join()
    waited = sorted(res, key=lambda x: x[1])
    print("\nlong-polls with one slot: answered after %.2f s and %.2f s; "
          "a command meanwhile %.0f ms" % (waited[0][1], waited[1][1], plain * 1000))
    assert waited[0][0].get("wait_capped") is True and waited[0][1] < 1.0
    assert "wait_capped" not in waited[1][0] and waited[1][1] >= 2.5
    assert plain < 1.0


def test_survives_worker_crash_and_restart_then_lost(factory):
    s = factory()
    tid = warm_thread(s)
    pid = proc_start(s, tid, "i=0; while :; do echo tick $i; i=$((i+1)); sleep 0.2; done").json()["process_id"]
    for w in s.pids_from_log("worker"):
        try:
            os.kill(w, signal.SIGKILL)
        except ProcessLookupError:
            pass
    assert wait_for(lambda: s._healthy(), 15)
    assert proc_list(s, tid)[pid]["state"] == "running"
    assert "tick" in proc_read_until(s, tid, pid, lambda t: "tick" in t)
    # a service restart: the sandbox is adopted, the process rediscovered
    s.halt()
    s.start()
    p = proc_list(s, tid)[pid]
    assert p["state"] == "running", p
    before = p["output_bytes"]
    assert wait_for(lambda: proc_get(s, tid, pid).json()["output_bytes"] > before, 10)
    # the container goes: the process is reported lost, not forgotten
    box = s.sandboxes()[tid]["sandbox_id"]
    assert s.request("admin", "DELETE", "/api/admin/sandboxes/" + box).status_code == 204
    p = proc_list(s, tid)[pid]
    assert p["state"] == "lost" and p["exit_code"] is None, p
    j = proc_output(s, tid, pid, 0, 2000).json()
    assert j["state"] == "lost" and j["running"] is False and j["data"] == ""
    assert proc_kill(s, tid, pid).status_code == 200
    assert pid not in proc_list(s, tid)


def test_reaper_keepalive_bound(factory):
    # keep-alive 15 s: the idle thread's reaping took over 6 s under gVisor
    # on CI's loaded machine, when the busy one was due too
    s = factory(YUXI_SANDBOX_IDLE_TIMEOUT="2", YUXI_SANDBOX_IDLE_CHECK_INTERVAL="1",
                YUXI_PROCESS_KEEPALIVE="15")
    busy = warm_thread(s)
    idle = warm_thread(s)
    t0 = time.monotonic()
    pid = proc_start(s, busy, "sleep 600").json()["process_id"]
    assert proc_start(s, idle, "true").status_code == 201	# ends at once
    # the thread whose process ended is reaped like any idle one; the busy
    # one only once the keep-alive bound passed
    t_idle, t_busy = reaped_after(s, t0, idle, busy, "reaped while its process ran", 35)
    print("\nreaper: idle thread reaped after %.1f s, one running a background "
          "process after %.1f s (keep-alive 15 s, idle timeout 2 s)" % (t_idle, t_busy))
    assert t_idle < 15 <= t_busy
    assert proc_list(s, busy)[pid]["state"] == "lost"


def test_engine_only_service_refuses_clearly(factory):
    s = factory(YUXI_EXEC_AGENT="off")
    tid = s.new_thread()
    r = proc_start(s, tid, "sleep 5")
    assert r.status_code == 503 and r.json()["error"]["code"] == "agent_unavailable", r.text
    assert proc_list(s, tid) == {}


def test_hostile_keeper_files_not_followed(factory):
    """The sandbox controls its run directory: a keeper killed from inside,
    its exit file replaced by a symlink to a host file that says "code=42"
    (relative, so that it resolves on the host) - the host never follows
    it: the process is lost, not "exited 42". The same content in a regular
    file of the sandbox is read (it is the sandbox's to say): so "lost" is
    the refusal, not a parse failure."""
    s = factory(YUXI_COMMAND_PATH_POLICY="off")
    tid = warm_thread(s)
    trap = os.path.join(s.saves, "threads", tid, "user-data", "workspace", "trap")
    with open(trap, "w") as f:
        f.write("code=42 ended=1 timedout=0 killed=0\n")
    for how, want in (("symlink", ("lost", None)), ("file", ("exited", 42))):
        pid = proc_start(s, tid, "echo $PPID > kp.%s; exec sleep 777" % how).json()["process_id"]
        assert wait_for(lambda: os.path.exists(trap[:-4] + "kp." + how), 10, 0.1)
        exitf = "/opt/yuxi/run/proc.%s.exit" % pid
        put = ("ln -sf ../../threads/%s/user-data/workspace/trap %s" % (tid, exitf)
               if how == "symlink" else "cp trap %s" % exitf)
        r = s.execute(tid, "kill -9 $(cat kp.%s); sleep 0.3; %s" % (how, put))
        assert r.status_code == 200 and r.json()["exit_code"] == 0, r.text
        p = proc_get(s, tid, pid).json()
        assert (p["state"], p["exit_code"]) == want, (how, p)
        assert "sleep 777" not in sandbox_ps(s, tid)	# the group went too


def kill_keeper_inside(s, tid, sig, tag):
    """Start `exec sleep 777` in the background, then signal its keeper (the
    shell's parent) from a command of the thread. The process id."""
    pid = proc_start(s, tid, "echo $PPID > kp.%s; exec sleep 777" % tag).json()["process_id"]
    kp = os.path.join(s.saves, "threads", tid, "user-data", "workspace", "kp." + tag)
    assert wait_for(lambda: os.path.exists(kp) and os.path.getsize(kp) > 0, 10, 0.1)
    r = s.execute(tid, "kill -%s $(cat kp.%s)" % (sig, tag))
    assert r.status_code == 200 and r.json()["exit_code"] == 0, r.text
    return pid


def test_keeper_killed_inside_is_lost_at_once(factory):
    """The keeper killed from inside the sandbox: the next GET says "lost"
    at once, under runc (its socket refuses) and under runsc, where the
    socket's name is a host socket gVisor keeps taking connections on that
    nobody answers: the host asks the agent, whose answer comes from the
    keeper's lock (docs/agent.md "Background processes")."""
    s = factory(YUXI_COMMAND_PATH_POLICY="off")
    tid = warm_thread(s)
    pid = kill_keeper_inside(s, tid, 9, "lost")
    t0 = time.monotonic()
    p = proc_get(s, tid, pid).json()
    took = time.monotonic() - t0
    # once known, the next answers come from the record
    t1 = time.monotonic()
    q = proc_list(s, tid)[pid]
    again = time.monotonic() - t1
    j = proc_output(s, tid, pid, 0, 2000).json()
    print("\nkeeper killed inside (%s): GET says %s after %.0f ms, the list %.0f ms later" %
          (os.environ.get("YUXI_TEST_RUNTIME") or "runc", p["state"], took * 1000,
           again * 1000))
    assert (p["state"], p["exit_code"]) == ("lost", None), p
    assert q["state"] == "lost" and j["state"] == "lost" and j["running"] is False
    assert took < 2.0, took		# was running, after 5 s, under runsc
    assert "sleep 777" not in sandbox_ps(s, tid)	# the group went too
    assert proc_kill(s, tid, pid).status_code == 200
    assert pid not in proc_list(s, tid)


def test_stopped_keeper_is_not_lost(factory):
    """A keeper alive but not answering (stopped from inside) is not
    declared lost: the agent says it lives, so the host waits for it (up to
    its deadline) and keeps the record as it was; continued, it answers.
    The keeper is stopped by a command that lasts while the host asks (its
    state written under another name, then renamed: the host reads it
    whole); under gVisor any exit in the agent's (orphaned) process group
    sends SIGCONT to its stopped members - Linux does so only when the group
    becomes orphaned - so the keeper would be running again by the next
    command (and is, as soon as the agent's handler that answered the host
    leaves)."""
    import threading
    s = factory(YUXI_COMMAND_PATH_POLICY="off")
    tid = warm_thread(s)
    pid = proc_start(s, tid, "echo $PPID > kp.tmp; mv kp.tmp kp.stop; exec sleep 777").json()["process_id"]
    ws = os.path.join(s.saves, "threads", tid, "user-data", "workspace")
    assert wait_for(lambda: os.path.exists(os.path.join(ws, "kp.stop")), 10, 0.1)
    res = {}
    stopper = threading.Thread(target=lambda: res.update(r=s.execute(
        tid, "k=$(cat kp.stop); for i in 1 2 3 4 5; do kill -STOP $k; sleep 0.2; "
        "grep -q 'T (stopped)' /proc/$k/status && break; done; "
        "grep State /proc/$k/status > stopped.tmp; mv stopped.tmp stopped; sleep 7")))
    stopper.start()
    assert wait_for(lambda: os.path.exists(os.path.join(ws, "stopped")), 10, 0.05)
    with open(os.path.join(ws, "stopped")) as f:
        st = f.read()
    t0 = time.monotonic()
    p = proc_get(s, tid, pid).json()
    took = time.monotonic() - t0
    stopper.join()
    assert res["r"].status_code == 200, res["r"].text
    assert s.execute(tid, "kill -CONT $(cat kp.stop)").json()["exit_code"] == 0
    t1 = time.monotonic()
    q = proc_get(s, tid, pid).json()
    after = time.monotonic() - t1
    print("\nkeeper stopped inside (%s, %s): GET says %s after %.0f ms; continued: %s after "
          "%.0f ms" % (os.environ.get("YUXI_TEST_RUNTIME") or "runc", st.strip(), p["state"],
                       took * 1000, q["state"], after * 1000))
    assert "T (stopped)" in st, st
    assert p["state"] == "running" and q["state"] == "running", (p, q)
    assert proc_kill(s, tid, pid).status_code == 200
    assert "sleep 777" not in sandbox_ps(s, tid)


def test_listing_during_a_start_is_no_loss(svc):
    """A listing while another request still starts a process (its record
    written, its sandbox and keeper not yet there) must not record it as
    lost: the record says it is starting (found by the workbench's terminal,
    which listed while it started one)."""
    import threading
    lost = []
    for i in range(3):
        tid = svc.new_thread()		# no sandbox yet: the start makes it
        stop, seen = threading.Event(), []

        def lister():
            # a listing every 20 ms: many during the start, without taking
            # the CPU the start needs (2 cores, CI's load)
            while not stop.wait(0.02):
                r = svc.request("alice", "GET", proc_url(tid))
                seen.extend(p["state"] for p in r.json()["processes"])
        t = threading.Thread(target=lister)
        t.start()
        r = proc_start(svc, tid, "sleep 30")
        stop.set()
        t.join()
        assert r.status_code == 201, r.text
        pid = r.json()["process_id"]
        later = proc_get(svc, tid, pid).json()["state"]
        lost.append((sorted(set(seen)), later))
        proc_kill(svc, tid, pid)
    assert all(later == "running" and "lost" not in seen for seen, later in lost), lost
