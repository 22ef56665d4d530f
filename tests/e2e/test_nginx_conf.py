# SPDX-License-Identifier: MIT
"""`yuxi-sandbox nginx-conf` (src/cli/cli_nginx.c, docs/nginx.md): what it
renders passes `nginx -t` for every recipe, URL prefix and skills setting,
inside a site that serves other things; every option that lands in nginx
syntax is checked, and a refused value writes nothing. The http part as a
conf.d file (--conf-d), the server-level settings snippet, --check (nginx -t
before anything is written, and on the site after), and --htpasswd-user
(the password file nginx really accepts: a real nginx asks for it).

No service is started: the command, the templates of this checkout and
the nginx binary only.
"""
import os
import re
import subprocess
import tempfile

import grp
import stat
import warnings

import pytest
import requests

from yxsvc import NGINX, TOP_SRCDIR, build_path, free_port, wait_for

CLI = build_path("yuxi-sandbox")
NAMES = ("yuxi-sandbox-http.conf", "yuxi-sandbox-server.conf", "yuxi-sandbox-settings.conf")


@pytest.fixture
def tmp():
    with tempfile.TemporaryDirectory(prefix="yxngc-") as d:
        os.makedirs(os.path.join(d, "saves"))
        os.makedirs(os.path.join(d, "out"))
        with open(os.path.join(d, "htpasswd"), "w") as f:
            f.write("alice:{PLAIN}x\n")
        yield d


def env_of(tmp, prefix="", skills=True, **extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith("YUXI_")}
    env.update({"YUXI_CONFIG": "none", "YUXI_URL_PREFIX": prefix,
                "YUXI_SAVES_DIR": os.path.join(tmp, "saves"),
                "YUXI_FCGI_SOCKET": os.path.join(tmp, "fcgi.sock"),
                "YUXI_SKILLS_DIR": os.path.join(TOP_SRCDIR, "examples", "skills") if skills else ""})
    env.update(extra)
    return env


def run(tmp, args, env=None, out=True, templates=True, stdin=""):
    cmd = [CLI, "nginx-conf"]
    if templates:
        cmd += ["--templates", os.path.join(TOP_SRCDIR, "nginx")]
    cmd += ["--web-root", os.path.join(TOP_SRCDIR, "web")] + list(args)
    if out:
        cmd += ["--out", os.path.join(tmp, "out")]
    return subprocess.run(cmd, env=env or env_of(tmp), capture_output=True, text=True,
                          timeout=30, input=stdin)


def recipe(tmp, auth):
    return {
        "basic": ["--auth", "basic", "--htpasswd", os.path.join(tmp, "htpasswd")],
        "request": ["--auth", "request", "--auth-url", "http://127.0.0.1:9/verify"],
        "header": ["--auth", "header", "--trusted-proxy", "127.0.0.2,10.1.0.0/16,fd00::/8",
                   "--user-header", "X-Remote-User"],
    }[auth]


def site_conf(tmp, site_locations, http_include=None, server_extra="", port=9):
    """A site's nginx.conf that includes the rendered snippets (the http
    part from http_include, default out/); its path."""
    ng = os.path.join(tmp, "ng")
    os.makedirs(ng, exist_ok=True)
    out = os.path.join(tmp, "out")
    temp = "".join("%s_temp_path %s/%s;\n" % (d, ng, d)
                   for d in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
    conf = os.path.join(ng, "nginx.conf")
    with open(conf, "w") as f:
        f.write("pid %s/nginx.pid;\nerror_log %s/error.log;\nevents {}\nhttp {\n"
                "include /etc/nginx/mime.types;\naccess_log off;\n%sinclude %s;\n"
                "server {\nlisten 127.0.0.1:%d;\n%s\n%s\ninclude %s/%s;\ninclude %s/%s;\n}\n}\n"
                % (ng, ng, temp, http_include or os.path.join(out, NAMES[0]), port,
                   server_extra, site_locations, out, NAMES[2], out, NAMES[1]))
    return conf


def nginx_t(tmp, site_locations):
    """nginx -t of a site that includes the rendered snippets."""
    conf = site_conf(tmp, site_locations)
    return subprocess.run([NGINX, "-t", "-p", os.path.dirname(conf), "-c", conf],
                          capture_output=True, text=True, timeout=30)


def rendered(tmp):
    texts = []
    for n in NAMES:
        with open(os.path.join(tmp, "out", n)) as f:
            texts.append(f.read())
    return texts


def blocks(text):
    """{location head: its body text (nested blocks included)} of a config."""
    out = {}
    text = re.sub(r"#[^\n]*", "", text)
    for m in re.finditer(r"location ([^{]+)\{", text):
        depth, i = 1, m.end()
        while depth and i < len(text):
            depth += {"{": 1, "}": -1}.get(text[i], 0)
            i += 1
        out[m.group(1).strip()] = text[m.end():i - 1]
    return out


@pytest.mark.parametrize("auth", ["basic", "request", "header"])
@pytest.mark.parametrize("prefix", ["", "/sandbox", "/a/b.c"])
@pytest.mark.parametrize("skills", [True, False])
def test_every_recipe_passes_nginx_t(tmp, auth, prefix, skills):
    args = recipe(tmp, auth) + ["--admin", "admin,ops.team+x@example.org"]
    r = run(tmp, args, env=env_of(tmp, prefix, skills))
    assert r.returncode == 0, r.stderr
    assert r.stderr == ""
    for n in NAMES:
        assert "wrote %s" % os.path.join(tmp, "out", n) in r.stdout
        assert "include %s" % os.path.join(tmp, "out", n) in r.stdout
    # the site's own locations next to ours (not "/" when we own it)
    site = "location /other/ { return 200 'other'; }"
    if prefix:
        site += "\nlocation / { return 200 'site'; }\nlocation ~ \\.js$ { return 404; }"
    t = nginx_t(tmp, site)
    assert t.returncode == 0, t.stderr
    http, server, settings = rendered(tmp)
    assert "client_header_timeout 10s;" in settings and "keepalive_timeout 15s;" in settings
    assert "@" not in re.sub(r"@yuxi_sandbox_4(13|29)|\S*@example\S*", "", http + server)
    assert "#[" not in http + server and "\n##" not in http + server
    # only our locations, all under the prefix (named ones excepted)
    b = blocks(server)
    for head in b:
        if not head.startswith("@"):
            assert re.match(r"(= |\^~ )?%s(/|$)" % re.escape(prefix), head), head
    assert ("= %s" % prefix in b) == bool(prefix)
    # every location that talks to the daemon sets the identity itself
    for head, body in b.items():
        if "fastcgi_pass" in body and head != "^~ %s/" % prefix:
            assert "fastcgi_param YUXI_USER " in body, head
            assert "fastcgi_param YUXI_ROLE " in body, head
    api = b["%s/api/" % prefix]
    mcp = b["= %s/mcp" % prefix]
    for p in ("HTTP_X_YUXI_USER", "HTTP_X_YUXI_ROLE", "HTTP_AUTHORIZATION"):
        assert 'fastcgi_param %s "";' % p in api and 'fastcgi_param %s "";' % p in mcp
    assert "alias %s/web/;" % os.path.realpath(TOP_SRCDIR) in server
    assert "alias %s/;" % os.path.realpath(os.path.join(tmp, "saves", "threads")) in server
    skills_loc = b["%s/_yuxi_skills/" % prefix]
    assert "internal;" in skills_loc and "internal;" in b["%s/_yuxi_files/" % prefix]
    assert ("alias " in skills_loc) == skills and ("return 404;" in skills_loc) != skills
    # admins: exact, case-sensitive regexes
    assert "~^admin$\tadmin;" in http and "~^ops\\.team\\+x@example\\.org$\tadmin;" in http
    if auth == "basic":
        assert "auth_basic_user_file %s/htpasswd;" % tmp in b["^~ %s/" % prefix]
        assert "auth_basic off;" in b["= %s/healthz" % prefix]
        assert "map $remote_user $yuxi_user" in http
    if auth == "request":
        assert "auth_request %s/_yuxi_auth;" % prefix in api
        assert "auth_request %s/_yuxi_auth;" % prefix in mcp
        assert "proxy_pass http://127.0.0.1:9/verify;" in b["= %s/_yuxi_auth" % prefix]
    if auth == "header":
        assert "\t127.0.0.2\t1;" in http and "\tfd00::/8\t1;" in http
        assert "1\t$http_x_remote_user;" in http
        assert 'fastcgi_param HTTP_X_REMOTE_USER "";' in api
        assert 'fastcgi_param HTTP_X_REMOTE_USER "";' in mcp
    else:
        assert "geo $yuxi_from_proxy" not in http


def test_stdout_has_every_file(tmp):
    r = run(tmp, recipe(tmp, "basic"), out=False)
    assert r.returncode == 0, r.stderr
    http, sep, rest = r.stdout.partition(
        "\n# ==== yuxi-sandbox-server.conf: include it in the site's server {} ====\n\n")
    server, sep2, settings = rest.partition(
        "\n# ==== yuxi-sandbox-settings.conf: include it in the same server {} ====\n\n")
    assert sep and sep2 and "limit_req_zone" in http and "location ^~ /" in server
    assert "keepalive_timeout 15s;" in settings
    assert run(tmp, recipe(tmp, "basic")).returncode == 0
    assert [http, server, settings] == rendered(tmp)


def test_upload_limit_and_defaults(tmp):
    r = run(tmp, [], env=env_of(tmp, YUXI_UPLOAD_LIMIT="3m"))
    assert r.returncode == 0, r.stderr
    http, server, _ = rendered(tmp)
    # the default recipe: request, to the documented auth service
    assert "proxy_pass http://127.0.0.1:9000/verify;" in server
    assert "client_max_body_size 3m;" in server
    assert "server unix:%s/fcgi.sock;" % tmp in http
    r = run(tmp, ["--auth", "header", "--trusted-proxy", "::1"])
    assert r.returncode == 0, r.stderr
    assert "$http_x_forwarded_user;" in rendered(tmp)[0]


BAD = [  # (options, what the message names)
    (["--auth", "digest"], "--auth"),
    (["--auth", "basic"], "--htpasswd"),
    (["--auth", "basic", "--htpasswd", "rel/htpasswd"], "--htpasswd"),
    (["--auth", "header"], "--trusted-proxy"),
    (["--htpasswd", "/x"], "--htpasswd"),
    (["--trusted-proxy", "127.0.0.2"], "--trusted-proxy"),
    (["--user-header", "X-User"], "--user-header"),
    (["--auth", "basic", "--htpasswd", "/x", "--auth-url", "http://a/"], "--auth-url"),
    (["--auth-url", "ftp://127.0.0.1/verify"], "--auth-url"),
    (["--auth-url", "http://"], "--auth-url"),
    (["--auth-url", "http:///verify"], "--auth-url"),
    (["--web-root", "web"], "--web-root"),
    (["--admin", ".hidden"], "--admin"),
    (["--admin", "a b"], "--admin"),
    (["--admin", "alice,"], "--admin"),
    (["--admin", ",".join("u%d" % i for i in range(33))], "--admin"),
    (["extra"], "extra"),
    (["--htpasswd-user", "alice"], "--htpasswd-user"),
    (["--auth", "request", "--htpasswd-user", "alice"], "--htpasswd-user"),
    (["--conf-d", "conf.d"], "--conf-d"),
    (["--nginx-conf", "/etc/nginx/nginx.conf"], "--nginx-conf"),
]
for inj in (";", " ", "\t", "\n", "{", "}", '"', "'", "\\", "$", "#", "\x01", "\x7f"):
    BAD += [
        (["--auth", "basic", "--htpasswd", "/etc/ht%spasswd" % inj], "--htpasswd"),
        (["--auth-url", "http://127.0.0.1/v%sx" % inj], "--auth-url"),
        (["--web-root", "/usr/share/w%seb" % inj], "--web-root"),
        (["--auth", "header", "--trusted-proxy", "127.0.0.2%s" % inj], "--trusted-proxy"),
        (["--auth", "header", "--trusted-proxy", "127.0.0.2",
          "--user-header", "X-U%ser" % inj], "--user-header"),
        (["--admin", "ad%smin" % inj], "--admin"),
    ]
BAD += [
    (["--auth", "header", "--trusted-proxy", a], "--trusted-proxy")
    for a in ("localhost", "127.0.0.256", "1.2.3.4/33", "::1/129", "1.2.3.4/", "1.2.3.4/-1",
              "1.2.3.4/+8", "1.2.3.4/8x", "", "127.0.0.2,,127.0.0.3", "unix:")
] + [
    (["--auth", "header", "--trusted-proxy", "::1", "--user-header", h], "--user-header")
    for h in ("", "X_User", "X:User", "X-" + "u" * 63, "Ä")
]


@pytest.mark.parametrize("args,what", BAD, ids=[repr(a)[:60] for a, _ in BAD])
def test_refused_options(tmp, args, what):
    r = run(tmp, args)
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert what in r.stderr, r.stderr
    assert os.listdir(os.path.join(tmp, "out")) == []


@pytest.mark.parametrize("var,value", [
    ("YUXI_FCGI_SOCKET", "/run/a b/fcgi.sock"), ("YUXI_FCGI_SOCKET", "/run/x;y.sock"),
    ("YUXI_SAVES_DIR", "/var/lib/x{y"), ("YUXI_SKILLS_DIR", "/srv/sk$ills"),
    ("YUXI_SAVES_DIR", "/var/lib/x#y")])
def test_refused_configuration(tmp, var, value):
    r = run(tmp, ["--auth", "request"], env=env_of(tmp, **{var: value}))
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert var in r.stderr
    assert os.listdir(os.path.join(tmp, "out")) == []


def test_templates_missing_or_broken(tmp):
    r = run(tmp, ["--templates", os.path.join(tmp, "none")], templates=False)
    assert r.returncode == 1 and "yuxi-sandbox-http.conf.in" in r.stderr, r.stderr
    bad = os.path.join(tmp, "tmpl")
    os.makedirs(bad)
    for extra, msg in (("#[nosuch]x\n", "condition"), ("# @HTPASSWD@\n", "placeholder"),
                       ("# @NOSUCH@\n", "placeholder")):
        for n in NAMES:
            with open(os.path.join(TOP_SRCDIR, "nginx", n + ".in")) as f, \
                    open(os.path.join(bad, n + ".in"), "w") as g:
                g.write(f.read() + (extra if n == NAMES[1] else ""))
        r = run(tmp, ["--templates", bad], templates=False)
        assert r.returncode == 1 and msg in r.stderr, r.stderr
        assert "%s.in:" % NAMES[1] in r.stderr
    assert os.listdir(os.path.join(tmp, "out")) == []


def test_help_and_no_table(tmp):
    r = subprocess.run([CLI, "nginx-conf", "--help"], env=env_of(tmp), capture_output=True,
                       text=True, timeout=30)
    assert r.returncode == 0 and "--trusted-proxy" in r.stdout
    # renders without the engine or the shared table: a table name that
    # cannot exist is never opened
    r = run(tmp, recipe(tmp, "request"), env=env_of(tmp, YUXI_SHM_NAME="/yxngc-none",
                                                     YUXI_DOCKER_API_SOCKET="/nonexistent"))
    assert r.returncode == 0, r.stderr
    assert not os.path.exists("/dev/shm/yxngc-none")


def test_conf_d_needs_out(tmp):
    r = run(tmp, ["--conf-d", os.path.join(tmp, "out")], out=False)
    assert r.returncode == 2 and "--conf-d" in r.stderr, r.stderr
    assert os.listdir(os.path.join(tmp, "out")) == []


def test_conf_d_file_in_a_debian_layout(tmp):
    """--conf-d writes the http part where nginx.conf's
    `include conf.d/*.conf;` takes it into http {}: the site then only
    includes the server's two files."""
    confd = os.path.join(tmp, "conf.d")
    os.makedirs(confd)
    r = run(tmp, recipe(tmp, "basic") + ["--conf-d", confd])
    assert r.returncode == 0, r.stderr
    assert sorted(os.listdir(os.path.join(tmp, "out"))) == sorted(NAMES[1:])
    assert os.listdir(confd) == ["yuxi-sandbox.conf"]
    assert "upstream yuxi_sandbox" in open(os.path.join(confd, "yuxi-sandbox.conf")).read()
    assert "include /etc/nginx/conf.d/*.conf" in r.stdout
    conf = site_conf(tmp, "location /other/ { return 200 'other'; }",
                     http_include=os.path.join(confd, "*.conf"))
    t = subprocess.run([NGINX, "-t", "-p", os.path.dirname(conf), "-c", conf],
                       capture_output=True, text=True, timeout=30)
    assert t.returncode == 0, t.stderr


def test_check_before_and_after_writing(tmp):
    # a site that includes the files: both checks pass
    conf = site_conf(tmp, "location /other/ { return 200 'other'; }")
    r = run(tmp, recipe(tmp, "request") + ["--check", "--nginx-conf", conf])
    assert r.returncode == 0, r.stderr
    assert "nginx -t: %s is valid with them" % conf in r.stdout
    assert sorted(os.listdir(os.path.join(tmp, "out"))) == sorted(NAMES)
    # a template nginx refuses: the first check fails, nothing is written
    bad = os.path.join(tmp, "tmpl")
    os.makedirs(bad)
    for n in NAMES:
        with open(os.path.join(TOP_SRCDIR, "nginx", n + ".in")) as f, \
                open(os.path.join(bad, n + ".in"), "w") as g:
            g.write(f.read() + ("no_such_directive on;\n" if n == NAMES[2] else ""))
    out2 = os.path.join(tmp, "out2")
    os.makedirs(out2)
    r = subprocess.run([CLI, "nginx-conf", "--templates", bad, "--web-root",
                        os.path.join(TOP_SRCDIR, "web"), "--auth", "request", "--out", out2,
                        "--check"], env=env_of(tmp), capture_output=True, text=True, timeout=30)
    assert r.returncode == 1, (r.stdout, r.stderr)
    assert "no_such_directive" in r.stderr and "nothing was written" in r.stderr
    assert os.listdir(out2) == []
    # the site sets client_header_timeout itself and includes the settings
    # snippet too: the files are fine alone, the site is not (a directive
    # twice), and the second check says so
    conf = site_conf(tmp, "location /other/ { return 200 'other'; }",
                     server_extra="client_header_timeout 20s;")
    r = run(tmp, recipe(tmp, "request") + ["--check", "--nginx-conf", conf])
    assert r.returncode == 1, (r.stdout, r.stderr)
    assert "duplicate" in r.stderr and "the files are written" in r.stderr, r.stderr


def htpasswd_lines(tmp):
    with open(os.path.join(tmp, "htpasswd")) as f:
        return dict(l.rstrip("\n").split(":", 1) for l in f if ":" in l)


def verifies(password, hashed):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        import crypt as c
        return c.crypt(password, hashed) == hashed


def test_htpasswd_user_adds_and_updates(tmp):
    path = os.path.join(tmp, "htpasswd")
    with open(path, "w") as f:
        f.write("# the site's users\nbob:{PLAIN}x\nalice:old\n")
    args = recipe(tmp, "basic") + ["--htpasswd-user", "alice"]
    r = run(tmp, args, stdin="pässwörd 1:x\n")
    assert r.returncode == 0, r.stderr
    assert "%s updated: alice (SHA-512-crypt; group www-data, mode 0640)" % path in r.stdout
    lines = htpasswd_lines(tmp)
    assert lines["bob"] == "{PLAIN}x" and lines["alice"].startswith("$6$")
    assert verifies("pässwörd 1:x", lines["alice"])      # glibc's crypt(3), as nginx
    assert open(path).read().startswith("# the site's users\n")
    st = os.stat(path)
    assert stat.S_IMODE(st.st_mode) == 0o640 and st.st_uid == os.geteuid()
    assert st.st_gid == grp.getgrnam("www-data").gr_gid
    # a new user is added; YUXI_FCGI_SOCKET_GROUP names nginx's group
    gid = os.getegid()
    r = run(tmp, args[:-1] + ["carol"], stdin="secret\n",
            env=env_of(tmp, YUXI_FCGI_SOCKET_GROUP=str(gid)))
    assert r.returncode == 0 and "added: carol" in r.stdout, r.stderr
    assert set(htpasswd_lines(tmp)) == {"bob", "alice", "carol"}
    assert os.stat(path).st_gid == gid
    # no password, a bad user name: the file stays as it was
    before = open(path).read()
    r = run(tmp, args, stdin="")
    assert r.returncode == 1 and "no password" in r.stderr, r.stderr
    r = run(tmp, args[:-1] + ["bad:name"], stdin="x\n")
    assert r.returncode == 2 and "--htpasswd-user" in r.stderr, r.stderr
    assert open(path).read() == before


def test_htpasswd_user_password_nginx_accepts(tmp):
    """The written file in a real nginx: the right password passes
    auth_basic, a wrong one is 401."""
    r = run(tmp, recipe(tmp, "basic") + ["--htpasswd-user", "alice"], stdin="s3cret\n")
    assert r.returncode == 0, r.stderr
    os.chmod(tmp, 0o755)    # www-data reaches the file
    port = free_port()
    ng = os.path.join(tmp, "ng2")
    os.makedirs(ng)
    conf = os.path.join(ng, "nginx.conf")
    with open(conf, "w") as f:
        # workers as www-data, nginx's group the file was given to
        f.write("user www-data www-data;\ndaemon off;\npid %s/nginx.pid;\n"
                "error_log %s/error.log;\nevents {}\n"
                "http {\naccess_log off;\nclient_body_temp_path %s;\nproxy_temp_path %s;\n"
                "fastcgi_temp_path %s;\nuwsgi_temp_path %s;\nscgi_temp_path %s;\n"
                "server {\nlisten 127.0.0.1:%d;\nlocation / {\nauth_basic x;\n"
                "auth_basic_user_file %s/htpasswd;\nroot %s;\n}\n}\n}\n"
                % ((ng,) * 7 + (port, tmp, ng)))
    with open(os.path.join(ng, "index.html"), "w") as f:   # (a `return` would
        f.write("in")                                       # run before auth_basic)
    os.chmod(ng, 0o755)
    p = subprocess.Popen([NGINX, "-p", ng, "-c", conf, "-e", os.path.join(ng, "error.log")],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        base = "http://127.0.0.1:%d/" % port

        def up():
            try:
                return requests.get(base, timeout=2).status_code == 401
            except requests.RequestException:
                return False
        assert wait_for(up, 10, 0.1), open(os.path.join(ng, "error.log")).read()
        assert requests.get(base, auth=("alice", "s3cret"), timeout=5).text == "in"
        assert requests.get(base, auth=("alice", "s3crex"), timeout=5).status_code == 401
    finally:
        p.terminate()
        p.wait(timeout=10)
