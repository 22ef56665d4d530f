# SPDX-License-Identifier: MIT
"""Group 1: identity and authorization (docs/security.md).

Production must answer 401 without identity, ignore spoofed identity
headers on every location of both shipped nginx configurations, answer
another user's thread exactly like an unknown one (and wake no container),
refuse malicious thread ids with 400 before any file or engine access, and
never serve the internal download locations directly. Each protection is
then switched off in the control daemon / control nginx config and the
leak must be observed there.
"""
import os
import secrets

import pytest

import fcgi
import routes
from secfix import _sec_session, engine_up, stack, stats  # noqa: F401

G = 1


def thread_endpoints(tid, path="/workspace/a.txt"):
    """Every endpoint that takes a thread id: (name, method, url, kwargs),
    one per route of the service's route table that needs the caller's
    thread (tests/lib/routes.py), and the viewer tree at the namespace root."""
    reqs = routes.thread_requests(tid, path)
    reqs.insert(-1, ("viewer_tree_root", "GET",
                     "/api/viewer/filesystem/tree?path=/&thread_id=" + tid, {}))
    return reqs


# every /api route that needs an identity, from the route table
API_ROUTES = routes.api_routes("standalone")


def alice_thread(svc):
    tid = svc.new_thread("alice")
    ws = svc.workspace(tid)
    with open(os.path.join(ws, "a.txt"), "w") as f:
        f.write("secret of alice\n")
    return tid


# ------------------------------------------------------------ no identity
@pytest.mark.parametrize("conf", ["dev", "prod"])
def test_no_identity_401(conf):
    svc = stack("prod", conf=conf)
    bad = [None, "Bearer ", "Bearer " + "x" * 48, "Basic YWxpY2U6YWxpY2U=",
           "bearer " + svc.tokens["alice"][:-1]]
    for method, url in API_ROUTES:
        for auth in bad:
            h = {} if auth is None else {"Authorization": auth}
            r = svc.request(None, method, url, headers=h, json={})
            ok = r.status_code == 401
            stats.case(G, escape=not ok, what="%s %s %s -> %d" % (conf, method, url, r.status_code))
            assert ok, (conf, method, url, auth, r.status_code, r.text)


# ----------------------------------------------------- spoofed identities
SPOOFS = [
    [b"X-Yuxi-User: alice"], [b"x-yuxi-user: alice"], [b"X-YUXI-USER: alice"],
    [b"X_Yuxi_User: alice"], [b"X-Yuxi_User: alice"], [b"Yuxi-User: alice"],
    [b"Yuxi_User: alice"], [b"YUXI_USER: alice"],
    [b"X-Yuxi-User: alice", b"X-Yuxi-User: alice"],
    [b"X-Yuxi-User: bob", b"X-Yuxi-User: alice"],
    [b"X-Yuxi-User:"], [b"X-Yuxi-User: "], [b"X-Yuxi-User: " + b"a" * 6000],
    [b"X-Yuxi-User: alice", b"X-Yuxi-Role: admin"], [b"X-Yuxi-Role: admin"],
    [b"X-Auth-User: alice"], [b"X-Auth-User: alice", b"X-Auth-Role: admin"],
    [b"X-Remote-User: alice"], [b"Remote-User: alice"],
    [b"X-Yuxi-User: alice\t"], [b"X-Yuxi-User:  alice  "],
]


def locations(svc, tid):
    """A URL in every location block of the shipped config (and admin)."""
    urls = ["/api/threads", "/api/threads/" + tid,
            "/api/filesystem/cat?thread_id=%s&path=/workspace/a.txt" % tid,
            "/api/admin/sandboxes", "/healthz", "/metrics",
            "/_yuxi_files/%s/user-data/workspace/a.txt" % tid,
            "/_yuxi_skills/python-basics/SKILL.md", "/", "/nothing"]
    if svc.conf == "prod":
        urls.append("/_yuxi_auth")
    return urls


def spoof_escaped(svc, tid, url, status, body, as_bob):
    """Did a spoofed header act as alice (or admin)?"""
    if tid.encode() in body or b"secret of alice" in body:
        return True
    if url.startswith("/api/admin") and status == 200:
        return True
    if not as_bob and url.startswith("/api/") and status not in (401, 404):
        return True
    return False


@pytest.mark.parametrize("conf", ["dev", "prod"])
def test_spoofed_identity_headers(conf):
    svc = stack("prod", conf=conf)
    tid = alice_thread(svc)
    for url in locations(svc, tid):
        for spoof in SPOOFS:
            for who in (None, "bob"):
                st, _, body = svc.raw_get(url, spoof, who=who)
                esc = spoof_escaped(svc, tid, url, st, body, who == "bob")
                stats.case(G, escape=esc, what="%s %s %r -> %d" % (conf, url, spoof, st))
                assert not esc, (conf, url, spoof, who, st, body[:200])
    # the real identity still works: the test can tell identities apart
    st, _, body = svc.raw_get("/api/threads", (), who="alice")
    assert st == 200 and tid.encode() in body


def test_spoofed_identity_fastcgi_direct():
    """Worker level, no nginx: HTTP_* params never become the identity."""
    svc = stack("prod")
    tid = alice_thread(svc)
    cases = [  # (params, the identity the worker must see: None or a user)
        ([("HTTP_X_YUXI_USER", "alice")], None),
        ([("HTTP_X_YUXI_USER", "alice"), ("HTTP_X_YUXI_ROLE", "admin")], None),
        ([("YUXI_USER", ""), ("HTTP_X_YUXI_USER", "alice")], None),
        ([("YUXI_USER", "bob"), ("YUXI_USER", "alice")], "bob"),
        ([("YUXI_USER", "bob"), ("HTTP_X_YUXI_USER", "alice")], "bob"),
        ([("YUXI_USER", "alice\nadmin")], None), ([("YUXI_USER", "a" * 100)], None),
        ([("YUXI_USER", ".alice")], None), ([("YUXI_USER", "ali ce")], None),
        ([("YUXI_USER", "alice"), ("YUXI_ROLE", "Admin")], "alice"),
        ([("YUXI_USER", "alice"), ("YUXI_ROLE", "admin ")], "alice"),
        ([("YUXI_USER", "alice"), ("HTTP_X_YUXI_ROLE", "admin")], "alice"),
    ]
    for extra, want in cases:
        st, _, body = fcgi.request(svc.sock, fcgi.api_params("GET", "/api/threads", extra=extra))
        st2, _, _ = fcgi.request(svc.sock, fcgi.api_params("GET", "/api/admin/sandboxes",
                                                           extra=extra))
        sees_alice = st == 200 and tid.encode() in body
        esc = st2 == 200 or sees_alice != (want == "alice") or \
            (want is None and st != 401)
        stats.case(G, escape=esc, what="fcgi %r -> %d/%d" % (extra, st, st2))
        assert not esc, (extra, st, body[:200], st2)


def test_control_identity_leaks():
    """Control: the worker trusts X-Yuxi-User; nginx without the blanking
    lines lets it through -> the spoof must work; with the shipped blanking
    nginx alone still stops it (each layer proven separately)."""
    c = stack("control", off="identity", conf="dev-noblank")
    tid = alice_thread(c)
    st, _, body = c.raw_get("/api/threads", [b"X-Yuxi-User: alice"])
    assert stats.control(G, st == 200 and tid.encode() in body, "identity via nginx"), (st, body)
    st, _, body = fcgi.request(c.sock, fcgi.api_params(
        "GET", "/api/threads", extra=[("HTTP_X_YUXI_USER", "alice")]))
    assert stats.control(G, st == 200 and tid.encode() in body, "identity direct"), (st, body)
    # the shipped dev config blanks the header: the control worker sees nothing
    c2 = stack("control", off="identity", conf="dev")
    tid2 = alice_thread(c2)
    for spoof in SPOOFS:
        st, _, body = c2.raw_get("/api/threads", spoof)
        esc = tid2.encode() in body
        stats.case(G, escape=esc, what="nginx blanking %r" % spoof)
        assert not esc, (spoof, st, body[:200])


# ----------------------------------------------------- foreign threads
def foreign_answers(svc, owner_tid, unknown_tid):
    out = []
    for (name, m, u, kw), (_, m2, u2, kw2) in zip(thread_endpoints(owner_tid),
                                                  thread_endpoints(unknown_tid)):
        r = svc.request("bob", m, u, **kw)
        r2 = svc.request("bob", m2, u2.replace(unknown_tid, unknown_tid), **kw2)
        # the same bytes but for the thread id and the request's own id
        body = r.content.replace(owner_tid.encode(), b"<tid>").replace(
            r.headers.get("X-Request-Id", "-").encode(), b"<rid>")
        body2 = r2.content.replace(unknown_tid.encode(), b"<tid>").replace(
            r2.headers.get("X-Request-Id", "-").encode(), b"<rid>")
        out.append((name, r.status_code, body, r2.status_code, body2))
    return out


def test_foreign_thread_identical_404():
    svc = stack("prod")
    tid = alice_thread(svc)
    before = open(os.path.join(svc.workspace(tid), "a.txt")).read()
    unknown = "t" + secrets.token_hex(6)
    for name, st, body, st2, body2 in foreign_answers(svc, tid, unknown):
        esc = st != 404 or st2 != 404 or body != body2 or b"not_found" not in body
        stats.case(G, escape=esc, what="foreign %s -> %d %r / %d" % (name, st, body[:80], st2))
        assert not esc, (name, st, body, st2, body2)
    # nothing changed, nothing woken, alice still has her thread
    assert open(os.path.join(svc.workspace(tid), "a.txt")).read() == before
    woke = svc.containers(thread=tid)
    stats.case(G, leak=bool(woke), what="container woken for a foreign thread")
    assert woke == []
    assert svc.request("alice", "GET", "/api/threads/" + tid).status_code == 200
    # creating the same id as another user: 409, the record unchanged
    r = svc.request("bob", "POST", "/api/threads", json={"thread_id": tid})
    assert r.status_code == 409 and "alice" not in r.text
    stats.case(G)


def test_control_authz_leaks():
    c = stack("control", off="authz")
    tid = alice_thread(c)
    if engine_up():
        r = c.request("bob", "POST", "/api/execute", json={"thread_id": tid, "command": "true"})
        woke = c.containers(thread=tid)
        assert stats.control(G, bool(woke), "authz off: container woken"), (woke, r.text)
    leaked = 0
    for name, st, body, _, _ in foreign_answers(c, tid, "t" + secrets.token_hex(6)):
        if name != "thread_delete" and st in (200, 201):
            leaked += 1
    assert stats.control(G, leaked >= 8, "authz off: %d endpoints answered" % leaked), leaked


# ----------------------------------------------------- thread id syntax
BAD_IDS = ["..", ".", "../x", "..%2Fx", "%2e%2e", "%252e%252e%252fx", "a/b", "a%2Fb",
           "x" * 10240, "x" * 129, "a%00b", "%00", "a b", "a+b", "a%0ab", "a%0d%0ab",
           "%EF%BD%81lice",            # fullwidth a
           "t%E2%80%90x",              # unicode hyphen
           "t%D0%B0",                  # cyrillic a
           "x%E2%80%8B",               # zero-width space
           ".hidden", ".tmp-x", ".trash-x", "a.b", "a;b", "a*", "%FF%FE", "-" * 129]


def id_requests(bad):
    """The id in a query param, a JSON body and the URL segment (routes
    with the id in their path, /api/threads/{id}[/...], are tried below,
    where nginx may normalise the path to another endpoint)."""
    reqs = [(n, m, u, kw) for n, m, u, kw in thread_endpoints(bad)
            if not n.startswith("thread_") and not u.startswith("/api/threads/")]
    import urllib.parse
    raw = urllib.parse.unquote(bad)
    for n, m, u, kw in reqs:
        if "json" in kw:
            kw["json"]["thread_id"] = raw
    reqs.append(("create", "POST", "/api/threads", {"json": {"thread_id": raw}}))
    return reqs


def test_malicious_thread_ids_400():
    svc = stack("prod")
    alice_thread(svc)
    before = set(os.listdir(os.path.join(svc.saves, "threads")))
    n = 0
    for bad in BAD_IDS:
        for name, m, u, kw in id_requests(bad):
            r = svc.request("alice", m, u, **kw)
            # a 10 KB id in the query: nginx already refuses the URI (414)
            ok = (r.status_code == 400 and ("invalid_thread_id" in r.text or
                                            ("%00" in bad and "bad_request" in r.text))) or \
                (r.status_code == 414 and len(bad) > 8000 and bad in u)
            stats.case(G, escape=not ok, what="id %r %s -> %d" % (bad[:20], name, r.status_code))
            assert ok, (bad[:40], name, r.status_code, r.text[:200])
            n += 1
        # in the URL segment: never a 2xx, never a 5xx (nginx may normalise
        # the path to another endpoint: 404)
        for m in ("GET", "DELETE"):
            st, _, body = svc.raw_get("/api/threads/" + bad, (), who="alice", method=m)
            ok = st in (400, 404, 414)
            stats.case(G, escape=not ok, what="url id %r %s -> %d" % (bad[:20], m, st))
            assert ok, (bad[:40], m, st, body[:200])
    assert set(os.listdir(os.path.join(svc.saves, "threads"))) == before
    assert svc.containers() == []


def test_control_threadid_leaks():
    """Control: ids skip the syntax check and reach the store."""
    c = stack("control", off="threadid")
    changed = 0
    for bad in ("..", ".", ".hidden", "a%0ab", "%EF%BD%81lice", "a b"):
        r = c.request("alice", "GET", "/api/filesystem/ls?thread_id=" + bad)
        changed += "invalid_thread_id" not in r.text
    assert stats.control(G, changed >= 4, "threadid off: %d ids reached the store" % changed)


# ---------------------------------------------------- internal locations
INTERNAL = ["/_yuxi_files/{tid}/user-data/workspace/a.txt", "/_yuxi_files/",
            "/_yuxi_files/{tid}/thread.json", "/_yuxi_skills/python-basics/SKILL.md",
            "/_yuxi_skills/", "/%5Fyuxi_files/{tid}/user-data/workspace/a.txt",
            "/%5fyuxi%5ffiles/{tid}/user-data/workspace/a.txt",
            "//_yuxi_files/{tid}/user-data/workspace/a.txt",
            "/api/../_yuxi_files/{tid}/user-data/workspace/a.txt",
            "/api/%2e%2e/_yuxi_files/{tid}/user-data/workspace/a.txt",
            "/./_yuxi_files/{tid}/user-data/workspace/a.txt",
            "/_yuxi_files/{tid}/user-data/workspace/a.txt?x=1",
            "/_YUXI_FILES/{tid}/user-data/workspace/a.txt",
            "/_yuxi_files/../_yuxi_files/{tid}/user-data/workspace/a.txt",
            "/_yuxi_skills/../../../etc/passwd"]


def internal_probe(svc, tid):
    served = 0
    for tmpl in INTERNAL:
        url = tmpl.format(tid=tid)
        for who in (None, "alice"):
            st, _, body = svc.raw_get(url, (), who=who)
            hit = b"secret of alice" in body or b"root:" in body or \
                (st == 200 and b"SKILL" in body.upper() and b"{" not in body[:1])
            served += hit
            yield url, who, st, hit


@pytest.mark.parametrize("conf", ["dev", "prod"])
def test_internal_location_404(conf):
    svc = stack("prod", conf=conf)
    tid = alice_thread(svc)
    for url, who, st, hit in internal_probe(svc, tid):
        esc = hit or st not in (400, 404)
        stats.case(G, escape=esc, what="%s internal %s -> %d" % (conf, url, st))
        assert not esc, (conf, url, who, st)


def test_control_internal_served():
    c = stack("prod", conf="dev-nointernal")
    tid = alice_thread(c)
    hits = sum(hit for _, _, _, hit in internal_probe(c, tid))
    assert stats.control(G, hits >= 1, "internal off: %d served" % hits), hits
