# SPDX-License-Identifier: MIT
"""Group 6: listing hostile trees (docs/security.md).

100,000 entries in one directory, symlink loops, deep nesting, names with
control bytes and invalid UTF-8, through ls, the viewer tree, glob and
grep: bounded time and worker memory, a strictly valid UTF-8 JSON answer
that loses no name (invalid bytes: U+FFFD in "name"/"path" plus the exact
bytes percent-encoded in "raw_name"/"raw_path", which downloads the file
verbatim), `truncated` set where a cap cut the answer. Control (unsafe
broker): symlinks are followed out of the tree.
"""
import json
import os
import time
import urllib.parse

from secfix import _sec_session, stack, stats  # noqa: F401

G = 6
TIME_LIMIT = 20.0
RSS_LIMIT_KB = 256 * 1024

HOSTILE = [b"caf\xe9", b"\xff\xfe", b"\xc0\xaf", b"\xed\xa0\x80", b"\xf4\x90\x80\x80",
           b"nl\nx", b"tab\tx", b"esc\x1b[31m", b"cr\rx", b"del\x7f", b"\xe2\x80\xae.txt",
           b"quote\"x", b"back\\x", "\u65e5\u672c".encode(), b"ok.txt", b"a%2Fb",
           b"\x01\x02\x03", b"sp ace"]


def listing_calls(tid, sub="/workspace"):
    q = "thread_id=%s&path=%s" % (tid, urllib.parse.quote(sub, safe="/"))
    return [("ls", "/api/filesystem/ls?" + q, "entries"),
            ("tree", "/api/viewer/filesystem/tree?" + q, "entries"),
            ("glob", "/api/filesystem/glob?pattern=**/*&" + q, "matches"),
            ("grep", "/api/filesystem/grep?pattern=hello&" + q, "matches")]


def get_json(svc, url):
    """(status, parsed, seconds, strict): strict is False when the body is
    not valid UTF-8 JSON."""
    t0 = time.time()
    r = svc.request("alice", "GET", url, timeout=60)
    dt = time.time() - t0
    try:
        doc = json.loads(r.content.decode("utf-8", "strict"))
        strict = True
    except (UnicodeDecodeError, ValueError):
        doc, strict = None, False
    return r.status_code, doc, dt, strict


def entry_bytes(e):
    """The exact bytes of an entry's path."""
    if "raw_path" in e:
        return urllib.parse.unquote_to_bytes(e["raw_path"])
    return e["path"].encode("utf-8")


def worker_hwm(svc):
    out = 0
    for pid in svc.worker_pids():
        try:
            with open("/proc/%d/status" % pid) as f:
                for line in f:
                    if line.startswith("VmHWM:"):
                        out = max(out, int(line.split()[1]))
        except OSError:
            pass
    return out


def run_calls(svc, tid, sub, what):
    res = {}
    for name, url, key in listing_calls(tid, sub):
        st, doc, dt, strict = get_json(svc, url)
        hang = dt > TIME_LIMIT
        bad = st != 200 or not strict
        stats.case(G, escape=bad, hang=hang, what="%s %s -> %d %.1fs strict=%s" %
                   (what, name, st, dt, strict))
        assert not (bad or hang), (what, name, st, dt, strict)
        res[name] = doc
    mem = worker_hwm(svc)
    stats.case(G, leak=mem > RSS_LIMIT_KB, what="%s worker VmHWM %d kB" % (what, mem))
    assert mem <= RSS_LIMIT_KB, mem
    return res


def test_hostile_names_lossless():
    svc = stack("prod")
    tid = svc.new_thread("alice")
    ws = svc.workspace(tid)
    for i, n in enumerate(HOSTILE):
        with open(os.path.join(ws.encode(), n), "wb") as f:
            f.write(b"hello %d\n" % i)
    res = run_calls(svc, tid, "/workspace", "names")
    want = {b"/home/yuxi/user-data/workspace/" + n for n in HOSTILE}
    for name in ("ls", "tree", "glob"):
        key = "entries" if name != "glob" else "matches"
        got = {entry_bytes(e) for e in res[name][key]}
        ok = got == want
        stats.case(G, escape=not ok, what="lossless %s: missing %r" % (name, want - got))
        assert ok, (name, want - got, got - want)
    got = {entry_bytes(m) for m in res["grep"]["matches"]}
    assert got == want, want - got
    # every raw_path downloads exactly its file
    for e in res["ls"]["entries"]:
        if "raw_path" not in e:
            continue
        st, _, body = svc.raw_get("/api/filesystem/download?thread_id=%s&path=%s" %
                                  (tid, e["raw_path"]), (), who="alice")
        i = HOSTILE.index(entry_bytes(e).rsplit(b"/", 1)[1])
        ok = st == 200 and body == b"hello %d\n" % i
        stats.case(G, escape=not ok, what="raw_path download %r -> %d" % (e["raw_path"], st))
        assert ok, (e, st, body[:40])


def test_symlink_loops_and_depth():
    svc = stack("prod")
    tid = svc.new_thread("alice")
    ws = svc.workspace(tid)
    t = os.path.join(ws, "t")
    os.mkdir(t)
    os.symlink("b", os.path.join(t, "a"))
    os.symlink("a", os.path.join(t, "b"))
    os.symlink("self", os.path.join(t, "self"))
    os.symlink(".", os.path.join(t, "dot"))
    os.symlink("..", os.path.join(t, "up"))
    os.symlink("/", os.path.join(t, "root"))
    with open(os.path.join(t, "f.txt"), "w") as f:
        f.write("hello\n")
    # 300 levels of nesting, built with directory fds (paths past PATH_MAX)
    fd = os.open(t, os.O_RDONLY | os.O_DIRECTORY)
    for _ in range(300):
        os.mkdir("dddddddddddddddddddd", dir_fd=fd)
        nfd = os.open("dddddddddddddddddddd", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
        os.close(fd)
        fd = nfd
    with open(os.open("deep.txt", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd), "w") as f:
        f.write("hello deep\n")
    os.close(fd)
    res = run_calls(svc, tid, "/workspace/t", "loops+depth")
    for name, doc in res.items():
        key = "entries" if name in ("ls", "tree") else "matches"
        paths = [entry_bytes(e) for e in doc[key]]
        outside = [p for p in paths if not p.startswith(b"/home/yuxi/user-data/workspace/t")]
        looped = any(p.count(b"/dot/") > 1 or b"/up/" in p or b"/root/" in p for p in paths)
        esc = bool(outside) or looped or len(paths) != len(set(paths))
        stats.case(G, escape=esc, what="%s followed links: %r" % (name, (outside + paths)[:2]))
        assert not esc, (name, outside[:3], paths[:5])
    # the deep walks stop at the depth cap and say so
    assert res["glob"]["truncated"] is True
    stats.case(G)


def test_100k_entries():
    n_entries = int(os.environ.get("SEC_LIST_ENTRIES", "100000"))
    svc = stack("prod")
    tid = svc.new_thread("alice")
    big = os.path.join(svc.workspace(tid), "big")
    os.mkdir(big)
    fd = os.open(big, os.O_RDONLY | os.O_DIRECTORY)
    for i in range(n_entries):
        os.close(os.open("f%06d" % i, os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd))
    os.close(fd)
    res = run_calls(svc, tid, "/workspace/big", "100k")
    for name in ("ls", "tree", "glob"):
        key = "entries" if name != "glob" else "matches"
        n = len(res[name][key])
        ok = res[name]["truncated"] is True and 0 < n <= 100000
        stats.case(G, escape=not ok, what="100k %s: %d entries, truncated=%s" %
                   (name, n, res[name]["truncated"]))
        assert ok, (name, n, res[name]["truncated"])


def test_control_broker_follows_links():
    c = stack("cbroker")
    tid = c.new_thread("alice")
    ws = c.workspace(tid)
    outside = os.path.join(c.base, "outside-dir")
    os.makedirs(outside, exist_ok=True)
    with open(os.path.join(outside, "leak.txt"), "w") as f:
        f.write("hello from outside\n")
    os.symlink(outside, os.path.join(ws, "out"))
    st, doc, _, _ = get_json(c, "/api/filesystem/ls?thread_id=%s&path=/workspace/out" % tid)
    leaked = st == 200 and any(e["path"].endswith("/leak.txt") for e in doc["entries"])
    assert stats.control(G, leaked, "unsafe broker lists through a symlink"), (st, doc)
