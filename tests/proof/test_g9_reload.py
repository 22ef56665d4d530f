# SPDX-License-Identifier: MIT
"""Group 9: reload (SIGHUP) and graceful stop (SIGTERM) of the master
(docs/operations.md, "Reload and stop").

- reload under load: CLIENTS keep-alive clients through nginx (executes of short
  commands, some lasting 0.2 s so that requests are in flight at every
  reload, viewer file reads and viewer trees) while the master gets SIGHUP
  RELOADS times (5; 25 in the soak run); every answer must be a 2xx with the expected body: a 5xx,
  a connection error or a timeout is a lost request, and none is allowed.
  Afterwards the master runs generation RELOADS + 1, every old worker
  retired by itself (none SIGKILLed) and /metrics counts the reloads.
- a setting changed in the configuration file (YUXI_SANDBOX_OUTPUT_LIMIT,
  seen in an execute's truncated output) is served after SIGHUP; an invalid
  value is refused with one log line naming the file, the line and the
  setting, and the old value keeps being served; a restart-only setting
  (YUXI_SANDBOX_MAX_REPLICAS) is logged and kept.
- SIGTERM during an in-flight execute (`sleep 2; echo done`) with a second
  request already queued on the socket behind it (one worker): both answer
  200, a request sent after the SIGTERM is refused at once (nginx 502: the
  socket is gone), the master exits 0, no child is left, the socket is
  unlinked.
Controls: the control daemon with YX_CONTROL_OFF=drain reloads naively (old
workers SIGKILLed at once) and stops without serving the queue: the same
load must lose requests there, and the queued request of the stop test
must be lost.
"""
import os
import re
import signal
import threading
import time

import pytest
import requests

import prooffix as P
from prooffix import stats

G = 9
RELOADS = 25 if P.SOAK else 5
CLIENTS = 4
WORKERS = 4
RELOAD_GAP_S = 1.5	# between two SIGHUPs
BIG = 10000		# bytes of output for the output-limit case

pytestmark = pytest.mark.skipif(not P.image_present(P.TEST_IMAGE),
                                reason="image %s not built" % P.TEST_IMAGE)


def write_conf(path, text):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.rename(tmp, path)


def service(kind="prod", conf="", **kw):
    """A started service reading the configuration file <base>/yuxi.conf
    (text conf) under the harness's environment, which overrides it."""
    env = {"YUXI_WORKERS": str(WORKERS), "YUXI_SANDBOX_IMAGE": P.TEST_IMAGE}
    env.update(kw)
    svc = P.ProofService(kind, "dev", **env)
    svc.conf = os.path.join(svc.base, "yuxi.conf")
    write_conf(svc.conf, conf)
    svc.env["YUXI_CONFIG"] = svc.conf
    return svc.start()


def log_count(svc, needle):
    return svc.read_log(tail=None).count(needle)


def metric(svc, name):
    """The value of the sample `name` (with its labels) in /metrics."""
    text = svc.request(None, "GET", "/metrics", timeout=30).text
    m = re.search(r"^%s (\S+)$" % re.escape(name), text, re.M)
    return float(m.group(1)) if m else None


def sighup(svc):
    os.kill(svc.sandboxd.pid, signal.SIGHUP)


def wait_retired(svc, n, timeout=60):
    """Wait until the log shows n retired workers; returns the count."""
    return P.yxsvc.wait_for(lambda: log_count(svc, "retired worker") >= n, timeout) and \
        log_count(svc, "retired worker")


# -------------------------------------------------------------- load + reload
def load_run(svc, reloads):
    """CLIENTS keep-alive clients through nginx while the master gets
    `reloads` SIGHUPs; returns the counters."""
    threads = [svc.new_thread() for _ in range(CLIENTS)]
    for t in threads:
        svc.run(t, "mkdir -p d && echo warm > warm.txt && echo x > d/x.txt")
    res = {"requests": 0, "failed": 0, "by_kind": {}, "failures": []}
    lock = threading.Lock()
    stop = threading.Event()

    def client(tid, k):
        sess = requests.Session()	# HTTP/1.1 keep-alive to nginx
        n = 0
        while not stop.is_set():
            n += 1
            kind = ("exec", "slow", "file", "tree")[(n + k) % 4]
            why = None
            try:
                if kind in ("exec", "slow"):
                    cmd = ("sleep 0.2; " if kind == "slow" else "") + "echo r%d" % n
                    r = svc.request("alice", "POST", "/api/execute", session=sess,
                                    json={"thread_id": tid, "command": cmd}, timeout=60)
                    good = r.status_code == 200 and r.json()["output"] == "r%d\n" % n
                elif kind == "file":
                    r = svc.request("alice", "GET", "/api/viewer/filesystem/file?thread_id=%s"
                                    "&path=/workspace/warm.txt" % tid, session=sess, timeout=60)
                    good = r.status_code == 200 and r.json()["content"] == "warm\n"
                else:
                    r = svc.request("alice", "GET", "/api/viewer/filesystem/tree?thread_id=%s"
                                    "&path=/workspace/d" % tid, session=sess, timeout=60)
                    good = r.status_code == 200 and \
                        [e["name"] for e in r.json()["entries"]] == ["x.txt"]
                if not good:
                    why = "%s: %d %s" % (kind, r.status_code, r.text[:200])
            except (requests.RequestException, ValueError, KeyError) as e:
                why = "%s: %s" % (kind, e)
            with lock:
                res["requests"] += 1
                res["by_kind"][kind] = res["by_kind"].get(kind, 0) + 1
                if why is not None:
                    res["failed"] += 1
                    if len(res["failures"]) < 10:
                        res["failures"].append(why)

    cs = [threading.Thread(target=client, args=(t, i)) for i, t in enumerate(threads)]
    for c in cs:
        c.start()
    t0 = time.time()
    try:
        time.sleep(RELOAD_GAP_S)
        for _ in range(reloads):
            sighup(svc)
            time.sleep(RELOAD_GAP_S)
    finally:
        stop.set()
        for c in cs:
            c.join(timeout=120)
    res["seconds"] = round(time.time() - t0, 1)
    return res


def test_reload_under_load():
    svc = service()
    try:
        res = load_run(svc, RELOADS)
        retired = wait_retired(svc, RELOADS * WORKERS)
        log = svc.read_log(tail=None)
        killed = log.count("did not retire")
        gen = metric(svc, "yuxi_generation")
        done = metric(svc, 'yuxi_reloads_total{result="done"}')
        alive = svc.sandboxd.poll() is None
        workers = P.yxsvc.wait_for(lambda: metric(svc, "yuxi_workers") == WORKERS, 30)
        print("reload under load: %d requests %s in %.1f s, %d reloads, %d failed, "
              "%d workers retired, %d killed, generation %s" %
              (res["requests"], res["by_kind"], res["seconds"], RELOADS, res["failed"],
               retired or 0, killed, gen))
        for f in res["failures"]:
            print("   failed:", f)
        stats.measure(G, "reload_load_requests", res["requests"])
        stats.measure(G, "reload_load_reloads", RELOADS)
        stats.measure(G, "reload_load_failed", res["failed"])
        stats.case(G, "%d reloads under load (%d requests)" % (RELOADS, res["requests"]),
                   lost_requests=res["failed"],
                   escapes=not (alive and gen == RELOADS + 1 and done == RELOADS and
                                killed == 0 and workers))
        assert alive, "the master exited on SIGHUP:\n" + log[-3000:]
        assert res["failed"] == 0, res["failures"]
        assert res["requests"] > 10 * RELOADS, res
        assert gen == RELOADS + 1 and done == RELOADS, (gen, done)
        assert retired == RELOADS * WORKERS and killed == 0, log[-3000:]
        assert workers, "not %d workers after the reloads" % WORKERS
    finally:
        svc.stop()


def test_reload_control_naive():
    """Control: with old workers SIGKILLed at the reload instead of drained,
    the same load loses requests: the test above can fail."""
    svc = service("control", YX_CONTROL_OFF="drain")
    try:
        res = load_run(svc, RELOADS)
        print("naive reload (control): %d requests, %d reloads, %d failed" %
              (res["requests"], RELOADS, res["failed"]))
        stats.measure(G, "reload_control_requests", res["requests"])
        stats.measure(G, "reload_control_failed", res["failed"])
        caught = res["failed"] > 0
        stats.control(G, caught, "a naive reload loses requests")
        assert caught, res
    finally:
        svc.stop()


# ---------------------------------------------------------- configuration
def out_len(svc, tid):
    """(len(output), truncated) of a command printing BIG bytes."""
    r = svc.run(tid, "head -c %d /dev/zero | tr '\\0' a" % BIG)
    return len(r["output"]), r["truncated"]


def test_reload_new_setting_and_refusal():
    svc = service(conf="# test\nYUXI_SANDBOX_OUTPUT_LIMIT=4k\n")
    try:
        tid = svc.new_thread()
        before = out_len(svc, tid)
        assert before == (4096, True), before
        # a valid change: served once the old workers are gone
        write_conf(svc.conf, "# test\nYUXI_SANDBOX_OUTPUT_LIMIT=8k\nYUXI_SANDBOX_MAX_REPLICAS=7\n")
        sighup(svc)
        assert wait_retired(svc, WORKERS) == WORKERS, svc.read_log()
        after = {out_len(svc, tid) for _ in range(2 * WORKERS)}
        kept = "YUXI_SANDBOX_MAX_REPLICAS changes at restart only" in svc.read_log(tail=None)
        # an invalid value: refused, one line, the old value still served
        write_conf(svc.conf, "# test\nYUXI_SANDBOX_OUTPUT_LIMIT=lots\n")
        sighup(svc)
        P.yxsvc.wait_for(lambda: "reload refused" in svc.read_log(tail=None), 10)
        refused = [l for l in svc.read_log(tail=None).splitlines() if "reload refused" in l]
        time.sleep(0.5)
        still = {out_len(svc, tid) for _ in range(2 * WORKERS)}
        gen = metric(svc, "yuxi_generation")
        nref = metric(svc, 'yuxi_reloads_total{result="refused"}')
        alive = svc.sandboxd.poll() is None
        print("output limit: before %s, after reload %s, after refused reload %s; "
              "refusal: %s; generation %s" % (before, after, still, refused, gen))
        want = "%s:2: YUXI_SANDBOX_OUTPUT_LIMIT" % svc.conf
        ok = (after == {(8192, True)} and still == {(8192, True)} and kept and
              len(refused) == 1 and want in refused[0] and gen == 2 and nref == 1 and alive)
        stats.case(G, "a reloaded setting is served, an invalid one refused", escapes=not ok)
        assert alive, svc.read_log()
        assert after == {(8192, True)}, after
        assert kept, svc.read_log()
        assert len(refused) == 1 and want in refused[0], refused
        assert still == {(8192, True)}, still
        assert gen == 2 and nref == 1, (gen, nref)
    finally:
        svc.stop()


# ------------------------------------------------------------------ stop
def stop_run(svc):
    """A `sleep 2` execute in flight on the only worker, a second request
    queued behind it, then SIGTERM to the master. Returns the outcome."""
    tid = svc.new_thread()
    svc.run(tid, "true")
    out = {}

    def call(key, cmd):
        try:
            r = svc.request("alice", "POST", "/api/execute", session=requests.Session(),
                            json={"thread_id": tid, "command": cmd}, timeout=60)
            out[key] = (r.status_code, r.json().get("output") if r.status_code == 200 else
                        r.text[:100])
        except (requests.RequestException, ValueError) as e:
            out[key] = (None, str(e))

    pids = svc.pids_from_log("worker") + svc.pids_from_log("reaper")
    a = threading.Thread(target=call, args=("inflight", "sleep 2; echo done"))
    a.start()
    time.sleep(0.7)
    b = threading.Thread(target=call, args=("queued", "echo queued"))
    b.start()
    time.sleep(0.5)
    t0 = time.time()
    svc.sandboxd.send_signal(signal.SIGTERM)
    time.sleep(0.2)
    t1 = time.time()
    try:
        late = svc.request("alice", "POST", "/api/execute", session=requests.Session(),
                           json={"thread_id": tid, "command": "echo late"}, timeout=30)
        out["late"] = (late.status_code, time.time() - t1)
    except requests.RequestException as e:
        out["late"] = (None, str(e))
    a.join(timeout=90)
    b.join(timeout=90)
    try:
        out["status"] = svc.sandboxd.wait(timeout=60)
    except Exception:
        out["status"] = None
    out["stop_seconds"] = round(time.time() - t0, 2)
    out["left"] = [p for p in pids if P.pid_alive(p)]
    out["socket"] = os.path.exists(svc.sock)
    return out


def test_stop_during_inflight():
    svc = service(YUXI_WORKERS="1")
    try:
        out = stop_run(svc)
        print("stop:", out)
        ok = (out["inflight"] == (200, "done\n") and out["queued"] == (200, "queued\n") and
              out["status"] == 0 and not out["left"] and not out["socket"])
        stats.measure(G, "stop_seconds", out["stop_seconds"])
        stats.case(G, "SIGTERM with a request in flight and one queued",
                   lost_requests=(out["inflight"][0] != 200) + (out["queued"][0] != 200),
                   escapes=not ok)
        assert out["inflight"] == (200, "done\n"), out
        assert out["queued"] == (200, "queued\n"), out
        assert out["late"][0] == 502 and out["late"][1] < 5, out
        assert out["status"] == 0, out
        assert not out["left"] and not out["socket"], out
    finally:
        svc.stop()


def test_stop_control_no_drain():
    """Control: a stop that serves nothing queued loses the queued request."""
    svc = service("control", YUXI_WORKERS="1", YX_CONTROL_OFF="drain")
    try:
        out = stop_run(svc)
        print("stop without draining (control):", out)
        caught = out["inflight"][0] == 200 and out["queued"][0] != 200
        stats.control(G, caught, "a stop without draining loses the queued request")
        assert caught, out
    finally:
        svc.stop()
