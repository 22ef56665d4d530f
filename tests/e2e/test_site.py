# SPDX-License-Identifier: MIT
"""The acceptance scenario of issue 13 (docs/nginx.md): the two snippets of
`yuxi-sandbox nginx-conf --auth basic` included into a separate nginx whose
server block also serves unrelated locations, under the URL prefix
/sandbox. Create a thread, execute, write, download through the viewer
(X-Accel-Redirect served by the internal location), the workbench page
and its scripts and styles - all work; the unrelated locations still
work; requests outside the prefix never reach the daemon (its log names
every request it answers).
"""
import re
import secrets

import pytest

import yxsvc

SITE = """\
		# the site's own pages, which have nothing to do with yuxi-sandbox
		location / { return 200 "the site\\n"; }
		location /other/ { return 200 "other\\n"; }
		location ~ \\.js$ { return 403 "the site's scripts\\n"; }
"""


@pytest.fixture(scope="module")
def site():
    s = yxsvc.SiteService("basic", url_prefix="/sandbox", server_extra=SITE,
                          passwords={"alice": secrets.token_hex(8), "bob": secrets.token_hex(8)})
    try:
        s.start()
        yield s
    finally:
        s.stop()


def test_site_with_snippets_under_prefix(site):
    s = site
    get = lambda who, path, **kw: s.request(who, "GET", path, **kw)
    raw = lambda path, **kw: yxsvc.requests.get(s.origin + path, verify=s.cert, timeout=30,
                                                allow_redirects=False, **kw)
    # the workbench: /sandbox -> /sandbox/, the page, its modules and styles
    r = raw("/sandbox")
    assert r.status_code == 301 and r.headers["Location"] == "/sandbox/", r.headers
    assert get(None, "/").status_code == 401
    r = get("alice", "/")
    assert r.status_code == 200 and "Yuxi workbench" in r.text
    assert r.headers["Content-Security-Policy"].startswith("default-src 'self'")
    for f, ctype in (("app.js", "javascript"), ("api.js", "javascript"),
                     ("tree.js", "javascript"), ("app.css", "text/css"),
                     ("favicon.svg", "image/svg+xml")):
        r = get("alice", "/" + f)
        assert r.status_code == 200, f
        assert ctype in r.headers["Content-Type"], (f, r.headers["Content-Type"])
        assert r.headers["X-Content-Type-Options"] == "nosniff"
    assert "api/threads" in get("alice", "/api.js").text
    # the API: thread, execute, write, viewer download
    tid = "site-" + secrets.token_hex(4)
    r = s.request("alice", "POST", "/api/threads", json={"thread_id": tid, "agent_id": "coder"})
    assert r.status_code == 201, r.text
    r = s.request("alice", "POST", "/api/execute",
                  json={"thread_id": tid, "command": "echo hello from $(id -u)"})
    assert r.status_code == 200 and r.json()["exit_code"] == 0, r.text
    assert r.json()["output"].startswith("hello from ")
    content = "written through the site %s\n" % secrets.token_hex(4)
    r = s.request("alice", "POST", "/api/filesystem/write",
                  json={"thread_id": tid, "path": "/workspace/note.txt", "content": content})
    assert r.status_code in (200, 201), r.text
    q = "?thread_id=%s&path=/home/yuxi/user-data/workspace/note.txt" % tid
    r = get("alice", "/api/viewer/filesystem/download" + q)
    assert r.status_code == 200 and r.text == content, (r.status_code, r.text)
    assert "attachment" in r.headers["Content-Disposition"]
    # sent by the internal location (X-Accel-Redirect), not by the worker
    assert r.headers["Content-Security-Policy"] == "default-src 'none'; sandbox"
    # ... with the request id the worker answered with (nginx's $request_id)
    assert re.match(r"^[0-9a-f]{32}$", r.headers.get("X-Request-Id", "")), r.headers
    assert get("bob", "/api/viewer/filesystem/download" + q).status_code == 404
    # the internal locations are not reachable directly
    for p in ("/_yuxi_files/%s/user-data/workspace/note.txt" % tid,
              "/_yuxi_skills/python-basics/SKILL.md"):
        r = get("alice", p)
        assert r.status_code == 404 and content not in r.text, (p, r.status_code)
    # operations under the prefix, without a password
    assert get(None, "/healthz").json()["status"] in ("ok", "degraded")
    r = get(None, "/readyz")
    assert r.status_code == 200 and r.json()["ready"] is True, r.text
    assert "yuxi_http_requests_total" in get(None, "/metrics").text
    # JSON errors of the snippet: an upload over client_max_body_size
    r = s.request("alice", "POST", "/api/filesystem/upload?thread_id=%s&path=/workspace/big" % tid,
                  data=b"x" * (yxsvc.UPLOAD_LIMIT + 1))
    assert r.status_code == 413 and r.json()["error"]["code"] == "payload_too_large"
    # the site: unrelated locations work, also for paths the service would know
    seen = len(s.requests_seen())
    for path, body in (("/other/", "other\n"), ("/", "the site\n"),
                       ("/api/threads", "the site\n"), ("/healthz", "the site\n"),
                       ("/sandboxx/api/threads", "the site\n"),
                       ("/_yuxi_files/%s/user-data/workspace/note.txt" % tid, "the site\n"),
                       ("/x.js", "the site's scripts\n")):
        r = raw(path, headers=s.auth_headers("alice"))
        assert r.text == body, (path, r.status_code, r.text)
    r = yxsvc.requests.post(s.origin + "/api/threads", json={"thread_id": "t" + tid},
                            headers=s.auth_headers("alice"), verify=s.cert, timeout=30)
    assert r.text == "the site\n"
    # ... and none of them reached the daemon; everything it saw was ours
    assert s.requests_seen()[seen:] == []
    paths = [p for _, p in s.requests_seen()]
    assert paths and all(p.startswith("/sandbox/") for p in paths), paths
    assert not [p for p in paths if re.match(r"/sandbox/(other|sandbox)", p)]
    r = s.request("alice", "GET", "/api/threads")
    assert tid in [t["thread_id"] for t in r.json()["threads"]]
    assert s.request("alice", "DELETE", "/api/threads/" + tid).status_code in (200, 204)
    print("site: %d requests reached the daemon, all under /sandbox/" % len(paths))
    # every API answer through the snippets left its one audit line
    bad, n = s.audit_problems()
    assert n > 0 and not bad, bad
