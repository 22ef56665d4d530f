# SPDX-License-Identifier: MIT
"""install_test - the packaged install, end to end, on this machine
(tests/install/run-install.sh runs it; CI runs it as a stage of its own,
never `make check`: it installs and purges a system package).

1. Copies the checkout (tracked and new files, as git sees them) to a
   temporary directory and builds the Debian package there
   (`dpkg-buildpackage -us -uc -b`); lintian must report no error; `dpkg -c`
   must list the daemon, CLI, helpers, web assets, nginx templates,
   configuration file, unit, sysusers.d/tmpfiles.d entries, man pages and
   copyright; the helpers must be static PIE with RELRO and BIND_NOW.
2. `make install DESTDIR=...` from a second copy (configured for /usr,
   /etc, /var, /run) installs everything where expected, keeps an existing
   configuration file, and `make uninstall` leaves no file.
3. `apt-get install ./yuxi-sandbox_*.deb`; the system user, its groups and
   the directories; the installed configuration file (every setting
   uncommented still validates); edits it as an operator would (URL prefix
   /sandbox, and this run's own container prefix and shm name).
4. Starts the installed daemon as yuxi-sandbox.service would, through
   unitexec.py (user, groups, capabilities, namespaces, seccomp of the
   unit), and checks the running processes have exactly that.
5. Renders the nginx snippets with `yuxi-sandbox nginx-conf --auth basic`,
   starts a separate nginx (as www-data, own prefix, a free port on
   127.0.0.1) whose server block includes the server snippet and also
   serves an unrelated location, then over real HTTP: sign-in refused
   without a password, create a thread, execute, write a file, download
   it through the viewer (X-Accel-Redirect, served by nginx as www-data
   from the thread directory), download a file the sandbox made, the
   documented refusal of a file the sandbox made unreadable (0600), the
   workbench page with its scripts and styles, the cross-site guard, the
   unrelated location; `yuxi-sandbox list` on the host with no
   environment sees the sandbox.
6. Stops daemon and nginx, removes the containers of this run's prefix,
   `apt-get purge yuxi-sandbox`, and checks nothing the package installed
   or made is left but what docs/deployment.md documents: the state
   directory /var/lib/yuxi-sandbox and the system user and group owning
   it. Then removes those too when they were not there before the test.

Environment: YUXI_INSTALL_IMAGE (default yuxi-sandbox:latest, built by
scripts/test.sh in CI), YUXI_INSTALL_KEEP=1 keeps the temporary directory.
Prints one line per check and "install: N passed, N failed".
"""
import glob
import grp
import json
import os
import pwd
import re
import secrets
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time

import requests

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.environ.get("top_srcdir") or os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(TOP, "tests", "lib"))
import yxsvc  # noqa: E402  (free_port, wait_for, docker_rm_prefix, shm_unlink)

PKG = "yuxi-sandbox"
USER = "yuxi-sandbox"
IMAGE = os.environ.get("YUXI_INSTALL_IMAGE", "yuxi-sandbox:latest")
UNIT = "/lib/systemd/system/yuxi-sandbox.service"
CONF = "/etc/yuxi-sandbox/yuxi-sandbox.conf"
STATE = "/var/lib/yuxi-sandbox"
RUNDIR = "/run/yuxi-sandbox"
AUDIT = "/var/log/yuxi-sandbox/audit.jsonl"
SOCKET = RUNDIR + "/fcgi.sock"
URL_PREFIX = "/sandbox"
CAPS = 0x2f		# CAP_CHOWN, CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, CAP_FOWNER, CAP_KILL
JOBS = str(min(4, os.cpu_count() or 1))

# What the package must hold (dpkg -c), per the acceptance.
PACKAGE_FILES = [
    "/usr/sbin/yuxi-sandboxd", "/usr/bin/yuxi-sandbox",
    "/usr/libexec/yuxi-sandbox/yuxi-run", "/usr/libexec/yuxi-sandbox/yuxi-agent",
    "/usr/share/yuxi-sandbox/web/index.html", "/usr/share/yuxi-sandbox/web/app.js",
    "/usr/share/yuxi-sandbox/web/api.js", "/usr/share/yuxi-sandbox/web/tree.js",
    "/usr/share/yuxi-sandbox/web/app.css", "/usr/share/yuxi-sandbox/web/favicon.svg",
    "/usr/share/yuxi-sandbox/nginx/yuxi-sandbox-http.conf.in",
    "/usr/share/yuxi-sandbox/nginx/yuxi-sandbox-server.conf.in",
    "/usr/share/yuxi-sandbox/images/default/build.sh",
    "/usr/share/yuxi-sandbox/images/test/build.sh",
    CONF, UNIT, "/usr/lib/sysusers.d/yuxi-sandbox.conf",
    "/usr/lib/tmpfiles.d/yuxi-sandbox.conf",
    "/usr/share/man/man8/yuxi-sandboxd.8.gz", "/usr/share/man/man1/yuxi-sandbox.1.gz",
    "/usr/share/man/man5/yuxi-sandbox.conf.5.gz",
    "/usr/share/doc/yuxi-sandbox/copyright",
]
# What `make install` (--prefix=/usr, systemd files beneath /usr/lib) installs.
INSTALL_FILES = [p[:-3] if p.endswith(".gz") else p for p in PACKAGE_FILES
                 if not p.startswith("/usr/share/doc/")]
INSTALL_FILES = [p.replace("/lib/systemd/", "/usr/lib/systemd/")
                 if p.startswith("/lib/") else p for p in INSTALL_FILES]

passed = failed = 0


def check(name, ok, detail=""):
    global passed, failed
    if ok:
        passed += 1
        print("ok    %s" % name, flush=True)
    else:
        failed += 1
        print("FAIL  %s%s" % (name, (": " + str(detail)) if detail else ""), flush=True)
    return ok


def say(msg):
    print("==> %s" % msg, flush=True)


def run(cmd, check_rc=True, timeout=1800, **kw):
    kw.setdefault("capture_output", True)
    kw.setdefault("text", True)
    r = subprocess.run(cmd, timeout=timeout, **kw)
    if check_rc and r.returncode != 0:
        raise RuntimeError("%s: exit %d\n%s%s" % (" ".join(cmd), r.returncode,
                                                  (r.stdout or "")[-3000:],
                                                  (r.stderr or "")[-3000:]))
    return r


def installed():
    r = run(["dpkg-query", "-W", "-f=${Status}", PKG], check_rc=False)
    return r.returncode == 0 and "installed" in r.stdout.split()[-1:]


def copy_source(dst):
    """The checkout as git sees it (tracked and untracked, not ignored),
    else the whole tree without build directories."""
    os.makedirs(dst)
    if run(["git", "-C", TOP, "rev-parse", "--git-dir"], check_rc=False).returncode == 0:
        files = run(["git", "-C", TOP, "ls-files", "-z", "-co", "--exclude-standard"]).stdout
        names = [f for f in files.split("\0") if f and os.path.lexists(os.path.join(TOP, f))]
        subprocess.run(["tar", "-C", TOP, "--null", "-T", "-", "-cf", os.path.join(dst, "..", "src.tar")],
                       input="\0".join(names), text=True, check=True)
        subprocess.run(["tar", "-C", dst, "-xf", os.path.join(dst, "..", "src.tar")], check=True)
        os.unlink(os.path.join(dst, "..", "src.tar"))
    else:
        shutil.rmtree(dst)
        shutil.copytree(TOP, dst, symlinks=True,
                        ignore=shutil.ignore_patterns("build*", "_build", "var", "debian/yuxi-sandbox"))


# ------------------------------------------------------------------ 1. package
def build_package(tmp):
    src = os.path.join(tmp, "pkg", "yuxi-sandbox")
    copy_source(src)
    say("dpkg-buildpackage -us -uc -b in %s" % src)
    env = dict(os.environ, DEB_BUILD_OPTIONS="nocheck parallel=%s" % JOBS)
    t0 = time.monotonic()
    r = run(["dpkg-buildpackage", "-us", "-uc", "-b"], cwd=src, env=env, check_rc=False)
    with open(os.path.join(tmp, "dpkg-buildpackage.log"), "w") as f:
        f.write(r.stdout + r.stderr)
    debs = glob.glob(os.path.join(tmp, "pkg", "yuxi-sandbox_*.deb"))
    check("dpkg-buildpackage -us -uc -b (%.0f s)" % (time.monotonic() - t0),
          r.returncode == 0 and len(debs) == 1, (r.stdout + r.stderr)[-2000:])
    if not debs:
        raise RuntimeError("no package")
    changes = glob.glob(os.path.join(tmp, "pkg", "yuxi-sandbox_*.changes"))
    lint = run(["lintian", "--info", "--display-info"] + changes, check_rc=False)
    tags = [l for l in lint.stdout.splitlines() if re.match(r"^[EWIPOX]: ", l)]
    for l in tags:
        print("      lintian: " + l)
    errors = [l for l in tags if l.startswith("E: ")]
    check("lintian: %d error(s), %d warning(s), %d info(s)"
          % (len(errors), sum(l.startswith("W: ") for l in tags),
             sum(l.startswith("I: ") for l in tags)), not errors, errors)
    listing = run(["dpkg", "-c", debs[0]]).stdout
    paths = {l.split()[-1].lstrip(".") for l in listing.splitlines()
             if not l.startswith("d")}
    missing = [p for p in PACKAGE_FILES if p not in paths]
    check("dpkg -c lists the daemon, CLI, helpers, web, nginx templates, config, unit, "
          "sysusers/tmpfiles, man pages, copyright", not missing, missing)
    ctl = os.path.join(tmp, "deb")
    run(["dpkg-deb", "-x", debs[0], ctl])
    for h in ("yuxi-run", "yuxi-agent"):
        f = os.path.join(ctl, "usr/libexec/yuxi-sandbox", h)
        dyn = run(["readelf", "-d", f]).stdout
        seg = run(["readelf", "-lW", f]).stdout
        hdr = run(["readelf", "-h", f]).stdout
        ok = ("PIE" in dyn and "NOW" in dyn and "GNU_RELRO" in seg and "INTERP" not in seg
              and "DYN" in hdr and "NEEDED" not in dyn)
        check("%s: static PIE, RELRO, BIND_NOW (readelf)" % h, ok, dyn + seg)
    return debs[0], paths


# ------------------------------------------------------------------ 2. make install
def destdir_check(tmp):
    src = os.path.join(tmp, "inst", "src")
    bld = os.path.join(tmp, "inst", "build")
    dest = os.path.join(tmp, "inst", "dest")
    copy_source(src)
    os.makedirs(bld)
    say("make install / uninstall DESTDIR=%s" % dest)
    run(["autoreconf", "-fi"], cwd=src)
    run([os.path.join(src, "configure"), "-q", "--prefix=/usr", "--sysconfdir=/etc",
         "--localstatedir=/var", "--runstatedir=/run"], cwd=bld)
    run(["make", "-j" + JOBS], cwd=bld)
    run(["make", "install", "DESTDIR=" + dest], cwd=bld)

    def files():
        out = []
        for root, dirs, names in os.walk(dest):
            for n in names:
                out.append(os.path.join(root, n)[len(dest):])
        return sorted(out)

    have = files()
    missing = [p for p in INSTALL_FILES if p not in have]
    check("make install: %d files in the conventional places" % len(have), not missing, missing)
    help_text = run([dest + "/usr/sbin/yuxi-sandboxd", "--help"]).stdout
    conf = open(dest + CONF).read()
    unit = open(dest + "/usr/lib/systemd/system/yuxi-sandbox.service").read()
    tmpf = open(dest + "/usr/lib/tmpfiles.d/yuxi-sandbox.conf").read()
    check("--sysconfdir, --localstatedir, --runstatedir take effect",
          CONF in help_text and "#YUXI_SAVES_DIR=/var/lib/yuxi-sandbox" in conf
          and "#YUXI_FCGI_SOCKET=/run/yuxi-sandbox/fcgi.sock" in conf
          and "ExecStart=/usr/sbin/yuxi-sandboxd" in unit and "d /run/yuxi-sandbox " in tmpf,
          help_text)
    with open(dest + CONF, "a") as f:
        f.write("YUXI_WORKERS=2\n")
    r = run(["make", "install", "DESTDIR=" + dest], cwd=bld)
    check("make install again keeps a changed configuration file",
          open(dest + CONF).read().endswith("YUXI_WORKERS=2\n") and "kept" in r.stdout,
          r.stdout[-500:])
    run(["make", "uninstall", "DESTDIR=" + dest], cwd=bld)
    left = files()
    check("make uninstall: only the changed configuration file is left",
          left == [CONF], left)
    os.unlink(dest + CONF)
    run(["make", "install", "DESTDIR=" + dest], cwd=bld)
    run(["make", "uninstall", "DESTDIR=" + dest], cwd=bld)
    left = files()
    check("make install + make uninstall leave no file", not left, left)


# ------------------------------------------------------------------ 3..6 the package
def proc_status(pid):
    out = {}
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            k, _, v = line.partition(":")
            out[k] = v.strip()
    return out


def children(pid):
    r = run(["ps", "-o", "pid=", "--ppid", str(pid)], check_rc=False)
    return [int(x) for x in r.stdout.split()]


def http_checks(base, auth, tag):
    s = requests.Session()
    s.auth = auth
    anon = requests.Session()
    api = base + URL_PREFIX + "/api"

    r = anon.get(base + "/other/")
    check("the site's unrelated location /other/ still answers",
          r.status_code == 200 and r.text == "other\n", (r.status_code, r.text[:200]))
    r = anon.get(base + URL_PREFIX + "/healthz")
    check("GET %s/healthz (no password)" % URL_PREFIX, r.status_code == 200, r.text[:300])
    r = anon.post(api + "/threads", json={})
    check("no password: 401", r.status_code == 401, r.status_code)
    r = requests.post(api + "/threads", json={}, auth=("alice", "wrong"))
    check("a wrong password: 401", r.status_code == 401, r.status_code)
    tid = "inst-" + tag
    r = s.post(api + "/threads", json={"thread_id": tid})
    if not check("create a thread (basic auth user alice)", r.status_code == 201
                 and r.json().get("owner") == "alice", (r.status_code, r.text[:300])):
        return tid
    r = s.post(api + "/execute", json={
        "thread_id": tid,
        "command": "echo hello from $(id -u); printf made > /home/yuxi/user-data/outputs/made.txt;"
                   " printf secret > /home/yuxi/user-data/outputs/private.txt;"
                   " chmod 600 /home/yuxi/user-data/outputs/private.txt"}, timeout=180)
    ok = r.status_code == 200 and r.json().get("exit_code") == 0 and "hello from" in r.json().get("output", "")
    check("execute a command in the thread's sandbox", ok, (r.status_code, r.text[:500]))
    content = "written through the API %s\n" % tag
    r = s.post(api + "/filesystem/write", json={"thread_id": tid, "path": "/outputs/report.txt",
                                               "content": content})
    check("write a file", r.status_code == 201, (r.status_code, r.text[:300]))
    rid = r.headers.get("X-Request-Id", "")
    lines = []
    try:
        with open(AUDIT) as f:
            lines = [json.loads(l) for l in f if l.strip()]
    except (OSError, ValueError) as e:
        lines = [{"error": str(e)}]
    check("the audit log %s has the write, with the X-Request-Id the client saw" % AUDIT,
          any(l.get("request_id") == rid and l.get("user") == "alice" for l in lines) and rid,
          (rid, lines[-3:]))
    r = s.get(api + "/viewer/filesystem/download",
              params={"thread_id": tid, "path": "/outputs/report.txt"})
    ok = (r.status_code == 200 and r.text == content and "ETag" in r.headers
          and "attachment" in r.headers.get("Content-Disposition", "")
          and "X-Accel-Redirect" not in r.headers)
    check("viewer download of it (X-Accel-Redirect: nginx as www-data sends the file)",
          ok, (r.status_code, dict(r.headers), r.text[:200]))
    r = s.get(api + "/filesystem/download", params={"thread_id": tid, "path": "/outputs/made.txt"})
    check("download of a file the sandbox made (mode 0644, owned by the thread's uid)",
          r.status_code == 200 and r.text == "made", (r.status_code, r.text[:200]))
    r = s.get(api + "/filesystem/download", params={"thread_id": tid, "path": "/outputs/private.txt"})
    check("a file the sandbox made 0600: nginx refuses it (403, as documented)",
          r.status_code == 403, (r.status_code, r.text[:200]))
    r = s.get(api + "/filesystem/cat", params={"thread_id": tid, "path": "/outputs/private.txt"})
    check("... while the API still reads it (the broker's CAP_DAC_READ_SEARCH)",
          r.status_code == 200 and "secret" in r.text, (r.status_code, r.text[:200]))
    r = s.post(api + "/threads", json={}, headers={"Origin": "https://elsewhere.example"})
    check("cross-site POST with the browser's credentials: 403", r.status_code == 403,
          (r.status_code, r.text[:200]))
    r = s.get(base + URL_PREFIX + "/")
    ok = r.status_code == 200 and r.headers.get("Content-Type", "").startswith("text/html")
    check("workbench page at %s/" % URL_PREFIX, ok, (r.status_code, r.text[:200]))
    assets = re.findall(r'(?:src|href)="([^"#:]+)"', r.text) if ok else []
    bad = []
    for a in assets:
        u = base + URL_PREFIX + "/" + a.lstrip("./") if not a.startswith("/") else base + a
        ra = s.get(u)
        want = {"js": "javascript", "css": "text/css", "svg": "image/svg"}.get(a.rsplit(".", 1)[-1], "")
        if ra.status_code != 200 or want not in ra.headers.get("Content-Type", ""):
            bad.append((a, ra.status_code, ra.headers.get("Content-Type")))
    check("workbench scripts and styles load (%d: %s)" % (len(assets), " ".join(assets)),
          assets and not bad, bad)
    r = anon.get(base + URL_PREFIX + "/")
    check("workbench without a password: 401 (the browser asks)", r.status_code == 401,
          r.status_code)
    r = anon.get(base + URL_PREFIX + "/_yuxi_files/%s/user-data/outputs/report.txt" % tid,
                 auth=auth)
    check("the internal download location cannot be requested directly",
          r.status_code == 404, r.status_code)
    return tid


def stop(p):
    if p is not None and p.poll() is None:
        p.send_signal(signal.SIGTERM)
        try:
            p.wait(timeout=60)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def control_filter(tmp, daemon, base, auth, tid):
    """Control: the same unit with openat2 denied. The broker's writes must
    fail, or the emulation does not apply the unit's system call filter
    (and the checks above would prove nothing about it). Returns the
    control daemon (stopped by the caller)."""
    stop(daemon)
    unit = os.path.join(tmp, "control.service")
    with open(UNIT) as f:
        text = f.read()
    with open(unit, "w") as f:
        f.write(text.replace("SystemCallErrorNumber=EPERM",
                             "SystemCallFilter=~openat2\nSystemCallErrorNumber=EPERM"))
    log = os.path.join(tmp, "control.log")
    ctl = subprocess.Popen([sys.executable, os.path.join(HERE, "unitexec.py"), "start", unit,
                            "--log", log], env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin"})
    yxsvc.wait_for(lambda: _answers(base + URL_PREFIX + "/healthz") or ctl.poll() is not None,
                   30, 0.1)
    r = requests.post(base + URL_PREFIX + "/api/filesystem/write", auth=auth,
                      json={"thread_id": tid, "path": "/outputs/control.txt", "content": "x"})
    # the broker's EPERM from openat2 reads as a refused path (403)
    check("control: the same unit with openat2 denied: the write that succeeded above "
          "fails (%d)" % r.status_code, ctl.poll() is None and r.status_code != 201,
          (r.status_code, r.text[:300], _tail(log, 1000)))
    return ctl


def start_nginx(tmp, port, snippets):
    ng = os.path.join(tmp, "nginx")
    os.makedirs(ng)
    os.chmod(tmp, 0o755)
    conf = os.path.join(ng, "nginx.conf")
    with open(conf, "w") as f:
        f.write("""user www-data;
worker_processes 1;
daemon off;
pid %(ng)s/nginx.pid;
error_log %(ng)s/error.log info;
events { worker_connections 256; }
http {
	include /etc/nginx/mime.types;
	default_type application/octet-stream;
	access_log %(ng)s/access.log;
	sendfile on;
	client_body_temp_path %(ng)s/client_body;
	proxy_temp_path %(ng)s/proxy;
	fastcgi_temp_path %(ng)s/fastcgi;
	uwsgi_temp_path %(ng)s/uwsgi;
	scgi_temp_path %(ng)s/scgi;
	include %(snip)s/yuxi-sandbox-http.conf;
	server {
		listen 127.0.0.1:%(port)d;
		server_name localhost;
		client_header_timeout 10s;
		keepalive_timeout 15s;
		include %(snip)s/yuxi-sandbox-server.conf;
		location /other/ {
			default_type text/plain;
			return 200 "other\\n";
		}
	}
}
""" % {"ng": ng, "snip": snippets, "port": port})
    t = run(["nginx", "-t", "-p", ng, "-c", conf, "-e", os.path.join(ng, "error.log")],
            check_rc=False)
    check("nginx -t with the two snippets and an unrelated location", t.returncode == 0,
          t.stderr[-1500:])
    p = subprocess.Popen(["nginx", "-p", ng, "-c", conf, "-e", os.path.join(ng, "error.log")],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return p, ng


def package_test(tmp, deb, pkg_paths):
    tag = "%dn%s" % (os.getpid(), secrets.token_hex(2))
    cprefix, shm = "yxinst%s-" % tag, "/yxinst%s" % tag
    before = {p: os.path.lexists(p) for p in (STATE, RUNDIR, "/etc/yuxi-sandbox")}
    try:
        pwd.getpwnam(USER)
        user_before = True
    except KeyError:
        user_before = False
    dirs_before = {p: os.path.isdir(p) for p in pkg_paths}
    daemon = nginx = None
    log = os.path.join(tmp, "yuxi-sandboxd.log")
    try:
        say("apt-get install %s" % deb)
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        r = run(["apt-get", "install", "-y", "-q", deb], env=env, check_rc=False, timeout=900)
        if not check("apt-get install ./%s" % os.path.basename(deb), r.returncode == 0,
                     r.stdout[-2000:] + r.stderr[-2000:]):
            return
        pw = pwd.getpwnam(USER)
        docker = grp.getgrnam("docker")
        check("system user %s (uid %d), own group, in docker, no login" % (USER, pw.pw_uid),
              pw.pw_uid < 1000 and grp.getgrgid(pw.pw_gid).gr_name == USER
              and USER in docker.gr_mem and pw.pw_shell.endswith("nologin"),
              (pw, docker.gr_mem))
        for d in (STATE, RUNDIR):
            st = os.stat(d)
            check("%s: %s, 0755" % (d, USER), st.st_uid == pw.pw_uid
                  and stat.S_IMODE(st.st_mode) == 0o755, (st.st_uid, oct(st.st_mode)))

        r = run(["systemd-analyze", "security", "--offline=true", UNIT], check_rc=False)
        m = re.search(r"Overall exposure level for \S+: ([0-9.]+) (\S+)", r.stdout + r.stderr)
        score = float(m.group(1)) if m else 99.0
        check("systemd-analyze security --offline=true %s: %s" % (UNIT, m.group(0) if m else "?"),
              score <= 5.0, (r.stdout + r.stderr)[-1500:])

        # the configuration file: every default, uncommented, is valid
        text = open(CONF).read()
        sample = os.path.join(tmp, "all-defaults.conf")
        with open(sample, "w") as f:
            f.write(re.sub(r"(?m)^#(YUXI_[A-Z0-9_]+=)", r"\1", text))
        r = run(["/usr/sbin/yuxi-sandboxd", "-t", "-c", sample], check_rc=False,
                env={"PATH": "/usr/sbin:/usr/bin:/bin"})
        check("the installed configuration file with every setting uncommented is valid",
              r.returncode == 0, r.stderr)
        check("the installed configuration sets YUXI_FCGI_SOCKET_GROUP=www-data",
              re.search(r"(?m)^YUXI_FCGI_SOCKET_GROUP=www-data$", text), text[:300])
        with open(CONF, "a") as f:
            f.write("\n# added by tests/install\nYUXI_URL_PREFIX=%s\n"
                    "YUXI_SANDBOX_CONTAINER_PREFIX=%s\nYUXI_SHM_NAME=%s\n"
                    "YUXI_SANDBOX_IMAGE=%s\nYUXI_WORKERS=2\n" % (URL_PREFIX, cprefix, shm, IMAGE))
        r = run(["runuser", "-u", USER, "--", "/usr/sbin/yuxi-sandboxd", "-t"], check_rc=False,
                env={"PATH": "/usr/sbin:/usr/bin:/bin"})
        check("yuxi-sandboxd -t as %s reads %s" % (USER, CONF),
              r.returncode == 0 and CONF in r.stderr, r.stderr)

        # 4. the daemon, as the unit runs it
        say("starting %s as %s would (unitexec.py)" % ("/usr/sbin/yuxi-sandboxd", UNIT))
        daemon = subprocess.Popen([sys.executable, os.path.join(HERE, "unitexec.py"), "start",
                                   UNIT, "--log", log],
                                  env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin"})
        up = yxsvc.wait_for(lambda: os.path.exists(SOCKET) or daemon.poll() is not None, 30, 0.1)
        if not check("the daemon starts under the unit's settings and opens %s" % SOCKET,
                     up and daemon.poll() is None, open(log).read()[-3000:]):
            return
        st = os.stat(SOCKET)
        check("socket: owner %s, group www-data, mode 0660" % USER,
              st.st_uid == pw.pw_uid and st.st_gid == grp.getgrnam("www-data").gr_gid
              and stat.S_IMODE(st.st_mode) == 0o660, (st.st_uid, st.st_gid, oct(st.st_mode)))
        yxsvc.wait_for(lambda: len(children(daemon.pid)) >= 3, 10)
        pids = [daemon.pid] + children(daemon.pid)
        bad = []
        for pid in pids:
            s = proc_status(pid)
            uids = set(s["Uid"].split())
            groups = {int(g) for g in s["Groups"].split()}
            want = (uids == {str(pw.pw_uid)} and int(s["CapEff"], 16) == CAPS
                    and int(s["CapBnd"], 16) == CAPS and int(s["CapAmb"], 16) == CAPS
                    and s["NoNewPrivs"] == "1" and s["Seccomp"] == "2"
                    and docker.gr_gid in groups)
            if not want:
                bad.append((pid, s["Uid"], s["CapEff"], s["CapBnd"], s["NoNewPrivs"],
                            s["Seccomp"], s["Groups"]))
        check("master, %d workers and reaper: uid %s, CapEff=CapBnd=CapAmb=0x2f, "
              "NoNewPrivs, seccomp filter, docker group" % (len(pids) - 2, USER), not bad, bad)
        mounts = {}
        with open("/proc/%d/mountinfo" % daemon.pid) as f:
            for line in f:
                p = line.split()
                mounts[p[4]] = p[5].split(",")
        ok = ("ro" in mounts.get("/", []) and "rw" in mounts.get(STATE, [])
              and "rw" in mounts.get(RUNDIR, []) and "ro" in mounts.get("/etc", ["ro"])
              and "subset=pid" in open("/proc/%d/mountinfo" % daemon.pid).read())
        check("the daemon's view: / read-only, %s and %s writable, /proc subset=pid"
              % (STATE, RUNDIR), ok, {k: v for k, v in mounts.items() if k in ("/", STATE, RUNDIR)})
        ns = {os.readlink("/proc/%d/ns/net" % daemon.pid), os.readlink("/proc/self/ns/net")}
        check("the daemon is in a network namespace of its own (PrivateNetwork=yes) "
              "and still reaches the engine", len(ns) == 2, ns)

        # 5. nginx with the rendered snippets
        snippets = os.path.join(tmp, "snippets")
        os.makedirs(snippets)
        htpasswd = os.path.join(tmp, "htpasswd")
        password = secrets.token_hex(12)
        hashed = run(["openssl", "passwd", "-apr1", password]).stdout.strip()
        with open(htpasswd, "w") as f:
            f.write("alice:%s\n" % hashed)
        os.chown(htpasswd, 0, grp.getgrnam("www-data").gr_gid)
        os.chmod(htpasswd, 0o640)
        r = run(["/usr/bin/yuxi-sandbox", "nginx-conf", "--auth", "basic", "--htpasswd", htpasswd,
                 "--out", snippets], check_rc=False, env={"PATH": "/usr/sbin:/usr/bin:/bin"})
        if not check("yuxi-sandbox nginx-conf --auth basic (no environment: the installed "
                     "configuration)", r.returncode == 0
                     and os.path.exists(os.path.join(snippets, "yuxi-sandbox-server.conf")),
                     r.stdout[-500:] + r.stderr[-1500:]):
            return
        port = yxsvc.free_port()
        nginx, ng = start_nginx(tmp, port, snippets)
        base = "http://127.0.0.1:%d" % port
        up = yxsvc.wait_for(lambda: _answers(base + URL_PREFIX + "/healthz"), 15, 0.1)
        if not check("nginx (www-data) answers on 127.0.0.1:%d" % port, up,
                     _tail(os.path.join(ng, "error.log"))):
            return
        tid = http_checks(base, ("alice", password), tag)
        # ExecReload=/bin/kill -HUP $MAINPID, under the unit's confinement
        os.kill(daemon.pid, signal.SIGHUP)
        reloaded = yxsvc.wait_for(lambda: "reload: generation 2" in _tail(log, 100000), 30, 0.2)
        r = requests.get(base + URL_PREFIX + "/api/threads", auth=("alice", password))
        check("reload (SIGHUP, as ExecReload=): generation 2 takes over and serves",
              reloaded and daemon.poll() is None and r.status_code == 200, _tail(log, 1500))
        r = run(["/usr/bin/yuxi-sandbox", "doctor", "--json"], check_rc=False,
                env={"PATH": "/usr/sbin:/usr/bin:/bin"})
        try:
            doc = {x["check"]: x for x in json.loads(r.stdout)}
        except (ValueError, KeyError, TypeError):
            doc = {}
        check("yuxi-sandbox doctor: all ok, the installed runner "
              "/usr/libexec/yuxi-sandbox/yuxi-run (YX_RUNNER_INSTALLED)",
              r.returncode == 0 and doc.get("runner", {}).get("detail")
              == "/usr/libexec/yuxi-sandbox/yuxi-run", r.stdout[-1500:] + r.stderr[-500:])
        r = run(["/usr/bin/yuxi-sandbox", "list", "--json"], check_rc=False,
                env={"PATH": "/usr/sbin:/usr/bin:/bin"})
        try:
            rows = json.loads(r.stdout)
        except ValueError:
            rows = []
        check("yuxi-sandbox list on the host, no environment, sees the thread's sandbox",
              r.returncode == 0 and any(x.get("thread_id") == tid for x in rows),
              r.stdout[-500:] + r.stderr[-500:])
        if failed:
            print("      nginx error log:\n" + _tail(os.path.join(ng, "error.log")))
            print("      daemon log:\n" + _tail(log))
        daemon = control_filter(tmp, daemon, base, ("alice", password), tid)
    finally:
        say("stopping nginx and the daemon")
        for p in (nginx, daemon):
            stop(p)
        if daemon is not None:
            check("the daemon stops on SIGTERM with status 0", daemon.returncode == 0,
                  daemon.returncode)
        yxsvc.docker_rm_prefix(cprefix)
        yxsvc.shm_unlink(shm)
        if installed():
            say("apt-get purge %s" % PKG)
            r = run(["apt-get", "purge", "-y", "-q", PKG],
                    env=dict(os.environ, DEBIAN_FRONTEND="noninteractive"), check_rc=False)
            check("apt-get purge %s" % PKG, r.returncode == 0 and not installed(),
                  r.stdout[-1000:] + r.stderr[-1000:])
            purge_checks(pkg_paths, dirs_before, cprefix, shm)
        # leave the machine as found: the documented leftovers go too when
        # the test made them
        if not before[STATE]:
            shutil.rmtree(STATE, ignore_errors=True)
        if not user_before:
            run(["userdel", USER], check_rc=False)
            run(["groupdel", USER], check_rc=False)


def purge_checks(pkg_paths, dirs_before, cprefix, shm):
    left = []
    for p in sorted(pkg_paths):
        if os.path.lexists(p) and not (os.path.isdir(p) and dirs_before.get(p)):
            left.append(p)
    for p in ("/etc/yuxi-sandbox", RUNDIR, SOCKET, "/dev/shm" + shm):
        if os.path.lexists(p):
            left.append(p)
    check("purge: no file or directory of the package is left (%d checked)" % len(pkg_paths),
          not left, left)
    check("purge keeps the documented state directory %s" % STATE, os.path.isdir(STATE))
    try:
        pwd.getpwnam(USER)
        kept = True
    except KeyError:
        kept = False
    check("purge keeps the system user %s that owns it (documented)" % USER, kept)
    check("no container of this run is left", not yxsvc.containers(cprefix))


def _answers(url):
    try:
        return requests.get(url, timeout=2).status_code == 200
    except requests.RequestException:
        return False


def _tail(path, n=3000):
    try:
        with open(path, errors="replace") as f:
            return f.read()[-n:]
    except OSError:
        return ""


def main():
    if os.geteuid() != 0:
        print("install_test: needs root (it installs a package)")
        return 77
    if installed():
        print("install_test: %s is installed on this machine; this test installs and purges "
              "it: remove it first (apt-get purge %s)" % (PKG, PKG))
        return 1
    if not yxsvc.image_present(IMAGE):
        print("install_test: image %s missing (scripts/test.sh builds it; or "
              "YUXI_INSTALL_IMAGE)" % IMAGE)
        return 1
    tmp = tempfile.mkdtemp(prefix="yuxi-install-")
    os.chmod(tmp, 0o755)
    t0 = time.monotonic()
    try:
        deb, pkg_paths = build_package(tmp)
        # the files dpkg will install, as dpkg -c lists them (dirs too)
        listing = run(["dpkg", "-c", deb]).stdout
        all_paths = {l.split()[-1].lstrip(".").rstrip("/") or "/" for l in listing.splitlines()}
        destdir_check(tmp)
        package_test(tmp, deb, all_paths)
    except Exception as e:  # a step that could not run is a failure, not a crash
        check("the test ran to the end", False, "%s: %s" % (type(e).__name__, e))
    finally:
        if os.environ.get("YUXI_INSTALL_KEEP") == "1":
            print("kept %s" % tmp)
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    print("install: %d passed, %d failed (%.0f s)" % (passed, failed, time.monotonic() - t0))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
