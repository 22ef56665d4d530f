# SPDX-License-Identifier: MIT
"""A preview's page in headless Chromium (browser.mjs; docs/security.md
"Previews"): it cannot read the workbench origin's storage, even loaded in
the tab where the workbench signed in (control: the preview served from a
path of the workbench's origin reads the token), and a cookie preview A
sets by a header for the whole preview domain never reaches preview B
(control: nginx without proxy_cookie_domain sends it to B). A cookie A's
script sets for the whole domain does reach B: nginx never sees it, the
known limit (printed; docs/security.md says to make the domain a public
suffix)."""
import json
import os
import shutil
import subprocess

import pytest

from conftest import box, default_image, engine_up, preview_url, token_of  # noqa: F401

HERE = os.path.dirname(os.path.abspath(__file__))
CHROMIUM = os.environ.get("YUXI_CHROMIUM", "/usr/bin/chromium")
PLAYWRIGHT = os.path.join(HERE, "..", "web", "node_modules", "playwright-core")
pytestmark = [
    pytest.mark.skipif(not engine_up() or not default_image(), reason="no engine or default image"),
    pytest.mark.skipif(not shutil.which("node") or not os.access(CHROMIUM, os.X_OK) or
                       not os.path.isdir(PLAYWRIGHT),
                       reason="no node, Chromium or tests/web/node_modules"),
]


def browse(job):
    r = subprocess.run(["node", os.path.join(HERE, "browser.mjs")], input=json.dumps(job),
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout)


# The control: the same preview at a path of the workbench's own origin.
SAME_ORIGIN = """
		location /_pv/ {
			set $yuxi_pv_host $arg_pv;	# (the subrequest has no args)
			auth_request /_pv_auth;
			auth_request_set $yuxi_preview_sock $upstream_http_x_yuxi_preview_socket;
			rewrite ^/_pv(/.*)$ $1 break;
			proxy_pass http://unix:%(saves)s/preview/s/$yuxi_preview_upstream:;
		}
		location = /_pv_auth {
			internal;
			fastcgi_pass_request_headers off;
			fastcgi_param REQUEST_METHOD GET;
			fastcgi_param DOCUMENT_URI /_yuxi_preview/auth;
			fastcgi_param YUXI_PREVIEW_HOST $yuxi_pv_host;
			fastcgi_pass unix:%(sock)s;
		}
		# X-Accel-Redirect targets"""


def test_a_preview_cannot_read_the_workbench_storage(pv, factory):
    tid = box(pv)
    url = preview_url(pv, tid, 8000)
    got = browse({"mode": "storage", "workbench": pv.origin + "/", "token": pv.tokens["alice"],
                  "target": url + "page"})
    print("production: the preview's page saw %s" % got["seen"])
    assert got["seen"]["origin"] == url.rstrip("/")
    assert got["seen"]["session"] == [] and got["seen"]["local"] == []
    assert pv.tokens["alice"] not in json.dumps(got)
    # control: served from the workbench's origin, in the same tab
    c = factory(edit=lambda t, s: t.replace("\t\t# X-Accel-Redirect targets", SAME_ORIGIN % {
        "saves": s.saves, "sock": s.sock}, 1))
    tid = box(c)
    host = preview_url(c, tid, 8000).split("//")[1].split(":")[0]
    got = browse({"mode": "storage", "workbench": c.origin + "/", "token": c.tokens["alice"],
                  "target": c.origin + "/_pv/page?pv=" + host})
    print("control (the API's origin): the page saw %s" % got["seen"])
    assert "yuxi.token" in got["seen"]["session"], "the control did not see the token"


def cookie_job(s):
    ta, tb = box(s), box(s, 8001)
    return {"mode": "cookie", "a": preview_url(s, ta, 8000), "b": preview_url(s, tb, 8001),
            "domain": "preview.localhost"}


def test_a_wider_cookie_never_reaches_another_preview(pv, factory):
    got = browse(cookie_job(pv))
    print("production: A got %r, B got %r" % (got["a_got"], got["b_got"]))
    assert "c8000=v" in got["a_got"]		# A keeps its own cookie
    assert "c8000" not in got["b_got"]		# ... B never gets it
    print("known limit (a cookie set by script, nginx never sees it): B got js8000: %s"
          % ("js8000" in got["b_got"]))
    c = factory(edit=lambda t, s: t.replace("proxy_cookie_domain ~^.+$ $host;", "", 1))
    got = browse(cookie_job(c))
    print("control (no proxy_cookie_domain): B got %r" % got["b_got"])
    assert "c8000=v" in got["b_got"], "the control did not leak the cookie"
