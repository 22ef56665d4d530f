"""Bring up the real service (yuxi-sandboxd + nginx, TLS) for the browser tests.

Reuses the end-to-end harness (tests/e2e/conftest.py: temporary saves
directory, the test image, its own shared-memory name and container prefix,
a free 127.0.0.1 port, generated bearer tokens) and adds the workbench page
to the rendered nginx configuration:

- @WEB_ROOT@ / @WORKBENCH_CONF@ in nginx/dev.conf.in (once the lead wires
  nginx/workbench.conf in) become this checkout's web/ and the snippet;
- if dev.conf.in does not include the snippet yet, the rendered file is
  patched the way docs/workbench.md tells the lead to change it: the
  catch-all FastCGI `location /` becomes `location /api/`, `/healthz` gets
  its own location, and the snippet is included.

usage: serve.py INFO_JSON   writes {"url","tokens","cert",...} to INFO_JSON
once /healthz and / answer, then runs until SIGTERM/SIGINT and stops
everything (nginx, yuxi-sandboxd, every container with the run's prefix).
"""
import json
import os
import re
import shutil
import signal
import sys
import tempfile
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.environ.get("top_srcdir") or os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(TOP, "tests", "e2e"))

import conftest  # noqa: E402
import requests  # noqa: E402

WEB_ROOT = os.path.join(TOP, "web")
SNIPPET = os.path.join(TOP, "nginx", "workbench.conf")

_orig_render = conftest.render_nginx


def patch_conf(text, sock):
    """Route the API under /api/ and /healthz and include the workbench."""
    text, n = re.subn(r"(\n\t*)location / \{(\s*\n\s*include /etc/nginx/fastcgi_params;)",
                      r"\1location /api/ {\2", text, count=1)
    if n != 1:
        raise RuntimeError("dev.conf.in: no FastCGI catch-all location to move under /api/")
    extra = ("\t\tlocation = /healthz {\n"
             "\t\t\tinclude /etc/nginx/fastcgi_params;\n"
             "\t\t\tfastcgi_param YUXI_USER \"\";\n"
             "\t\t\tfastcgi_param YUXI_ROLE \"\";\n"
             "\t\t\tfastcgi_pass unix:%s;\n"
             "\t\t}\n"
             "\t\tset $yuxi_web_root %s;\n"
             "\t\tinclude %s;\n\n") % (sock, WEB_ROOT, SNIPPET)
    i = text.find("\t\t# X-Accel-Redirect targets")
    if i < 0:
        i = text.find("\t\tlocation /_yuxi_files/")
    if i < 0:
        raise RuntimeError("dev.conf.in: no place to include the workbench")
    return text[:i] + extra + text[i:]


def render_nginx(base, port, tokens):
    conf = _orig_render(base, port, tokens)
    with open(conf) as f:
        text = f.read()
    text = text.replace("@WEB_ROOT@", WEB_ROOT).replace("@WORKBENCH_CONF@", SNIPPET)
    if "$yuxi_web_root" not in text:
        text = patch_conf(text, os.path.join(base, "run", "fcgi.sock"))
    with open(conf, "w") as f:
        f.write(text)
    return conf


conftest.render_nginx = render_nginx


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: serve.py INFO_JSON")
    info_path = sys.argv[1]
    if not os.access(conftest.SANDBOXD, os.X_OK):
        sys.exit("serve.py: no yuxi-sandboxd in %s (set top_builddir)" % conftest.TOP_BUILDDIR)
    base = tempfile.mkdtemp(prefix="yxweb-")
    svc = conftest.Service(base)
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *a: done.set())
    signal.signal(signal.SIGINT, lambda *a: done.set())
    rc = 0
    try:
        svc.start()
        page = requests.get(svc.url + "/", verify=False, timeout=10)
        if page.status_code != 200 or "Yuxi workbench" not in page.text:
            raise RuntimeError("the workbench page is not served: HTTP %d" % page.status_code)
        info = {"url": svc.url, "tokens": svc.tokens, "cert": os.path.join(base, "cert.pem"),
                "base": base, "prefix": svc.prefix, "saves": svc.saves,
                "image": conftest.IMAGE}
        tmp = info_path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(info, f)
        os.rename(tmp, info_path)
        print("serve.py: up at %s (state %s)" % (svc.url, base), flush=True)
        while not done.wait(1):
            if svc.sandboxd.poll() is not None or svc.nginx.poll() is not None:
                print("serve.py: a service process exited early", file=sys.stderr)
                print(svc.read_log(), file=sys.stderr)
                rc = 1
                break
    except Exception as e:  # report and still clean up
        print("serve.py: %s" % e, file=sys.stderr)
        for log in ("nginx-error.log", "sandboxd.log"):
            try:
                with open(os.path.join(base, log), errors="replace") as f:
                    sys.stderr.write(f.read()[-3000:])
            except OSError:
                pass
        rc = 1
    finally:
        svc.stop()
        left = conftest.docker_rm_prefix(svc.prefix)
        if left:
            print("serve.py: removed leftover containers %s" % left, file=sys.stderr)
        if os.environ.get("YUXI_WEB_KEEP") != "1":
            shutil.rmtree(base, ignore_errors=True)
    sys.exit(rc)


if __name__ == "__main__":
    main()
