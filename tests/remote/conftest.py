# SPDX-License-Identifier: MIT
"""Fixtures of the remote-mode suite (docs/scaling.md) over the shared
harness (tests/lib/yxsvc.py).

`cluster`: one front and two provisioners (p1, p2) on the one engine, each
with its own nginx (TLS, free 127.0.0.1 port), saves directory, shm name,
container prefix and uid range, sharing one credential file; started once
per module. `standalone`: a plain instance to compare answers with.
Teardown stops every process and removes every container under the
instances' prefixes.

Environment: top_srcdir, top_builddir (required), YUXI_E2E_IMAGE (default
yuxi-sandbox-test:latest).
"""
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from yxsvc import Cluster, Service, build_path, engine_up  # noqa: E402

PRODUCTION = build_path("yuxi-sandboxd")
CONTROL = build_path("tests", "security", "yuxi-sandboxd-control")
# every host its own uid range: on one machine the hosts share the kernel
PROV = {"YUXI_SANDBOX_IDLE_TIMEOUT": "600", "YUXI_SANDBOX_IDLE_CHECK_INTERVAL": "2"}
# one long-poll slot on the front: test_processes_through_the_front fills it;
# no cap on one host's calls (YUXI_HOST_CALLS, default half the workers):
# the spread test sends 4 requests at once from a plain client, which the
# cap answers with 503s (test_remote_faults.py checks the cap itself)
FRONT = {"YUXI_SANDBOX_UID_RANGE": "off", "YUXI_PROCESS_WAITERS": "1",
         "YUXI_HOST_CALLS": "256"}


def uid_ranges(cl):
    for i, p in enumerate(cl.provs):
        lo = 2000000000 + 100000 * (i + 1)
        p.env["YUXI_SANDBOX_UID_RANGE"] = "%d-%d" % (lo, lo + 65535)
    return cl


def make_cluster(n=2, **kw):
    kw.setdefault("prov_overrides", PROV)
    kw.setdefault("front_overrides", FRONT)
    return uid_ranges(Cluster(n, **kw))


@pytest.fixture(scope="module")
def cluster():
    if not engine_up():
        pytest.skip("no engine or no test image")
    cl = make_cluster()
    cl.start()
    yield cl
    cl.stop()


@pytest.fixture(scope="module")
def standalone():
    s = Service(stem="qyxsa")
    s.start()
    yield s
    s.stop()
