# SPDX-License-Identifier: MIT
"""Previews in the remote mode (docs/scaling.md "Previews"): a front and two
sandbox hosts, each behind its own nginx. The front's nginx proxies a
preview request to the thread's host's nginx, which checks the capability
and proxies to its ingress: GET and WebSocket through the front, for
threads on either host; another user's thread 404; a revoke through the
front; a host's previews answer nothing without the front's credential."""
import pytest

from conftest import (IMAGE, default_image, engine_up, get, preview_url,  # noqa: F401
                      start_boxsrv, token_of, ws_connect, ws_recv, ws_send)
from yxsvc import Cluster

pytestmark = pytest.mark.skipif(not engine_up() or not default_image(),
                                reason="no engine or default image")


@pytest.fixture(scope="module")
def cluster():
    c = Cluster(2, front_overrides={"YUXI_SANDBOX_IMAGE": IMAGE},
                prov_overrides={"YUXI_SANDBOX_IMAGE": IMAGE})
    domain = "preview.localhost:%d" % c.front.port
    for s in [c.front] + c.provs:
        s.env["YUXI_PREVIEW_DOMAIN"] = domain
    try:
        c.start()
        yield c
    finally:
        c.stop()


def threads_on_both(c, who="alice"):
    """A thread of `who` on each host: {host name: thread id}."""
    got = {}
    for _ in range(40):
        tid = c.front.new_thread(who)
        host = c.front.request(who, "GET", "/api/threads/" + tid).json().get("host")
        got.setdefault(host, tid)
        if len(got) == 2:
            return got
    raise AssertionError("threads all went to one host: %s" % got)


def test_get_and_websocket_through_the_front(cluster):
    f = cluster.front
    for host, tid in sorted(threads_on_both(cluster).items()):
        start_boxsrv(f, tid, 8000)
        url = preview_url(f, tid, 8000)
        assert url.endswith(".preview.localhost:%d/" % f.port), url
        r = get(f, url)
        assert r.status_code == 200 and r.text == "boxsrv 8000\n", (host, r.status_code, r.text)
        conn, status, head = ws_connect(f, url)
        assert status == 101, head
        ws_send(conn, ("via the front to %s" % host).encode())
        assert ws_recv(conn) == (1, ("via the front to %s" % host).encode())
        conn.close()
        print("host %s: GET and WebSocket through the front" % host)
        # forged, another user, revoked
        assert get(f, url.replace(token_of(url), "e" * 32)).status_code == 404
        for m, p in (("GET", "/api/threads/%s/previews"), ("DELETE", "/api/threads/%s/previews/8000")):
            assert f.request("bob", m, p % tid).status_code == 404
        lst = f.request("alice", "GET", "/api/threads/%s/previews" % tid).json()["previews"]
        assert [x["url"] for x in lst] == [url]
        # the host's previews need the front's credential
        prov = cluster.prov(host)
        r = get(prov, url.replace(":%d/" % f.port, ":%d/" % prov.port))
        assert r.status_code == 404, r.status_code
        assert f.request("alice", "DELETE", "/api/threads/%s/previews/8000" % tid).status_code == 204
        assert get(f, url).status_code == 404
