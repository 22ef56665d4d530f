#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""How far one host goes (issue 34): many live sandboxes, the create
throughput, many threads on disk. Every instance runs with the service's
defaults (the pool and the per-thread disk quota "auto", i.e. on: root
here) unless a phase says otherwise.

  density.py BUILD live [N [CHECKPOINTS]]       (100; "100,N")
      N threads (alice and bob, half each) each get a running sandbox
      (YUXI_SANDBOX_MAX_REPLICAS=N, 4 workers): the first `echo` of each
      through nginx, 4 clients at a time. At each checkpoint (a number of
      live sandboxes) the per-item costs: GET /api/admin/sandboxes,
      GET /metrics, GET /readyz (the table check), a user's GET
      /api/threads, `yuxi-sandbox gc` (the reaper's sweep: dead holds,
      reconcile with the engine, idle reap), an `echo` in a running
      sandbox; and the host: MemAvailable, tasks, mounts, loop devices,
      dockerd's and containerd's descriptors and memory. Then every
      sandbox answers `echo` once more, all threads are deleted, and what
      is left is counted (containers, mounts, loop devices, uid claims,
      table slots) with the service running (only its pool) and after it
      stopped (nothing).
  density.py BUILD create [THREADS [CLIENTS]]  (200, 8)
      THREADS new threads' first `echo hi` from CLIENTS concurrent official
      Python clients (clients/python, default retries), one user each,
      service defaults but YUXI_SANDBOX_MAX_REPLICAS=1000; against
      sequential `docker run -d` + `docker exec` of the same image and
      hardening, half before and half after (the same run). The pool's
      size is sampled every 0.2 s (it empties, then refills).
  density.py BUILD threads [MAX [CHECKPOINTS]] (100000; "1000,10000,MAX")
      threads on disk, no sandboxes: 100 users of up to 1,000 threads
      (u000 first, so u000 owns 1,000 from the first checkpoint on),
      YUXI_THREAD_DISK_QUOTA=0 and YUXI_POOL_SIZE=0 (this phase measures
      the thread store, not images: 100,000 images would need as many loop
      devices and mounts) and a uid range of 200,000 (the default holds
      65,536: docs/configuration.md). At each checkpoint: u000's listing
      (1,000 threads), one thread, a create, /metrics, /api/admin/users,
      and the daemon's restart (its thread-store repair reads every
      thread).

Prints Markdown (figures for docs/benchmarks.md) and, with DENSITY_JSON=FILE,
writes the raw figures there. Needs root, the engine and the image
(YUXI_SANDBOX_IMAGE, default yuxi-sandbox:latest). Cleans up everything it
made (its containers by prefix, its mounts, its shm object, its base
directory) also when interrupted.
"""
import json
import os
import requests
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "clients", "python"))
import benchsvc  # noqa: E402
import yxsvc  # noqa: E402

IMAGE = os.environ.get("YUXI_SANDBOX_IMAGE", "yuxi-sandbox:latest")
OUT = {}
# the service's defaults, said explicitly: the test harness under
# BenchService turns both off unless told (tests/lib/yxsvc.py)
DEFAULTS = {"YUXI_POOL_SIZE": "auto", "YUXI_THREAD_DISK_QUOTA": "auto"}


# ------------------------------------------------------------------- helpers
def pct(xs, p):
    xs = sorted(xs)
    k = max(0, min(len(xs) - 1, int(round(p / 100.0 * len(xs) + 0.5)) - 1))
    return xs[k]


def med(xs):
    return statistics.median(xs) if xs else float("nan")


def timed(fn, n=5):
    """Median milliseconds of n calls of fn (which must not fail), after
    one untimed call (the kept-alive connection open and warm)."""
    out = []
    fn()
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t0) * 1000)
    return med(out)


def kget(svc, who, path):
    """GET path as who over the instance's kept-alive connection (opened
    again once when the instance restarted under it)."""
    try:
        return svc.request(who, "GET", path, session=svc.kept)
    except requests.ConnectionError:
        svc.kept = requests.Session()
        return svc.request(who, "GET", path, session=svc.kept)


_local = threading.local()


def client_session():
    """This client thread's kept-alive HTTPS session."""
    if getattr(_local, "session", None) is None:
        _local.session = requests.Session()
    return _local.session


def meminfo(key="MemAvailable"):
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    return 0


def mem_available():
    """MemAvailable after the page cache was dropped (what the kernel
    cannot give back: processes, kernel objects), the median of 5 readings
    0.2 s apart (bytes). The machine's other users move it too: the
    attributable sum (attributable()) is the figure to trust."""
    subprocess.run(["sync"])
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3\n")
    xs = []
    for _ in range(5):
        xs.append(meminfo())
        time.sleep(0.2)
    return med(xs)


def pids_of(name):
    out = subprocess.run(["pgrep", "-x", name], capture_output=True, text=True).stdout
    return [int(p) for p in out.split()]


def proc_fds(pid):
    try:
        return len(os.listdir("/proc/%d/fd" % pid))
    except OSError:
        return 0


def proc_kb(pid, key):
    """Pss/Rss of smaps_rollup, or a status line (VmRSS), in bytes."""
    for f in ("smaps_rollup", "status"):
        try:
            with open("/proc/%d/%s" % (pid, f)) as fh:
                for line in fh:
                    if line.startswith(key + ":"):
                        return int(line.split()[1]) * 1024
        except OSError:
            pass
    return 0


def tasks():
    """Tasks (threads) on the host: the loadavg's total."""
    with open("/proc/loadavg") as f:
        return int(f.read().split()[3].split("/")[1])


def host(prefix, base):
    """What the host holds now, overall and of this instance."""
    d = {"mem_available": mem_available(), "tasks": tasks()}
    for k in ("SUnreclaim", "KernelStack", "PageTables"):
        d[k] = meminfo(k)
    with open("/proc/self/mountinfo") as f:
        d["mounts"] = sum(1 for _ in f)
    d["mounts_ours"] = len(yxsvc.mounts_below(base))
    d["loops_ours"] = yxsvc.loops_below(base)
    for n in ("dockerd", "containerd"):
        ps = pids_of(n)
        d[n + "_fds"] = sum(proc_fds(p) for p in ps)
        d[n + "_rss"] = sum(proc_kb(p, "Rss") for p in ps)
    shims = [int(p) for p in subprocess.run(
        ["pgrep", "-f", "containerd-shim"], capture_output=True, text=True).stdout.split()]
    d["shims"] = len(shims)
    d["containers_ours"] = len(yxsvc.containers(prefix))
    d["inotify_root"] = inotify_instances(0)
    return d


def inotify_instances(uid):
    """inotify instances held by processes of uid (the per-user limit
    fs.inotify.max_user_instances counts these)."""
    n = 0
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            if os.stat("/proc/" + p).st_uid != uid:
                continue
            for fd in os.listdir("/proc/%s/fd" % p):
                try:
                    if os.readlink("/proc/%s/fd/%s" % (p, fd)) == "anon_inode:inotify":
                        n += 1
                except OSError:
                    pass
        except OSError:
            pass
    return n


def shim_pss(prefix):
    """PSS of the engine's shims serving this instance's containers and of
    the processes inside them (bytes), from smaps_rollup; and the shims'
    kernel memory: a 16 KiB stack per thread and their page tables. A
    shim is found as the parent of a container's processes, so a shim
    serving a group of sandboxes (docs/configuration.md "Shim groups") is
    counted once."""
    ids = set(i for i, _ in yxsvc.containers(prefix))
    shims, inside, shim, skern = set(), 0, 0, 0
    for cid in ids:
        try:
            with open("/sys/fs/cgroup/memory/docker/%s/cgroup.procs" % cid) as f:
                pids = [int(p) for p in f.read().split()]
        except OSError:
            continue
        for p in pids:
            inside += proc_kb(p, "Pss")
            try:
                with open("/proc/%d/status" % p) as f:
                    ppid = int([l for l in f if l.startswith("PPid:")][0].split()[1])
                with open("/proc/%d/comm" % ppid) as f:
                    if f.read().strip().startswith("containerd-shim"):
                        shims.add(ppid)
            except (OSError, IndexError, ValueError):
                pass
    for pid in shims:
        shim += proc_kb(pid, "Pss")
        try:
            with open("/proc/%d/status" % pid) as f:
                nlwp = int([l for l in f if l.startswith("Threads:")][0].split()[1])
        except (OSError, IndexError, ValueError):
            nlwp = 0
        skern += nlwp * 16384 + proc_kb(pid, "VmPTE")
    return shim, inside, skern


def cgroup_mem(prefix):
    """The containers' memory cgroups (cgroup v1), summed: what the kernel
    cannot take back - anonymous memory, shmem (tmpfs), kernel memory
    charged to them (stacks, page tables, the namespaces' objects) - and
    the page cache charged to them (reclaimable, mostly the image's files
    shared by all). Bytes, a dict."""
    tot = {"rss": 0, "shmem": 0, "kmem": 0, "cache": 0}
    for cid, _ in yxsvc.containers(prefix):
        d = "/sys/fs/cgroup/memory/docker/%s/" % cid
        try:
            with open(d + "memory.stat") as f:
                st = dict(l.split() for l in f if l.strip())
            with open(d + "memory.kmem.usage_in_bytes") as f:
                tot["kmem"] += int(f.read())
            tot["rss"] += int(st.get("total_rss", 0))
            tot["shmem"] += int(st.get("total_shmem", 0))
            tot["cache"] += int(st.get("total_cache", 0)) - int(st.get("total_shmem", 0))
        except (OSError, ValueError):
            pass
    return tot


def cli(svc, *args):
    """The operator CLI against this instance (its settings)."""
    env = dict(svc.env)
    return subprocess.run([os.path.join(svc.build, "yuxi-sandbox")] + list(args), env=env,
                          capture_output=True, text=True, timeout=600)


def pool_of(svc):
    r = svc.request("admin", "GET", "/api/admin/sandboxes")
    return sum(1 for s in r.json()["sandboxes"] if s.get("state") == "pooled")


class Svc(benchsvc.BenchService):
    """A bench instance with extra users (bearer tokens) beside alice, bob,
    admin."""

    def __init__(self, build, base, users=(), **ov):
        super().__init__(build, base, **ov)
        self.build = os.path.abspath(build)
        self.kept = requests.Session()	# timed requests: one kept-alive connection
        for u in users:
            self.tokens[u] = "%032x" % random.getrandbits(128)


def parallel(n, items, fn):
    """fn(item) over items from n threads; returns [(item, result or exception)]."""
    it = iter(list(items))
    lock = threading.Lock()
    out = []

    def work():
        while True:
            with lock:
                try:
                    x = next(it)
                except StopIteration:
                    return
            try:
                r = fn(x)
            except Exception as e:  # noqa: BLE001 - reported
                r = e
            with lock:
                out.append((x, r))
    ts = [threading.Thread(target=work) for _ in range(n)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return out


def limits():
    """The host's limits that a thousand sandboxes come near."""
    def rd(p):
        try:
            with open(p) as f:
                return f.read().strip()
        except OSError:
            return "?"
    return {"pid_max": rd("/proc/sys/kernel/pid_max"),
            "threads_max": rd("/proc/sys/kernel/threads-max"),
            "inotify_max_user_instances": rd("/proc/sys/fs/inotify/max_user_instances"),
            "inotify_max_user_watches": rd("/proc/sys/fs/inotify/max_user_watches"),
            "file_max": rd("/proc/sys/fs/file-max"),
            "loop_max_loop": rd("/sys/module/loop/parameters/max_loop"),
            "dockerd_nofile": soft_nofile(pids_of("dockerd")),
            "containerd_nofile": soft_nofile(pids_of("containerd")),
            "mount_max": rd("/proc/sys/fs/mount-max")}


def soft_nofile(ps):
    for p in ps:
        try:
            with open("/proc/%d/limits" % p) as f:
                for line in f:
                    if line.startswith("Max open files"):
                        return line.split()[3]
        except OSError:
            pass
    return "?"


# -------------------------------------------------------------------- images
def kernel_now():
    """Unreclaimable kernel memory now (bytes): slab, stacks, page tables,
    after the page cache and reclaimable slab were dropped."""
    subprocess.run(["sync"])
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3\n")
    return sum(meminfo(k) for k in ("SUnreclaim", "KernelStack", "PageTables"))


IMAGE_MS = {"mkfs": [], "mount": []}	# per image: sparse file + mke2fs; loop + mount


def image_kernel(k=200, rounds=3):
    """Kernel memory of one thread's disk image as the helper makes it
    (a sparse 2 GiB file, mke2fs with the helper's options, a loop device,
    an ext4 mount nosuid,nodev,discard,noinit_itable: its superblock,
    journal thread, loop queue): k of them made, the kernel's
    unreclaimable memory read before and after, rounds times; the median
    per image (bytes). Mounts nothing outside a temporary directory of
    its own, and removes it."""
    d = tempfile.mkdtemp(prefix="yxbdensimg-")
    per = []
    try:
        for _ in range(rounds):
            k0 = kernel_now()
            for i in range(k):
                img, mp = os.path.join(d, "i%d" % i), os.path.join(d, "m%d" % i)
                t0 = time.perf_counter()
                with open(img, "wb") as f:
                    f.truncate(2 << 30)
                subprocess.run(["mke2fs", "-q", "-F", "-t", "ext4", "-m", "0", "-E",
                                "nodiscard,lazy_itable_init=1,lazy_journal_init=1", img],
                               check=True)
                t1 = time.perf_counter()
                os.makedirs(mp, exist_ok=True)
                subprocess.run(["mount", "-o", "loop,nosuid,nodev,discard,noinit_itable",
                                img, mp], check=True)
                IMAGE_MS["mkfs"].append((t1 - t0) * 1000)
                IMAGE_MS["mount"].append((time.perf_counter() - t1) * 1000)
            time.sleep(2)
            k1 = kernel_now()
            per.append((k1 - k0) / k)
            for i in range(k):
                subprocess.run(["umount", os.path.join(d, "m%d" % i)], check=False)
                os.unlink(os.path.join(d, "i%d" % i))
            time.sleep(1)
    finally:
        for mp in yxsvc.mounts_below(d):
            subprocess.run(["umount", "-l", mp], check=False)
        shutil.rmtree(d, ignore_errors=True)
    return med(per), per


# ---------------------------------------------------------------------- live
def overrides():
    """DENSITY_SET="YUXI_X=v,YUXI_Y=w": settings of the instance beside the
    phase's (an A/B: YUXI_THREAD_DISK_QUOTA=0, YUXI_POOL_SIZE=0)."""
    out = {}
    for kv in os.environ.get("DENSITY_SET", "").split(","):
        if "=" in kv:
            k, v = kv.split("=", 1)
            out[k.strip()] = v.strip()
    return out


def live(build, n, checkpoints):
    base = tempfile.mkdtemp(prefix="yxbdens-")
    ov = {"YUXI_SANDBOX_IMAGE": IMAGE, "YUXI_WORKERS": "4",
          "YUXI_SANDBOX_MAX_REPLICAS": str(n), "YUXI_SANDBOX_IDLE_TIMEOUT": "86400",
          "YUXI_SANDBOX_IDLE_CHECK_INTERVAL": "60"}
    ov.update(DEFAULTS)
    ov.update(overrides())
    svc = Svc(build, base, **ov)
    res = {"n": n, "limits": limits(), "checkpoints": [], "first": [], "fail": [],
           "set": overrides()}
    OUT["live"] = res
    try:
        if svc.env.get("YUXI_THREAD_DISK_QUOTA", "auto") not in ("0", "off"):
            res["image_kernel"], res["image_kernel_rounds"] = image_kernel()
            res["image_ms"] = {k: med(v) for k, v in IMAGE_MS.items()}
        h0 = host(svc.prefix, base)
        res["before"] = h0
        svc.start()
        time.sleep(2)
        prot = svc.protections()
        res["protections"] = prot
        pool = svc.pool()
        yxsvc.wait_for(lambda: pool_of(svc) >= pool, 120, 0.5)
        res["with_pool"] = host(svc.prefix, base)
        # the bench's own first thread (BenchService made one): deleted
        svc.request("alice", "DELETE", "/api/threads/" + svc.thread)
        tids = ["d%05d" % i for i in range(n)]
        owner = {t: ("alice" if i % 2 == 0 else "bob") for i, t in enumerate(tids)}
        done = 0
        t_all = time.monotonic()
        for cp in sorted(set(checkpoints + [n])):
            batch = tids[done:cp]

            def first(t):
                who = owner[t]
                r = svc.request(who, "POST", "/api/threads", json={"thread_id": t})
                if r.status_code != 201:
                    raise RuntimeError("create %s: %d %s" % (t, r.status_code, r.text[:200]))
                t0 = time.perf_counter()
                r = svc.execute(t, "echo hi", who=who)
                dt = (time.perf_counter() - t0) * 1000
                if r.status_code != 200 or r.json().get("output") != "hi\n":
                    raise RuntimeError("echo %s: %d %s" % (t, r.status_code, r.text[:200]))
                return dt
            t0 = time.monotonic()
            for t, r in parallel(4, batch, first):
                if isinstance(r, Exception):
                    res["fail"].append(str(r))
                else:
                    res["first"].append(r)
            made_s = time.monotonic() - t0
            done = cp
            sys.stderr.write("live: %d sandboxes (%d failures so far), %.0f s\n" % (
                cp, len(res["fail"]), time.monotonic() - t_all))
            res["checkpoints"].append(checkpoint(svc, base, cp, tids[:cp], owner, made_s,
                                                 len(batch)))
        # every one answers once more
        t0 = time.monotonic()
        again = parallel(4, tids, lambda t: svc.execute(t, "echo again", who=owner[t]))
        res["again_s"] = time.monotonic() - t0
        res["again_ok"] = sum(1 for _, r in again if not isinstance(r, Exception)
                              and r.status_code == 200 and r.json().get("output") == "again\n")
        res["again_bad"] = [(t, str(r) if isinstance(r, Exception) else
                             "%d %s" % (r.status_code, r.text[:160]))
                            for t, r in again if isinstance(r, Exception)
                            or r.status_code != 200][:10]
        # delete every thread in 4 chunks, MemAvailable (page cache
        # dropped) before and after each: what a chunk of sandboxes gave
        # back, over a minute or two in which the machine's other users
        # move it less than over the whole run
        t0 = time.monotonic()
        res["delete_bad"] = 0
        res["chunks"] = []
        k = max(1, n // 4)
        for i in range(0, n, k):
            chunk = tids[i:i + k]
            m0 = mem_available()
            c0 = time.monotonic()
            dels = parallel(4, chunk, lambda t: svc.request(owner[t], "DELETE",
                                                            "/api/threads/" + t))
            c1 = time.monotonic()
            res["delete_bad"] += sum(1 for _, r in dels if isinstance(r, Exception)
                                     or r.status_code != 204)
            time.sleep(2)
            res["chunks"].append({"n": len(chunk), "s": c1 - c0,
                                  "freed": mem_available() - m0})
        res["delete_s"] = time.monotonic() - t0
        # the pool refills while the table has room: let it settle
        time.sleep(5)
        res["left_running"] = leftovers(svc, base, running=True)
        res["after"] = host(svc.prefix, base)
        svc.halt()
        res["left_stopped"] = leftovers(svc, base, running=False)
    finally:
        try:
            svc.stop()
        finally:
            yxsvc.docker_rm_prefix(svc.prefix)
            yxsvc.unmount_below(base)
            shutil.rmtree(base, ignore_errors=True)
    report_live(res)


def checkpoint(svc, base, live_n, tids, owner, made_s, batch):
    c = {"live": live_n, "made_s": made_s, "batch": batch}
    c["admin_list_ms"] = timed(lambda: kget(svc, "admin", "/api/admin/sandboxes"))
    c["metrics_ms"] = timed(lambda: kget(svc, None, "/metrics"))
    c["readyz_ms"] = timed(lambda: kget(svc, None, "/readyz"))
    c["user_list_ms"] = timed(lambda: kget(svc, "alice", "/api/threads"))
    c["user_threads"] = len(svc.request("alice", "GET", "/api/threads").json()["threads"])
    r = None

    def gc():
        nonlocal r
        r = cli(svc, "gc", "--json")
    c["gc_ms"] = timed(gc, 3)
    c["gc"] = r.stdout.strip() if r.returncode == 0 else r.stderr.strip()[-300:]
    sample = random.sample(tids, min(20, len(tids)))
    xs = []
    for t in sample:
        t0 = time.perf_counter()
        rr = svc.execute(t, "echo hi", who=owner[t])
        xs.append((time.perf_counter() - t0) * 1000)
        assert rr.status_code == 200, rr.text
    c["echo_ms"] = med(xs)
    c["shim_pss"], c["inside_pss"], c["shim_kernel"] = shim_pss(svc.prefix)
    c["cgroups"] = cgroup_mem(svc.prefix)
    c["host"] = host(svc.prefix, base)
    return c


def leftovers(svc, base, running):
    """What the deleted threads left: containers, mounts, loop devices, uid
    claims, thread directories and table slots, each split into what
    belongs to the pool (boxes waiting for a thread: the service's, not a
    deleted thread's) and anything else ("left")."""
    saves = svc.saves
    cs = yxsvc.containers(svc.prefix)
    d = {"containers": len(cs),
         "containers_pool": sum(1 for _, n in cs if "-pool-" in n),
         "mounts_threads": len(yxsvc.mounts_below(os.path.join(saves, "threads"))),
         "mounts_pool": len(yxsvc.mounts_below(os.path.join(saves, "pool"))),
         "loops": yxsvc.loops_below(base)}
    claims = []
    try:
        for x in os.listdir(os.path.join(saves, "uids")):
            if not x.startswith("."):
                claims.append(os.readlink(os.path.join(saves, "uids", x)))
    except OSError:
        pass
    d["uid_claims"] = len(claims)
    d["uid_claims_pool"] = sum(1 for c in claims if c.startswith("pool-") and "/" not in c)
    try:
        d["threads"] = len([x for x in os.listdir(os.path.join(saves, "threads"))
                            if not x.startswith(".")])
    except OSError:
        d["threads"] = 0
    if running:
        s = svc.request("admin", "GET", "/api/admin/sandboxes").json()["sandboxes"]
        d["slots"] = len(s)
        d["slots_pool"] = sum(1 for x in s if not x.get("thread_id"))
    d["left"] = (d["containers"] - d["containers_pool"] + d["mounts_threads"] + d["loops"]
                 + d["uid_claims"] - d["uid_claims_pool"] + d["threads"]
                 + (d["slots"] - d["slots_pool"] if running else 0))
    return d


def report_live(r):
    print("### %d live sandboxes (%s)\n" % (r["n"], time.strftime("%Y-%m-%d %H:%M")))
    print("Protections: %s.%s\n" % ((r.get("protections") or {}).get("detail", "?"),
                                   (" Set: %s." % r["set"]) if r.get("set") else ""))
    f = r["first"]
    if f:
        print("First `echo hi` of %d new threads (4 clients): median %.1f ms, p95 %.1f ms, "
              "max %.1f ms; %d failed%s.\n" % (len(f), med(f), pct(f, 95), max(f),
                                              len(r["fail"]), (": " + "; ".join(r["fail"][:3]))
                                              if r["fail"] else ""))
    b = r.get("before", {})
    print("| live | made in s | admin list ms (/item µs) | /metrics ms | /readyz ms "
          "| alice's list ms (threads) | gc ms | echo ms |")
    print("| --- |" + " --- |" * 7)
    for c in r["checkpoints"]:
        print("| %d | %.0f | %.1f (%.0f) | %.1f | %.1f | %.1f (%d) | %.0f | %.1f |" % (
            c["live"], c["made_s"], c["admin_list_ms"],
            c["admin_list_ms"] * 1000 / max(1, c["live"]), c["metrics_ms"],
            c["readyz_ms"], c["user_list_ms"], c["user_threads"], c["gc_ms"], c["echo_ms"]))
    print()
    ik = r.get("image_kernel", 0)
    if ik:
        print("A thread's disk image (2 GiB sparse, ext4 on a loop device, mounted) costs "
              "the kernel %.0f KiB (unreclaimable slab, stacks, page tables; %d images "
              "made and mounted, rounds: %s KiB each).\n" % (
                  ik / 1024, 200, ", ".join("%.0f" % (x / 1024)
                                            for x in r.get("image_kernel_rounds", []))))
        im = r.get("image_ms") or {}
        print("Making one (the sparse file and `mke2fs`, as the helper runs it): median "
              "%.1f ms; attaching a loop device and mounting it: median %.1f ms.\n" % (
                  im.get("mkfs", float("nan")), im.get("mount", float("nan"))))
    print("Memory per live sandbox, MiB. *Attributable*: the engine's shim (PSS, and "
          "its kernel stacks and page tables), the container's memory cgroup (anonymous, "
          "shmem, kernel memory charged to it: the box's processes, stacks, page tables, "
          "namespaces), dockerd's and containerd's growth (RSS), the disk image's kernel "
          "memory (above). The page cache charged to the cgroups (the image's files, "
          "shared, reclaimable) is shown apart. *MemAvailable*: the host's, the page "
          "cache dropped, against the mean of before the service started and after the "
          "threads were deleted - moved by the machine's other users too.\n")
    print("| live | attributable (= shim + shim kernel + cgroup anon+shmem + cgroup kernel "
          "+ engine + image) | page cache in the cgroups | MemAvailable drop | tasks "
          "| host mounts | loop devices | dockerd fds | containerd fds |")
    print("| --- |" + " --- |" * 8)
    for c in r["checkpoints"]:
        h, n = c["host"], max(1, c["live"])
        a = r.get("after", b)
        drop = ((b["mem_available"] + a["mem_available"]) / 2 - h["mem_available"]) / 2**20
        eng = (h["dockerd_rss"] - b["dockerd_rss"] + h["containerd_rss"] - b["containerd_rss"])
        cg = c["cgroups"]
        img = ik * h["loops_ours"]
        parts = [c["shim_pss"], c["shim_kernel"], cg["rss"] + cg["shmem"], cg["kmem"], eng,
                 img]
        att = sum(parts) / 2**20
        c["attributable_mib"] = att
        print("| %d | %.0f: **%.2f** (= %s) | %.2f | %.0f (%.2f) | %d (+%.1f) "
              "| %d (+%.1f) | %d | %d (+%.1f) | %d (+%.1f) |" % (
                  c["live"], att, att / n,
                  " + ".join("%.2f" % (x / 2**20 / n) for x in parts),
                  cg["cache"] / 2**20 / n, drop, drop / n,
                  h["tasks"], (h["tasks"] - b["tasks"]) / n, h["mounts"],
                  (h["mounts"] - b["mounts"]) / n, h["loops_ours"], h["dockerd_fds"],
                  (h["dockerd_fds"] - b["dockerd_fds"]) / n, h["containerd_fds"],
                  (h["containerd_fds"] - b["containerd_fds"]) / n))
    print()
    if "again_ok" in r:
        print("Every sandbox again: %d of %d answered (%.0f s)%s.\n" % (
            r["again_ok"], r["n"], r["again_s"],
            ("; " + "; ".join("%s %s" % x for x in r["again_bad"])) if r["again_bad"] else ""))
    if "delete_s" in r:
        print("Deleting the %d threads: %.0f s, %d failed.\n" % (r["n"], r["delete_s"],
                                                               r["delete_bad"]))
        fr = [c["freed"] / 2**20 / c["n"] for c in r["chunks"]]
        print("Memory each chunk of deletes gave back (MemAvailable after dropping the "
              "page cache, before and after the chunk), MiB per sandbox: %s; median "
              "%.2f. Seconds per chunk: %s.\n" % (
                  ", ".join("%.2f" % x for x in fr), med(fr),
                  ", ".join("%.0f" % c["s"] for c in r["chunks"])))
        print("After the deletes, the service running: %s.\n" % json.dumps(
            r["left_running"]))
        print("After it stopped (SIGTERM; its pool's boxes stay for the next start, "
              "whose sweep removes them): %s.\n" % json.dumps(r["left_stopped"]))
    print("Host limits: %s.\n" % json.dumps(r["limits"]))


# -------------------------------------------------------------------- create
HARDEN = ["--network", "none", "--memory", "512m", "--memory-swap", "512m",
          "--cpus", "1", "--pids-limit", "256", "--cap-drop", "ALL",
          "--security-opt", "no-new-privileges", "--read-only",
          "--tmpfs", "/tmp:rw,nosuid,nodev,size=64m",
          "--tmpfs", "/home/yuxi:rw,nosuid,nodev,size=64m,uid=1000,gid=1000",
          "--init", "--log-driver", "none", "--user", "1000:1000"]


def docker_cold(tag, k, made):
    name = "%s-%d" % (tag, k)
    made.append(name)
    t0 = time.perf_counter()
    subprocess.run(["docker", "run", "-d", "--name", name] + HARDEN +
                   [IMAGE, "tail", "-f", "/dev/null"], check=True, stdout=subprocess.DEVNULL)
    r = subprocess.run(["docker", "exec", name, "sh", "-c", "echo hi"], check=True,
                       stdout=subprocess.PIPE)
    dt = (time.perf_counter() - t0) * 1000
    assert r.stdout == b"hi\n"
    return dt


def create(build, threads, clients):
    from yuxi_sandbox import Client
    base = tempfile.mkdtemp(prefix="yxbdens-")
    users = ["c%02d" % i for i in range(clients)]
    svc = Svc(build, base, users=users, YUXI_SANDBOX_IMAGE=IMAGE,
              YUXI_SANDBOX_MAX_REPLICAS="1000", YUXI_SANDBOX_IDLE_TIMEOUT="86400",
              YUXI_USER_COMMANDS="0", YUXI_WORKERS="4", **DEFAULTS)
    tag = "yxbdensd%d" % os.getpid()
    made = []
    res = {"threads": threads, "clients": clients}
    OUT["create"] = res
    try:
        svc.start()
        pool = svc.pool()
        res["pool"] = pool
        res["protections"] = svc.protections()
        yxsvc.wait_for(lambda: pool_of(svc) >= pool, 120, 0.5)
        half = threads // 2
        docker = [docker_cold(tag, k, made) for k in range(half)]
        samples = []
        stop = threading.Event()

        def sampler():
            t0 = time.monotonic()
            while not stop.is_set():
                try:
                    samples.append((time.monotonic() - t0, pool_of(svc)))
                except Exception:  # noqa: BLE001 - a sample lost
                    pass
                time.sleep(0.2)
        sm = threading.Thread(target=sampler)
        sm.start()
        retries = [0]
        lock = threading.Lock()
        cls = {}
        for u in users:
            c = Client(svc.url, svc.tokens[u], ca_file=svc.cert)

            def on_retry(ans, wait):
                with lock:
                    retries[0] += 1
            c.transport.on_retry = on_retry
            cls[u] = c
        jobs = [("n%04d" % i, users[i % clients]) for i in range(threads)]
        per_user = {u: [j for j in jobs if j[1] == u] for u in users}
        lat, total, fails = [], [], []

        def client_run(u):
            c = cls[u]
            for tid, _ in per_user[u]:
                try:
                    t0 = time.perf_counter()
                    c.create_thread(tid)
                    t1 = time.perf_counter()
                    r = c.execute(tid, "echo hi")
                    t2 = time.perf_counter()
                    out = r.output if hasattr(r, "output") else r["output"]
                    assert out == "hi\n", out
                    with lock:
                        lat.append((t2 - t1) * 1000)
                        total.append((t2 - t0) * 1000)
                except Exception as e:  # noqa: BLE001 - reported
                    with lock:
                        fails.append("%s: %s" % (tid, e))
        t0 = time.monotonic()
        ts = [threading.Thread(target=client_run, args=(u,)) for u in users]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        res["wall_s"] = time.monotonic() - t0
        refill_t0 = time.monotonic()
        yxsvc.wait_for(lambda: pool_of(svc) >= pool, 120, 0.2)
        res["refill_after_s"] = time.monotonic() - refill_t0
        time.sleep(1)
        stop.set()
        sm.join()
        docker += [docker_cold(tag, half + k, made) for k in range(threads - half)]
        res.update(lat=lat, total=total, fails=fails, retries=retries[0], docker=docker,
                   samples=samples)
        m = svc.request(None, "GET", "/metrics").text
        res["acquires"] = [l for l in m.splitlines() if l.startswith("yuxi_sandbox_acquires_total")]
    finally:
        for n in made:
            subprocess.run(["docker", "rm", "-f", n], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
        svc.stop()
        yxsvc.unmount_below(base)
        shutil.rmtree(base, ignore_errors=True)
    report_create(res)


def report_create(r):
    lat, tot, dk = r["lat"], r["total"], r["docker"]
    print("### Create throughput: %d new threads from %d clients (%s)\n" % (
        r["threads"], r["clients"], time.strftime("%Y-%m-%d %H:%M")))
    print("Protections: %s.\n" % (r.get("protections") or {}).get("detail", "?"))
    print("%d of %d succeeded, %d client retries, %.1f s in all (%.1f threads/s); "
          "the pool (%d) empty at the lowest sample %s, full again %.1f s after the "
          "last client finished.\n" % (
              len(lat), r["threads"], r["retries"], r["wall_s"], len(lat) / r["wall_s"],
              r["pool"], min((s for _, s in r["samples"]), default="?"),
              r["refill_after_s"]))
    if r["fails"]:
        print("Failures: %s\n" % "; ".join(r["fails"][:5]))
    print("| new thread → first `echo hi` | n | p50 ms | p95 ms | p50 ratio | p95 ratio |")
    print("| --- | --- | --- | --- | --- | --- |")
    b50, b95 = med(dk), pct(dk, 95)
    for name, xs in (("service, execute only (%d clients)" % r["clients"], lat),
                     ("service, create + execute (%d clients)" % r["clients"], tot),
                     ("`docker run -d` + `docker exec`, sequential", dk)):
        print("| %s | %d | %.1f | %.1f | %.3f× | %.3f× |" % (name, len(xs), med(xs),
                                                          pct(xs, 95), med(xs) / b50,
                                                          pct(xs, 95) / b95))
    print()
    print("Acquires: %s.\n" % ", ".join(a.split("{", 1)[1] for a in r["acquires"]))


# ------------------------------------------------------------------- threads
def threads_phase(build, maximum, checkpoints):
    base = tempfile.mkdtemp(prefix="yxbdens-")
    nusers = max(1, (maximum + 999) // 1000)
    users = ["u%03d" % i for i in range(nusers)]
    svc = Svc(build, base, users=users, YUXI_SANDBOX_IMAGE=IMAGE,
              YUXI_THREAD_DISK_QUOTA="0", YUXI_POOL_SIZE="0",
              YUXI_SANDBOX_UID_RANGE="2000000000-%d" % (2000000000 + 2 * maximum + 1000))
    res = {"max": maximum, "checkpoints": []}
    OUT["threads"] = res
    try:
        svc.start()
        made = 0
        for cp in sorted(set(checkpoints + [maximum])):
            jobs = [("%s-%04d" % (users[i // 1000], i % 1000), users[i // 1000])
                    for i in range(made, cp)]
            t0 = time.monotonic()
            # a kept-alive session per client thread, and only the status
            # kept: 100,000 responses held would hold as many sockets
            bad = [x for x, r in parallel(
                4, jobs, lambda j: svc.request(j[1], "POST", "/api/threads",
                                               json={"thread_id": j[0]},
                                               session=client_session()).status_code)
                if isinstance(r, Exception) or r != 201]
            c = {"threads": cp, "made_s": time.monotonic() - t0, "made": cp - made,
                 "bad": len(bad)}
            made = cp
            sys.stderr.write("threads: %d on disk (%d failed), %.0f s\n" % (
                cp, len(bad), c["made_s"]))
            c["list_ms"] = timed(lambda: kget(svc, "u000", "/api/threads"))
            c["list_n"] = len(svc.request("u000", "GET", "/api/threads").json()["threads"])
            c["get_ms"] = timed(lambda: kget(svc, "u000", "/api/threads/u000-0007"))
            xs = []
            for k in range(20):
                tid = "x%06d-%02d" % (cp, k)
                t0 = time.perf_counter()
                r = svc.request("admin", "POST", "/api/threads", json={"thread_id": tid})
                xs.append((time.perf_counter() - t0) * 1000)
                assert r.status_code == 201, r.text
                svc.request("admin", "DELETE", "/api/threads/" + tid)
            c["create_ms"] = med(xs)
            c["metrics_ms"] = timed(lambda: kget(svc, None, "/metrics"))
            c["admin_users_ms"] = timed(lambda: kget(svc, "admin", "/api/admin/users"))
            svc.halt()
            t0 = time.monotonic()
            svc.start()
            c["restart_s"] = time.monotonic() - t0
            res["checkpoints"].append(c)
    finally:
        svc.stop()
        shutil.rmtree(base, ignore_errors=True)
    report_threads(res)


def report_threads(r):
    print("### Threads on disk (%s)\n" % time.strftime("%Y-%m-%d %H:%M"))
    print("| threads on disk | made (s) | u000's listing ms (threads) | one thread ms "
          "| create ms | /metrics ms | /api/admin/users ms | restart s |")
    print("| --- |" + " --- |" * 7)
    for c in r["checkpoints"]:
        print("| %d | %d in %.0f (%d failed) | %.1f (%d) | %.1f | %.1f | %.1f | %.1f | %.1f |" % (
            c["threads"], c["made"], c["made_s"], c["bad"], c["list_ms"], c["list_n"],
            c["get_ms"], c["create_ms"], c["metrics_ms"], c["admin_users_ms"], c["restart_s"]))
    print()


def main():
    if len(sys.argv) < 3 or sys.argv[2] not in ("live", "create", "threads"):
        sys.stderr.write(__doc__)
        return 2
    build, phase, args = sys.argv[1], sys.argv[2], sys.argv[3:]
    if phase == "live":
        n = int(args[0]) if args else 100
        cps = [int(x) for x in args[1].split(",")] if len(args) > 1 else [min(100, n), n]
        live(build, n, cps)
    elif phase == "create":
        create(build, int(args[0]) if args else 200, int(args[1]) if len(args) > 1 else 8)
    else:
        m = int(args[0]) if args else 100000
        cps = [int(x) for x in args[1].split(",")] if len(args) > 1 else [1000, 10000, m]
        threads_phase(build, m, [c for c in cps if c <= m])
    if os.environ.get("DENSITY_JSON"):
        with open(os.environ["DENSITY_JSON"], "w") as f:
            json.dump(OUT, f, indent=1, default=str)
    return 0


if __name__ == "__main__":
    sys.exit(main())
