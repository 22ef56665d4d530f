# SPDX-License-Identifier: MIT
"""Group 4: downloads (docs/security.md).

Files with awkward names, as the sandbox can create them, downloaded through
both download endpoints: the right bytes, an attachment disposition whose
filename* decodes to the name, no injected header, no X-Accel-Redirect
leaking to the client; CR/LF and control bytes refused; symlinks, FIFOs and
directories refused. Control "headers" (raw X-Accel-Redirect and
Content-Disposition): nginx serves the wrong file or none; control
"path,headers": a CR/LF name injects a response header.
"""
import os
import urllib.parse

from secfix import _sec_session, stack, stats  # noqa: F401

G = 4

NAMES = [b"a?b.txt", b"100%.txt", b"%41.txt", b"A.txt", b"a#b.txt", b"with space.txt",
         b"\xff\xfe.txt", b'q"uote;x=1.txt', b"back\\slash.txt",
         "\u00fc-\u65e5\u672c.txt".encode(), b"+plus.txt", b"semi;colon.txt",
         b"amp&eq=.txt", b"..txt", b"-dash", b"%2e%2e", b"%0d%0a.txt", b"~tilde",
         b"a%2fb.txt", b"\xe2\x80\xae.txt", b"x" * 255, b"star*.txt", b"'single'.txt",
         b"<script>.txt", b"a\\r\\n.txt", b"caf\xe9.txt", b"\xc0\xae.txt"]
BAD_NAMES = [b"evil\r\nSet-Cookie: pwn=1\r\nX-Injected: 1.txt", b"tab\there.txt",
             b"nl\nX-Injected: 1", b"cr\rX-Injected: 1", b"esc\x1b[31m.txt", b"del\x7f.txt"]
EPS = ("/api/filesystem/download", "/api/viewer/filesystem/download")


def put(ws, name, data):
    with open(os.path.join(ws.encode(), name), "wb") as f:
        f.write(data)


def dl(svc, tid, name, ep, sub=b"/workspace/"):
    q = "thread_id=%s&path=%s" % (tid, urllib.parse.quote(sub + name, safe=""))
    return svc.raw_get(ep + "?" + q, (), who="alice")


def cd_name(hdrs):
    """The filename* of Content-Disposition, percent-decoded to bytes."""
    for k, v in hdrs:
        if k == "content-disposition":
            _, _, star = v.partition(b"filename*=UTF-8''")
            return urllib.parse.unquote_to_bytes(star.decode("ascii"))
    return None


def injected(hdrs):
    return any(k in ("set-cookie", "x-injected", "x-accel-redirect") for k, _ in hdrs)


def setup_thread(svc):
    tid = svc.new_thread("alice")
    ws = svc.workspace(tid)
    for i, n in enumerate(NAMES + BAD_NAMES):
        put(ws, n, b"CONTENT-%d-" % i + n)
    return tid, ws


def test_awkward_names_exact_bytes():
    svc = stack("prod")
    tid, ws = setup_thread(svc)
    for i, n in enumerate(NAMES):
        for ep in EPS:
            st, hdrs, body = dl(svc, tid, n, ep)
            ok = st == 200 and body == b"CONTENT-%d-" % i + n and cd_name(hdrs) == n and \
                not injected(hdrs)
            stats.case(G, escape=not ok, what="%r %s -> %d %r" % (n, ep, st, body[:30]))
            assert ok, (n, ep, st, hdrs, body[:80])


def test_crlf_and_control_names_refused():
    svc = stack("prod")
    tid, ws = setup_thread(svc)
    for n in BAD_NAMES:
        for ep in EPS:
            st, hdrs, body = dl(svc, tid, n, ep)
            ok = st == 400 and not injected(hdrs) and b"CONTENT" not in body
            stats.case(G, escape=not ok, what="%r %s -> %d" % (n, ep, st))
            assert ok, (n, ep, st, hdrs)
    # injection attempts through the parameter itself
    for p in ("a.txt%0d%0aSet-Cookie:%20pwn=1", "a.txt%0aX-Injected:%201",
              "a.txt%250d%250aSet-Cookie:%20x", "%0d%0a%0d%0aHTTP/1.1%20200%20OK"):
        for ep in EPS:
            st, hdrs, body = svc.raw_get(ep + "?thread_id=%s&path=%s" % (tid, p), (),
                                         who="alice")
            ok = st in (400, 404) and not injected(hdrs)
            stats.case(G, escape=not ok, what="param %s -> %d" % (p, st))
            assert ok, (p, ep, st, hdrs)


def test_non_files_refused():
    svc = stack("prod")
    tid, ws = setup_thread(svc)
    os.symlink("/etc/passwd", os.path.join(ws, "lnk"))
    os.symlink("/etc", os.path.join(ws, "ldir"))
    os.symlink("..", os.path.join(ws, "up"))
    os.mkfifo(os.path.join(ws, "fifo"))
    os.mkdir(os.path.join(ws, "dir"))
    with open(os.path.join(svc.user_data(tid), "secret.txt"), "w") as f:
        f.write("PARENT-SECRET")
    for n in (b"lnk", b"ldir/passwd", b"up/secret.txt", b"fifo", b"dir", b"ldir"):
        for ep in EPS:
            st, hdrs, body = dl(svc, tid, n, ep)
            ok = st in (400, 403, 404) and b"root:x:" not in body and \
                b"PARENT-SECRET" not in body and not injected(hdrs)
            stats.case(G, escape=not ok, what="%r %s -> %d" % (n, ep, st))
            assert ok, (n, ep, st, body[:80])


def test_control_headers_leak():
    c = stack("control", off="headers")
    tid, ws = setup_thread(c)
    wrong = 0
    for i, n in enumerate(NAMES):
        st, hdrs, body = dl(c, tid, n, EPS[0])
        wrong += st != 200 or body != b"CONTENT-%d-" % i + n or cd_name(hdrs) != n
    assert stats.control(G, wrong >= 3, "headers off: %d names misserved" % wrong), wrong
    # a "%41" name is served with A's bytes: the wrong file
    i = NAMES.index(b"%41.txt")
    st, _, body = dl(c, tid, b"%41.txt", EPS[0])
    assert stats.control(G, body.startswith(b"CONTENT-%d-" % NAMES.index(b"A.txt")),
                         "headers off: %41 -> A"), (st, body[:40], i)


def test_control_crlf_injection():
    """With the path filter off, the header filter alone still refuses
    CR/LF; with both off the header is injected."""
    c = stack("control", off="path")
    tid, ws = setup_thread(c)
    for n in BAD_NAMES[:4]:
        st, hdrs, body = dl(c, tid, n, EPS[0])
        ok = not injected(hdrs)
        stats.case(G, escape=not ok, what="path off, headers on: %r -> %d" % (n, st))
        assert ok, (n, st, hdrs)
    c2 = stack("control", off="path,headers")
    tid, ws = setup_thread(c2)
    hit = 0
    for n in BAD_NAMES[:4]:
        st, hdrs, body = dl(c2, tid, n, EPS[0])
        hit += injected(hdrs) or st == 502
    assert stats.control(G, hit >= 1, "path,headers off: %d injected" % hit), hit
