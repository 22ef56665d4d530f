# SPDX-License-Identifier: MIT
"""Service-level e2e tests: health, metrics, routing, identity, admin,
configuration errors, worker respawn."""
import os
import re
import signal
import subprocess
import time

from conftest import SANDBOXD, WORKERS, BODY_LIMIT


def test_healthz_shape(anon):
    r = anon.get("/healthz")
    assert r.status_code == 200
    assert r.headers["Content-Type"] == "application/json; charset=utf-8"
    j = r.json()
    assert j["status"] in ("ok", "degraded")
    assert j["engine"] in ("ok", "down")
    assert (j["status"] == "ok") == (j["engine"] == "ok")
    assert j["workers"] == WORKERS
    assert set(j["sandboxes"]) == {"active", "warm"}
    assert all(isinstance(v, int) and v >= 0 for v in j["sandboxes"].values())


SAMPLE = re.compile(r'^[a-z_]+(\{[a-z_]+="[^"\n]*"(,[a-z_]+="[^"\n]*")*\})? [0-9.e+-]+$')


def test_metrics_prometheus_format(anon):
    anon.get("/healthz")
    anon.get("/api/no/such/route")
    r = anon.get("/metrics")
    assert r.status_code == 200
    assert r.headers["Content-Type"].startswith("text/plain; version=0.0.4")
    lines = r.text.strip("\n").split("\n")
    types = {}
    for line in lines:
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split(" ")
            types[name] = kind
        elif not line.startswith("# HELP "):
            assert SAMPLE.match(line), line
    assert types["yuxi_http_requests_total"] == "counter"
    assert types["yuxi_http_request_duration_seconds"] == "histogram"
    assert types["yuxi_sandboxes"] == "gauge"
    for name in ("yuxi_sandbox_acquires_total", "yuxi_reaper_destroys_total",
                 "yuxi_engine_errors_total"):
        assert types[name] == "counter"
    text = r.text
    m = re.search(r'yuxi_http_requests_total\{method="GET",route="/healthz",status="200"\} (\d+)', text)
    assert m and int(m.group(1)) >= 1
    assert re.search(r'yuxi_http_requests_total\{method="any",route="unmatched",status="404"\} [1-9]', text)
    for outcome in ("hit", "warm", "discovered", "created"):
        assert 'yuxi_sandbox_acquires_total{outcome="%s"}' % outcome in text
    # histogram buckets are cumulative and end with +Inf == _count
    buckets = [int(v) for v in re.findall(
        r'yuxi_http_request_duration_seconds_bucket\{method="GET",route="/healthz",le="[^"]+"\} (\d+)', text)]
    assert buckets == sorted(buckets) and len(buckets) >= 2
    count = re.search(r'yuxi_http_request_duration_seconds_count\{method="GET",route="/healthz"\} (\d+)', text)
    assert int(count.group(1)) == buckets[-1]


def test_metrics_aggregate_across_workers(anon):
    def healthz_count():
        t = anon.get("/metrics").text
        return int(re.search(r'route="/healthz",status="200"\} (\d+)', t).group(1))
    before = healthz_count()
    for _ in range(30):
        assert anon.get("/healthz").status_code == 200
    assert healthz_count() - before == 30


def test_unknown_route_404(alice):
    r = alice.get("/api/nope")
    assert r.status_code == 404
    assert r.json()["error"]["code"] == "not_found"
    assert set(r.json()["error"]) == {"code", "message", "request_id"}
    assert r.json()["error"]["request_id"] == r.headers["X-Request-Id"]


def test_wrong_method_405(alice):
    r = alice.put("/api/threads", json={})
    assert r.status_code == 405
    assert r.json()["error"]["code"] == "method_not_allowed"
    assert sorted(r.headers["Allow"].split(", ")) == ["GET", "HEAD", "POST"]
    r = alice.get("/api/execute")
    assert r.status_code == 405
    assert r.headers["Allow"] == "POST"


def test_no_identity_401(anon):
    for method, path in (("GET", "/api/threads"), ("POST", "/api/threads"),
                         ("GET", "/api/threads/x1"), ("DELETE", "/api/threads/x1"),
                         ("GET", "/api/filesystem/ls?thread_id=x1"),
                         ("GET", "/api/admin/sandboxes")):
        r = anon.svc.request(None, method, path, json={} if method == "POST" else None)
        assert r.status_code == 401, (method, path, r.text)
        assert r.json()["error"]["code"] == "unauthenticated"


def test_spoofed_identity_header_ignored(svc, alice, bob):
    tid = "spoof-" + str(os.getpid())
    assert alice.post("/api/threads", json={"thread_id": tid}).status_code == 201
    try:
        # no token + X-Yuxi-User: still anonymous
        r = svc.request(None, "GET", "/api/threads", headers={"X-Yuxi-User": "alice",
                                                             "X-Yuxi-Role": "admin"})
        assert r.status_code == 401
        # bob claiming to be alice stays bob
        r = bob.get("/api/threads/" + tid, headers={"X-Yuxi-User": "alice"})
        assert r.status_code == 404
        r = bob.get("/api/admin/sandboxes", headers={"X-Yuxi-Role": "admin"})
        assert r.status_code == 403
    finally:
        alice.delete("/api/threads/" + tid)


def test_admin_forbidden_for_users(alice):
    for method, path in (("GET", "/api/admin/sandboxes"),
                         ("POST", "/api/admin/sandboxes/0123abcd/release"),
                         ("DELETE", "/api/admin/sandboxes/0123abcd")):
        r = alice.svc.request("alice", method, path)
        assert r.status_code == 403, path
        assert r.json()["error"]["code"] == "forbidden"


def test_admin_endpoints(admin):
    r = admin.get("/api/admin/sandboxes")
    assert r.status_code == 200
    assert isinstance(r.json()["sandboxes"], list)
    r = admin.post("/api/admin/sandboxes/0123abcd/release")
    assert r.status_code == 404 and r.json()["error"]["code"] == "not_found"
    r = admin.delete("/api/admin/sandboxes/0123abcd")
    assert r.status_code == 404
    r = admin.delete("/api/admin/sandboxes/NOT-HEX")
    assert r.status_code == 400 and r.json()["error"]["code"] == "bad_request"


def test_json_body_limit_413(alice):
    big = "x" * (BODY_LIMIT + 10)
    r = alice.post("/api/threads", data='{"thread_id":"big","pad":"%s"}' % big,
                   headers={"Content-Type": "application/json"})
    assert r.status_code == 413
    assert r.json()["error"]["code"] == "payload_too_large"


def test_malformed_json_400(alice):
    for body in ("{", "[]", '{"thread_id": 5}', '{"a":1} trailing'):
        r = alice.post("/api/threads", data=body,
                       headers={"Content-Type": "application/json"})
        assert r.status_code == 400, body
        assert r.json()["error"]["code"] == "bad_request", body


def test_bad_config_value_exits_naming_variable(svc):
    for var, val in (("YUXI_WORKERS", "0"), ("YUXI_SANDBOX_IDLE_TIMEOUT", "soon"),
                     ("YUXI_SAVES_DIR", "relative/path"),
                     ("YUXI_AGENTS_FILE", "/nonexistent/agents.json")):
        env = dict(svc.env)
        env[var] = val
        env["YUXI_FCGI_SOCKET"] = svc.env["YUXI_FCGI_SOCKET"] + ".unused"
        p = subprocess.run([SANDBOXD], env=env, capture_output=True, text=True, timeout=30)
        assert p.returncode == 2, (var, p.returncode, p.stderr)
        assert var in p.stderr, (var, p.stderr)
    # the running service is untouched
    assert os.path.exists(svc.env["YUXI_FCGI_SOCKET"])


def test_sigkill_worker_is_respawned(svc, anon):
    pids = svc.worker_pids()
    assert len(pids) == WORKERS + 1          # workers + reaper
    victim = pids[0]
    os.kill(victim, signal.SIGKILL)
    deadline = time.time() + 15
    while time.time() < deadline:
        now = svc.worker_pids()
        if victim not in now and len(now) == WORKERS + 1:
            break
        time.sleep(0.1)
    now = svc.worker_pids()
    assert victim not in now and len(now) == WORKERS + 1, now
    for _ in range(20):
        assert anon.get("/healthz").status_code == 200
    assert "exited on signal 9" in svc.read_log()
