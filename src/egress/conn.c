/* SPDX-License-Identifier: MIT */
/*
 * conn.c - one connection through the egress proxy, in a child of the
 * proxy (proxy.c) that serves it and exits.
 *
 * The request head (at most CONN_HEAD_MAX bytes, within CONN_SETUP_SEC
 * together with the lookup and the connect: a hard alarm) is either
 *	CONNECT host:port HTTP/1.x		(RFC 9110 §9.3.6)
 * or a request with an absolute http:// URI	(RFC 9112 §3.2.2),
 * which goes upstream in origin form with the Proxy-* headers dropped.
 * Order of checks: the host must be a DNS name (an IP literal in any
 * spelling is refused: the sandbox never picks the address), the
 * allowlist must match name and port, the name is resolved here (the test
 * override, YUXI_EGRESS_HOSTS, else the system resolver), and every
 * address it resolves to must be public unless the policy's allow_private
 * names the host (special addresses never pass). The connection goes to
 * the address that was checked. Every decision is one log line; a refusal
 * is "403" with the reason in the status line (Python's urllib shows it
 * for a refused CONNECT) and in the body. Then bytes are copied both ways
 * until both sides closed or CONN_IDLE_SEC passed without traffic.
 *
 * In the control build, YX_CONTROL_OFF=egress skips the literal, allowlist
 * and address checks (the security suite's controls observe the leak).
 */
#include "config.h"

#include <sys/socket.h>

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "yuxi/buf.h"
#include "yuxi/clock.h"
#include "yuxi/egress.h"
#include "yuxi/log.h"
#include "yuxi/sock.h"
#include "yuxi/text.h"
#include "egress/egress_int.h"
#include "common/control_int.h"

#define CONN_HEAD_MAX		(16 << 10)
#define CONN_SETUP_SEC		30	/* head + lookup + connect, at most */
#define CONN_CONNECT_MS		10000
#define CONN_IDLE_SEC		300
#define CONN_ADDRS_MAX		16
#define CONN_BUF		(64 << 10)

struct conn {
	const struct yx_config		*cfg;
	const struct yx_egress_policy	*pol;
	const char			*tid;
	int				 fd;		/* the sandbox's side */
	int				 up;		/* upstream, -1 */
	char				 head[CONN_HEAD_MAX + 1];
	size_t				 hlen;		/* head bytes incl. CRLFCRLF */
	size_t				 got;		/* bytes read into head[] */
	char				 method[16];
	char				 host[YX_EGRESS_NAME_MAX + 1];	/* normalised */
	char				 shown[YX_EGRESS_NAME_MAX + 1];	/* as logged */
	int				 port;
	const char			*path;		/* origin form (HTTP) */
	size_t				 pathlen;
	bool				 connect;
};

/* Keep only printable, harmless bytes of s (n bytes) for a log or reply. */
static void
conn_show(char *dst, size_t len, const char *s, size_t n)
{
	size_t i, o = 0;

	for (i = 0; i < n && o + 1 < len; i++)
		dst[o++] = (s[i] >= 0x21 && s[i] <= 0x7e && s[i] != '"' &&
			       s[i] != '\\') ?
		    s[i] :
		    '?';
	dst[o] = '\0';
}

/*
 * The decision as one line of the audit trail, when there is one
 * (YUXI_AUDIT_LOG): {"time","op":"egress","thread","method","host","port",
 * "status","outcome":"allowed"|"refused","reason","address"}. Opened for
 * each line (O_APPEND: one write(2), whole; a rotated file is followed at
 * once); a line that cannot be written is logged, never fatal.
 */
static void
conn_audit(const struct conn *c, int status, const char *reason, const char *addr)
{
	struct yx_buf	b;
	char		ts[40];
	int		fd, rc;

	if (c->cfg->audit_log[0] == '\0')
		return;
	yx_buf_init(&b, 8192);
	if ((rc = yx_buf_printf(&b, "{\"time\":\"%s\",\"op\":\"egress\",\"thread\":",
		 yx_iso8601_ms(yx_now_ms(), ts, sizeof(ts)))) != YX_OK ||
	    (rc = yx_json_str_append(&b, c->tid, strlen(c->tid))) != YX_OK ||
	    (rc = yx_buf_puts(&b, ",\"method\":")) != YX_OK ||
	    (rc = yx_json_str_append(&b, c->method, strlen(c->method))) != YX_OK ||
	    (rc = yx_buf_puts(&b, ",\"host\":")) != YX_OK ||
	    (rc = yx_json_str_append(&b, c->shown, strlen(c->shown))) != YX_OK ||
	    (rc = yx_buf_printf(&b, ",\"port\":%d,\"status\":%d,\"outcome\":\"%s\",\"reason\":",
		 c->port, status, status == 200 ? "allowed" : "refused")) != YX_OK ||
	    (rc = yx_json_str_append(&b, reason, strlen(reason))) != YX_OK ||
	    (rc = yx_buf_puts(&b, ",\"address\":")) != YX_OK ||
	    (rc = addr != NULL ? yx_json_str_append(&b, addr, strlen(addr)) :
				 yx_buf_puts(&b, "null")) != YX_OK ||
	    (rc = yx_buf_puts(&b, "}\n")) != YX_OK)
		goto done;
	fd = open(c->cfg->audit_log, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0640);
	if (fd == -1 || write(fd, b.data, b.len) != (ssize_t)b.len)
		log_warn("egress: audit line lost: %s", c->cfg->audit_log);
	if (fd != -1)
		close(fd);
done:
	yx_buf_fini(&b);
}

/* Answer `status` with the reason, log the decision, exit. */
static void __attribute__((noreturn))
conn_refuse(struct conn *c, int status, const char *reason)
{
	char	body[512], msg[1024];
	int	n;

	log_info("egress: thread %s: %s %s:%d refused: %s", c->tid,
	    c->method[0] != '\0' ? c->method : "?",
	    c->shown[0] != '\0' ? c->shown : "?", c->port, reason);
	conn_audit(c, status, reason, NULL);
	snprintf(body, sizeof(body), "yuxi egress proxy: %s %s:%d refused: %s\n",
	    c->method[0] != '\0' ? c->method : "?",
	    c->shown[0] != '\0' ? c->shown : "?", c->port, reason);
	n = snprintf(msg, sizeof(msg), "HTTP/1.1 %d Refused by the yuxi egress "
				       "proxy: %s\r\nContent-Type: text/plain\r\n"
				       "Content-Length: %zu\r\nConnection: close\r\n"
				       "X-Yuxi-Egress: refused\r\n\r\n%s",
	    status, reason, strlen(body), body);
	if (n > 0)
		(void)yx_sock_send_all(c->fd, msg, (size_t)n < sizeof(msg) ? (size_t)n : sizeof(msg) - 1);
	_exit(0);
}

/* Read until the end of the head. */
static void
conn_read_head(struct conn *c)
{
	char	*end;
	ssize_t	 n;

	for (;;) {
		c->head[c->got] = '\0';
		if ((end = strstr(c->head, "\r\n\r\n")) != NULL) {
			c->hlen = (size_t)(end - c->head) + 4;
			return;
		}
		if (c->got == CONN_HEAD_MAX)
			conn_refuse(c, 431, "request head too large");
		if ((n = recv(c->fd, c->head + c->got, CONN_HEAD_MAX - c->got, 0)) <= 0) {
			if (n == -1 && errno == EINTR)
				continue;
			_exit(0);	/* the client left */
		}
		c->got += (size_t)n;
	}
}

/* host[:port] of an authority (len bytes) into c; dflt when no port. */
static void
conn_authority(struct conn *c, const char *a, size_t len, int dflt)
{
	const char	*colon = NULL, *why = NULL;
	size_t		 hl = len, i;
	long		 port = dflt;
	int		 rc;

	conn_show(c->shown, sizeof(c->shown), a, len < 100 ? len : 100);
	if (memchr(a, '@', len) != NULL)
		conn_refuse(c, 400, "credentials in the URI are not supported");
	if (len > 0 && a[0] == '[')
		conn_refuse(c, 403, "IP literals are refused: name a host");
	for (i = len; i > 0; i--)
		if (a[i - 1] == ':') {
			colon = a + i - 1;
			break;
		}
	if (colon != NULL) {
		hl = (size_t)(colon - a);
		port = 0;
		for (i = hl + 1; i < len && port <= 65535; i++) {
			if (a[i] < '0' || a[i] > '9')
				conn_refuse(c, 400, "bad port");
			port = port * 10 + (a[i] - '0');
		}
	}
	if (port < 1 || port > 65535)
		conn_refuse(c, 400, "bad or missing port");
	c->port = (int)port;
	conn_show(c->shown, sizeof(c->shown), a, hl < 100 ? hl : 100);
	rc = yx_egress_name_norm(a, hl, c->host, &why);
	if (rc == YX_E_FORBIDDEN && YX_CONTROL_OFF("egress") && hl < sizeof(c->host)) {
		memcpy(c->host, a, hl);	/* the control takes a literal */
		c->host[hl] = '\0';
		return;
	}
	if (rc != YX_OK)
		conn_refuse(c, rc == YX_E_FORBIDDEN ? 403 : 400, why);
	snprintf(c->shown, sizeof(c->shown), "%s", c->host);
}

/* The request line: method, target, version; the target into c. */
static void
conn_parse(struct conn *c)
{
	const char	*sp1, *sp2, *t, *a, *end;
	size_t		 ml, tl;

	end = strstr(c->head, "\r\n");
	if ((sp1 = memchr(c->head, ' ', (size_t)(end - c->head))) == NULL ||
	    (sp2 = memchr(sp1 + 1, ' ', (size_t)(end - sp1 - 1))) == NULL ||
	    (size_t)(end - sp2 - 1) != 8 || strncmp(sp2 + 1, "HTTP/1.", 7) != 0 ||
	    (sp2[8] != '0' && sp2[8] != '1'))
		conn_refuse(c, 400, "not an HTTP/1.x request");
	ml = (size_t)(sp1 - c->head);
	conn_show(c->method, ml < sizeof(c->method) ? ml + 1 : sizeof(c->method),
	    c->head, ml);
	t = sp1 + 1;
	tl = (size_t)(sp2 - t);
	if (ml == 7 && strncmp(c->head, "CONNECT", 7) == 0) {
		c->connect = true;
		conn_authority(c, t, tl, 0);
		return;
	}
	if (tl >= 8 && strncasecmp(t, "https://", 8) == 0)
		conn_refuse(c, 400, "use CONNECT for https");
	if (tl < 7 || strncasecmp(t, "http://", 7) != 0)
		conn_refuse(c, 400, "not a proxy request (absolute http:// URI or CONNECT)");
	a = t + 7;
	for (c->path = a; c->path < sp2 && *c->path != '/' && *c->path != '?'; c->path++)
		;
	conn_authority(c, a, (size_t)(c->path - a), 80);
	c->pathlen = (size_t)(sp2 - c->path);
}

/* The policy's verdict on name and port. */
static void
conn_check_name(struct conn *c)
{
	if (YX_CONTROL_OFF("egress"))
		return;
	if (!yx_egress_allows(c->pol, c->host, c->port))
		conn_refuse(c, 403, "the host and port are not on this sandbox's "
				    "allowlist");
}

/* Resolve c->host into out[*n] (port set). Refuses when nothing resolves. */
static void
conn_resolve(struct conn *c, struct sockaddr_storage *out, size_t *n)
{
	size_t i;

	*n = 0;
	if (YX_CONTROL_OFF("egress")) {	/* control: IP literals as they are */
		struct sockaddr_in	*s4 = (struct sockaddr_in *)(void *)&out[0];
		struct sockaddr_in6	*s6 = (struct sockaddr_in6 *)(void *)&out[0];

		memset(&out[0], 0, sizeof(out[0]));
		if (inet_pton(AF_INET, c->host, &s4->sin_addr) == 1) {
			s4->sin_family = AF_INET;
			*n = 1;
		} else if (inet_pton(AF_INET6, c->host, &s6->sin6_addr) == 1) {
			s6->sin6_family = AF_INET6;
			*n = 1;
		}
	}
	if (*n == 0 && yx_egress_resolve(c->cfg, c->host, out, CONN_ADDRS_MAX, n) != YX_OK)
		conn_refuse(c, 502, "the name does not resolve");
	for (i = 0; i < *n; i++) {
		if (out[i].ss_family == AF_INET)
			((struct sockaddr_in *)(void *)&out[i])->sin_port =
			    htons((uint16_t)c->port);
		else
			((struct sockaddr_in6 *)(void *)&out[i])->sin6_port =
			    htons((uint16_t)c->port);
	}
}

static void
conn_addr_str(const struct sockaddr_storage *ss, char *dst, size_t len)
{
	const void *a = ss->ss_family == AF_INET ?
	    (const void *)&((const struct sockaddr_in *)(const void *)ss)->sin_addr :
	    (const void *)&((const struct sockaddr_in6 *)(const void *)ss)->sin6_addr;

	if (inet_ntop(ss->ss_family, a, dst, (socklen_t)len) == NULL)
		snprintf(dst, len, "?");
}

/* Every address must be public, or allowed private for this host. */
static void
conn_check_addrs(struct conn *c, const struct sockaddr_storage *v, size_t n)
{
	enum yx_addr_class	cl;
	char			addr[INET6_ADDRSTRLEN], why[200];
	size_t			i;

	if (YX_CONTROL_OFF("egress"))
		return;
	for (i = 0; i < n; i++) {
		cl = yx_egress_addr_class((const struct sockaddr *)(const void *)&v[i]);
		if (cl == YX_ADDR_PUBLIC ||
		    (cl != YX_ADDR_SPECIAL && yx_egress_private_ok(c->pol, c->host)))
			continue;
		conn_addr_str(&v[i], addr, sizeof(addr));
		snprintf(why, sizeof(why), "the host resolves to a %s address "
					   "(%s)",
		    yx_addr_class_name(cl), addr);
		conn_refuse(c, 403, why);
	}
}

/* Connect to the first address that answers within CONN_CONNECT_MS. */
static void
conn_connect(struct conn *c, struct sockaddr_storage *v, size_t n, char *addr,
    size_t addrlen)
{
	struct pollfd	pfd;
	socklen_t	sl;
	size_t		i;
	int		s, err;

	for (i = 0; i < n; i++) {
		conn_addr_str(&v[i], addr, addrlen);
		if (c->cfg->egress_hosts[0] != '\0')
			yx_egress_hosts_redirect(c->cfg->egress_hosts, &v[i]);
		sl = v[i].ss_family == AF_INET ? sizeof(struct sockaddr_in) :
						 sizeof(struct sockaddr_in6);
		if ((s = socket(v[i].ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0)) == -1)
			continue;
		if (connect(s, (struct sockaddr *)&v[i], sl) == 0) {
			c->up = s;
			return;
		}
		pfd.fd = s;
		pfd.events = POLLOUT;
		err = 0;
		sl = sizeof(err);
		if (errno == EINPROGRESS && poll(&pfd, 1, CONN_CONNECT_MS) == 1 &&
		    getsockopt(s, SOL_SOCKET, SO_ERROR, &err, &sl) == 0 && err == 0) {
			c->up = s;
			return;
		}
		close(s);
	}
	conn_refuse(c, 502, "the upstream does not answer");
}

/* The head for upstream: origin form, without Proxy-* headers. */
static void
conn_forward_head(struct conn *c)
{
	const char	*line, *next, *end = c->head + c->hlen;
	char		 first[CONN_HEAD_MAX + 64];
	int		 n;

	n = snprintf(first, sizeof(first), "%s %.*s%s %.8s\r\n", c->method,
	    (int)c->pathlen, c->path, c->pathlen == 0 ? "/" : "",
	    strstr(c->head, "\r\n") - 8);
	if (n > 0 && (size_t)n < sizeof(first))
		(void)yx_sock_send_all(c->up, first, (size_t)n);
	for (line = strstr(c->head, "\r\n") + 2; line < end; line = next) {
		next = strstr(line, "\r\n") + 2;
		if (strncasecmp(line, "Proxy-", 6) == 0)
			continue;
		(void)yx_sock_send_all(c->up, line, (size_t)(next - line));
	}
}

/* Copy bytes both ways (half-closes passed on) until done or idle. */
static void
conn_pump(int a, int b)
{
	struct pollfd	 pfd[2];
	char		*buf;
	bool		 open_in[2] = { true, true };
	int		 fds[2] = { a, b }, i;
	ssize_t		 n;

	if ((buf = malloc(CONN_BUF)) == NULL)
		return;
	while (open_in[0] || open_in[1]) {
		for (i = 0; i < 2; i++) {
			pfd[i].fd = open_in[i] ? fds[i] : -1;
			pfd[i].events = POLLIN;
			pfd[i].revents = 0;
		}
		if (poll(pfd, 2, CONN_IDLE_SEC * 1000) <= 0)
			break;
		for (i = 0; i < 2; i++) {
			if (pfd[i].revents == 0)
				continue;
			n = recv(fds[i], buf, CONN_BUF, 0);
			if (n <= 0) {
				open_in[i] = false;
				(void)shutdown(fds[1 - i], SHUT_WR);
				if (n < 0)
					open_in[1 - i] = false;
				continue;
			}
			(void)yx_sock_send_all(fds[1 - i], buf, (size_t)n);
		}
	}
	free(buf);
}

void
egress_conn_serve(const struct yx_config *cfg, int fd, const char *tid,
    const struct yx_egress_policy *pol)
{
	struct sockaddr_storage	 addrs[CONN_ADDRS_MAX];
	struct conn		*c;
	sigset_t		 none;
	char			 addr[INET6_ADDRSTRLEN];
	size_t			 n;
	static const char	 ok[] = "HTTP/1.1 200 Connection established\r\n\r\n";

	sigemptyset(&none);
	(void)signal(SIGALRM, SIG_DFL);
	(void)signal(SIGTERM, SIG_DFL);
	(void)signal(SIGPIPE, SIG_IGN);
	(void)sigprocmask(SIG_SETMASK, &none, NULL);
	alarm(CONN_SETUP_SEC);
	if ((c = calloc(1, sizeof(*c))) == NULL)
		_exit(1);
	c->cfg = cfg;
	c->pol = pol;
	c->tid = tid;
	c->fd = fd;
	c->up = -1;
	conn_read_head(c);
	conn_parse(c);
	conn_check_name(c);
	conn_resolve(c, addrs, &n);
	conn_check_addrs(c, addrs, n);
	conn_connect(c, addrs, n, addr, sizeof(addr));
	alarm(0);
	log_info("egress: thread %s: %s %s:%d allowed -> %s", tid, c->method,
	    c->host, c->port, addr);
	conn_audit(c, 200, "on the allowlist", addr);
	if (c->connect)
		(void)yx_sock_send_all(fd, ok, sizeof(ok) - 1);
	else
		conn_forward_head(c);
	if (c->got > c->hlen)
		(void)yx_sock_send_all(c->up, c->head + c->hlen, c->got - c->hlen);
	conn_pump(fd, c->up);
	_exit(0);
}
