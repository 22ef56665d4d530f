# SPDX-License-Identifier: MIT
"""The remote mode's two protections (issue 15, docs/scaling.md), each
against its control, which must leak:

1. A sandbox host believes the acting user only with the front's
   credential: without it (or with another one) every API route answers
   401, the lifecycle routes too. Control: the control daemon with
   YX_CONTROL_OFF=provcred as the host: a caller that names a user reads
   that user's files.
2. A client never reaches the hosts' own routes through the front: the
   lifecycle routes (/api/sandboxes...) are unknown paths there (404, the
   same answer as any unknown path), and the front's internal locations
   that proxy downloads to the hosts with the credential
   (/_yuxi_remote/...) are not reachable (nginx 404). Controls: the
   control daemon with YX_CONTROL_OFF=provroutes as the front (the naive
   front that passes what it does not know to a host) lists every user's
   sandboxes; a front nginx without `internal` on those locations serves
   another user's file to whoever names them.
"""
import pytest
from conftest import CONTROL, PRODUCTION, make_cluster
from test_remote import without_id
from yxsvc import engine_up

SECRET = "secret of bob"


@pytest.fixture(scope="module")
def two():
    """A cluster with a thread of bob on the first host holding a file,
    and that host."""
    if not engine_up():
        pytest.skip("no engine or no test image")
    cl = make_cluster()
    cl.start()
    f = cl.front
    for _ in range(20):	# on the first host: the naive front of the control asks it
        tid = f.new_thread("bob")
        if cl.hosts_of(tid) == [cl.provs[0].name]:
            break
    r = f.request("bob", "POST", "/api/filesystem/write",
                  json={"thread_id": tid, "path": "/outputs/s.txt", "content": SECRET})
    assert r.status_code == 201, r.text
    r = f.execute(tid, "true", who="bob")	# a sandbox on its host
    assert r.status_code == 200, r.text
    yield cl, tid, cl.prov(cl.hosts_of(tid)[0])
    cl.stop()


def host_requests(tid):
    """What a caller without the front's credential tries on a host."""
    q = "thread_id=%s&path=/outputs/s.txt" % tid
    return [("GET", "/api/filesystem/cat?" + q, {}),
            ("GET", "/api/viewer/filesystem/file?" + q, {}),
            ("GET", "/api/filesystem/download?" + q, {}),
            ("POST", "/api/execute", {"json": {"thread_id": tid, "command": "cat s.txt"}}),
            ("GET", "/api/threads/" + tid, {}),
            ("GET", "/api/sandboxes", {}),
            ("POST", "/api/sandboxes", {"json": {"thread_id": "evil"}})]


def leaked(r):
    return r.status_code < 300 and (SECRET in r.text or "sandboxes" in r.text or
                                    "sandbox_id" in r.text)


def test_host_needs_the_front_credential(two):
    cl, tid, host = two
    creds = [{}, {"Authorization": "Bearer " + "0" * 64},
             {"Authorization": "Bearer " + host.secret()[:-1] + "x"},
             {"Authorization": host.secret()}]
    n = 0
    for cred in creds:
        for m, url, kw in host_requests(tid):
            r = host.bare(m, url, headers=dict(cred, **{"X-Yuxi-User": "bob"}), **kw)
            n += 1
            assert r.status_code == 401, (cred, url, r.text)
            assert r.json()["error"]["code"] == "unauthenticated"
    # with it, the host answers as the front would have it
    r = host.request("bob", "GET", "/api/filesystem/cat?thread_id=%s&path=/outputs/s.txt" % tid)
    assert r.status_code == 200 and SECRET in r.text, r.text
    print("\n%d requests without the front's credential: all 401" % n)

    # control: a host that does not check the credential
    host.kill()
    host.binary, host.env["YX_CONTROL_OFF"] = CONTROL, "provcred"
    try:
        host.start_daemon()
        got = [host.bare(m, url, headers={"X-Yuxi-User": "bob"}, **kw)
               for m, url, kw in host_requests(tid)]
        caught = sum(leaked(r) for r in got)
        print("control provcred: %d of %d requests leaked" % (caught, len(got)))
        assert caught >= 3, [(r.status_code, r.text[:80]) for r in got]
    finally:
        host.kill()
        del host.env["YX_CONTROL_OFF"]
        host.binary = PRODUCTION
        host.start_daemon()


LIFECYCLE = [("GET", "/api/sandboxes"), ("POST", "/api/sandboxes"),
             ("GET", "/api/sandboxes/%s"), ("DELETE", "/api/sandboxes/%s"),
             ("POST", "/api/sandboxes/%s/release")]


def sandbox_of(cl, tid):
    r = cl.front.request("admin", "GET", "/api/admin/sandboxes")
    return [s["sandbox_id"] for s in r.json()["sandboxes"] if s["thread_id"] == tid][0]


def through_front(f, sid, tid, host):
    """(name, response) of what a client tries on the hosts' routes through f."""
    out = []
    for who in ("alice", "admin"):
        for m, p in LIFECYCLE:
            path = p % sid if "%s" in p else p
            kw = {"json": {"thread_id": "evil"}} if m == "POST" else {}
            out.append((who + " " + m + " " + path, f.request(who, m, path, **kw)))
    q = "thread_id=%s&path=/outputs/s.txt" % tid
    for who in ("alice", None):
        for path in ("/_yuxi_remote/%s/bob/api/filesystem/download?%s" % (host.name, q),
                     "/_yuxi_remote/%s/bob/api/viewer/filesystem/download?%s" % (host.name, q),
                     "/_yuxi_remote/%s/bob/api/sandboxes" % host.name):
            out.append(("%s GET %s" % (who, path), f.request(who, "GET", path)))
    return out


def test_front_hides_the_hosts_routes(two):
    cl, tid, host = two
    f = cl.front
    sid = sandbox_of(cl, tid)
    unknown = f.request("alice", "GET", "/api/nosuchthing")
    got = through_front(f, sid, tid, host)
    for name, r in got:
        assert r.status_code == 404, (name, r.text)
        assert not leaked(r), name
        if "/api/sandboxes" in name and "_yuxi_remote" not in name:
            assert (without_id(r.text), r.headers.get("Content-Type")) == \
                (without_id(unknown.text), unknown.headers.get("Content-Type")), name
    # the sandbox is still there
    assert sandbox_of(cl, tid) == sid
    print("\n%d requests for the hosts' routes through the front: all 404" % len(got))

    # control 1: the naive front (control daemon, provroutes)
    f.halt()
    f.binary, f.env["YX_CONTROL_OFF"] = CONTROL, "provroutes"
    try:
        f.start()
        r = f.request("alice", "GET", "/api/sandboxes")
        print("control provroutes: GET /api/sandboxes as alice -> %d, %d sandboxes" % (
            r.status_code, len(r.json().get("sandboxes", [])) if r.status_code == 200 else 0))
        assert r.status_code == 200 and any(s["owner"] == "bob" for s in r.json()["sandboxes"])
    finally:
        f.halt()
    # control 2: the production front, its nginx without `internal` there
    del f.env["YX_CONTROL_OFF"]
    f.binary = PRODUCTION
    f.edit_remote = lambda text: text.replace("\tinternal;\n", "")
    try:
        f.start()
        rs = [r for name, r in through_front(f, sid, tid, host) if "_yuxi_remote" in name]
        caught = sum(r.status_code == 200 and SECRET in r.text for r in rs)
        print("control without internal: %d of %d downloads of bob's file leaked" % (
            caught, len(rs)))
        assert caught >= 2, [(r.status_code, r.text[:80]) for r in rs]
    finally:
        f.halt()
        del f.edit_remote
        f.start()
