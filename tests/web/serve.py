# SPDX-License-Identifier: MIT
"""Bring up the real service (yuxi-sandboxd + nginx, TLS) for the browser tests.

Uses the shared harness (tests/lib/yxsvc.py: temporary saves directory, the
test image, its own shared-memory name and container prefix, a free
127.0.0.1 port, generated bearer tokens); nginx/dev.conf.in serves the
workbench page (web/ of this checkout, nginx/workbench.conf) at `/`, which
is checked before the service is reported up.

A second instance is the site case (docs/nginx.md): a site nginx with
the snippets of `yuxi-sandbox nginx-conf --auth basic` under the URL
prefix /sandbox, where the site signs the user in (HTTP basic auth) and
the workbench needs no token; its URL, user and password are "site" in
the info. A third, "snap" (its URL and tokens), has threads on btrfs
images, for the snapshot list; null where mkfs.btrfs or root is missing.

usage: serve.py INFO_JSON   writes {"url","tokens","cert","site",...} to
INFO_JSON once /healthz and / answer, then runs until SIGTERM/SIGINT and
stops everything (nginx, yuxi-sandboxd, every container with the run's
prefixes).
"""
import os
import secrets
import sys
import tempfile

import yxsvc


def check_page(svc):
    page = svc.request(None, "GET", "/", timeout=10)
    if page.status_code != 200 or "Yuxi workbench" not in page.text:
        raise RuntimeError("the workbench page is not served: HTTP %d" % page.status_code)


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: serve.py INFO_JSON")
    svc = yxsvc.Service(tempfile.mkdtemp(prefix="yxweb-"))
    # previews on (the Preview panel's test): *.preview.localhost:<port>
    svc.env["YUXI_PREVIEW_DOMAIN"] = "preview.localhost:%d" % svc.port
    site = yxsvc.SiteService("basic", url_prefix="/sandbox", stem="yxwbs",
                             passwords={"alice": secrets.token_hex(8)},
                             server_extra='\t\tlocation / { return 200 "the site\\n"; }\n')
    also = [site]
    # snapshots (docs/api.md "Snapshots") need btrfs images: an instance
    # of its own, when the machine can make them
    snap = None
    if os.geteuid() == 0 and os.path.exists("/sbin/mkfs.btrfs"):
        snap = yxsvc.Service(stem="yxwbn", overrides={
            "YUXI_THREAD_DISK_QUOTA": "128m", "YUXI_THREAD_DISK_FS": "btrfs"})
        also.append(snap)
    # the Desktop tab's test needs the browser profile's image
    browser = yxsvc.image_present("yuxi-sandbox-browser:latest")
    info = lambda s: {"tokens": s.tokens, "cert": s.cert, "browser_image": browser,
                      "site": {"url": site.url, "user": "alice",
                               "password": site.passwords["alice"]},
                      "snap": {"url": snap.url, "tokens": snap.tokens} if snap else None}
    sys.exit(yxsvc.serve(svc, sys.argv[1], info, check=check_page,
                         keep=os.environ.get("YUXI_WEB_KEEP") == "1", also=tuple(also)))


if __name__ == "__main__":
    main()
