# SPDX-License-Identifier: MIT
"""Observability through the real service: /readyz and `yuxi-sandbox doctor`
(one set of checks), server faults as 5xx without host paths, request ids
(nginx's $request_id, a trusted client's X-Request-Id), the audit log (one
escaped, capped JSON line per API request, reopened on SIGUSR1) and the
metrics that go with them (docs/operations.md).

The runner test runs three daemons: production, where neither /readyz nor
the execute error names the host path; the control daemon with the
engine-message scrub off (YX_CONTROL_OFF=enginemsg), where the error layer
alone still withholds it; and with both off (enginemsg,errmask), where the
path must leak - else the test could not fail.
"""
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time

import pytest

from conftest import build_path, engine_up, need_runsc, wait_for
from yxsvc import Service

pytestmark = pytest.mark.skipif(not engine_up(), reason="no docker engine or test image")

CHECKS = ["engine", "image", "runtime", "runner", "agent", "table", "disk"]
# and the master's other children this instance runs (as root: both)
COMPONENTS = ["privileged_helper", "egress_proxy"]
NGINX_ID = re.compile(r"^[0-9a-f]{32}$")
CONTROL = build_path("tests", "security", "yuxi-sandboxd-control")


def host_paths(svc):
    """Host paths no answer may name."""
    return [svc.base, os.path.dirname(build_path("yuxi-run")), svc.saves]


def audit_by_id(svc):
    return {l["request_id"]: l for l in svc.audit_lines()}


def test_readyz_ready(svc, anon):
    r = anon.get("/readyz")
    assert r.status_code == 200, r.text
    j = r.json()
    assert j["ready"] is True and "failing" not in j
    assert [c["name"] for c in j["checks"]] == CHECKS + COMPONENTS
    assert all(c["ok"] for c in j["checks"]), j
    # YUXI_SANDBOX_RUNTIME is runc; the runsc profile of examples/agents.json
    # ("untrusted") is doctor's and the start-up report's, not /readyz's
    assert {"name": "runtime", "ok": True, "detail": "runc only"} in j["checks"], j
    assert not any(p in r.text for p in host_paths(svc)), r.text
    assert NGINX_ID.match(r.headers["X-Request-Id"])


def test_request_ids_on_every_answer(svc, alice, anon, thread):
    alice.post("/api/filesystem/write", json={"thread_id": thread, "path": "a.txt",
                                              "content": "x"})
    answers = {
        "ok": alice.get("/api/threads/" + thread),
        "download": alice.get("/api/filesystem/download?thread_id=%s&path=a.txt" % thread),
        "not_found": alice.get("/api/threads/tnosuch0000"),
        "forbidden_path": alice.get("/api/filesystem/cat?thread_id=%s&path=/etc/passwd" % thread),
        "unauthenticated": anon.get("/api/threads"),
        "unmatched": alice.get("/api/no/such/route"),
        "healthz": anon.get("/healthz"),
        "readyz": anon.get("/readyz"),
    }
    assert answers["download"].status_code == 200 and answers["download"].text == "x"
    ids = {}
    for what, r in answers.items():
        rid = r.headers.get("X-Request-Id")
        assert rid is not None and NGINX_ID.match(rid), (what, r.status_code, r.headers)
        ids[rid] = what
        if r.status_code >= 400:
            assert r.json()["error"]["request_id"] == rid, (what, r.text)
    assert len(ids) == len(answers), "request ids repeat"
    lines = audit_by_id(svc)
    for rid, what in ids.items():
        if what in ("healthz", "readyz"):
            assert rid not in lines, what	# not an API operation
        else:
            assert lines[rid]["status"] == answers[what].status_code, (what, lines[rid])
    assert lines[answers["download"].headers["X-Request-Id"]]["bytes_out"] == 1
    assert lines[answers["forbidden_path"].headers["X-Request-Id"]]["error"] == "path_not_allowed"
    assert lines[answers["unauthenticated"].headers["X-Request-Id"]]["user"] is None
    # a client's id counts only when the service trusts it
    r = alice.get("/api/threads/" + thread, headers={"X-Request-Id": "client-chosen-1"})
    assert r.headers["X-Request-Id"] != "client-chosen-1"
    assert NGINX_ID.match(r.headers["X-Request-Id"])


def test_trusted_client_request_id(factory):
    inst = factory(YUXI_TRUST_REQUEST_ID="1")
    tid = inst.new_thread()
    good = "abc.DEF-123_x"
    r = inst.request("alice", "GET", "/api/threads/" + tid, headers={"X-Request-Id": good})
    assert r.status_code == 200 and r.headers["X-Request-Id"] == good
    r = inst.request("alice", "GET", "/api/threads/tnosuch0000", headers={"X-Request-Id": good + "2"})
    assert r.json()["error"]["request_id"] == good + "2"
    for bad in ("has space", "x" * 65, "semi;colon", "ünï"):
        r = inst.request("alice", "GET", "/api/threads/" + tid,
                         headers={"X-Request-Id": bad.encode("utf-8")})
        assert NGINX_ID.match(r.headers["X-Request-Id"]), (bad, r.headers["X-Request-Id"])
    lines = audit_by_id(inst)
    assert lines[good]["op"] == "thread_get" and lines[good]["thread"] == tid


def test_audit_command_escaped_and_capped(svc, alice, thread):
    ctl = "echo 'ctl:\x01\x02\x1b[31m\x7f\ttab\rcr' > /dev/null"
    r1 = svc.execute(thread, ctl)
    assert r1.status_code == 200, r1.text
    # the 4 KiB cap falls inside a two-byte character: it must not be split
    # (9,000 of them: 54 KB as JSON escapes, under the e2e body limit)
    huge = "true # " + "\u00e9" * 9000
    r2 = svc.execute(thread, huge)
    assert r2.status_code == 200, r2.text
    with open(svc.audit_path(), "rb") as f:
        raw = f.read()
    for line in raw.split(b"\n")[:-1]:
        assert not any(b < 0x20 for b in line), line[:200]
        json.loads(line.decode("utf-8"))	# every line is valid UTF-8 JSON
    lines = audit_by_id(svc)
    a = lines[r1.headers["X-Request-Id"]]
    assert a["op"] == "execute" and a["command"] == ctl and a["exit_code"] == 0
    assert a["command_truncated"] is False and a["command_bytes"] == len(ctl.encode())
    assert b"\\u0001\\u0002\\u001b[31m" in raw
    b = lines[r2.headers["X-Request-Id"]]
    kept = b["command"].encode("utf-8")
    print("huge command: %d bytes, %d kept in the audit line" % (len(huge.encode()), len(kept)))
    assert b["command_truncated"] is True and b["command_bytes"] == len(huge.encode())
    assert len(kept) == 4095 and huge.startswith(b["command"])
    assert all(len(l) < 64 * 1024 for l in raw.split(b"\n"))


def test_audit_reopen_on_sigusr1(factory):
    inst = factory()
    path = inst.audit_path()
    tid = inst.new_thread()
    pids = inst.worker_pids()
    assert os.path.exists(path)
    os.rename(path, path + ".1")
    os.kill(inst.sandboxd.pid, signal.SIGUSR1)

    def current():
        return {l["request_id"] for l in inst.audit_lines(rotated=False)}

    def landed():
        r = inst.request("alice", "GET", "/api/threads/" + tid)
        return os.path.exists(path) and r.headers["X-Request-Id"] in current()
    assert wait_for(landed, 10, 0.1), "no new audit file after SIGUSR1"
    # every worker reopened: the next requests all land in the new file
    rids = [inst.request("alice", "GET", "/api/threads/" + tid).headers["X-Request-Id"]
            for _ in range(3 * len(pids))]
    assert set(rids) <= current()
    with open(path + ".1") as f:
        assert not set(rids) & {json.loads(l)["request_id"] for l in f}
    assert inst.worker_pids() == pids, "a child died of SIGUSR1"
    assert "SIGUSR1" in inst.read_log()


def test_audit_write_errors_counted(factory):
    inst = factory(YUXI_AUDIT_LOG="/proc/yuxi-no-such-dir/audit.jsonl")
    tid = inst.new_thread()
    r = inst.execute(tid, "echo still served")
    assert r.status_code == 200 and r.json()["output"] == "still served\n"
    m = inst.request(None, "GET", "/metrics").text
    errs = int(re.search(r"^yuxi_audit_write_errors_total (\d+)$", m, re.M).group(1))
    assert errs >= 2, m
    assert re.search(r'^yuxi_build_info\{version="[^"]+"\} 1$', m, re.M)
    inst.answers.clear()	# no audit file to check at teardown: that is the point


def doctor(inst, *args):
    return subprocess.run([build_path("yuxi-sandbox"), "doctor"] + list(args), env=inst.env,
                          capture_output=True, text=True, timeout=120)


def runner_instance(binary=None, **extra):
    """A started instance whose runner is a copy in a directory of its own."""
    d = tempfile.mkdtemp(prefix="yxrunner-")
    runner = os.path.join(d, "yuxi-run")
    shutil.copy(build_path("yuxi-run"), runner)
    env = {"YUXI_RUNNER_PATH": runner, "YUXI_AGENT_PATH": build_path("yuxi-agent")}
    env.update(extra)
    inst = Service(stem="qyxob", overrides=env, binary=binary)
    inst.runner_dir = d
    return inst.start(), runner


def drop_runner_instance(inst):
    try:
        inst.stop()
    finally:
        shutil.rmtree(inst.runner_dir, ignore_errors=True)


def test_doctor_checks_the_profiles_runtime():
    """doctor asks the engine for the runsc of the "untrusted" profile
    (examples/agents.json) that /readyz leaves out; with the runtime set to
    runsc for every sandbox, /readyz asks too."""
    need_runsc()
    inst = Service(stem="qyxob", overrides={"YUXI_SANDBOX_RUNTIME": "runsc"})
    try:
        inst.start()
        checks = {c["name"]: c for c in inst.request(None, "GET", "/readyz").json()["checks"]}
        assert checks["runtime"] == {"name": "runtime", "ok": True,
                                     "detail": "runsc usable"}, checks
        for env in (inst.env, dict(inst.env, YUXI_SANDBOX_RUNTIME="runc")):
            d = subprocess.run([build_path("yuxi-sandbox"), "doctor", "--json"], env=env,
                               capture_output=True, text=True, timeout=120)
            j = {c["check"]: c for c in json.loads(d.stdout)}
            assert j["runtime"]["ok"] and j["runtime"]["detail"] == "runsc: usable", d.stdout
        # no profile names runsc and the runtime is runc: nothing to ask
        d = subprocess.run([build_path("yuxi-sandbox"), "doctor", "--json"],
                           env=dict(inst.env, YUXI_SANDBOX_RUNTIME="runc", YUXI_AGENTS_FILE=""),
                           capture_output=True, text=True, timeout=120)
        j = {c["check"]: c for c in json.loads(d.stdout)}
        assert j["runtime"]["detail"].startswith("runc only"), d.stdout
    finally:
        inst.stop()


def test_runner_missing_readyz_execute_doctor():
    inst, runner = runner_instance()
    try:
        tid = inst.new_thread()
        assert doctor(inst).returncode == 0
        os.unlink(runner)
        r = inst.request(None, "GET", "/readyz")
        print("readyz, runner missing: %d %s" % (r.status_code, r.text))
        assert r.status_code == 503 and r.json()["failing"] == ["runner"], r.text
        assert not any(p in r.text for p in host_paths(inst) + [inst.runner_dir])
        x = inst.execute(tid, "echo hi")
        print("execute, runner missing: %d %s" % (x.status_code, x.text))
        assert x.status_code >= 500 and x.json()["error"]["code"] == "backend_unavailable"
        assert x.json()["error"]["request_id"] == x.headers["X-Request-Id"]
        assert not any(p in x.text for p in host_paths(inst) + [inst.runner_dir]), x.text
        assert runner in inst.read_log(tail=None)	# the operator learns where
        m = inst.request(None, "GET", "/metrics").text
        assert "yuxi_ready 0" in m and 'yuxi_ready_check{check="runner"} 0' in m
        d = doctor(inst)
        print("doctor, runner missing: exit %d\n%s" % (d.returncode, d.stdout))
        assert d.returncode == 1
        failed = [l.split()[1] for l in d.stdout.splitlines() if l.startswith("FAIL")]
        assert failed == ["runner"], d.stdout
        j = json.loads(doctor(inst, "--json").stdout)
        assert [c["check"] for c in j if not c["ok"]] == ["runner"]
        # back in place: ready again
        shutil.copy(build_path("yuxi-run"), runner)
        assert inst.request(None, "GET", "/readyz").status_code == 200
        assert inst.execute(tid, "echo hi").json()["output"] == "hi\n"
    finally:
        drop_runner_instance(inst)


@pytest.mark.skipif(not os.access(CONTROL, os.X_OK), reason="control daemon not built")
@pytest.mark.parametrize("off,leaks", [("enginemsg", False), ("enginemsg,errmask", True)])
def test_runner_missing_control(off, leaks):
    inst, runner = runner_instance(binary=CONTROL, YX_CONTROL_OFF=off)
    try:
        tid = inst.new_thread()
        os.unlink(runner)
        x = inst.execute(tid, "echo hi")
        print("control %s, runner missing: %d %s" % (off, x.status_code, x.text))
        assert (inst.runner_dir in x.text) == leaks, x.text
    finally:
        drop_runner_instance(inst)
