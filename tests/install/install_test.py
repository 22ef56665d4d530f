# SPDX-License-Identifier: MIT
"""install_test - the packaged install, end to end, on this machine
(tests/install/run-install.sh runs it; CI runs it as a stage of its own,
never `make check`: it installs, upgrades, removes and purges a system
package). Its life cycle as docs/deployment.md §1 and §7 describe it,
without systemd (this machine has none as PID 1): what the maintainer
scripts do there, and the systemd calls debhelper put in them, read.

1. Copies the checkout (tracked and new files, as git sees them) to a
   temporary directory and builds the Debian package there
   (`dpkg-buildpackage -us -uc -b`); lintian must report no error; `dpkg -c`
   must list the daemon, CLI, helpers, web assets, nginx templates,
   configuration file, unit, sysusers.d/tmpfiles.d entries, logrotate
   file, man pages, documents and copyright; the helpers must be static PIE
   with RELRO and BIND_NOW. A second copy with a bumped version in
   debian/changelog is built for the upgrade.
2. `make install DESTDIR=...` from another copy (configured for /usr,
   /etc, /var, /run) installs everything where expected, keeps an existing
   configuration file, and `make uninstall` leaves no file.
3. A site that already runs: a separate nginx (as www-data, own prefix, a
   free port on 127.0.0.1) serving an unrelated location, whose http {}
   includes conf.d/*.conf and whose server {} includes the yuxi-sandbox
   snippets by pattern; it answers before, during and after everything.
4. `apt-get install ./yuxi-sandbox_*.deb`: nothing starts (no daemon, no
   pid file); the maintainer scripts hold debhelper's systemd calls (start
   only an enabled unit, restart on upgrade, stop on removal) and succeed
   where /run/systemd/system exists but no manager answers (a mount
   namespace of their own); the system user, its groups, the directories;
   the configuration file (every setting uncommented still validates),
   edited as an operator would (URL prefix /sandbox, YUXI_INSTANCE of this
   run, which names its table and containers).
5. Starts the installed daemon as yuxi-sandbox.service would, through
   unitexec.py (user, groups, capabilities, namespaces, seccomp of the
   unit), and checks the processes have exactly that and the master wrote
   its pid file.
6. `yuxi-sandbox nginx-conf --auth basic --htpasswd FILE --htpasswd-user
   alice --conf-d DIR --out DIR --check` (password on stdin, no
   environment): the http part as a conf.d file, the server's snippets,
   the password file root:www-data 0640 with a SHA-512-crypt entry
   glibc's crypt(3) verifies, nginx -t before and after; the site
   reloads with them. Then over real HTTP under /sandbox: sign-in refused
   without a password, a thread, a command, a write, downloads through
   X-Accel-Redirect, the documented 403 of a 0600 file, the workbench and
   its assets, the cross-site guard.
7. logrotate with the installed /etc/logrotate.d/yuxi-sandbox, without
   systemd: the audit log is renamed, the master (found by its pid file)
   makes the workers reopen it, and a new request's line lands in the new
   file, the older ones in the rotated one.
8. The CLI as root, no environment, on the packaged layout: doctor, list,
   exec (also creating a thread with --owner) print no warning and act as
   the service would (the thread's uid, files the API then serves).
   A second daemon of the same instance refuses to start, naming the
   first; one with another YUXI_INSTANCE runs beside it with a table of
   its own. A reload (SIGHUP, as ExecReload=).
9. Control: the same unit with openat2 denied must fail a write. With the
   service stopped, the CLI as root leaves no table behind, and the
   service starts again afterwards.
10. Upgrade to the bumped version with the service running: the postinst
   restarts it in place (same pid, the new program file), the new version
   is reported (--version, /metrics build info), the thread's files are
   kept and it serves.
11. `apt-get remove`: the daemon stopped (status 0), no container of the
   instance left, the configuration, state and user kept.
12. `apt-get purge`: nothing the package installed or made is left (files,
   /etc/yuxi-sandbox, /var/lib, /var/log, /run, shared memory, the user
   and its docker membership, its group); the site's nginx still starts
   with the operator's files nginx-conf wrote, which stay.

Environment: YUXI_INSTALL_IMAGE (default yuxi-sandbox:latest, built by
scripts/test.sh in CI), YUXI_INSTALL_KEEP=1 keeps the temporary directory.
Prints one line per check and "install: N passed, N failed (T s)".
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
import warnings

import requests

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.environ.get("top_srcdir") or os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(TOP, "tests", "lib"))
import yxsvc  # noqa: E402  (free_port, wait_for, docker_rm_prefix, containers)

PKG = "yuxi-sandbox"
USER = "yuxi-sandbox"
IMAGE = os.environ.get("YUXI_INSTALL_IMAGE", "yuxi-sandbox:latest")
UNIT = "/lib/systemd/system/yuxi-sandbox.service"
CONF = "/etc/yuxi-sandbox/yuxi-sandbox.conf"
STATE = "/var/lib/yuxi-sandbox"
RUNDIR = "/run/yuxi-sandbox"
LOGDIR = "/var/log/yuxi-sandbox"
AUDIT = LOGDIR + "/audit.jsonl"
SOCKET = RUNDIR + "/fcgi.sock"
DAEMON = "/usr/sbin/yuxi-sandboxd"
CLI = "/usr/bin/yuxi-sandbox"
LOGROTATE = "/etc/logrotate.d/yuxi-sandbox"
URL_PREFIX = "/sandbox"
CAPS = 0x2f		# CAP_CHOWN, CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, CAP_FOWNER, CAP_KILL
JOBS = str(min(4, os.cpu_count() or 1))
ENV = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin"}	  # an operator's root shell, no YUXI_*
APT_ENV = dict(os.environ, DEBIAN_FRONTEND="noninteractive")

# What the package must hold (dpkg -c), per the acceptance.
PACKAGE_FILES = [
    DAEMON, CLI,
    "/usr/libexec/yuxi-sandbox/yuxi-run", "/usr/libexec/yuxi-sandbox/yuxi-agent",
    "/usr/libexec/yuxi-sandbox/engine/containerd-shim-runc-v2",
    "/usr/share/yuxi-sandbox/web/index.html", "/usr/share/yuxi-sandbox/web/app.js",
    "/usr/share/yuxi-sandbox/web/api.js", "/usr/share/yuxi-sandbox/web/tree.js",
    "/usr/share/yuxi-sandbox/web/app.css", "/usr/share/yuxi-sandbox/web/favicon.svg",
    "/usr/share/yuxi-sandbox/web/term.js", "/usr/share/yuxi-sandbox/web/xterm-csp.js",
    "/usr/share/yuxi-sandbox/web/vendor/xterm/xterm.js",
    "/usr/share/yuxi-sandbox/web/vendor/xterm/xterm.css",
    "/usr/share/yuxi-sandbox/web/vendor/xterm/addon-fit.js",
    "/usr/share/yuxi-sandbox/web/vendor/xterm/LICENSE",
    "/usr/share/yuxi-sandbox/nginx/yuxi-sandbox-http.conf.in",
    "/usr/share/yuxi-sandbox/nginx/yuxi-sandbox-server.conf.in",
    "/usr/share/yuxi-sandbox/nginx/yuxi-sandbox-settings.conf.in",
    "/usr/share/yuxi-sandbox/images/default/build.sh",
    "/usr/share/yuxi-sandbox/images/test/build.sh",
    CONF, UNIT, "/usr/lib/sysusers.d/yuxi-sandbox.conf",
    "/usr/lib/tmpfiles.d/yuxi-sandbox.conf", LOGROTATE,
    "/usr/share/man/man8/yuxi-sandboxd.8.gz", "/usr/share/man/man1/yuxi-sandbox.1.gz",
    "/usr/share/man/man5/yuxi-sandbox.conf.5.gz",
    "/usr/share/doc/yuxi-sandbox/copyright",
    "/usr/share/doc/yuxi-sandbox/deployment.md.gz",
    "/usr/share/doc/yuxi-sandbox/operations.md.gz",
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
def dpkg_build(tmp, name, bump=None):
    """dpkg-buildpackage in a copy of the checkout at tmp/name; with bump
    (a version), debian/changelog gets a new top entry first. Returns the
    .deb, or raises."""
    src = os.path.join(tmp, name, "yuxi-sandbox")
    copy_source(src)
    if bump is not None:
        path = os.path.join(src, "debian", "changelog")
        with open(path) as f:
            old = f.read()
        with open(path, "w") as f:
            f.write("yuxi-sandbox (%s) unstable; urgency=medium\n\n"
                    "  * tests/install: a version bump, for the upgrade.\n\n"
                    " -- yuxi-sandbox authors <dev@yuxi.invalid>  %s\n\n%s"
                    % (bump, time.strftime("%a, %d %b %Y %H:%M:%S +0000", time.gmtime()),
                       old))
    say("dpkg-buildpackage -us -uc -b in %s" % src)
    env = dict(os.environ, DEB_BUILD_OPTIONS="nocheck parallel=%s" % JOBS)
    t0 = time.monotonic()
    r = run(["dpkg-buildpackage", "-us", "-uc", "-b"], cwd=src, env=env, check_rc=False)
    with open(os.path.join(tmp, name + "-dpkg-buildpackage.log"), "w") as f:
        f.write(r.stdout + r.stderr)
    debs = glob.glob(os.path.join(tmp, name, "yuxi-sandbox_*.deb"))
    check("dpkg-buildpackage -us -uc -b%s (%.0f s)"
          % (" of version %s" % bump if bump else "", time.monotonic() - t0),
          r.returncode == 0 and len(debs) == 1, (r.stdout + r.stderr)[-2000:])
    if not debs:
        raise RuntimeError("no package")
    return debs[0], src


def build_package(tmp):
    deb, src = dpkg_build(tmp, "pkg")
    changes = glob.glob(os.path.join(tmp, "pkg", "yuxi-sandbox_*.changes"))
    lint = run(["lintian", "--info", "--display-info"] + changes, check_rc=False)
    tags = [l for l in lint.stdout.splitlines() if re.match(r"^[EWIPOX]: ", l)]
    for l in tags:
        print("      lintian: " + l)
    errors = [l for l in tags if l.startswith("E: ")]
    check("lintian: %d error(s), %d warning(s), %d info(s)"
          % (len(errors), sum(l.startswith("W: ") for l in tags),
             sum(l.startswith("I: ") for l in tags)), not errors, errors)
    listing = run(["dpkg", "-c", deb]).stdout
    paths = {l.split()[-1].lstrip(".") for l in listing.splitlines()
             if not l.startswith("d")}
    missing = [p for p in PACKAGE_FILES if p not in paths]
    check("dpkg -c lists the daemon, CLI, helpers, web, nginx templates, config, unit, "
          "sysusers/tmpfiles, logrotate, man pages, documents, copyright", not missing, missing)
    ctl = os.path.join(tmp, "deb")
    run(["dpkg-deb", "-x", deb, ctl])
    for h in ("yuxi-run", "yuxi-agent"):
        f = os.path.join(ctl, "usr/libexec/yuxi-sandbox", h)
        dyn = run(["readelf", "-d", f]).stdout
        seg = run(["readelf", "-lW", f]).stdout
        hdr = run(["readelf", "-h", f]).stdout
        ok = ("PIE" in dyn and "NOW" in dyn and "GNU_RELRO" in seg and "INTERP" not in seg
              and "DYN" in hdr and "NEEDED" not in dyn)
        check("%s: static PIE, RELRO, BIND_NOW (readelf)" % h, ok, dyn + seg)
    version = run(["dpkg-parsechangelog", "-l", os.path.join(src, "debian", "changelog"),
                   "-S", "Version"]).stdout.strip()
    return deb, version


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


# ------------------------------------------------------------------ 3.. the package
def daemon_pids():
    """Processes running /usr/sbin/yuxi-sandboxd (or its replaced file)."""
    out = []
    for d in glob.glob("/proc/[0-9]*"):
        try:
            exe = os.readlink(d + "/exe")
        except OSError:
            continue
        if exe in (DAEMON, DAEMON + " (deleted)"):
            out.append(int(d[6:]))
    return out


def pidfiles():
    return glob.glob(RUNDIR + "/yuxi-sandboxd*.pid")


def start_site(tmp, port):
    """The site that already runs: nginx as www-data, own prefix, one
    unrelated location; its http {} takes conf.d/*.conf (as Debian's
    nginx.conf does) and its server {} the yuxi-sandbox snippets by
    pattern, so the same file serves before they exist and after they
    stay behind. Returns (process, prefix dir, nginx.conf)."""
    ng = os.path.join(tmp, "nginx")
    for d in ("conf.d", "snippets"):
        os.makedirs(os.path.join(ng, d))
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
	include %(ng)s/conf.d/*.conf;
	server {
		listen 127.0.0.1:%(port)d;
		server_name localhost;
		include %(ng)s/snippets/yuxi-sandbox-settings*.conf;
		include %(ng)s/snippets/yuxi-sandbox-server*.conf;
		location /other/ {
			default_type text/plain;
			return 200 "other\\n";
		}
	}
}
""" % {"ng": ng, "port": port})
    p = subprocess.Popen(["nginx", "-p", ng, "-c", conf, "-e", os.path.join(ng, "error.log")],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return p, ng, conf


def site_answers(base, when):
    try:
        r = requests.get(base + "/other/", timeout=5)
        ok = r.status_code == 200 and r.text == "other\n"
    except requests.RequestException as e:
        r, ok = e, False
    return check("the site's unrelated location /other/ answers %s" % when, ok,
                 getattr(r, "status_code", r))


def reload_site(ng, conf):
    r = run(["nginx", "-s", "reload", "-p", ng, "-c", conf], check_rc=False)
    time.sleep(1)	# the new workers take over
    return r.returncode == 0


def scripts_check(deb_version):
    """The maintainer scripts: debhelper's systemd calls are there (start
    only an enabled unit on install, restart on upgrade, stop on removal,
    never enable), and they succeed where /run/systemd/system exists but no
    service manager answers - the path of deb-systemd-invoke without a
    manager - in a mount namespace of their own (nobody else sees it)."""
    info = "/var/lib/dpkg/info/%s." % PKG
    text = {n: open(info + n).read() for n in ("postinst", "prerm", "postrm")}
    ok = ("_dh_action=restart" in text["postinst"]
          and "deb-systemd-invoke $_dh_action 'yuxi-sandbox.service'" in text["postinst"]
          and "deb-systemd-helper enable" in text["postinst"]
          and "was-enabled" in text["postinst"]
          and "deb-systemd-invoke stop 'yuxi-sandbox.service'" in text["prerm"]
          and "deb-systemd-invoke stop" not in text["postinst"])
    check("maintainer scripts: systemd starts only an enabled unit, restarts it on upgrade "
          "(postinst), stops it on removal (prerm)", ok, text["postinst"][-1500:])
    r = run(["deb-systemd-helper", "is-enabled", "yuxi-sandbox.service"], check_rc=False)
    check("the unit is not enabled after a fresh install (deb-systemd-helper is-enabled)",
          r.returncode != 0, r.stdout + r.stderr)
    for args in (["configure", ""], ["configure", deb_version]):
        r = run(["unshare", "--mount", "--propagation", "private", "sh", "-c",
                 "mount -t tmpfs none /run/systemd && mkdir /run/systemd/system && "
                 "exec sh -x \"$0\" \"$@\"", info + "postinst"] + args, check_rc=False,
                env=APT_ENV)
        called = "deb-systemd-invoke %s" % ("restart" if args[1] else "start") in r.stderr
        check("postinst %s with /run/systemd/system but no manager: deb-systemd-invoke %s "
              "runs and fails, the script succeeds"
              % (" ".join(a or "''" for a in args), "restart" if args[1] else "start"),
              r.returncode == 0 and called, r.stderr[-1500:])


def configure(tmp, instance):
    """Check the installed file, then edit it as an operator would."""
    text = open(CONF).read()
    sample = os.path.join(tmp, "all-defaults.conf")
    with open(sample, "w") as f:
        f.write(re.sub(r"(?m)^#(YUXI_[A-Z0-9_]+=)", r"\1", text))
    r = run([DAEMON, "-t", "-c", sample], check_rc=False, env=ENV)
    check("the installed configuration file with every setting uncommented is valid",
          r.returncode == 0, r.stderr)
    check("the installed configuration sets YUXI_FCGI_SOCKET_GROUP=www-data",
          re.search(r"(?m)^YUXI_FCGI_SOCKET_GROUP=www-data$", text), text[:300])
    with open(CONF, "a") as f:
        f.write("\n# added by tests/install\nYUXI_URL_PREFIX=%s\nYUXI_INSTANCE=%s\n"
                "YUXI_SANDBOX_IMAGE=%s\nYUXI_WORKERS=2\n" % (URL_PREFIX, instance, IMAGE))
    r = run(["runuser", "-u", USER, "--", DAEMON, "-t"], check_rc=False, env=ENV)
    check("yuxi-sandboxd -t as %s reads %s" % (USER, CONF),
          r.returncode == 0 and CONF in r.stderr, r.stderr)


def start_unit(log, unit=UNIT):
    """The installed daemon as the unit would run it; returns the process
    once its socket exists (or it died)."""
    p = subprocess.Popen([sys.executable, os.path.join(HERE, "unitexec.py"), "start", unit,
                          "--log", log], env=ENV)
    yxsvc.wait_for(lambda: os.path.exists(SOCKET) or p.poll() is not None, 30, 0.1)
    return p


def unit_checks(daemon, log, pw, instance):
    if not check("the daemon starts under the unit's settings and opens %s" % SOCKET,
                 os.path.exists(SOCKET) and daemon.poll() is None, _tail(log)):
        return False
    pidfile = "%s/yuxi-sandboxd.%s.pid" % (RUNDIR, instance)
    check("the master wrote its pid file %s" % pidfile,
          yxsvc.wait_for(lambda: _read(pidfile).strip() == str(daemon.pid), 5, 0.1),
          (_read(pidfile), daemon.pid, pidfiles()))
    docker = grp.getgrnam("docker")
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
    return True


def verifies(password, hashed):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        import crypt
        return crypt.crypt(password, hashed) == hashed


def nginx_conf(ng, conf, password):
    """nginx-conf as the docs say, password on stdin; True when written."""
    htpasswd = os.path.join(ng, "htpasswd")
    r = run([CLI, "nginx-conf", "--auth", "basic", "--htpasswd", htpasswd,
             "--htpasswd-user", "alice", "--conf-d", os.path.join(ng, "conf.d"),
             "--out", os.path.join(ng, "snippets"), "--check", "--nginx-conf", conf],
            check_rc=False, env=ENV, input=password + "\n")
    ok = check("yuxi-sandbox nginx-conf --auth basic --htpasswd-user alice --conf-d --out "
               "--check (no environment: the installed configuration)",
               r.returncode == 0 and "is valid with them" in r.stdout,
               r.stdout[-800:] + r.stderr[-1500:])
    names = sorted(os.listdir(os.path.join(ng, "snippets")))
    check("the http part is conf.d/yuxi-sandbox.conf, the server's two files beside",
          os.listdir(os.path.join(ng, "conf.d")) == ["yuxi-sandbox.conf"]
          and names == ["yuxi-sandbox-server.conf", "yuxi-sandbox-settings.conf"], names)
    try:
        st = os.stat(htpasswd)
        line = open(htpasswd).read()
    except OSError as e:
        st, line = None, str(e)
    user, _, hashed = line.strip().partition(":")
    check("htpasswd: root:www-data 0640, alice's SHA-512-crypt entry glibc's crypt(3) "
          "verifies", st is not None and st.st_uid == 0
          and st.st_gid == grp.getgrnam("www-data").gr_gid
          and stat.S_IMODE(st.st_mode) == 0o640 and user == "alice"
          and hashed.startswith("$6$") and verifies(password, hashed), line)
    return ok


def logrotate_check(tmp, base, auth):
    """The installed logrotate file, forced, without systemd: the master
    is found by its pid file; lines after it land in the new file."""
    s = requests.Session()
    s.auth = auth
    api = base + URL_PREFIX + "/api"
    r = s.get(api + "/threads")
    before = r.headers.get("X-Request-Id", "")
    r = run(["logrotate", "-f", "-s", os.path.join(tmp, "logrotate.state"), LOGROTATE],
            check_rc=False)
    rotated = AUDIT + ".1"
    check("logrotate -f %s (no systemd): the audit log rotated" % LOGROTATE,
          r.returncode == 0 and os.path.exists(rotated), r.stdout + r.stderr)
    yxsvc.wait_for(lambda: os.path.exists(AUDIT), 5, 0.1)
    r = s.get(api + "/threads")
    after = r.headers.get("X-Request-Id", "")

    def ids(path):
        try:
            with open(path) as f:
                return {json.loads(l).get("request_id") for l in f if l.strip()}
        except (OSError, ValueError):
            return set()
    found = yxsvc.wait_for(lambda: after in ids(AUDIT), 5, 0.1)
    check("after the rotation a new request's line is in the new %s, the one before in "
          "audit.jsonl.1 (the workers reopened it on the master's SIGUSR1)" % AUDIT,
          before and after and found and before in ids(rotated) and after not in ids(rotated),
          (before, after, sorted(ids(AUDIT))[:5]))


def cli_root_checks(tid, base, auth, pw):
    """The CLI as root with no environment acts as the service would."""
    r = run([CLI, "doctor", "--json"], check_rc=False, env=ENV)
    try:
        doc = {x["check"]: x for x in json.loads(r.stdout)}
    except (ValueError, KeyError, TypeError):
        doc = {}
    check("yuxi-sandbox doctor as root: all ok, no warning, the installed runner",
          r.returncode == 0 and r.stderr == "" and doc.get("runner", {}).get("detail")
          == "/usr/libexec/yuxi-sandbox/yuxi-run", r.stdout[-1500:] + r.stderr[-800:])
    r = run([CLI, "list", "--json"], check_rc=False, env=ENV)
    try:
        rows = json.loads(r.stdout)
    except ValueError:
        rows = []
    check("yuxi-sandbox list as root: the thread's sandbox, no warning",
          r.returncode == 0 and r.stderr == "" and any(x.get("thread_id") == tid for x in rows),
          r.stdout[-500:] + r.stderr[-500:])
    s = requests.Session()
    s.auth = auth
    api = base + URL_PREFIX + "/api"
    want = s.post(api + "/execute", json={"thread_id": tid, "command": "id -u"}).json()
    r = run([CLI, "exec", tid, "--", "sh", "-c",
             "id -u; echo from the cli > /home/yuxi/user-data/outputs/cli.txt"],
            check_rc=False, env=ENV)
    d = s.get(api + "/filesystem/download", params={"thread_id": tid, "path": "/outputs/cli.txt"})
    check("yuxi-sandbox exec as root: no warning, the thread's uid as through the API, "
          "its file served by the API",
          r.returncode == 0 and r.stderr == "" and r.stdout.strip() ==
          want.get("output", "").strip() and d.status_code == 200
          and d.text == "from the cli\n", (r.stdout, r.stderr, want, d.status_code))
    tid2 = tid + "-cli"
    r = run([CLI, "exec", tid2, "--owner", "alice", "--", "touch",
             "/home/yuxi/user-data/workspace/made-by-cli"], check_rc=False, env=ENV)
    g = s.get(api + "/threads/" + tid2)
    w = s.post(api + "/filesystem/write", json={"thread_id": tid2, "path": "/workspace/x.txt",
                                               "content": "api"})
    st = os.stat(os.path.join(STATE, "threads", tid2))
    check("yuxi-sandbox exec --owner alice as root: the thread is alice's through the API, "
          "the API writes into it, its directory belongs to %s" % USER,
          r.returncode == 0 and r.stderr == "" and g.status_code == 200
          and w.status_code == 201 and st.st_uid == pw.pw_uid,
          (r.stderr, g.status_code, g.text[:200], w.status_code, st.st_uid))


def instance_checks(tmp, daemon, instance, pw):
    """Another daemon of the same instance refuses to start, naming the
    first; one of another instance runs beside it."""
    as_user = ["setpriv", "--reuid", USER, "--regid", USER, "--init-groups", "--", DAEMON]
    env = dict(ENV, YUXI_FCGI_SOCKET=os.path.join(tmp, "same.sock"))
    r = run(as_user, check_rc=False, env=env, timeout=30)
    check("a second daemon of instance %s refuses to start (exit 2), naming the first" % instance,
          r.returncode == 2 and "is in use by instance '%s' (master pid %d" % (instance, daemon.pid)
          in r.stderr, r.stderr[-800:])
    other = instance + "b"
    two = os.path.join(tmp, "two")
    os.makedirs(os.path.join(two, "saves"))
    for d in (two, os.path.join(two, "saves")):
        os.chown(d, pw.pw_uid, pw.pw_gid)
    env = dict(ENV, YUXI_INSTANCE=other, YUXI_FCGI_SOCKET=os.path.join(two, "fcgi.sock"),
               YUXI_SAVES_DIR=os.path.join(two, "saves"), YUXI_AUDIT_LOG="off",
               YUXI_FCGI_SOCKET_GROUP=USER)
    p = subprocess.Popen(as_user, env=env,
                         stdout=subprocess.DEVNULL, stderr=open(os.path.join(two, "log"), "w"))
    up = yxsvc.wait_for(lambda: os.path.exists(os.path.join(two, "fcgi.sock"))
                        or p.poll() is not None, 30, 0.1)
    shm = sorted(n for n in os.listdir("/dev/shm") if n.startswith("yuxi-sandbox.%s" % instance))
    check("a daemon with YUXI_INSTANCE=%s runs beside it: tables /yuxi-sandbox.%s and "
          "/yuxi-sandbox.%s, pid file yuxi-sandboxd.%s.pid" % (other, instance, other, other),
          up and p.poll() is None and "yuxi-sandbox.%s" % other in shm
          and "yuxi-sandbox.%s" % instance in shm
          and os.path.exists(os.path.join(two, "yuxi-sandboxd.%s.pid" % other)),
          (shm, _tail(os.path.join(two, "log"))))
    stop(p)
    check("... and stops on SIGTERM, removing its table", p.returncode == 0
          and not os.path.exists("/dev/shm/yuxi-sandbox.%s" % other), p.returncode)


def upgrade(deb2, version2, daemon, base, auth, tid, log):
    pid = daemon.pid
    t0 = time.monotonic()
    r = run(["apt-get", "install", "-y", "-q", deb2], env=APT_ENV, check_rc=False, timeout=900)
    check("apt-get install ./%s with the service running (%.0f s)"
          % (os.path.basename(deb2), time.monotonic() - t0), r.returncode == 0,
          r.stdout[-2000:] + r.stderr[-2000:])
    check("the postinst restarted it in place: same pid %d, now the new program file, "
          "as its log says" % pid, daemon.poll() is None
          and _readlink("/proc/%d/exe" % pid) == DAEMON
          and "SIGUSR2: stopping, then executing" in _tail(log, 1000000)
          and "restarting yuxi-sandboxd (pid %d)" % pid in r.stdout,
          (daemon.poll(), _readlink("/proc/%d/exe" % pid), r.stdout[-800:]))
    up = yxsvc.wait_for(lambda: _answers(base + URL_PREFIX + "/healthz"), 30, 0.2)
    v = run([DAEMON, "--version"], check_rc=False, env=ENV).stdout.strip()
    c = run([CLI, "--version"], check_rc=False, env=ENV).stdout.strip()
    m = requests.get(base + URL_PREFIX + "/metrics").text if up else ""
    check("the new version %s: yuxi-sandboxd --version, yuxi-sandbox --version, /metrics "
          "yuxi_build_info" % version2, v == "yuxi-sandboxd " + version2
          and c == "yuxi-sandbox " + version2
          and 'yuxi_build_info{version="%s"} 1' % version2 in m,
          (v, c, re.findall(r"yuxi_build_info.*", m)))
    s = requests.Session()
    s.auth = auth
    api = base + URL_PREFIX + "/api"
    d = s.get(api + "/filesystem/download", params={"thread_id": tid, "path": "/outputs/report.txt"})
    e = s.post(api + "/execute", json={"thread_id": tid,
                                          "command": "cat /home/yuxi/user-data/outputs/made.txt"},
               timeout=180)
    check("after the upgrade the thread's files are kept and it serves",
          d.status_code == 200 and "written through the API" in d.text
          and e.status_code == 200 and e.json().get("output") == "made",
          (d.status_code, e.status_code, e.text[:300]))


def remove(daemon, base, cprefix, instance):
    had = yxsvc.containers(cprefix)
    r = run(["apt-get", "remove", "-y", "-q", PKG], env=APT_ENV, check_rc=False, timeout=900)
    check("apt-get remove %s" % PKG, r.returncode == 0 and not installed(),
          r.stdout[-1500:] + r.stderr[-1500:])
    try:
        daemon.wait(timeout=30)
    except subprocess.TimeoutExpired:
        pass
    check("remove stopped the daemon through its pid file (status 0), nothing of it runs",
          daemon.returncode == 0 and not daemon_pids() and not pidfiles(),
          (daemon.returncode, daemon_pids(), r.stdout[-800:]))
    left = yxsvc.containers(cprefix)
    check("remove left none of the instance's %d container(s) (the prerm's yuxi-sandbox "
          "gc --all)" % len(had), had and not left and "others destroyed" in r.stdout,
          (had, left, r.stdout[-800:]))
    check("remove kept the configuration file, the state directory and the user",
          os.path.exists(CONF) and os.path.isdir(os.path.join(STATE, "threads"))
          and _user() is not None, (os.path.exists(CONF), os.listdir(STATE)))
    check("no shared-memory object of the instance is left",
          not [n for n in os.listdir("/dev/shm") if n.startswith("yuxi-sandbox.%s" % instance)],
          os.listdir("/dev/shm"))
    try:
        code = requests.get(base + URL_PREFIX + "/healthz", timeout=5).status_code
    except requests.RequestException as e:
        code = e
    check("nginx answers 502 under %s (no daemon)" % URL_PREFIX, code == 502, code)


def purge(pkg_paths, dirs_before, cprefix, instance):
    r = run(["apt-get", "purge", "-y", "-q", PKG], env=APT_ENV, check_rc=False)
    check("apt-get purge %s" % PKG, r.returncode == 0 and not installed(),
          r.stdout[-1000:] + r.stderr[-1000:])
    left = []
    for p in sorted(pkg_paths):
        if os.path.lexists(p) and not (os.path.isdir(p) and dirs_before.get(p)):
            left.append(p)
    for p in ("/etc/yuxi-sandbox", RUNDIR, STATE, LOGDIR):
        if os.path.lexists(p):
            left.append(p)
    left += ["/dev/shm/" + n for n in os.listdir("/dev/shm")
             if n.startswith("yuxi-sandbox.%s" % instance)]
    check("purge: no file or directory of the package is left (%d checked), nor "
          "/etc/yuxi-sandbox, %s, %s, %s, shared memory" % (len(pkg_paths), STATE, LOGDIR, RUNDIR),
          not left, left)
    docker = grp.getgrnam("docker")
    try:
        grp.getgrnam(USER)
        group = True
    except KeyError:
        group = False
    check("purge removed the user %s, its docker membership and its group" % USER,
          _user() is None and USER not in docker.gr_mem and not group, docker.gr_mem)
    check("no container of this run is left", not yxsvc.containers(cprefix))


def package_test(tmp, deb, version, deb2, version2, pkg_paths):
    tag = "%dn%s" % (os.getpid(), secrets.token_hex(2))
    instance = "inst" + tag
    cprefix = "yuxi-sandbox.%s-" % instance
    user_before = _user() is not None
    before = {p: os.path.lexists(p) for p in (STATE, RUNDIR, LOGDIR, "/etc/yuxi-sandbox")}
    dirs_before = {p: os.path.isdir(p) for p in pkg_paths}
    daemon = site = None
    log = os.path.join(tmp, "yuxi-sandboxd.log")
    port = yxsvc.free_port()
    base = "http://127.0.0.1:%d" % port
    password = secrets.token_hex(12) + " ü:x"
    auth = ("alice", password.encode())
    try:
        site, ng, site_conf = start_site(tmp, port)
        if not check("the site's nginx (www-data) runs on 127.0.0.1:%d" % port,
                     yxsvc.wait_for(lambda: _answers(base + "/other/"), 15, 0.1),
                     _tail(os.path.join(ng, "error.log"))):
            return

        say("apt-get install %s" % deb)
        r = run(["apt-get", "install", "-y", "-q", deb], env=APT_ENV, check_rc=False, timeout=900)
        if not check("apt-get install ./%s" % os.path.basename(deb), r.returncode == 0,
                     r.stdout[-2000:] + r.stderr[-2000:]):
            return
        check("a fresh install starts nothing: no yuxi-sandboxd runs, no pid file",
              not daemon_pids() and not pidfiles(), (daemon_pids(), pidfiles()))
        scripts_check(version)
        pw = _user()
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
        configure(tmp, instance)
        site_answers(base, "after the install")

        say("starting %s as %s would (unitexec.py)" % (DAEMON, UNIT))
        daemon = start_unit(log)
        if not unit_checks(daemon, log, pw, instance):
            return
        if not nginx_conf(ng, site_conf, password):
            return
        check("the site reloads with the snippets (nginx -s reload)", reload_site(ng, site_conf))
        up = yxsvc.wait_for(lambda: _answers(base + URL_PREFIX + "/healthz"), 15, 0.1)
        if not check("nginx answers under %s" % URL_PREFIX, up,
                     _tail(os.path.join(ng, "error.log"))):
            return
        tid = http_checks(base, auth, tag)
        logrotate_check(tmp, base, auth)
        cli_root_checks(tid, base, auth, pw)
        instance_checks(tmp, daemon, instance, pw)
        # ExecReload=/bin/kill -HUP $MAINPID, under the unit's confinement
        os.kill(daemon.pid, signal.SIGHUP)
        reloaded = yxsvc.wait_for(lambda: "reload: generation 2" in _tail(log, 100000), 30, 0.2)
        r = requests.get(base + URL_PREFIX + "/api/threads", auth=auth)
        check("reload (SIGHUP, as ExecReload=): generation 2 takes over and serves",
              reloaded and daemon.poll() is None and r.status_code == 200, _tail(log, 1500))
        if failed:
            print("      nginx error log:\n" + _tail(os.path.join(ng, "error.log")))
            print("      daemon log:\n" + _tail(log))
        ctl = control_filter(tmp, daemon, base, auth, tid)
        stop(ctl)
        # the service stopped: the CLI as root makes a table and removes it
        r = run([CLI, "list"], check_rc=False, env=ENV)
        shm = [n for n in os.listdir("/dev/shm") if n.startswith("yuxi-sandbox.%s" % instance)]
        check("with the service stopped, yuxi-sandbox list as root leaves no table behind",
              r.returncode == 0 and r.stderr == "" and not shm, (shm, r.stderr))
        daemon = start_unit(log)
        check("the service starts again after the CLI ran as root",
              daemon.poll() is None and yxsvc.wait_for(
                  lambda: _answers(base + URL_PREFIX + "/healthz"), 15, 0.1), _tail(log))

        say("upgrade to %s" % version2)
        upgrade(deb2, version2, daemon, base, auth, tid, log)
        site_answers(base, "after the upgrade")

        say("apt-get remove %s" % PKG)
        remove(daemon, base, cprefix, instance)
        site_answers(base, "after the removal")

        say("apt-get purge %s" % PKG)
        purge(pkg_paths, dirs_before, cprefix, instance)
        stop(site)
        site, ng, site_conf = restart_site(ng, site_conf)
        ok = yxsvc.wait_for(lambda: _answers(base + "/other/"), 15, 0.1)
        check("after the purge the site's nginx still starts (nginx -t and a fresh start) with "
              "the files nginx-conf wrote, which stay (the operator's)",
              ok and os.path.exists(os.path.join(ng, "conf.d", "yuxi-sandbox.conf")),
              _tail(os.path.join(ng, "error.log")))
    finally:
        say("cleaning up")
        for p in (site, daemon):
            stop(p)
        yxsvc.docker_rm_prefix(cprefix)
        for n in os.listdir("/dev/shm"):
            if n.startswith("yuxi-sandbox.%s" % instance):
                yxsvc.shm_unlink(n)
        if installed():
            run(["apt-get", "purge", "-y", "-q", PKG], env=APT_ENV, check_rc=False)
        # leave the machine as found
        for p, was in before.items():
            if not was:
                shutil.rmtree(p, ignore_errors=True)
        if not user_before and _user() is not None:
            run(["userdel", USER], check_rc=False)
            run(["groupdel", USER], check_rc=False)


def restart_site(ng, conf):
    t = run(["nginx", "-t", "-p", ng, "-c", conf, "-e", os.path.join(ng, "error.log")],
            check_rc=False)
    check("nginx -t of the site after the purge", t.returncode == 0, t.stderr[-800:])
    p = subprocess.Popen(["nginx", "-p", ng, "-c", conf, "-e", os.path.join(ng, "error.log")],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return p, ng, conf


def _user():
    try:
        return pwd.getpwnam(USER)
    except KeyError:
        return None


def _read(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return ""


def _readlink(path):
    try:
        return os.readlink(path)
    except OSError:
        return ""


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
        deb, version = build_package(tmp)
        version2 = version + "+inst1"
        deb2, _ = dpkg_build(tmp, "pkg2", bump=version2)
        # the files dpkg will install, as dpkg -c lists them (dirs too)
        listing = run(["dpkg", "-c", deb]).stdout
        all_paths = {l.split()[-1].lstrip(".").rstrip("/") or "/" for l in listing.splitlines()}
        destdir_check(tmp)
        package_test(tmp, deb, version, deb2, version2, all_paths)
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
