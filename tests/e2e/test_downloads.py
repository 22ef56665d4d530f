# SPDX-License-Identifier: MIT
"""Downloads through nginx (X-Accel-Redirect + sendfile) from both the agent
and the viewer endpoint: exact bytes, symlinks planted by the sandbox
refused, awkward file names served exactly with an RFC 6266/5987
Content-Disposition (or refused with a JSON error), directories refused."""
import hashlib
import os
import re
import urllib.parse

import pytest

from conftest import drop_instance, engine_up, make_instance

pytestmark = pytest.mark.skipif(not engine_up(), reason="no docker engine or test image")

ENDPOINTS = ("/api/filesystem/download", "/api/viewer/filesystem/download")
UPLOAD_LIMIT = 8 * 1024 * 1024


@pytest.fixture(scope="module")
def inst():
    s = make_instance(YUXI_UPLOAD_LIMIT=UPLOAD_LIMIT)
    try:
        s.start()
        yield s
    finally:
        drop_instance(s)


@pytest.fixture
def tid(inst):
    t = inst.new_thread()
    yield t
    inst.request("alice", "DELETE", "/api/threads/" + t)


def q(tid, **kw):
    kw["thread_id"] = tid
    return urllib.parse.urlencode(kw, quote_via=urllib.parse.quote)


def download(inst, ep, tid, path):
    return inst.request("alice", "GET", ep + "?" + q(tid, path=path))


def sh(inst, tid, command):
    r = inst.execute(tid, command)
    assert r.status_code == 200, r.text
    assert r.json()["exit_code"] == 0, r.json()
    return r.json()["output"]


# RFC 5987 ext-value for UTF-8: attr-char / pct-encoded
EXT_VALUE = re.compile(r"^UTF-8''((?:[A-Za-z0-9!#$&+.^_`|~-]|%[0-9A-Fa-f]{2})*)$")
QUOTED = re.compile(r'^"((?:[^"\\\x00-\x1f\x7f]|\\[^\x00-\x1f\x7f])*)"$')


TOKEN = r"[!#$%&'*+.^_`|~0-9A-Za-z-]+"
PARAM = re.compile(r';\s*(' + TOKEN + r')\s*=\s*("(?:[^"\\\x00-\x1f\x7f]|\\[^\x00-\x1f\x7f])*"|'
                   + r"[!#$%&'*+.^_`|~0-9A-Za-z-]+" + r"'[A-Za-z-]*'[^;\s]*|" + TOKEN + r')\s*')


def disposition_name(cd):
    """Parse an attachment Content-Disposition (RFC 6266 grammar); returns
    the filename* name (RFC 5987, UTF-8)."""
    assert "\r" not in cd and "\n" not in cd, repr(cd)
    assert all(0x20 <= ord(ch) < 0x7f for ch in cd), "non-ASCII header: %r" % cd
    m = re.match(r"\s*(" + TOKEN + r")\s*", cd)
    assert m and m.group(1).lower() == "attachment", cd
    pos, params = m.end(), {}
    while pos < len(cd):
        pm = PARAM.match(cd, pos)
        assert pm, "unparseable at %d: %r" % (pos, cd)
        k = pm.group(1).lower()
        assert k not in params, "duplicate %s: %r" % (k, cd)
        params[k] = pm.group(2)
        pos = pm.end()
    if "filename" in params:
        assert QUOTED.match(params["filename"]) or re.fullmatch(TOKEN, params["filename"]), cd
    m = EXT_VALUE.match(params.get("filename*", ""))
    assert m, "no RFC 5987 filename*: %r" % cd
    return urllib.parse.unquote(m.group(1), encoding="utf-8", errors="strict")


def test_binary_bytes_identical(inst, tid):
    blob = os.urandom(3 * 1024 * 1024)
    r = inst.request("alice", "POST", "/api/filesystem/upload?" + q(tid, path="/outputs/blob.bin"),
                     data=blob, headers={"Content-Type": "application/octet-stream"})
    assert r.status_code == 201, r.text
    assert r.json()["size"] == len(blob)
    want = hashlib.sha256(blob).hexdigest()
    for ep in ENDPOINTS:
        d = download(inst, ep, tid, "/outputs/blob.bin")
        assert d.status_code == 200, d.text[:300]
        assert int(d.headers["Content-Length"]) == len(blob)
        assert hashlib.sha256(d.content).hexdigest() == want, ep
        assert disposition_name(d.headers["Content-Disposition"]) == "blob.bin"
        assert "X-Accel-Redirect" not in d.headers


def host_passwd():
    with open("/etc/passwd", "rb") as f:
        return f.read()


def test_symlinks_planted_in_sandbox_refused(inst, tid):
    # the command path policy is no security boundary: spell the targets
    # so that it does not see them, as a hostile agent would
    sh(inst, tid, "echo real > real.txt && mkdir -p d && echo inner > d/f.txt && "
       "s=$(printf '\\057') && e=${s}etc && ln -s $e/passwd leak.txt && "
       "ln -s /home/yuxi/user-data/workspace/real.txt alias.txt && "
       "ln -s real.txt rel.txt && ln -s $e etcdir && ln -s d dlink && "
       "ln -s /home/yuxi/user-data/workspace/d dabs")
    ws = os.path.join(inst.saves, "threads", tid, "user-data", "workspace")
    assert os.readlink(os.path.join(ws, "leak.txt")) == "/etc/passwd"
    assert os.readlink(os.path.join(ws, "etcdir")) == "/etc"
    assert os.readlink(os.path.join(ws, "dlink")) == "d"
    passwd = host_passwd()
    first_line = passwd.split(b"\n")[0]
    for ep in ENDPOINTS:
        ok = download(inst, ep, tid, "real.txt")
        assert ok.status_code == 200 and ok.content == b"real\n", (ep, ok.text[:200])
        for path in ("leak.txt", "alias.txt", "rel.txt", "etcdir/passwd", "dlink/f.txt",
                     "dabs/f.txt", "/workspace/etcdir/passwd"):
            r = download(inst, ep, tid, path)
            assert 400 <= r.status_code < 500, (ep, path, r.status_code, r.content[:200])
            assert first_line not in r.content and b"root:x:0:0" not in r.content, (ep, path)
            if r.headers.get("Content-Type", "").startswith("application/json"):
                assert "error" in r.json()


NAMES = ["q?mark.txt", "pct%41%2F.txt", "hash#tag.txt", "two  spaces .txt",
         "na\u00efve \u6587\u4ef6.txt", "semi;colon,\"quote\".txt", "back\\slash.txt"]


def test_awkward_names_served_exactly(inst, tid):
    for i, name in enumerate(NAMES):
        body = ("content %d of %s\n" % (i, name)).encode()
        r = inst.request("alice", "POST", "/api/filesystem/upload?" + q(tid, path="/outputs/" + name),
                         data=body, headers={"Content-Type": "application/octet-stream"})
        assert r.status_code == 201, (name, r.text)
        assert r.json()["path"] == "/home/yuxi/user-data/outputs/" + name
        for ep in ENDPOINTS:
            d = download(inst, ep, tid, "/outputs/" + name)
            assert d.status_code == 200, (ep, name, d.status_code, d.text[:200])
            assert d.content == body, (ep, name)
            assert disposition_name(d.headers["Content-Disposition"]) == name, \
                (name, d.headers["Content-Disposition"])


def test_control_char_names_exact_or_clear_error(inst, tid):
    # made from inside the sandbox: the API would not let a client create them
    names = ["cr\rlf\nmid.txt", "tab\there.txt", "lf\nend.txt"]
    sh(inst, tid, "printf 'cr' > \"$(printf 'cr\\rlf\\nmid.txt')\" && "
       "printf 'tab' > \"$(printf 'tab\\there.txt')\" && "
       "printf 'lf' > \"$(printf 'lf\\nend.txt')\"")
    host = os.path.join(inst.saves, "threads", tid, "user-data", "workspace")
    assert set(names) <= set(os.listdir(host)), os.listdir(host)
    want = {"cr\rlf\nmid.txt": b"cr", "tab\there.txt": b"tab", "lf\nend.txt": b"lf"}
    for name in names:
        for ep in ENDPOINTS:
            d = download(inst, ep, tid, name)
            if d.status_code == 200:
                assert d.content == want[name], (ep, repr(name))
                assert disposition_name(d.headers["Content-Disposition"]) == name
            else:
                assert 400 <= d.status_code < 500, (ep, repr(name), d.status_code)
                assert d.headers["Content-Type"].startswith("application/json"), d.text[:200]
                assert d.json()["error"]["code"] in ("invalid_path", "bad_request",
                                                     "file_not_found", "path_not_allowed")


def test_directories_refused(inst, tid):
    sh(inst, tid, "mkdir -p sub/deeper")
    for ep in ENDPOINTS:
        for path in ("/workspace", "sub", "sub/deeper", "/home/yuxi/user-data",
                     "/outputs", "/home/yuxi/skills"):
            r = download(inst, ep, tid, path)
            assert r.status_code == 400, (ep, path, r.status_code, r.text[:200])
            assert r.json()["error"]["code"] == "is_directory", (ep, path)
