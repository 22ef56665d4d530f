# SPDX-License-Identifier: MIT
"""The control mode is impossible in production (docs/security.md).

The production daemon and the convenience library carry no control code
(neither the switch nor its environment variable name), a production daemon
started with YX_CONTROL_OFF=all still enforces every protection, and the
control binary does carry the switch (else the control tests would prove
nothing).
"""
import os

import fcgi
from secfix import BINARIES, TOP_BUILDDIR, _sec_session, stack, stats  # noqa: F401

G = 1


def has(path, needle):
    with open(path, "rb") as f:
        return needle in f.read()


def test_production_has_no_control_code():
    for p in (BINARIES["prod"], os.path.join(TOP_BUILDDIR, "libyuxi.a")):
        for needle in (b"YX_CONTROL_OFF", b"yx_control_off", b"CONTROL BUILD"):
            esc = has(p, needle)
            stats.case(G, escape=esc, what="%s contains %s" % (p, needle))
            assert not esc, (p, needle)
    assert has(BINARIES["control"], b"YX_CONTROL_OFF")
    assert has(BINARIES["cbroker"], b"YX_CONTROL_OFF")


def test_production_ignores_control_switch():
    svc = stack("prod", off="", YX_CONTROL_OFF="all")
    assert svc.env.get("YX_CONTROL_OFF") == "all"
    tid = svc.new_thread("alice")
    st, _, body = fcgi.request(svc.sock, fcgi.api_params(
        "GET", "/api/threads", extra=[("HTTP_X_YUXI_USER", "alice")]))
    r = svc.request("bob", "GET", "/api/filesystem/ls?thread_id=" + tid)
    r2 = svc.request("alice", "GET", "/api/filesystem/cat?thread_id=%s&path=../x" % tid)
    esc = st != 401 or r.status_code != 404 or r2.status_code != 400
    stats.case(G, escape=esc, what="prod with YX_CONTROL_OFF=all: %d %d %d" %
               (st, r.status_code, r2.status_code))
    assert not esc
