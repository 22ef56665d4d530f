#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Snapshots and restore against the naive ways (issue 32, "Cost must
grow with what changed").

One service instance (nginx TLS -> FastCGI workers, bench/benchsvc.py) with
YUXI_THREAD_DISK_QUOTA=8g and YUXI_THREAD_DISK_FS=btrfs; one thread whose
workspace holds FILES files of random bytes, TOTAL bytes in all, in 200
directories (written from the host, owned by the thread's uid). Then
interleaved rounds (each contender once per round, shuffled):

  snapshot   POST /api/threads/{id}/snapshots, until the 201 arrived
  restore    POST .../snapshots/{sid}/restore of that snapshot (after one
             file was changed, so there is something to undo)
  cp -a      `cp -a --reflink=never` of user-data to the saves filesystem
             (ext4 here: where a platform without CoW keeps its copies),
             and `sync`
  cp back    the restore of that copy: `rm -rf` of the live workspace and
             `cp -a` back, and `sync`
  tar        `tar -cf` of user-data to the saves filesystem, and `sync`
  reflink    `cp -a --reflink=always` of user-data into the thread's own
             image (the top level, beside the live subvolume: the blocks
             are shared, every inode is made again), and `sync`
  untar      `rm -rf` of the live workspace and `tar -xf` of it, and `sync`

Space right after: what the image's filesystem uses more after a snapshot
(statfs; metadata included), against `du` of the cp -a copy and the size
of the tar file. Before all that, the transaction that changes one file of
the tree against the same command run plainly.

Usage: bench/snap_bench.py BUILD_DIR [ROUNDS] [FILES] [TOTAL_MIB]
       (default 5 rounds, 20000 files, 1024 MiB). Prints Markdown.
"""
import http.client
import json
import os
import random
import shutil
import ssl
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import benchsvc  # noqa: E402


def sh(cmd):
    subprocess.run(cmd, shell=True, check=True)


def timed(fn):
    t0 = time.perf_counter()
    fn()
    return (time.perf_counter() - t0) * 1000


def used(path):
    st = os.statvfs(path)
    return (st.f_blocks - st.f_bfree) * st.f_frsize


def du(path):
    return int(subprocess.run(["du", "-s", "--block-size=1", path], check=True,
                              capture_output=True, text=True).stdout.split()[0])


def populate(ws, files, total, uid):
    size = total // files
    chunk = os.urandom(1 << 20)
    for i in range(files):
        d = os.path.join(ws, "d%03d" % (i % 200))
        if not os.path.isdir(d):
            os.mkdir(d)
            os.chown(d, uid, uid)
        p = os.path.join(d, "f%05d" % i)
        off = random.randrange(0, len(chunk) - size) if size < len(chunk) else 0
        with open(p, "wb") as f:
            f.write(chunk[off:off + size])
        os.chown(p, uid, uid)
    os.sync()


def main():
    build = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    files = int(sys.argv[3]) if len(sys.argv) > 3 else 20000
    total = (int(sys.argv[4]) if len(sys.argv) > 4 else 1024) << 20
    base = tempfile.mkdtemp(prefix="yxbsnap-")
    s = benchsvc.BenchService(build, base, YUXI_THREAD_DISK_QUOTA="8g",
                              YUXI_THREAD_DISK_FS="btrfs", YUXI_THREAD_SNAPSHOTS_MAX=64,
                              YUXI_WORKERS=2)
    res = {k: [] for k in ("snapshot", "restore", "cp -a", "cp back", "tar", "untar",
                           "reflink")}
    space = {}
    txr = {"transaction": [], "plain": []}
    try:
        s.start()
        ctx = ssl.create_default_context(cafile=s.cert)
        port = int(s.url.rsplit(":", 1)[1])
        conn = http.client.HTTPSConnection("127.0.0.1", port, context=ctx, timeout=600)
        hdrs = {"Authorization": "Bearer " + s.token, "Content-Type": "application/json"}

        def call(method, path, body=None, want=200):
            conn.request(method, path, body=json.dumps(body) if body is not None else None,
                         headers=hdrs)
            r = conn.getresponse()
            j = r.read()
            assert r.status == want, (r.status, j)
            return json.loads(j) if j else None

        tid = s.thread
        call("POST", "/api/execute", {"thread_id": tid, "command": "true"})
        ud = s.thread_dir
        ws = os.path.join(ud, "workspace")
        uid = os.stat(ud).st_uid
        populate(ws, files, total, uid)
        scratch = os.path.join(s.saves, "bench-copies")
        os.makedirs(scratch, exist_ok=True)
        copy, tarf = os.path.join(scratch, "copy"), os.path.join(scratch, "ws.tar")
        snaps = []

        def snapshot():
            snaps.append(call("POST", "/api/threads/%s/snapshots" % tid, {}, 201))

        def restore():
            with open(os.path.join(ws, "d000", "f00000"), "ab") as f:
                f.write(b"x")
            call("POST", "/api/threads/%s/snapshots/%s/restore"
                 % (tid, snaps[0]["snapshot_id"]))

        def cp():
            shutil.rmtree(copy, ignore_errors=True)
            sh("cp -a --reflink=never %s %s && sync" % (ud, copy))

        def cp_back():
            sh("rm -rf %s && cp -a --reflink=never %s/workspace %s && sync" % (ws, copy, ud))

        vol = os.path.join(s.saves, "threads", tid, "vol")
        rcopy = os.path.join(vol, "reflink-copy")

        def reflink():
            shutil.rmtree(rcopy, ignore_errors=True)
            sh("sync && cp -a --reflink=always %s %s && sync" % (ud, rcopy))

        def tar():
            sh("tar -cf %s -C %s . && sync" % (tarf, ud))

        def untar():
            sh("rm -rf %s && tar -xf %s -C %s ./workspace && sync" % (ws, tarf, ud))

        # first (before the baselines rewrite the tree and leave the btrfs
        # cleaner busy): a transaction changing one file of the tree,
        # against the same command run plainly
        cmd = "echo y >> /home/yuxi/user-data/workspace/d001/f00001"
        for _ in range(rounds):
            for k in random.sample(list(txr), 2):
                conn.close()
                conn.connect()
                body = {"thread_id": tid, "command": cmd}
                if k == "transaction":
                    body["transaction"] = "commit_on_success"
                t0 = time.perf_counter()
                j = call("POST", "/api/execute", body)
                txr[k].append((time.perf_counter() - t0) * 1000)
                assert j["exit_code"] == 0 and j.get("applied", True), j
        fns = {"snapshot": snapshot, "restore": restore, "cp -a": cp, "cp back": cp_back,
               "tar": tar, "untar": untar, "reflink": reflink}
        # the space, once, before the timed rounds
        os.sync()
        conn.close()
        conn.connect()
        before = used(ud)
        snapshot()
        os.sync()
        time.sleep(1)
        space["snapshot"] = used(ud) - before
        cp()
        space["cp -a"] = du(copy)
        os.sync()
        before = used(ud)
        reflink()
        time.sleep(1)
        space["reflink"] = used(ud) - before
        shutil.rmtree(rcopy, ignore_errors=True)
        tar()
        space["tar"] = os.path.getsize(tarf)
        space["tree"] = du(ws)
        for _ in range(rounds):
            order = ["snapshot", "cp -a", "tar", "reflink"]
            random.shuffle(order)
            order2 = ["restore", "cp back", "untar"]
            random.shuffle(order2)
            for k in order + order2:
                conn.close()	# nginx closed it during the copies: a fresh one, untimed
                conn.connect()
                res[k].append(timed(fns[k]))
                if k == "reflink":	# its inodes cost the image's space
                    shutil.rmtree(rcopy, ignore_errors=True)
            # the baselines rewrite the whole tree: a snapshot kept from
            # every round would hold a copy each; only the first is kept
            while len(snaps) > 1:
                sid = snaps.pop()["snapshot_id"]
                conn.close()
                conn.connect()
                call("DELETE", "/api/threads/%s/snapshots/%s" % (tid, sid), want=204)
    finally:
        s.stop()
        shutil.rmtree(base, ignore_errors=True)

    med = {k: statistics.median(v) for k, v in res.items()}
    print("%s, %d files, %d MiB in 200 directories, btrfs image of 8 GiB on an ext4 host; "
          "%d interleaved rounds, medians.\n" % (time.strftime("%Y-%m-%d"), files,
                                                  total >> 20, rounds))
    print("| operation | median ms | ratio to cp -a |")
    print("| --- | --- | --- |")
    for k in ("snapshot", "reflink", "cp -a", "tar", "restore", "cp back", "untar"):
        ref = med["cp -a"] if k in ("snapshot", "reflink", "cp -a", "tar") else med["cp back"]
        print("| %s | %.1f | %.4f |" % (k, med[k], med[k] / ref))
    print("\n| space right after | bytes | ratio to cp -a |")
    print("| --- | --- | --- |")
    for k in ("snapshot", "reflink", "cp -a", "tar"):
        print("| %s | %d | %.5f |" % (k, space[k], space[k] / space["cp -a"]))
    print("\n(the tree itself: %d bytes by du)\n" % space["tree"])
    print("| one file changed | median ms |")
    print("| --- | --- |")
    for k in ("plain", "transaction"):
        print("| %s command | %.1f |" % (k, statistics.median(txr[k])))


if __name__ == "__main__":
    main()
