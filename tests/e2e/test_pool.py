# SPDX-License-Identifier: MIT
"""Pre-started sandboxes (YUXI_POOL_SIZE, docs/design.md §2 "Pool") through
the real stack: a new thread's first command takes a pool box, which holds
exactly the thread's files and visible skills (read-only) and the same
hardening as a created box; the box cannot unmount or move what it got; 50
parallel first requests with a pool of 8 all succeed in 50 distinct boxes,
each seeing only its own marker; the pool refills; removing a thread removes
its box and the box's host mounts."""
import concurrent.futures
import json
import os
import secrets
import subprocess
import time

import pytest

from conftest import engine_up, wait_for
from yxsvc import mounts_below

pytestmark = [
    pytest.mark.skipif(not engine_up(), reason="no docker engine or test image"),
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root (mount propagation)"),
]


def pooled(inst):
    return [s for s in inst.sandboxes().values() if s["state"] == "pooled"]


def pool_full(inst, n, timeout=300):
    return wait_for(lambda: len(pooled(inst)) >= n, timeout, step=0.1)


def start_pool(factory, size, **ov):
    inst = factory(YUXI_POOL_SIZE=str(size), YUXI_SANDBOX_UID_RANGE="off", **ov)
    assert pool_full(inst, size), inst.read_log()
    return inst


def run(inst, tid, cmd):
    r = inst.execute(tid, cmd)
    assert r.status_code == 200, r.text
    return r.json()


def test_first_command_takes_a_pool_box(factory):
    inst = start_pool(factory, 2)
    boxes = {s["container"] for s in pooled(inst)}
    tid = inst.new_thread()
    marker = secrets.token_hex(8)
    with open(os.path.join(inst.saves, "threads", tid, "user-data", "workspace",
                           "marker"), "w") as f:
        f.write(marker)
    j = run(inst, tid, "cat /home/yuxi/user-data/workspace/marker; echo; id -u; "
                       "ls /home/yuxi/user-data")
    assert j["exit_code"] == 0, j
    lines = j["output"].split("\n")
    assert lines[0] == marker, j
    slot = inst.sandboxes()[tid]
    assert slot["container"] in boxes, (slot, boxes)
    # written inside, seen on the host, owned by the sandbox user
    j = run(inst, tid, "echo from-box > /home/yuxi/user-data/workspace/out")
    p = os.path.join(inst.saves, "threads", tid, "user-data", "workspace", "out")
    assert open(p).read() == "from-box\n"
    # the pool refills: a new box replaces the one taken
    assert pool_full(inst, 2)
    assert boxes - {slot["container"]} <= {s["container"] for s in pooled(inst)}
    m = inst.request(None, "GET", "/metrics").text
    assert 'yuxi_sandbox_acquires_total{outcome="pooled"} 1' in m, m


def test_pool_box_cannot_touch_its_mounts(factory):
    inst = start_pool(factory, 1, YUXI_COMMAND_PATH_POLICY="off")
    tid = inst.new_thread()
    j = run(inst, tid,
            "umount /home/yuxi/user-data 2>&1; echo umount=$?; "
            "mount -t tmpfs none /home/yuxi/user-data 2>&1; echo mount=$?; "
            "mount --move /home/yuxi/user-data /tmp/x 2>&1; echo move=$?; "
            "touch /home/yuxi/skills/x 2>&1; echo skills=$?; "
            "grep -c CapEff:.0000000000000000 /proc/self/status; "
            "grep NoNewPrivs /proc/self/status; grep Seccomp: /proc/self/status; "
            "touch /usr/x 2>&1; echo root=$?; id -u; "
            "cat /sys/class/net/*/operstate 2>/dev/null | tr '\\n' ' '; ls /sys/class/net")
    out = j["output"]
    for op in ("umount", "mount", "move", "skills", "root"):
        assert "%s=0" % op not in out, out
    assert "NoNewPrivs:\t1" in out and "Seccomp:\t2" in out, out
    assert "\n1\n" in out, out           # CapEff all zero
    assert "\n1000\n" in out, out        # the sandbox user, not root
    assert out.rstrip().endswith("lo"), out  # --network none: loopback only
    assert inst.sandboxes()[tid]["container"].split("-")[-2] == "pool", inst.sandboxes()[tid]


def test_fifty_parallel_first_requests_pool_of_eight(factory):
    # with the uid range (the default): every box and thread its own uid
    inst = factory(YUXI_POOL_SIZE="8", YUXI_SANDBOX_MAX_REPLICAS="80", YUXI_WORKERS="8")
    assert pool_full(inst, 8), inst.read_log()
    tids = [inst.new_thread() for _ in range(50)]
    marks = {}
    for t in tids:
        marks[t] = secrets.token_hex(8)
        with open(os.path.join(inst.saves, "threads", t, "user-data", "workspace",
                               "marker"), "w") as f:
            f.write(marks[t])

    def first(t):
        r = inst.execute(t, "ls /home/yuxi/user-data/workspace; "
                            "cat /home/yuxi/user-data/workspace/marker; echo; hostname; "
                            "id -u")
        return t, r.status_code, r.json() if r.status_code == 200 else r.text

    t0 = time.time()
    with concurrent.futures.ThreadPoolExecutor(50) as pool:
        res = list(pool.map(first, tids))
    took = time.time() - t0
    bad = [(t, c, j) for t, c, j in res if c != 200 or j["exit_code"] != 0]
    assert not bad, bad[:3]
    hosts, uids = set(), set()
    for t, _, j in res:
        lines = j["output"].split("\n")
        assert lines[0] == "marker" and lines[1] == marks[t], (t, j["output"])
        hosts.add(lines[2])
        uids.add(lines[3])
    assert len(hosts) == 50, len(hosts)
    assert len(uids) == 50, len(uids)   # no uid runs two sandboxes
    slots = inst.sandboxes()
    conts = {slots[t]["container"] for t in tids}
    assert len(conts) == 50
    npool = sum(1 for t in tids if "-pool-" in slots[t]["container"])
    print("50 parallel first requests: %.1f s, %d took a pool box, %d uids"
          % (took, npool, len(uids)))
    assert npool >= 8, npool
    assert pool_full(inst, 8)


def test_removed_thread_removes_its_box_and_mounts(factory):
    inst = start_pool(factory, 1)
    tid = inst.new_thread()
    run(inst, tid, "true")
    box = inst.sandboxes()[tid]["container"]
    assert "-pool-" in box
    name = box[len(inst.prefix):]
    assert mounts_below(os.path.join(inst.saves, "pool", name))
    r = inst.request("alice", "DELETE", "/api/threads/" + tid)
    assert r.status_code in (200, 204), r.text
    assert wait_for(lambda: box not in [c[1] for c in inst.containers()], 30)
    assert not os.path.exists(os.path.join(inst.saves, "pool", name))
    assert not mounts_below(os.path.join(inst.saves, "pool", name))
    assert pool_full(inst, 1)


def test_only_the_default_profile_takes_a_pool_box(factory, tmp_path):
    """The pool's boxes carry the default profile's settings (their key):
    a thread whose agent selects another profile - other limits, a
    read-only workspace, network - takes the create path, never a box;
    a thread of the default profile in the same service takes one."""
    with open(os.path.join(os.environ.get("top_srcdir", "."), "examples",
                           "agents.json")) as f:
        ag = json.load(f)
    ag["profiles"].append({"id": "small", "memory": "300m"})
    ag["agents"].append({"id": "small", "profile": "small"})
    af = tmp_path / "agents.json"
    af.write_text(json.dumps(ag))
    hosts = tmp_path / "hosts"
    hosts.write_text("127.0.0.1 allowed.test\n")
    inst = start_pool(factory, 2, YUXI_AGENTS_FILE=str(af),
                      YUXI_EGRESS_HOSTS=str(hosts))
    boxes = {s["container"] for s in pooled(inst)}
    other = {}
    for agent in ("small", "reviewer", "fetcher"):
        tid = inst.new_thread(agent_id=agent)
        j = run(inst, tid, "echo hi")
        assert j["exit_code"] == 0 and j["output"] == "hi\n", (agent, j)
        other[agent] = inst.sandboxes()[tid]["container"]
    for agent, c in other.items():
        assert "-pool-" not in c and c not in boxes, (agent, c, boxes)
    assert {s["container"] for s in pooled(inst)} == boxes, "a box was taken"
    tid = inst.new_thread(agent_id="coder")
    run(inst, tid, "true")
    assert inst.sandboxes()[tid]["container"] in boxes
    m = inst.request(None, "GET", "/metrics").text
    assert 'yuxi_sandbox_acquires_total{outcome="pooled"} 1' in m, m


def thread_uid(inst, tid):
    with open(os.path.join(inst.saves, "threads", tid, "thread.json")) as f:
        return json.load(f)["uid"]


def test_boxes_of_their_own_uid_with_a_uid_range(factory):
    """With YUXI_SANDBOX_UID_RANGE (the default) each box claims a uid of
    the range when it is made; the thread keeps its own, which owns its
    files on disk; the box sees them as its own through an idmapped mount,
    and what it writes lands as the thread's. Two threads, two uids; the
    claim goes with the box."""
    inst = factory(YUXI_POOL_SIZE="2")
    assert pool_full(inst, 2), inst.read_log()
    seen = {}
    for _ in range(2):
        tid = inst.new_thread()
        tu = thread_uid(inst, tid)
        ws = os.path.join(inst.saves, "threads", tid, "user-data", "workspace")
        with open(os.path.join(ws, "marker"), "w") as f:
            f.write(tid)
        os.chown(os.path.join(ws, "marker"), tu, tu)
        j = run(inst, tid, "id -u; id -g; whoami; stat -c %u:%g "
                           "/home/yuxi/user-data/workspace/marker; "
                           "cat /home/yuxi/user-data/workspace/marker; echo; "
                           "echo x >> /home/yuxi/user-data/workspace/marker && "
                           "mkdir /home/yuxi/user-data/workspace/d && "
                           "echo in > /home/yuxi/user-data/workspace/d/f && echo wrote")
        assert j["exit_code"] == 0, j
        lines = j["output"].split("\n")
        box = inst.sandboxes()[tid]["container"]
        assert "-pool-" in box, box
        bu = int(lines[0])
        assert bu != tu and bu >= 2000000000, (bu, tu)
        assert lines[1] == str(bu) and lines[2] == "yuxi", lines
        assert lines[3] == "%d:%d" % (bu, bu), lines   # the thread's file, as the box's
        assert lines[4] == tid and lines[5] == "wrote", lines
        for p in ("marker", "d", "d/f"):
            st = os.stat(os.path.join(ws, p))
            assert (st.st_uid, st.st_gid) == (tu, tu), (p, st.st_uid, tu)
        claim = os.readlink(os.path.join(inst.saves, "uids", str(bu)))
        assert claim == box[len(inst.prefix):] + "/" + tid, claim
        # later commands reach the same box's agent
        j = run(inst, tid, "id -u; hostname")
        assert j["output"].split("\n")[0] == str(bu), j
        seen[tid] = (bu, box)
    assert len({u for u, _ in seen.values()}) == 2, seen
    for tid, (bu, box) in seen.items():
        r = inst.request("alice", "DELETE", "/api/threads/" + tid)
        assert r.status_code in (200, 204), r.text
        claim = os.path.join(inst.saves, "uids", str(bu))
        assert wait_for(lambda: not os.path.lexists(claim) or
                        not os.readlink(claim).startswith(box[len(inst.prefix):]),
                        30), os.readlink(claim)


def test_vanished_box_gives_way_to_a_sandbox_of_the_threads_uid(factory):
    """A box serving a thread is removed behind the service's back: the
    next command builds an ordinary sandbox, which runs as the thread's own
    uid (not the gone box's, whose uid is freed), with the thread's files."""
    inst = factory(YUXI_POOL_SIZE="1")
    assert pool_full(inst, 1), inst.read_log()
    tid = inst.new_thread()
    tu = thread_uid(inst, tid)
    j = run(inst, tid, "id -u; echo kept > /home/yuxi/user-data/workspace/f")
    bu = int(j["output"].split("\n")[0])
    box = inst.sandboxes()[tid]["container"]
    assert "-pool-" in box and bu != tu, (box, bu, tu)
    subprocess.run(["docker", "rm", "-f", box], check=True, capture_output=True)
    j = run(inst, tid, "id -u; cat /home/yuxi/user-data/workspace/f; "
                       "echo again >> /home/yuxi/user-data/workspace/f && echo ok")
    lines = j["output"].split("\n")
    assert lines[0] == str(tu) and lines[1] == "kept" and lines[2] == "ok", j
    now = inst.sandboxes()[tid]["container"]
    assert "-pool-" not in now, now
    claim = os.path.join(inst.saves, "uids", str(bu))
    assert not os.path.lexists(claim) or \
        not os.readlink(claim).startswith(box[len(inst.prefix):]), os.readlink(claim)
