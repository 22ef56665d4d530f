# SPDX-License-Identifier: MIT
"""Group 2: path parsing (docs/security.md).

The encoded-traversal battery, NUL and control bytes, length and depth
bombs and prefix confusion, sent to every endpoint that takes a path: the
decision must be a refusal (400 invalid_path or 403 path_not_allowed) and
the same on every endpoint. Names that only look encoded ("%2e%2e" after
the one decoding) are ordinary names and must stay inside. Control: the
canonicaliser resolves ".." lexically -> the decisions change and a file
outside the requested directory is read.
"""
import json
import os
import stat
import urllib.parse

from secfix import _sec_session, stack, stats  # noqa: F401

G = 2

TRAVERSAL = [
    b"..", b"../", b"../..", b"../etc/passwd", b"../../../../../../etc/passwd",
    b"./..", b"a/../b", b"a/b/../../..", b"/workspace/../secret.txt",
    b"/home/yuxi/user-data/../skills/python-basics/SKILL.md",
    b"/home/yuxi/user-data/..", b"/home/yuxi/user-data/workspace/../../../etc/passwd",
    b"/home/yuxi/skills/../user-data/secret.txt", b"/skills/..", b"/mnt/user-data/../..",
    b"x/..", b"x/../", b"/./../", b"//..//..//etc",
    b"\x00", b"a\x00b", b"/workspace/a.txt\x00.png", b"\x00../etc/passwd",
    b"a\nb", b"a\rb", b"a\r\nb", b"\t", b"a\x1bb", b"a\x7fb", b"a\x01", b"\x1f",
    b"a" * 256, b"/workspace/" + b"b" * 300, b"c" * 5000, b"d/" * 2100,
    b"/workspace/" + b"e/" * 2100, (b"f" * 255 + b"/") * 17,
    b"/home/yuxi/user-data-x/a", b"/home/yuxi/user-datax", b"/home/yuxi/skills-x",
    b"/home/yuxi/skillsx/a", b"/workspacex", b"/workspace-x/a", b"/mnt/user-data2",
    b"/mnt", b"/mnt/", b"/home/yuxi", b"/home/yuxi/", b"/home", b"/HOME/yuxi/user-data",
    b"/home//yuxi//user-data-x", b"/etc/passwd", b"//etc/passwd", b"/proc/self/environ",
    b"/_yuxi_files/x", b"/./", b"//", b"/outputs-x", b"/uploadsx/a", b"/attachments2",
    b"/skills2/x", b"/home/yuxi/user-data\\..", b"/home/yuxi/./skills/../../etc",
]


def endpoints(tid, path):
    """(name, method, url, kwargs) for every endpoint that takes a path."""
    # '/' stays raw so the bombs fit nginx's 8 KB request line
    q = "thread_id=%s&path=%s" % (tid, urllib.parse.quote(path, safe="/"))
    out = [
        ("ls", "GET", "/api/filesystem/ls?" + q, {}),
        ("cat", "GET", "/api/filesystem/cat?" + q, {}),
        ("glob", "GET", "/api/filesystem/glob?pattern=*&" + q, {}),
        ("grep", "GET", "/api/filesystem/grep?pattern=x&" + q, {}),
        ("upload", "POST", "/api/filesystem/upload?" + q,
         {"data": b"pwned", "headers": {"Content-Type": "application/octet-stream"}}),
        ("download", "GET", "/api/filesystem/download?" + q, {}),
        ("viewer_tree", "GET", "/api/viewer/filesystem/tree?" + q, {}),
        ("viewer_file", "GET", "/api/viewer/filesystem/file?" + q, {}),
        ("viewer_download", "GET", "/api/viewer/filesystem/download?" + q, {}),
    ]
    try:
        s = path.decode("utf-8")
    except UnicodeDecodeError:
        return out
    hdr = {"Content-Type": "application/json"}
    out.append(("write", "POST", "/api/filesystem/write",
                {"data": json.dumps({"thread_id": tid, "path": s, "content": "pwned",
                                     "overwrite": True}), "headers": hdr}))
    out.append(("edit", "POST", "/api/filesystem/edit",
                {"data": json.dumps({"thread_id": tid, "path": s, "old_string": "SECRET",
                                     "new_string": "pwned"}), "headers": hdr}))
    return out


def plant(svc):
    tid = svc.new_thread("alice")
    ud = svc.user_data(tid)
    svc.workspace(tid)
    with open(os.path.join(ud, "secret.txt"), "w") as f:
        f.write("PARENT-SECRET\n")
    return tid


def snapshot(root):
    out = {}
    for d, dirs, files in os.walk(root):
        for n in files:
            p = os.path.join(d, n)
            if not stat.S_ISREG(os.lstat(p).st_mode):
                continue	# FIFOs and links planted by other tests
            if n == "user-data.img":
                continue	# a thread's disk image: its files are walked through its mount
            with open(p, "rb") as f:
                out[p] = f.read()
    return out


def decide(svc, tid, path):
    """{endpoint: (status, code)} and the raw bodies."""
    res, bodies = {}, {}
    for name, m, u, kw in endpoints(tid, path):
        r = svc.request("alice", m, u, **kw)
        try:
            code = r.json()["error"]["code"]
        except (ValueError, KeyError, TypeError):
            code = ""
        res[name] = (r.status_code, code)
        bodies[name] = r.content
    return res, bodies


# "/" spelled otherwise is the namespace root: the listings (ls, glob, grep,
# viewer tree) take it and show the two roots, nothing above them; every
# other endpoint refuses it like any path outside the roots.
ROOT_SPELLINGS = {b"/./", b"//"}
ROOT_LISTINGS = {"ls", "glob", "grep", "viewer_tree"}


def root_answer_ok(name, status, body):
    if name not in ROOT_LISTINGS:
        return None
    if status != 200:
        return False
    j = json.loads(body)
    paths = sorted(e["path"] for e in j.get("entries", j.get("matches", [])))
    if name == "grep":	# lines of the files below the two roots, only
        return j.get("path") == "/" and all(
            p.startswith(("/home/yuxi/user-data/", "/home/yuxi/skills/")) for p in paths)
    return j.get("path") == "/" and paths in (
        [], ["/home/yuxi/skills", "/home/yuxi/user-data"])


def test_traversal_battery_same_refusal():
    svc = stack("prod")
    tid = plant(svc)
    before = snapshot(svc.saves)
    for path in TRAVERSAL:
        res, bodies = decide(svc, tid, path)
        if path in ROOT_SPELLINGS:
            ok = {n: root_answer_ok(n, res[n][0], bodies[n]) for n in res}
            if not all(ok[n] for n in ROOT_LISTINGS):
                for name in res:
                    stats.case(G, escape=True, what="%r %s -> %r" % (path, name, res[name]))
                assert False, (path, res)
            res = {n: v for n, v in res.items() if ok[n] is None}
            for name in ROOT_LISTINGS:
                stats.case(G, what="%r %s -> root listing" % (path, name))
        decisions = set(res.values())
        refused = all(st in (400, 403) and code in ("invalid_path", "path_not_allowed")
                      for st, code in decisions)
        served = any(b"PARENT-SECRET" in b or b"root:x:" in b for b in bodies.values())
        esc = served or not refused or len(decisions) != 1
        for name in res:
            stats.case(G, escape=esc, what="%r %s -> %r" % (path[:40], name, res[name]))
        assert not esc, (path[:60], res)
    # nothing was written anywhere by the battery
    after = snapshot(svc.saves)
    changed = [p for p in set(before) | set(after)
               if before.get(p) != after.get(p) and not p.endswith("thread.json")]
    stats.case(G, escape=bool(changed), what="files changed: %r" % changed[:3])
    assert changed == []


LITERAL = [b"%2e%2e", b"%2e%2e/secret.txt", b"%252e%252e%252fsecret.txt", b"..%2fsecret.txt",
           b"%c0%ae%c0%ae/secret.txt", b"\xc0\xae\xc0\xae/secret.txt", b"..\\secret.txt",
           b"\xe2\x80\xa4\xe2\x80\xa4/secret.txt", b"\xef\xbc\x8e\xef\xbc\x8e/secret.txt",
           b"...", b"....//secret.txt", b".%2e/secret.txt"]


def test_encoded_names_stay_literal():
    """After the one decoding, these are ordinary names inside workspace."""
    svc = stack("prod")
    tid = plant(svc)
    for path in LITERAL:
        res, bodies = decide(svc, tid, path)
        served = any(b"PARENT-SECRET" in b for b in bodies.values())
        for name, (st, code) in res.items():
            # reads: not found; writes create the literal name inside
            ok = not served and st in (200, 201, 400, 404, 409) and st < 500
            stats.case(G, escape=not ok, what="literal %r %s -> %d" % (path, name, st))
            assert ok, (path, name, st, code)
    # everything created lies inside user-data/workspace
    ws = svc.workspace(tid)
    for d, _, files in os.walk(svc.user_data(tid)):
        for n in files:
            p = os.path.join(d, n)
            assert p == os.path.join(svc.user_data(tid), "secret.txt") or \
                p.startswith(ws + os.sep), p
    with open(os.path.join(svc.user_data(tid), "secret.txt")) as f:
        assert f.read() == "PARENT-SECRET\n"


def test_query_bombs():
    """Oversized or malformed query strings: a clean 4xx, never 5xx."""
    svc = stack("prod")
    tid = plant(svc)
    cases = ["thread_id=%s&path=%s" % (tid, "a" * 9000),
             "thread_id=%s&" % tid + "&".join("k%d=v" % i for i in range(40)) + "&path=x",
             "thread_id=%s&path=%%zz" % tid, "thread_id=%s&path=%%" % tid,
             "thread_id=%s&path=%%2" % tid, "thread_id=%s&pa%%00th=x" % tid,
             "thread_id=%s&path=a&path=../secret.txt" % tid,
             "thread_id=%s&path=../secret.txt&path=a" % tid]
    for q in cases:
        for ep in ("ls", "cat", "viewer/filesystem/file"):
            base = "/api/" + (ep if ep.startswith("viewer") else "filesystem/" + ep)
            st, _, body = svc.raw_get(base + "?" + q, (), who="alice")
            ok = 400 <= st < 500 and b"PARENT-SECRET" not in body
            stats.case(G, escape=not ok, what="query %r %s -> %d" % (q[:40], ep, st))
            assert ok, (q[:80], ep, st, body[:200])


def test_control_path_leaks():
    c = stack("control", off="path")
    tid = plant(c)
    changed = 0
    for path in TRAVERSAL[:20]:
        res, bodies = decide(c, tid, path)
        refused = all(st in (400, 403) for st, _ in res.values())
        changed += not refused
    assert stats.control(G, changed >= 5, "path off: %d decisions changed" % changed), changed
    r = c.request("alice", "GET", "/api/filesystem/cat?thread_id=%s&path=%s" %
                  (tid, urllib.parse.quote("../secret.txt")))
    # served from outside the requested directory (the battery's writes may
    # already have replaced its content: that is a leak as well)
    assert stats.control(G, r.status_code == 200 and
                         '"/home/yuxi/user-data/secret.txt"' in r.text, "path off: parent read"), r.text
    # even then the namespace and the broker confine: /etc/passwd never served
    for p in (b"../../../../../../etc/passwd", b"/workspace/../../../etc/passwd"):
        res, bodies = decide(c, tid, p)
        esc = any(b"root:x:" in b for b in bodies.values())
        stats.case(G, escape=esc, what="control path: %r" % p)
        assert not esc
