# SPDX-License-Identifier: MIT
"""Group 9: the master supervises every child (issue 27, docs/security.md
"Lifecycle").

Every child of the master is SIGKILLed in turn while a client runs
commands: the workers, the reaper, the privileged helper (yuxi-priv), the
egress proxy's supervisor (yuxi-egress) and the proxy itself. Each must be
running again within seconds; afterwards a new thread gets its disk image
(the helper) and a background process of a thread with network fetches
again without a new command (the proxy serves its kept registrations).
/readyz is not ready while a component the default profile needs is down
(a helper that crash-loops is started again after a backoff: polled in
that window). Controls: the test-only daemon with YX_CONTROL_OFF=supervise
(the helper is not started again: creates answer 503 for good) and
YX_CONTROL_OFF=egresskeep (a restarted proxy forgets the registrations: the
background fetch fails until the thread's next command).
"""
import http.server
import json
import os
import secrets
import threading
import time

import pytest
import requests

import prooffix as P
from prooffix import stats

G = 9
BACK_S = 5	# a child must be running again within this


@pytest.fixture(scope="module")
def upstream(tmp_path_factory):
    """A web server on 127.0.0.1, allowed.test naming it, and an agents file
    whose default profile may reach it (so the proxy is needed)."""
    d = tmp_path_factory.mktemp("sup")

    class Up(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200)
            self.send_header("Content-Length", "3")
            self.end_headers()
            self.wfile.write(b"up\n")

        def log_message(self, *a):
            pass
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Up)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    port = srv.server_address[1]
    (d / "hosts").write_text("127.0.0.1 allowed.test\n")
    with open(os.path.join(P.yxsvc.TOP_SRCDIR, "examples", "agents.json")) as f:
        ag = json.load(f)
    ag["profiles"].append({"id": "default", "network": {
        "allow": ["allowed.test:%d" % port], "allow_private": ["allowed.test"]}})
    (d / "agents.json").write_text(json.dumps(ag))
    yield {"port": port, "hosts": str(d / "hosts"), "agents": str(d / "agents.json")}
    srv.shutdown()


def service(upstream, kind="prod", **kw):
    if not P.image_present(P.FULL_IMAGE):
        pytest.skip("image %s missing" % P.FULL_IMAGE)
    return P.ProofService(kind, YUXI_SANDBOX_IMAGE=P.FULL_IMAGE, YUXI_WORKERS=3,
                          YUXI_THREAD_DISK_QUOTA="256m", YUXI_AGENTS_FILE=upstream["agents"],
                          YUXI_EGRESS_HOSTS=upstream["hosts"], YUXI_COMMAND_PATH_POLICY="off",
                          YUXI_SANDBOX_IDLE_CHECK_INTERVAL=1, **kw).start()


FETCH_LOOP = r"""
import time, urllib.request
while True:
    try:
        urllib.request.urlopen("http://allowed.test:%d/", timeout=2).read()
        print("OK %%.1f" %% time.time(), flush=True)
    except Exception as e:
        print("ERR %%.1f %%s" %% (time.time(), type(e).__name__), flush=True)
    time.sleep(0.3)
"""


def fetcher(svc, port):
    """A thread of the default profile (network) with a background fetch loop."""
    tid = "sup-%s" % secrets.token_hex(4)
    r = svc.request("alice", "POST", "/api/threads", json={"thread_id": tid})
    assert r.status_code == 201, r.text
    r = svc.request("alice", "POST", "/api/filesystem/write", json={
        "thread_id": tid, "path": "/home/yuxi/user-data/workspace/f.py",
        "content": FETCH_LOOP % port})
    assert r.status_code == 201, r.text
    r = svc.request("alice", "POST", "/api/processes",
                    json={"thread_id": tid, "command": "python3 -u f.py"})
    assert r.status_code == 201, r.text
    return tid, r.json()["process_id"]


def fetched_since(svc, tid, pid, t0):
    """Lines of the fetch loop stamped after t0 (unix s): (oks, errs)."""
    r = svc.request("alice", "GET", "/api/processes/%s/output?thread_id=%s&max_bytes=1048576"
                    % (pid, tid))
    assert r.status_code == 200, r.text
    ok = err = 0
    for line in r.json()["data"].splitlines():
        p = line.split()
        if len(p) >= 2 and float(p[1]) > t0:
            ok += p[0] == "OK"
            err += p[0] == "ERR"
    return ok, err


class Load:
    """A client running `echo` in its own thread until stopped."""
    def __init__(self, svc):
        self.svc, self.ok, self.bad, self.stop = svc, 0, [], False
        self.tid = "load-%s" % secrets.token_hex(4)
        r = svc.request("alice", "POST", "/api/threads", json={"thread_id": self.tid})
        assert r.status_code == 201, r.text
        self.t = threading.Thread(target=self.run)
        self.t.start()

    def run(self):
        with requests.Session() as s:
            while not self.stop:
                try:
                    r = self.svc.request("alice", "POST", "/api/execute", session=s, json={
                        "thread_id": self.tid, "command": "echo x"}, timeout=30)
                    if r.status_code == 200 and r.json()["output"] == "x\n":
                        self.ok += 1
                    else:
                        self.bad.append(r.status_code)
                except requests.RequestException as e:
                    self.bad.append(type(e).__name__)
                time.sleep(0.05)

    def end(self):
        self.stop = True
        self.t.join(60)


def children(svc):
    """{kind: [pids]} of the master's children and the egress proxy."""
    out = {"worker_or_reaper": svc.worker_pids(), "helper": [], "egress": [], "proxy": []}
    h = svc.helper_pid()
    out["helper"] = [h] if h else []
    eg = svc.egress_pids()
    out["egress"], out["proxy"] = eg[:1], eg[1:]
    return out


def kill_and_wait(svc, kind, pid):
    """SIGKILL pid (of kind); seconds until another of that kind runs."""
    P.kill_quiet(pid)
    t0 = time.monotonic()
    back = P.wait_for(lambda: any(p != pid for p in children(svc)[kind])
                      and (kind != "worker_or_reaper" or len(children(svc)[kind]) >= 4), BACK_S, 0.05)
    return time.monotonic() - t0 if back else None


def test_every_child_comes_back(upstream):
    svc = service(upstream)
    try:
        tid, pid = fetcher(svc, upstream["port"])
        assert P.wait_for(lambda: fetched_since(svc, tid, pid, 0)[0] > 0, 20), "no fetch at all"
        load = Load(svc)
        took = {}
        try:
            for kind in ("worker_or_reaper", "worker_or_reaper", "worker_or_reaper",
                         "worker_or_reaper", "helper", "egress", "proxy"):
                victims = children(svc)[kind]
                assert victims, (kind, children(svc))
                took.setdefault(kind, []).append(kill_and_wait(svc, kind, victims[0]))
                time.sleep(0.5)
        finally:
            load.end()
        print("children back after (s): %s; load: %d ok, failed %s" % (
            {k: [round(t, 2) if t is not None else None for t in v] for k, v in took.items()},
            load.ok, load.bad))
        gone = [k for k, v in took.items() if None in v]
        stats.case(G, "a child of the master killed stays gone", hangs=len(gone))
        assert not gone, took
        # the helper serves: a new thread gets its disk image
        r = svc.request("alice", "POST", "/api/threads", json={"thread_id": "after-" + tid})
        assert r.status_code == 201, r.text
        out = svc.run("after-" + tid, "df -P . | tail -1")["output"]
        assert "/dev/loop" in out, out
        # the proxy serves the kept registration: fetched again, no command sent
        t0 = time.time()
        assert P.wait_for(lambda: fetched_since(svc, tid, pid, t0)[0] >= 2, 15), \
            fetched_since(svc, tid, pid, t0)
        assert load.ok > 0
        r = svc.request("admin", "GET", "/metrics")
        m = {l.split()[0]: l.split()[1] for l in r.text.splitlines() if l.startswith("yuxi_component")}
        assert m['yuxi_component_restarts_total{component="privileged_helper"}'] == "1", m
        assert m['yuxi_component_restarts_total{component="egress_proxy"}'] == "1", m
        assert m['yuxi_component_up{component="privileged_helper"}'] == "1", m
    finally:
        svc.stop()


def ready_checks(svc):
    r = svc.request("alice", "GET", "/readyz")
    return r.status_code, {c["name"]: c["ok"] for c in r.json().get("checks", [])}


def test_readyz_not_ready_while_the_helper_is_down(upstream):
    svc = service(upstream)
    try:
        status, checks = ready_checks(svc)
        assert status == 200 and checks.get("privileged_helper") is True, checks
        # a crash loop: each early death doubles the master's backoff
        last = None
        for _ in range(6):
            assert P.wait_for(lambda: svc.helper_pid() not in (None, last), 10, 0.02)
            last = svc.helper_pid()
            P.kill_quiet(last)
        # the master learns of the death from SIGCHLD: ask until it did
        # (a loaded machine delays it), well within the backoff
        got = []
        P.wait_for(lambda: got.append(ready_checks(svc)) or got[-1][0] == 503, 3, 0.01)
        status, checks = got[-1]
        print("readyz in the helper's backoff: %d %s" % (status, checks))
        assert status == 503 and checks.get("privileged_helper") is False, checks
        assert P.wait_for(lambda: ready_checks(svc)[0] == 200, 15), ready_checks(svc)
    finally:
        svc.stop()


def test_supervise_control(upstream):
    svc = service(upstream, kind="control", YX_CONTROL_OFF="supervise")
    try:
        h = svc.helper_pid()
        P.kill_quiet(h)
        # another helper, not the killed one's zombie before the master
        # reaps it (under ASan on a loaded machine the first look saw it)
        back = P.wait_for(lambda: svc.helper_pid() not in (None, h), BACK_S, 0.1)
        r = svc.request("alice", "POST", "/api/threads", json={"thread_id": "c-" + secrets.token_hex(4)})
        print("control: helper back %s; a new thread: %d" % (back, r.status_code))
        assert stats.control(G, not back and r.status_code != 201,
                             "a killed helper stays gone"), (back, r.text)
    finally:
        svc.stop()


def test_egresskeep_control(upstream):
    svc = service(upstream, kind="control", YX_CONTROL_OFF="egresskeep")
    try:
        tid, pid = fetcher(svc, upstream["port"])
        assert P.wait_for(lambda: fetched_since(svc, tid, pid, 0)[0] > 0, 20)
        proxy = children(svc)["proxy"]
        assert proxy, children(svc)
        P.kill_quiet(proxy[0])
        assert P.wait_for(lambda: children(svc)["proxy"] not in ([], proxy), BACK_S, 0.05)
        t0 = time.time()
        time.sleep(3)
        ok, err = fetched_since(svc, tid, pid, t0)
        print("control: fetches after the proxy restart without a command: %d ok, %d failed"
              % (ok, err))
        assert stats.control(G, ok == 0 and err > 0, "a restarted proxy forgets its sandboxes"), \
            (ok, err)
    finally:
        svc.stop()
