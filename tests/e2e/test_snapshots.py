# SPDX-License-Identifier: MIT
"""Snapshots, restore and fork through the real stack (docs/api.md
"Snapshots"): a thread on a btrfs disk image (YUXI_THREAD_DISK_FS=btrfs)
is snapshotted, changed and restored byte for byte (every file's hash,
modes, symlinks); a fork starts with the snapshot's files and diverges on
its own; another user gets 404 on every snapshot route and cannot fork
another user's snapshot; the per-thread maximum; snapshots count against
the thread's quota; a thread's snapshots go with it; a thread without a
btrfs image answers 409 not_supported."""
import os

import pytest

from conftest import engine_up, wait_for

pytestmark = [
    pytest.mark.skipif(not engine_up(), reason="no docker engine or test image"),
    pytest.mark.skipif(os.geteuid() != 0 or not os.path.exists("/dev/loop-control")
                       or not os.path.exists("/sbin/mkfs.btrfs"),
                       reason="needs root, loop devices and mkfs.btrfs"),
]

BTRFS = dict(YUXI_THREAD_DISK_QUOTA="256m", YUXI_THREAD_DISK_FS="btrfs",
             YUXI_THREAD_SNAPSHOTS_MAX=3)

# every file's type, mode, size, hash or link target, sorted
TREE = ("cd /home/yuxi/user-data && find . -mindepth 1 | LC_ALL=C sort | "
        "while read -r p; do if [ -L \"$p\" ]; then echo \"L $p $(readlink \"$p\")\"; "
        "elif [ -d \"$p\" ]; then echo \"D $p $(stat -c %a \"$p\")\"; "
        "else echo \"F $p $(stat -c %a \"$p\") $(md5sum < \"$p\")\"; fi; done")

SEED = ("cd /home/yuxi/user-data/workspace && mkdir -p d/e && echo one > a && "
        "printf 'two\\n' > d/b && chmod 600 d/b && ln -s d/b l && "
        "head -c 100000 /dev/urandom > d/e/bin && chmod 751 d/e")


def run(inst, tid, cmd, who="alice"):
    r = inst.execute(tid, cmd, who=who)
    assert r.status_code == 200, r.text
    return r.json()


def snap(inst, tid, name=None, who="alice"):
    body = {} if name is None else {"name": name}
    return inst.request(who, "POST", "/api/threads/%s/snapshots" % tid, json=body)


def test_snapshot_change_restore_is_byte_identical(factory):
    inst = factory(**BTRFS)
    tid = inst.new_thread()
    assert run(inst, tid, SEED)["exit_code"] == 0
    before = run(inst, tid, TREE)["output"]
    r = snap(inst, tid, "before")
    assert r.status_code == 201, r.text
    s = r.json()
    assert s["name"] == "before" and s["snapshot_id"].startswith("s")
    assert s["size_bytes"] < 1 << 20, s		# next to nothing right after
    # change everything: content, modes, a link, a deletion, an addition
    out = run(inst, tid, "cd /home/yuxi/user-data/workspace && echo ONE > a && "
              "chmod 644 d/b && rm l && ln -s a l && rm -r d/e && echo new > n")
    assert out["exit_code"] == 0
    assert run(inst, tid, TREE)["output"] != before
    lst = inst.request("alice", "GET", "/api/threads/%s/snapshots" % tid).json()
    assert [x["snapshot_id"] for x in lst["snapshots"]] == [s["snapshot_id"]]
    r = inst.request("alice", "POST", "/api/threads/%s/snapshots/%s/restore"
                     % (tid, s["snapshot_id"]))
    assert r.status_code == 200, r.text
    assert run(inst, tid, TREE)["output"] == before
    # and the restored files are the thread's, writable
    assert run(inst, tid, "echo more >> /home/yuxi/user-data/workspace/a")["exit_code"] == 0
    r = inst.request("alice", "DELETE", "/api/threads/%s/snapshots/%s"
                     % (tid, s["snapshot_id"]))
    assert r.status_code == 204, r.text
    lst = inst.request("alice", "GET", "/api/threads/%s/snapshots" % tid).json()
    assert lst["snapshots"] == []


def test_fork_has_the_files_and_diverges(factory):
    inst = factory(**BTRFS)
    tid = inst.new_thread()
    assert run(inst, tid, SEED)["exit_code"] == 0
    before = run(inst, tid, TREE)["output"]
    sid = snap(inst, tid).json()["snapshot_id"]
    run(inst, tid, "echo later > /home/yuxi/user-data/workspace/a")
    r = inst.request("alice", "POST", "/api/threads", json={
        "thread_id": tid + "f", "from_snapshot": {"thread_id": tid, "snapshot_id": sid}})
    assert r.status_code == 201, r.text
    fork = tid + "f"
    assert run(inst, fork, TREE)["output"] == before
    run(inst, fork, "echo forked > /home/yuxi/user-data/workspace/a")
    assert run(inst, tid, "cat /home/yuxi/user-data/workspace/a")["output"] == "later\n"
    assert run(inst, fork, "cat /home/yuxi/user-data/workspace/a")["output"] == "forked\n"
    # the fork's files are its own uid's
    assert run(inst, fork, "stat -c %u /home/yuxi/user-data/workspace/a; id -u")[
        "output"].split()[0] == run(inst, fork, "id -u")["output"].strip()
    # an existing thread is no fork target
    r = inst.request("alice", "POST", "/api/threads", json={
        "thread_id": fork, "from_snapshot": {"thread_id": tid, "snapshot_id": sid}})
    assert r.status_code == 409, r.text


def test_bob_gets_404_on_every_snapshot_route(factory):
    inst = factory(**BTRFS)
    tid = inst.new_thread()
    sid = snap(inst, tid).json()["snapshot_id"]
    base = "/api/threads/%s/snapshots" % tid
    for method, path in (("GET", base), ("POST", base), ("DELETE", base + "/" + sid),
                         ("POST", base + "/" + sid + "/restore")):
        r = inst.request("bob", method, path, json={} if method == "POST" else None)
        assert r.status_code == 404, (method, path, r.text)
    bob = inst.new_thread("bob")
    r = inst.request("bob", "POST", "/api/threads", json={
        "thread_id": bob + "x", "from_snapshot": {"thread_id": tid, "snapshot_id": sid}})
    assert r.status_code == 404, r.text
    # bob's own thread with alice's snapshot id: no such snapshot
    r = inst.request("bob", "POST", "/api/threads/%s/snapshots/%s/restore" % (bob, sid))
    assert r.status_code == 404, r.text
    # alice's snapshot is still there and untouched
    assert len(inst.request("alice", "GET", base).json()["snapshots"]) == 1


def test_limit_and_deletion_with_the_thread(factory):
    inst = factory(**BTRFS)
    tid = inst.new_thread()
    ids = [snap(inst, tid, "n%d" % i).json()["snapshot_id"] for i in range(3)]
    r = snap(inst, tid)
    assert r.status_code == 409 and r.json()["error"]["code"] == "snapshot_limit", r.text
    for bad in ("nope", "s0000000000000000", "..", ids[0] + "x"):
        r = inst.request("alice", "DELETE", "/api/threads/%s/snapshots/%s" % (tid, bad))
        assert r.status_code in (404, 405), (bad, r.text)
    vol = os.path.join(inst.saves, "threads", tid, "vol", "snap")
    assert sorted(os.listdir(vol)) == sorted(ids)
    assert inst.request("alice", "DELETE", "/api/threads/" + tid).status_code == 204
    assert not os.path.exists(os.path.join(inst.saves, "threads", tid))


def test_plain_thread_has_no_snapshots(factory):
    inst = factory()
    tid = inst.new_thread()
    r = snap(inst, tid)
    assert r.status_code == 409 and r.json()["error"]["code"] == "not_supported", r.text
    r = inst.request("alice", "GET", "/api/threads/%s/snapshots" % tid)
    assert r.status_code == 200 and r.json()["snapshots"] == [], r.text


def test_snapshots_count_against_the_quota(factory):
    """What a snapshot holds alone is in the thread's image: rewriting a
    file under snapshots fills the quota; deleting them frees it."""
    inst = factory(YUXI_THREAD_DISK_QUOTA="128m", YUXI_THREAD_DISK_FS="btrfs",
                   YUXI_THREAD_SNAPSHOTS_MAX=8)
    tid = inst.new_thread()
    write = "head -c 31457280 /dev/urandom > %s/f.tmp && mv %s/f.tmp %s/f; echo rc=$?" % (
        "/home/yuxi/user-data/workspace", "/home/yuxi/user-data/workspace",
        "/home/yuxi/user-data/workspace")
    full, ids = False, []
    for _ in range(6):
        out = run(inst, tid, write)["output"]
        if "rc=0" not in out:
            full = "No space left" in out or "rc=1" in out
            break
        r = snap(inst, tid)
        assert r.status_code == 201, r.text
        ids.append(r.json()["snapshot_id"])
    assert full and 2 <= len(ids) <= 4, (ids, out)
    lst = inst.request("alice", "GET", "/api/threads/%s/snapshots" % tid).json()["snapshots"]
    assert sorted(s["snapshot_id"] for s in lst) == sorted(ids)
    for sid in ids:
        assert inst.request("alice", "DELETE", "/api/threads/%s/snapshots/%s"
                            % (tid, sid)).status_code == 204
    # the cleaner gives the space back after a commit (slow on a loaded
    # machine: up to 3 minutes)
    assert wait_for(lambda: "rc=0" in run(inst, tid, write)["output"], 180, 2), \
        "no room after the snapshots were deleted"
