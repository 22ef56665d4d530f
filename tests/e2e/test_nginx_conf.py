# SPDX-License-Identifier: MIT
"""`yuxi-sandbox nginx-conf` (src/cli/cli_nginx.c, docs/nginx.md): what it
renders passes `nginx -t` for every recipe, URL prefix and skills setting,
inside a site that serves other things; every option that lands in nginx
syntax is checked, and a refused value writes nothing.

No service is started: the command, the templates of this checkout and
the nginx binary only.
"""
import os
import re
import subprocess
import tempfile

import pytest

from yxsvc import NGINX, TOP_SRCDIR, build_path

CLI = build_path("yuxi-sandbox")
NAMES = ("yuxi-sandbox-http.conf", "yuxi-sandbox-server.conf")


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


def run(tmp, args, env=None, out=True, templates=True):
    cmd = [CLI, "nginx-conf"]
    if templates:
        cmd += ["--templates", os.path.join(TOP_SRCDIR, "nginx")]
    cmd += ["--web-root", os.path.join(TOP_SRCDIR, "web")] + list(args)
    if out:
        cmd += ["--out", os.path.join(tmp, "out")]
    return subprocess.run(cmd, env=env or env_of(tmp), capture_output=True, text=True,
                          timeout=30)


def recipe(tmp, auth):
    return {
        "basic": ["--auth", "basic", "--htpasswd", os.path.join(tmp, "htpasswd")],
        "request": ["--auth", "request", "--auth-url", "http://127.0.0.1:9/verify"],
        "header": ["--auth", "header", "--trusted-proxy", "127.0.0.2,10.1.0.0/16,fd00::/8",
                   "--user-header", "X-Remote-User"],
    }[auth]


def nginx_t(tmp, site_locations):
    """nginx -t of a site that includes the rendered snippets."""
    ng = os.path.join(tmp, "ng")
    os.makedirs(ng, exist_ok=True)
    out = os.path.join(tmp, "out")
    temp = "".join("%s_temp_path %s/%s;\n" % (d, ng, d)
                   for d in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
    conf = os.path.join(ng, "nginx.conf")
    with open(conf, "w") as f:
        f.write("pid %s/nginx.pid;\nerror_log %s/error.log;\nevents {}\nhttp {\n"
                "include /etc/nginx/mime.types;\n%sinclude %s/%s;\n"
                "server {\nlisten 127.0.0.1:9;\n%s\ninclude %s/%s;\n}\n}\n"
                % (ng, ng, temp, out, NAMES[0], site_locations, out, NAMES[1]))
    return subprocess.run([NGINX, "-t", "-p", ng, "-c", conf], capture_output=True,
                          text=True, timeout=30)


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
    http, server = rendered(tmp)
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
    for p in ("HTTP_X_YUXI_USER", "HTTP_X_YUXI_ROLE", "HTTP_AUTHORIZATION"):
        assert 'fastcgi_param %s "";' % p in api
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
        assert "proxy_pass http://127.0.0.1:9/verify;" in b["= %s/_yuxi_auth" % prefix]
    if auth == "header":
        assert "\t127.0.0.2\t1;" in http and "\tfd00::/8\t1;" in http
        assert "1\t$http_x_remote_user;" in http
        assert 'fastcgi_param HTTP_X_REMOTE_USER "";' in api
    else:
        assert "geo $yuxi_from_proxy" not in http


def test_stdout_has_both_files(tmp):
    r = run(tmp, recipe(tmp, "basic"), out=False)
    assert r.returncode == 0, r.stderr
    http, sep, server = r.stdout.partition(
        "\n# ==== yuxi-sandbox-server.conf: include it in the site's server {} ====\n\n")
    assert sep and "limit_req_zone" in http and "location ^~ /" in server
    assert run(tmp, recipe(tmp, "basic")).returncode == 0
    assert [http, server] == rendered(tmp)


def test_upload_limit_and_defaults(tmp):
    r = run(tmp, [], env=env_of(tmp, YUXI_UPLOAD_LIMIT="3m"))
    assert r.returncode == 0, r.stderr
    http, server = rendered(tmp)
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
