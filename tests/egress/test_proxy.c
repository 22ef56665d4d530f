/* SPDX-License-Identifier: MIT */
/*
 * test_proxy.c - the egress proxy process (src/egress/proxy.c, conn.c,
 * client.c) as the master starts it, against upstreams of this test on
 * 127.0.0.1, named through the resolver override (YUXI_EGRESS_HOSTS): no
 * byte leaves the machine and no DNS query is sent.
 *
 *  - registered allowlists are served on the sandbox's own socket: plain
 *    HTTP (absolute URI, forwarded in origin form without Proxy-*
 *    headers) and CONNECT tunnels reach an allowed upstream;
 *  - refused, with 403 and the reason, before any upstream byte: a name
 *    not on the list, a port not on it, IP literals (127.0.0.1,
 *    169.254.169.254, [::1], 127.1), names that resolve to loopback or
 *    metadata addresses without allow_private; 502 for a name that does
 *    not resolve; 400 for what is not a proxy request;
 *  - each socket serves its own sandbox's list; a new registration
 *    replaces the list; the proxy restarts after a crash and learns the
 *    list back from the next registration; bad control requests are
 *    refused.
 */
#include "config.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>

#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "yuxi/config.h"
#include "yuxi/egress.h"
#include "yuxi/tree.h"

static struct yx_config	cfg;
static char		saves[64], hosts[128];
static pid_t		sup = -1, upstream = -1;
static int		up_port, up_count_fd = -1;	/* upstream connections */

/* The upstream: answers each connection with its request line. */
static void
upstream_serve(int lfd, int cntfd)
{
	char	buf[4096], reply[8192];
	ssize_t	n;
	size_t	got = 0;
	int	c, len;

	for (;;) {
		if ((c = accept(lfd, NULL, NULL)) == -1)
			continue;
		(void)!write(cntfd, "c", 1);
		got = 0;
		while (got < sizeof(buf) - 1 &&
		    (n = read(c, buf + got, sizeof(buf) - 1 - got)) > 0) {
			got += (size_t)n;
			buf[got] = '\0';
			if (strstr(buf, "\r\n\r\n") != NULL)
				break;
		}
		buf[got] = '\0';
		len = snprintf(reply, sizeof(reply), "HTTP/1.1 200 OK\r\nContent-Length: %zu\r\n"
						     "Connection: close\r\n\r\n%s",
		    got, buf);
		(void)!write(c, reply, (size_t)len);
		close(c);
	}
}

static void
setup(void)
{
	struct sockaddr_in	sin;
	socklen_t		sl = sizeof(sin);
	FILE			*f;
	int			lfd, p[2];

	yx_config_defaults(&cfg);
	snprintf(saves, sizeof(saves), "/tmp/yx-egress-XXXXXX");
	cr_assert_not_null(mkdtemp(saves));
	snprintf(cfg.saves_dir, sizeof(cfg.saves_dir), "%s", saves);
	snprintf(hosts, sizeof(hosts), "%s/hosts", saves);
	cr_assert_not_null(f = fopen(hosts, "w"));
	fputs("127.0.0.1 allowed.test private.test other.test\n"
	      "169.254.169.254 meta.test\n::1 allowed6.test\n",
	    f);
	fclose(f);
	snprintf(cfg.egress_hosts, sizeof(cfg.egress_hosts), "%s", hosts);
	/* the upstream on 127.0.0.1:<free port> */
	cr_assert_neq(lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), -1);
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	cr_assert_eq(bind(lfd, (struct sockaddr *)&sin, sizeof(sin)), 0);
	cr_assert_eq(listen(lfd, 64), 0);
	cr_assert_eq(getsockname(lfd, (struct sockaddr *)&sin, &sl), 0);
	up_port = ntohs(sin.sin_port);
	cr_assert_eq(pipe2(p, O_CLOEXEC | O_NONBLOCK), 0);
	if ((upstream = fork()) == 0) {
		close(p[0]);
		upstream_serve(lfd, p[1]);
		_exit(0);
	}
	close(lfd);
	close(p[1]);
	up_count_fd = p[0];
	cr_assert_eq(yx_egress_start(&cfg, &sup), YX_OK);
}

static void
teardown(void)
{
	if (sup > 0) {
		kill(sup, SIGTERM);
		waitpid(sup, NULL, 0);
	}
	if (upstream > 0) {
		kill(upstream, SIGKILL);
		waitpid(upstream, NULL, 0);
	}
	if (up_count_fd != -1)
		close(up_count_fd);
	(void)yx_tree_remove(AT_FDCWD, saves);
}

TestSuite(proxy, .init = setup, .fini = teardown, .timeout = 60);

/* Connections the upstream accepted since the last call. */
static int
upstream_conns(void)
{
	char	c[64];
	ssize_t	n;
	int	total = 0;

	usleep(50 * 1000);
	while ((n = read(up_count_fd, c, sizeof(c))) > 0)
		total += (int)n;
	return total;
}

/* Register tid with rules "host:port" (NULL-terminated) and private ones. */
static int
ensure(const char *tid, const char *const *allow, const char *const *priv)
{
	struct yx_egress_policy	*p = calloc(1, sizeof(*p));
	struct yx_errctx	 e;
	char			 dir[1200], why[128];
	int			 rc, i;

	for (i = 0; allow != NULL && allow[i] != NULL; i++)
		cr_assert_eq(yx_egress_rule_parse(allow[i], true, &p->allow[p->nallow++],
				 why, sizeof(why)),
		    YX_OK, "%s", allow[i]);
	for (i = 0; priv != NULL && priv[i] != NULL; i++)
		cr_assert_eq(yx_egress_rule_parse(priv[i], false, &p->priv[p->nprivate++],
				 why, sizeof(why)),
		    YX_OK);
	/* the proxy may still be starting: its control socket appears soon */
	for (i = 0; i < 50; i++) {
		yx_errctx_clear(&e);
		if ((rc = yx_egress_ensure(&cfg, tid, 1000, 1000, p, dir, sizeof(dir),
			 &e)) == YX_OK ||
		    rc == YX_E_BAD_REQUEST)
			break;
		usleep(100 * 1000);
	}
	free(p);
	return rc;
}

/* One exchange through thread tid's socket: send req, read the answer. */
static void
through(const char *tid, const char *req, char *ans, size_t len)
{
	struct sockaddr_un	sun;
	struct pollfd		pfd;
	size_t			got = 0;
	ssize_t			n;
	int			s;

	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s/egress/sb/%s/%s", saves, tid,
	    YX_EGRESS_SOCK_NAME);
	cr_assert_neq(s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0), -1);
	cr_assert_eq(connect(s, (struct sockaddr *)&sun, sizeof(sun)), 0, "%s: %s",
	    sun.sun_path, strerror(errno));
	cr_assert_eq(write(s, req, strlen(req)), (ssize_t)strlen(req));
	pfd.fd = s;
	pfd.events = POLLIN;
	while (got + 1 < len && poll(&pfd, 1, 10000) == 1 &&
	    (n = read(s, ans + got, len - 1 - got)) > 0)
		got += (size_t)n;
	ans[got] = '\0';
	close(s);
}

/* tmpl with its one "%d" replaced by port. */
static void
subst_port(char *dst, size_t len, const char *tmpl, int port)
{
	const char *p = strstr(tmpl, "%d");

	cr_assert_not_null(p);
	snprintf(dst, len, "%.*s%d%s", (int)(p - tmpl), tmpl, port, p + 2);
}

static const char *const allow1[] = { "allowed.test:*", "private.test:*",
	"meta.test:80", "nowhere.test:80", "allowed6.test:*", NULL };
static const char *const priv1[] = { "allowed.test", "allowed6.test", NULL };

Test(proxy, plain_http_in_origin_form)
{
	char req[512], ans[8192];

	cr_assert_eq(ensure("t1", allow1, priv1), YX_OK);
	snprintf(req, sizeof(req), "GET http://Allowed.Test:%d/x?q=1 HTTP/1.1\r\n"
				   "Host: allowed.test:%d\r\nProxy-Authorization: Basic c2VjcmV0\r\n"
				   "Proxy-Connection: keep-alive\r\nX-Keep: yes\r\n\r\n",
	    up_port, up_port);
	through("t1", req, ans, sizeof(ans));
	cr_assert(strncmp(ans, "HTTP/1.1 200 OK", 15) == 0, "%s", ans);
	cr_expect(strstr(ans, "GET /x?q=1 HTTP/1.1\r\n") != NULL, "%s", ans);
	cr_expect(strstr(ans, "X-Keep: yes") != NULL, "%s", ans);
	cr_expect(strstr(ans, "Proxy-") == NULL, "a Proxy-* header went upstream: %s", ans);
	cr_expect_eq(upstream_conns(), 1);
}

Test(proxy, connect_tunnel)
{
	char req[512], ans[8192];

	cr_assert_eq(ensure("t1", allow1, priv1), YX_OK);
	snprintf(req, sizeof(req), "CONNECT allowed.test:%d HTTP/1.1\r\nHost: x\r\n\r\n"
				   "GET /tunnelled HTTP/1.1\r\nHost: x\r\n\r\n",
	    up_port);
	through("t1", req, ans, sizeof(ans));
	cr_assert(strncmp(ans, "HTTP/1.1 200 Connection established\r\n\r\n", 39) == 0,
	    "%s", ans);
	cr_expect(strstr(ans, "GET /tunnelled HTTP/1.1") != NULL, "%s", ans);
	cr_expect_eq(upstream_conns(), 1);
}

Test(proxy, refusals_reach_no_upstream)
{
	static const struct {
		const char	*req;	/* %d: the upstream's port */
		const char	*status;
		const char	*why;
	} t[] = {
		{ "CONNECT denied.test:%d HTTP/1.1\r\n\r\n", "403", "not on this sandbox's allowlist" },
		{ "GET http://denied.test:%d/ HTTP/1.1\r\n\r\n", "403", "not on this sandbox's allowlist" },
		{ "CONNECT 127.0.0.1:%d HTTP/1.1\r\n\r\n", "403", "IP literals are refused" },
		{ "GET http://127.0.0.1:%d/x HTTP/1.1\r\n\r\n", "403", "IP literals are refused" },
		{ "GET http://169.254.169.254/latest/meta-data/%d HTTP/1.1\r\n\r\n", "403",
		    "IP literals are refused" },
		{ "CONNECT [::1]:%d HTTP/1.1\r\n\r\n", "403", "IP literals are refused" },
		{ "CONNECT 127.1:%d HTTP/1.1\r\n\r\n", "403", "IP literals are refused" },
		{ "CONNECT 2130706433:%d HTTP/1.1\r\n\r\n", "403", "IP literals are refused" },
		{ "CONNECT private.test:%d HTTP/1.1\r\n\r\n", "403",
		    "resolves to a loopback address (127.0.0.1)" },
		{ "GET http://meta.test/%d HTTP/1.1\r\n\r\n", "403",
		    "resolves to a metadata address (169.254.169.254)" },
		{ "CONNECT meta.test:81 HTTP/1.1\r\n\r\n%d", "403", "not on this sandbox's allowlist" },
		{ "GET http://nowhere.test/%d HTTP/1.1\r\n\r\n", "502", "does not resolve" },
		{ "GET /x%d HTTP/1.1\r\n\r\n", "400", "not a proxy request" },
		{ "GET https://allowed.test:%d/ HTTP/1.1\r\n\r\n", "400", "use CONNECT" },
		{ "GET http://u:p@allowed.test:%d/ HTTP/1.1\r\n\r\n", "400", "credentials" },
		{ "CONNECT allowed.test HTTP/1.1\r\n\r\n%d", "400", "port" },
		{ "HELLO%d\r\n\r\n", "400", "not an HTTP/1.x request" },
	};
	char	req[512], ans[8192], status[64];
	size_t	i;

	cr_assert_eq(ensure("t1", allow1, priv1), YX_OK);
	(void)upstream_conns();
	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		subst_port(req, sizeof(req), t[i].req, up_port);
		through("t1", req, ans, sizeof(ans));
		snprintf(status, sizeof(status), "HTTP/1.1 %s ", t[i].status);
		cr_expect(strncmp(ans, status, strlen(status)) == 0, "%s -> %s", req, ans);
		cr_expect(strstr(ans, t[i].why) != NULL, "%s -> %s", req, ans);
		/* the reason is in the status line too (urllib shows it) */
		cr_expect(strstr(ans, "\r\n") != NULL &&
			strstr(ans, t[i].why) < strstr(ans, "\r\n"),
		    "%s: reason not in the status line: %s", req, ans);
	}
	cr_expect_eq(upstream_conns(), 0, "a refused request reached the upstream");
	/* the allowed ones still work, v4 and v6 (allow_private) */
	snprintf(req, sizeof(req), "GET http://allowed6.test:%d/v6 HTTP/1.1\r\n\r\n", up_port);
	through("t1", req, ans, sizeof(ans));
	cr_expect(strncmp(ans, "HTTP/1.1 502", 12) == 0, "::1 has no upstream: %s", ans);
	snprintf(req, sizeof(req), "GET http://allowed.test:%d/ok HTTP/1.1\r\n\r\n", up_port);
	through("t1", req, ans, sizeof(ans));
	cr_expect(strncmp(ans, "HTTP/1.1 200 OK", 15) == 0, "%s", ans);
}

Test(proxy, each_socket_its_own_list_and_replaced)
{
	static const char *const only_other[] = { "other.test:*", NULL };
	static const char *const priv2[] = { "other.test", NULL };
	char req[512], ans[8192];

	cr_assert_eq(ensure("t1", allow1, priv1), YX_OK);
	cr_assert_eq(ensure("t2", only_other, priv2), YX_OK);
	snprintf(req, sizeof(req), "GET http://allowed.test:%d/a HTTP/1.1\r\n\r\n", up_port);
	through("t2", req, ans, sizeof(ans));
	cr_expect(strncmp(ans, "HTTP/1.1 403", 12) == 0, "t2 used t1's list: %s", ans);
	through("t1", req, ans, sizeof(ans));
	cr_expect(strncmp(ans, "HTTP/1.1 200", 12) == 0, "%s", ans);
	/* t1 registered again with t2's list: the same socket now refuses */
	cr_assert_eq(ensure("t1", only_other, priv2), YX_OK);
	through("t1", req, ans, sizeof(ans));
	cr_expect(strncmp(ans, "HTTP/1.1 403", 12) == 0, "old list still served: %s", ans);
}

/* The proxy (the supervisor's child) dies: it comes back, and the next
 * registration serves the sandbox again. */
Test(proxy, restarted_after_a_crash)
{
	char	path[64], req[512], ans[8192];
	FILE	*f;
	int	child = 0, i;

	cr_assert_eq(ensure("t1", allow1, priv1), YX_OK);
	snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)sup, (int)sup);
	cr_assert_not_null(f = fopen(path, "r"));
	cr_assert_eq(fscanf(f, "%d", &child), 1);
	fclose(f);
	cr_assert_eq(kill(child, SIGKILL), 0);
	for (i = 0; i < 100; i++) {	/* backoff after an early death */
		usleep(100 * 1000);
		if (ensure("t1", allow1, priv1) == YX_OK)
			break;
	}
	cr_assert_lt(i, 100, "the proxy did not come back");
	snprintf(req, sizeof(req), "GET http://allowed.test:%d/back HTTP/1.1\r\n\r\n", up_port);
	through("t1", req, ans, sizeof(ans));
	cr_expect(strncmp(ans, "HTTP/1.1 200", 12) == 0, "%s", ans);
}

Test(proxy, bad_control_requests)
{
	static const char *const bad[] = {
		"ensure t1 0 0\nallow a.example:1\nend\n",	/* root */
		"ensure ../x 1000 1000\nallow a.example:1\nend\n",
		"ensure t1 1000 1000\nend\n",			/* no rule */
		"ensure t1 1000 1000\nallow 10.0.0.1:80\nend\n",
		"ensure t1 1000 1000\nallow a.example:1\n",	/* no end */
		"hello\n",
	};
	struct sockaddr_un	sun;
	char			ans[256];
	ssize_t			n;
	size_t			i;
	int			s;

	cr_assert_eq(ensure("t1", allow1, priv1), YX_OK);	/* it is up */
	cr_assert_eq(ensure("../x", allow1, priv1), YX_E_BAD_REQUEST);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memset(&sun, 0, sizeof(sun));
		sun.sun_family = AF_UNIX;
		snprintf(sun.sun_path, sizeof(sun.sun_path), "%s/egress/ctl.sock", saves);
		cr_assert_neq(s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0), -1);
		cr_assert_eq(connect(s, (struct sockaddr *)&sun, sizeof(sun)), 0);
		cr_assert_eq(write(s, bad[i], strlen(bad[i])), (ssize_t)strlen(bad[i]));
		shutdown(s, SHUT_WR);
		n = read(s, ans, sizeof(ans) - 1);
		ans[n > 0 ? n : 0] = '\0';
		close(s);
		cr_expect(strncmp(ans, "err ", 4) == 0, "%s -> %s", bad[i], ans);
	}
}
