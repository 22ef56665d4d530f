# SPDX-License-Identifier: MIT
"""Group 7: confinement, checked from inside the container (docs/security.md).

One probe script runs as an ordinary command through POST /api/execute and
reports what the command can see: effective and bounding capabilities,
no_new_privs, the seccomp mode, the uid, whether the root filesystem is
mounted read-only, the /tmp tmpfs size and whether writing past it fails,
network interfaces and routes, any container-engine socket, the open file
descriptors of a command (`ls -l /proc/self/fd`: only 0, 1, 2 and ls's own
directory handle) and whether any skill mount is writable.

Controls (each check must fail there):
- a second service with the weakening YUXI_* settings:
  YUXI_SANDBOX_READONLY_ROOTFS=0, YUXI_SANDBOX_NETWORK=bridge (only the
  presence of an interface is checked; nothing is sent),
  YUXI_SANDBOX_TMP_SIZE=256m, YUXI_SANDBOX_SECURITY_OPTS=seccomp=unconfined;
- a container made directly with a weakened spec (root user with the
  engine's default capabilities, no no-new-privileges, the engine socket
  bind-mounted read-only, a writable skill copy), probed with docker exec;
- for descriptors, the same probe in a shell holding an extra descriptor.

What a command can reach beyond its box (issue 10):
- the engine's log: a command opens the init's stdout and stderr
  (/proc/1/fd/1, /proc/1/fd/2: same uid) and writes 100 MB to each; the
  bytes that reach the container's directory under the engine's data root
  (its json log, if any) are measured. Control: the control daemon with
  YX_CONTROL_OFF=enginelog (today's engine-default json-file log) grows by
  the whole flood; the production daemon started afterwards on the same
  table recreates that container (its settings fingerprint differs).
- host paths in answers: an engine error (the runner's bind source does
  not exist) must not show the host path in the API reply (both drivers);
  control: YX_CONTROL_OFF=enginemsg,errmask passes the engine's text through
  (with enginemsg alone the HTTP layer still withholds a 5xx text).
  `cat /proc/self/mountinfo` prints the host source of every bind mount:
  the output must not name the runner, the agent, the saves tree or the
  skills root; control: YX_CONTROL_OFF=mask.

Under gVisor (YUXI_TEST_RUNTIME=runsc) the same protections are checked
where gVisor puts them: the kernel inside must be gVisor's (dmesg) and the
container's runtime runsc; the command's /proc/self/status is gVisor's own
view (no NoNewPrivs line, Seccomp 0), so no_new_privs and seccomp are read on
the host from the sandbox process (the container's pid: gVisor's Sentry),
as tests/driver/test_engine.c check_hardening_runsc() does. The weak
container is made with the same runtime. Controls whose weakening means
nothing under gVisor are skipped with the reason, after checking that it
indeed changed nothing: seccomp=unconfined (runsc applies no OCI seccomp
profile; the Sentry's own filter stays), network bridge (the runtime entry
forces --network=none), no no-new-privileges (the Sentry always runs with
it), the unmasked mountinfo (gVisor shows no bind's host source).
"""
import os
import secrets
import shutil
import subprocess
import tempfile
import time

import pytest

import prooffix as P
from prooffix import stats

G = 7
TMP_MB = 64

PROBE = r"""
st=/proc/self/status
echo "kernel=$(dmesg 2>/dev/null | head -1)"
echo "capeff=$(awk '/^CapEff:/{print $2}' $st)"
echo "capbnd=$(awk '/^CapBnd:/{print $2}' $st)"
echo "nnp=$(awk '/^NoNewPrivs:/{print $2}' $st)"
echo "seccomp=$(awk '/^Seccomp:/{print $2}' $st)"
echo "uid=$(id -u)"
echo "rootopts=$(awk '$2=="/"{print $4}' /proc/mounts)"
echo "tmpopts=$(awk '$2=="/tmp"{print $4}' /proc/mounts)"
dd if=/dev/zero of=/tmp/yxfill bs=1048576 count=%(fill)d 2>/dev/null
echo "tmpfill_kb=$(du -k /tmp/yxfill | cut -f1)"
rm -f /tmp/yxfill
echo "ifaces=$(ls /sys/class/net | tr '\n' ' ')"
echo "routes=$(tail -n +2 /proc/net/route | wc -l)"
for s in /var/run/docker.sock /run/docker.sock /run/containerd/containerd.sock \
    /var/run/containerd/containerd.sock /run/podman/podman.sock; do
	[ -e "$s" ] && echo "enginesock=$s"
done
echo "dockerhost=${DOCKER_HOST:-}"
ls -l /proc/self/fd | sed -n 's/^.* \([0-9][0-9]*\) -> \(.*\)$/fd=\1 \2/p'
for d in /home/yuxi/skills/*; do
	[ -d "$d" ] || continue
	if touch "$d/.yxprobe" 2>/dev/null; then echo "skillw=$d"; rm -f "$d/.yxprobe"; fi
done
echo "skills=$(ls /home/yuxi/skills | tr '\n' ' ')"
echo probe-done
"""


def probe_script():
    return PROBE % {"fill": TMP_MB + 8}


def parse(out):
    kv = {"fd": [], "enginesock": [], "skillw": []}
    for line in out.splitlines():
        k, sep, v = line.partition("=")
        if not sep:
            continue
        if k in kv and isinstance(kv[k], list):
            kv[k].append(v)
        else:
            kv[k] = v
    assert "probe-done" in out, out
    return kv


def host_view(kv, cid):
    """Under runsc: add what the host sees of the sandbox process of
    container cid (NoNewPrivs, Seccomp of the Sentry) and the container's
    runtime to kv."""
    pid = docker_out("inspect", "-f", "{{.State.Pid}}", cid)
    kv["runtime"] = docker_out("inspect", "-f", "{{.HostConfig.Runtime}}", cid)
    with open("/proc/%s/status" % pid) as f:
        for line in f:
            k, _, v = line.partition(":")
            if k in ("NoNewPrivs", "Seccomp"):
                kv["host_" + k.lower()] = v.strip()
    return kv


def verdict(kv):
    """{check: True when confined}."""
    def fds_ok():
        for e in kv["fd"]:
            num, _, target = e.partition(" ")
            if num in ("0", "1", "2"):
                continue
            if target.startswith("/proc/") and target.endswith("/fd"):
                continue  # ls's own handle on the directory it lists
            return False
        return True
    opts = kv.get("rootopts", "").split(",")
    tmpopts = kv.get("tmpopts", "")
    size_kb = None
    for o in tmpopts.split(","):
        if o.startswith("size="):
            v = o[5:]
            mult = {"k": 1, "m": 1024, "g": 1024 * 1024}.get(v[-1:].lower(), None)
            size_kb = int(v[:-1]) * mult if mult else int(v) // 1024
    fill = int(kv.get("tmpfill_kb") or 0)
    v = {
        "capabilities": int(kv.get("capeff", "1"), 16) == 0 and int(kv.get("capbnd", "1"), 16) == 0,
        "no_new_privs": kv.get("nnp") == "1",
        "seccomp": kv.get("seccomp") == "2",
        "non_root": kv.get("uid") not in (None, "", "0"),
        "readonly_root": "ro" in opts,
        "tmpfs_size": size_kb is not None and size_kb <= TMP_MB * 1024
        and fill <= TMP_MB * 1024,
        "no_network": kv.get("ifaces", "").split() == ["lo"] and kv.get("routes") == "0",
        "no_engine_socket": not kv["enginesock"] and not kv.get("dockerhost"),
        "no_inherited_fds": fds_ok(),
        "skills_readonly": not kv["skillw"],
    }
    if P.RUNSC:
        # gVisor's kernel inside; the filter and the flag on its host process
        v["gvisor"] = "Starting gVisor" in kv.get("kernel", "") and kv.get("runtime") == "runsc"
        v["no_new_privs"] = kv.get("host_nonewprivs") == "1"
        v["seccomp"] = kv.get("host_seccomp") == "2"
    return v


pytestmark = pytest.mark.skipif(not P.image_present(P.TEST_IMAGE),
                                reason="image %s not built" % P.TEST_IMAGE)


def service(**weak):
    env = {"YUXI_COMMAND_PATH_POLICY": "off", "YUXI_SANDBOX_TMP_SIZE": "%dm" % TMP_MB}
    env.update(weak)
    return P.ProofService("prod", "dev", **env).start()


def test_confined_prod():
    svc = service()
    try:
        tid = svc.new_thread()
        kv = parse(svc.run(tid, probe_script(), timeout=60)["output"])
        if P.RUNSC:
            host_view(kv, container_of(svc, tid))
        v = verdict(kv)
        print("prod probe:", kv, v)
        for k, ok in v.items():
            stats.case(G, k + " " + str({kk: kv.get(kk) for kk in kv if kk[:3] == k[:3]}),
                       escapes=not ok)
        # the skills the API shows are the ones mounted, and they exist
        assert kv["skills"].split(), kv
        assert all(v.values()), {k: ok for k, ok in v.items() if not ok}
    finally:
        svc.stop()


def test_control_weak_settings():
    svc = service(YUXI_SANDBOX_READONLY_ROOTFS="0", YUXI_SANDBOX_NETWORK="bridge",
                  YUXI_SANDBOX_TMP_SIZE="256m",
                  YUXI_SANDBOX_SECURITY_OPTS="seccomp=unconfined")
    try:
        tid = svc.new_thread()
        kv = parse(svc.run(tid, probe_script(), timeout=60)["output"])
        checks = ["readonly_root", "no_network", "tmpfs_size", "seccomp"]
        if P.RUNSC:
            host_view(kv, container_of(svc, tid))
        v = verdict(kv)
        print("weak-settings probe:", kv, v)
        if P.RUNSC:
            # the weakening means nothing under gVisor: check it changed nothing
            for k, why in (("seccomp", "runsc applies no OCI seccomp profile; the Sentry's "
                            "own filter stays (host Seccomp %s)" % kv.get("host_seccomp")),
                           ("no_network", "the runsc runtime entry forces --network=none "
                            "(interfaces: %s)" % kv.get("ifaces"))):
                assert v[k], (k, kv)
                checks.remove(k)
                print("runsc: control of %s skipped: %s" % (k, why))
        for k in checks:
            stats.control(G, not v[k], "YUXI setting weakens " + k)
        assert not any(v[k] for k in checks), v
    finally:
        svc.stop()


def test_control_weak_container():
    name = "yxpf%dw-weak" % os.getpid()
    skills = tempfile.mkdtemp(prefix="yxpf-skills-")
    os.makedirs(os.path.join(skills, "rwskill"))
    os.chmod(os.path.join(skills, "rwskill"), 0o777)
    sock = "/var/run/docker.sock"
    cmd = ["docker", "run", "-d", "--name", name, "--network", "none", "--user", "0",
           "--tmpfs", "/tmp:size=%dm" % TMP_MB,
           "-v", "%s/rwskill:/home/yuxi/skills/rwskill" % skills,
           P.TEST_IMAGE, "tail", "-f", "/dev/null"]
    if os.path.exists(sock):
        cmd[3:3] = ["-v", "%s:/var/run/docker.sock:ro" % sock]
    if P.RUNSC:
        cmd[3:3] = ["--runtime", "runsc"]
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr
        r = subprocess.run(["docker", "exec", name, "sh", "-c", probe_script()],
                           capture_output=True, text=True, timeout=120)
        kv = parse(r.stdout)
        if P.RUNSC:
            host_view(kv, name)
        v = verdict(kv)
        print("weak-container probe:", kv, v)
        checks = ["capabilities", "no_new_privs", "non_root", "skills_readonly"]
        if P.RUNSC:
            # no no-new-privileges in the spec: the Sentry runs with it anyway
            assert v["no_new_privs"] and v["gvisor"], kv
            checks.remove("no_new_privs")
            print("runsc: control of no_new_privs skipped: the gVisor sandbox process "
                  "always runs with no_new_privs (host NoNewPrivs %s without the flag)"
                  % kv.get("host_nonewprivs"))
        if os.path.exists(sock):
            checks.append("no_engine_socket")
        for k in checks:
            stats.control(G, not v[k], "weak container breaks " + k)
        assert not any(v[k] for k in checks), v
        # descriptors: a shell that holds one more must be caught
        r = subprocess.run(["docker", "exec", name, "sh", "-c",
                            "exec 7</dev/null; " + probe_script()],
                           capture_output=True, text=True, timeout=120)
        v = verdict(parse(r.stdout))
        stats.control(G, not v["no_inherited_fds"], "extra descriptor caught")
        assert not v["no_inherited_fds"]
    finally:
        subprocess.run(["docker", "rm", "-f", name], capture_output=True, timeout=120)
        shutil.rmtree(skills, ignore_errors=True)


# ------------------------------------------------- what reaches the engine
FLOOD_MB = 100   # per descriptor
FLOOD = ("for fd in 1 2; do head -c %d /dev/zero | tr '\\0' x >/proc/1/fd/$fd "
         "|| echo failed-$fd; done; echo flooded") % (FLOOD_MB * 1000 * 1000)
LOG_SLACK = 64 * 1024   # config files the engine may rewrite meanwhile


def docker_out(*args):
    r = subprocess.run(["docker"] + list(args), capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return r.stdout.strip()


def container_of(svc, tid):
    rows = svc.containers(thread=tid)
    assert len(rows) == 1, rows
    return rows[0][0]


def engine_dir_bytes(cid):
    """Bytes in the regular files of the container's engine directory."""
    d = os.path.join(docker_out("info", "-f", "{{.DockerRootDir}}"), "containers", cid)
    total = 0
    for root, _, files in os.walk(d):
        for f in files:
            try:
                st = os.lstat(os.path.join(root, f))
            except OSError:
                continue
            if not os.path.islink(os.path.join(root, f)):
                total += st.st_size
    return total


def dockerd_cpu():
    """CPU seconds used so far by the engine (None when not visible)."""
    try:
        pid = subprocess.run(["pidof", "dockerd"], capture_output=True, text=True,
                             timeout=10).stdout.split()[0]
        with open("/proc/%s/stat" % pid) as f:
            v = f.read().rsplit(")", 1)[1].split()
        return (int(v[11]) + int(v[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError, subprocess.TimeoutExpired):
        return None


def flood(svc, tid, cid):
    """Run the flood in tid's sandbox; (bytes the engine dir grew, seconds,
    engine CPU seconds or None)."""
    before, cpu0, t0 = engine_dir_bytes(cid), dockerd_cpu(), time.monotonic()
    r = svc.run(tid, FLOOD, timeout=120)
    secs, cpu1 = time.monotonic() - t0, dockerd_cpu()
    assert r["output"] == "flooded\n" and r["exit_code"] == 0 and not r["timed_out"], r
    cpu = None if cpu0 is None or cpu1 is None else cpu1 - cpu0
    return engine_dir_bytes(cid) - before, secs, cpu


def flood_new_box(svc, fmt):
    """A new thread's box, its log configuration (docker inspect -f fmt) read,
    then flooded: (tid, container id, log configuration, grew, secs, cpu)."""
    tid = svc.new_thread()
    svc.run(tid, "true")
    cid = container_of(svc, tid)
    logcfg = docker_out("inspect", "-f", fmt, cid)
    grew, secs, cpu = flood(svc, tid, cid)
    return tid, cid, logcfg, grew, secs, cpu


def test_engine_log_prod():
    svc = service()
    try:
        tid, cid, logcfg, grew, secs, cpu = flood_new_box(
            svc, "{{.HostConfig.LogConfig.Type}}|{{.LogPath}}")
        print("engine log, prod: %s; %d MB to /proc/1/fd/1 and /proc/1/fd/2 in %.1f s: "
              "engine directory grew %d bytes; engine CPU %s s"
              % (logcfg, 2 * FLOOD_MB, secs, grew, "%.2f" % cpu if cpu is not None else "?"))
        stats.measure(G, "engine_log_bytes_prod", grew)
        stats.measure(G, "engine_log_flood_s_prod", round(secs, 2))
        if cpu is not None:
            stats.measure(G, "engine_cpu_s_prod", round(cpu, 2))
        ok = logcfg == "none|" and grew < LOG_SLACK
        stats.case(G, "engine log: %s grew %d" % (logcfg, grew), escapes=not ok)
        # the init is not blocked: the box still runs commands
        ok2 = svc.run(tid, "echo alive")["output"] == "alive\n"
        stats.case(G, "box alive after the flood", escapes=not ok2)
        assert ok and ok2, (logcfg, grew)
    finally:
        svc.stop()


def test_control_engine_log_then_recreated():
    svc = P.ProofService("control", "dev", YUXI_COMMAND_PATH_POLICY="off",
                         YUXI_SANDBOX_TMP_SIZE="%dm" % TMP_MB,
                         YX_CONTROL_OFF="enginelog").start()
    try:
        tid, old, logcfg, grew, secs, cpu = flood_new_box(svc, "{{.HostConfig.LogConfig.Type}}")
        print("engine log, control (%s): %d MB in %.1f s: engine directory grew %d bytes; "
              "engine CPU %s s" % (logcfg, 2 * FLOOD_MB, secs, grew,
                                    "%.2f" % cpu if cpu is not None else "?"))
        stats.measure(G, "engine_log_bytes_control", grew)
        if cpu is not None:
            stats.measure(G, "engine_cpu_s_control", round(cpu, 2))
        caught = grew >= FLOOD_MB * 1000 * 1000
        stats.control(G, caught, "engine-default log grows with the flood (%d)" % grew)
        # the production daemon on the same table: that container is recreated
        svc.halt()
        svc.binary = P.BINARIES["prod"]
        svc.env.pop("YX_CONTROL_OFF", None)
        svc.start()
        svc.run(tid, "true")
        new = container_of(svc, tid)
        newcfg = docker_out("inspect", "-f", "{{.HostConfig.LogConfig.Type}}", new)
        # a created sandbox is replaced in the acquire; a pool box
        # (the default pool) is not adopted after the restart and the reaper
        # removes it a moment later (docs/design.md §2 "Pool")
        gone = P.yxsvc.wait_for(
            lambda: subprocess.run(["docker", "inspect", old], capture_output=True,
                                   timeout=60).returncode != 0, 60)
        print("production restart: container %s -> %s (log %s), old removed: %s"
              % (old[:12], new[:12], newcfg, gone))
        ok = new != old and newcfg == "none" and gone
        stats.case(G, "container with an engine log recreated", escapes=not ok)
        assert caught and ok, (grew, old, new, newcfg, gone)
    finally:
        svc.stop()


# ------------------------------------------------------- host paths leaking
def missing_runner_service(kind, driver, **extra):
    secret = "yxhostsecret%s" % secrets.token_hex(4)
    env = {"YUXI_COMMAND_PATH_POLICY": "off", "YUXI_DOCKER_DRIVER": driver}
    env.update(extra)
    svc = P.ProofService(kind, "dev", **env)
    runner = os.path.join(svc.base, secret, "yuxi-run")
    svc.env["YUXI_RUNNER_PATH"] = runner
    svc.env["YUXI_AGENT_PATH"] = os.path.join(svc.base, secret, "yuxi-agent")
    return svc.start(), secret, runner


@pytest.mark.parametrize("driver", ["api", "cli"])
def test_engine_error_no_host_path(driver):
    svc, secret, runner = missing_runner_service("prod", driver)
    try:
        tid = svc.new_thread()
        r = svc.request("alice", "POST", "/api/execute",
                        json={"thread_id": tid, "command": "echo hi"})
        log = svc.read_log(tail=None)
        print("%s driver, runner missing: %d %s" % (driver, r.status_code, r.text))
        leak = secret in r.text or svc.base in r.text or "bind source" in r.text
        stats.case(G, "engine error via %s: %d %s" % (driver, r.status_code, r.text[:200]),
                   outside_metadata=leak)
        # the operator still learns why, from the server log
        assert r.status_code == 503 and not leak, r.text
        assert runner in log, log[-2000:]
    finally:
        svc.stop()
    ctl, secret, runner = missing_runner_service("control", driver,
                                                 YX_CONTROL_OFF="enginemsg,errmask")
    try:
        tid = ctl.new_thread()
        r = ctl.request("alice", "POST", "/api/execute",
                        json={"thread_id": tid, "command": "echo hi"})
        print("control (%s driver, enginemsg,errmask): %d %s" % (driver, r.status_code, r.text))
        assert stats.control(G, secret in r.text, "engine text with the host path (%s)" % driver)
    finally:
        ctl.stop()


def mount_sources(svc):
    """Host paths this service bind-mounts (as configured)."""
    return {
        "runner": svc.env["YUXI_RUNNER_PATH"],
        "agent": svc.env["YUXI_AGENT_PATH"],
        "saves": svc.saves,
        "skills": svc.env["YUXI_SKILLS_DIR"],
    }


def mountinfo_service(kind, **extra):
    env = {"YUXI_COMMAND_PATH_POLICY": "off",
           "YUXI_RUNNER_PATH": os.path.join(P.TOP_BUILDDIR, "yuxi-run"),
           "YUXI_AGENT_PATH": os.path.join(P.TOP_BUILDDIR, "yuxi-agent")}
    env.update(extra)
    return P.ProofService(kind, "dev", **env).start()


def test_mountinfo_masked():
    svc = mountinfo_service("prod")
    try:
        tid = svc.new_thread()
        out = svc.run(tid, "cat /proc/self/mountinfo")["output"]
        srcs = mount_sources(svc)
        shown = [l.split()[3] + " " + l.split()[4] for l in out.splitlines()
                 if len(l.split()) > 4 and l.split()[4].startswith(("/home/yuxi", "/opt/yuxi"))]
        print("mountinfo, prod: root and mount point of our binds:", shown)
        for k, v in srcs.items():
            leak = v in out
            stats.case(G, "mountinfo names the %s host path %s" % (k, v), outside_metadata=leak)
            assert not leak, (k, v, out)
        # the root of each bind: the mount point (masked), or "/" under
        # gVisor, whose mountinfo shows no bind's host source
        for t in ("/opt/yuxi/bin/yuxi-run", "/opt/yuxi/bin/yuxi-agent"):
            assert "%s %s " % ("/" if P.RUNSC else t, t) in out, out
    finally:
        svc.stop()
    ctl = mountinfo_service("control", YX_CONTROL_OFF="mask")
    try:
        tid = ctl.new_thread()
        out = ctl.run(tid, "cat /proc/self/mountinfo")["output"]
        srcs = mount_sources(ctl)
        if P.RUNSC:
            # nothing to unmask: check the unmasked output names no host path
            assert not any(v in out for v in srcs.values()), out
            pytest.skip("runsc: gVisor's mountinfo names no bind's host source (root / "
                        "for every bind), so the unmasked control cannot leak there")
        for k in ("runner", "agent", "saves"):
            stats.control(G, srcs[k] in out, "unmasked mountinfo names the %s" % k)
        assert all(srcs[k] in out for k in ("runner", "agent", "saves")), out
    finally:
        ctl.stop()
