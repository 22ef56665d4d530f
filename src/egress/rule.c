/* SPDX-License-Identifier: MIT */
/*
 * rule.c - the pure half of egress filtering (include/yuxi/egress.h): the
 * syntax of rules and names, matching, address classes, the canonical
 * policy text and the resolver override of the tests. Bounded, no
 * allocation besides the caller's buffer; table-tested in
 * tests/egress/test_rules.c.
 */
#include "config.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "yuxi/egress.h"

#define HOSTS_FILE_MAX	(64 << 10)	/* bytes of YUXI_EGRESS_HOSTS */

/* One label: [a-z0-9-]{1,63}, not starting or ending with '-'. */
static bool
egress_label_ok(const char *s, size_t n)
{
	size_t i;

	if (n == 0 || n > 63 || s[0] == '-' || s[n - 1] == '-')
		return false;
	for (i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') ||
			s[i] == '-'))
			return false;
	return true;
}

static bool
egress_digits(const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (s[i] < '0' || s[i] > '9')
			return false;
	return n > 0;
}

/*
 * Lower-case `in` (len bytes, one trailing dot dropped) into out and check
 * it as a name, or as a pattern when `wild` ("*" labels). YX_OK,
 * YX_E_FORBIDDEN (an IP literal) or YX_E_BAD_REQUEST; *why is static.
 */
static int
egress_norm(const char *in, size_t len, bool wild, char *out, const char **why)
{
	struct in_addr	 a4;
	const char	*l, *dot, *last = NULL;
	size_t		 i, n, nlabels = 0, nwild = 0;

	if (len > 0 && in[len - 1] == '.')
		len--;
	if (len == 0 || len > YX_EGRESS_NAME_MAX) {
		*why = len == 0 ? "empty host" : "host longer than 253 bytes";
		return YX_E_BAD_REQUEST;
	}
	if (memchr(in, ':', len) != NULL || in[0] == '[') {
		*why = "IP literals are refused: name a host";
		return YX_E_FORBIDDEN;
	}
	for (i = 0; i < len; i++)
		out[i] = (in[i] >= 'A' && in[i] <= 'Z') ? (char)(in[i] + 32) : in[i];
	out[len] = '\0';
	if (memchr(in, '\0', len) != NULL) {
		*why = "NUL in host";
		return YX_E_BAD_REQUEST;
	}
	if (inet_aton(out, &a4) != 0) {
		*why = "IP literals are refused: name a host";
		return YX_E_FORBIDDEN;
	}
	for (l = out; l != NULL; l = dot != NULL ? dot + 1 : NULL) {
		dot = strchr(l, '.');
		n = dot != NULL ? (size_t)(dot - l) : strlen(l);
		nlabels++;
		last = l;
		if (wild && n == 1 && l[0] == '*') {
			nwild++;
			continue;
		}
		if (!egress_label_ok(l, n)) {
			*why = "not a DNS name (labels of a-z, 0-9 and '-')";
			return YX_E_BAD_REQUEST;
		}
	}
	n = strlen(last);
	if (egress_digits(last, n)) {
		*why = "IP literals are refused: name a host";
		return YX_E_FORBIDDEN;
	}
	if (nwild > 0 && (nwild == nlabels || (n == 1 && last[0] == '*'))) {
		*why = "a wildcard stands for a label before a fixed suffix";
		return YX_E_BAD_REQUEST;
	}
	return YX_OK;
}

int
yx_egress_name_norm(const char *in, size_t len, char *out, const char **why)
{
	return egress_norm(in, len, false, out, why);
}

int
yx_egress_rule_parse(const char *s, bool with_port, struct yx_egress_rule *r,
    char *why, size_t whylen)
{
	const char	*colon, *w = NULL;
	size_t		 hlen;
	long		 port = 0;
	char		*end;

	memset(r, 0, sizeof(*r));
	colon = strrchr(s, ':');
	if (with_port && colon == NULL) {
		snprintf(why, whylen, "expected host:port (port a number or *)");
		return YX_E_BAD_REQUEST;
	}
	hlen = with_port ? (size_t)(colon - s) : strlen(s);
	if (egress_norm(s, hlen, true, r->host, &w) != YX_OK) {
		snprintf(why, whylen, "%s", w);
		return YX_E_BAD_REQUEST;
	}
	if (!with_port)
		return YX_OK;
	if (strcmp(colon + 1, "*") != 0) {
		errno = 0;
		port = strtol(colon + 1, &end, 10);
		if (colon[1] < '0' || colon[1] > '9' || *end != '\0' ||
		    errno != 0 || port < 1 || port > 65535) {
			snprintf(why, whylen, "port must be 1..65535 or *");
			return YX_E_BAD_REQUEST;
		}
	}
	r->port = (int)port;
	return YX_OK;
}

bool
yx_egress_host_match(const char *pattern, const char *name)
{
	const char	*p = pattern, *n = name, *pd, *nd;
	size_t		 pl, nl;

	for (;;) {
		pd = strchr(p, '.');
		nd = strchr(n, '.');
		pl = pd != NULL ? (size_t)(pd - p) : strlen(p);
		nl = nd != NULL ? (size_t)(nd - n) : strlen(n);
		if (nl == 0)
			return false;
		if (!(pl == 1 && p[0] == '*') &&
		    (pl != nl || memcmp(p, n, pl) != 0))
			return false;
		if (pd == NULL || nd == NULL)
			return pd == NULL && nd == NULL;
		p = pd + 1;
		n = nd + 1;
	}
}

bool
yx_egress_allows(const struct yx_egress_policy *p, const char *name, int port)
{
	size_t i;

	for (i = 0; i < p->nallow && i < YX_EGRESS_RULES_MAX; i++)
		if ((p->allow[i].port == 0 || p->allow[i].port == port) &&
		    yx_egress_host_match(p->allow[i].host, name))
			return true;
	return false;
}

bool
yx_egress_private_ok(const struct yx_egress_policy *p, const char *name)
{
	size_t i;

	for (i = 0; i < p->nprivate && i < YX_EGRESS_RULES_MAX; i++)
		if (yx_egress_host_match(p->priv[i].host, name))
			return true;
	return false;
}

/* a.b.c.d as a host-order number, for the prefix tests below */
#define V4(a, b, c, d)	(((uint32_t)(a) << 24) | ((b) << 16) | ((c) << 8) | (d))
#define IN4(x, net, bits) (((x) >> (32 - (bits))) == ((uint32_t)(net) >> (32 - (bits))))

static enum yx_addr_class
egress_class4(uint32_t x)
{
	if (x == V4(169, 254, 169, 254) || x == V4(100, 100, 100, 200))
		return YX_ADDR_METADATA;
	if (IN4(x, V4(127, 0, 0, 0), 8))
		return YX_ADDR_LOOPBACK;
	if (IN4(x, V4(10, 0, 0, 0), 8) || IN4(x, V4(172, 16, 0, 0), 12) ||
	    IN4(x, V4(192, 168, 0, 0), 16) || IN4(x, V4(100, 64, 0, 0), 10))
		return YX_ADDR_PRIVATE;
	if (IN4(x, V4(169, 254, 0, 0), 16))
		return YX_ADDR_LINKLOCAL;
	if (IN4(x, 0, 8) || IN4(x, V4(192, 0, 0, 0), 24) ||
	    IN4(x, V4(192, 0, 2, 0), 24) || IN4(x, V4(192, 88, 99, 0), 24) ||
	    IN4(x, V4(198, 18, 0, 0), 15) || IN4(x, V4(198, 51, 100, 0), 24) ||
	    IN4(x, V4(203, 0, 113, 0), 24) || IN4(x, V4(224, 0, 0, 0), 4) ||
	    IN4(x, V4(240, 0, 0, 0), 4))
		return YX_ADDR_SPECIAL;
	return YX_ADDR_PUBLIC;
}

static uint32_t
egress_v4_at(const unsigned char *b)
{
	return ((uint32_t)b[0] << 24) | ((uint32_t)b[1] << 16) |
	    ((uint32_t)b[2] << 8) | b[3];
}

static enum yx_addr_class
egress_class6(const unsigned char *b)
{
	static const unsigned char zero[16], md[16] = { 0xfd, 0, 0x0e, 0xc2, [15] = 0x54, [14] = 0x02 };
	static const unsigned char mapped[12] = { [10] = 0xff, [11] = 0xff };
	static const unsigned char nat64[12] = { 0, 0x64, 0xff, 0x9b };

	if (memcmp(b, mapped, 12) == 0 || memcmp(b, nat64, 12) == 0)
		return egress_class4(egress_v4_at(b + 12));
	if (memcmp(b, zero, 15) == 0)
		return b[15] == 1 ? YX_ADDR_LOOPBACK : YX_ADDR_SPECIAL;
	if (memcmp(b, md, 16) == 0)
		return YX_ADDR_METADATA;
	if (b[0] == 0x20 && b[1] == 0x02)	/* 6to4: the IPv4 part decides */
		return egress_class4(egress_v4_at(b + 2)) == YX_ADDR_PUBLIC ?
		    YX_ADDR_PUBLIC :
		    YX_ADDR_SPECIAL;
	if (b[0] == 0xfe && (b[1] & 0xc0) == 0x80)
		return YX_ADDR_LINKLOCAL;
	if ((b[0] == 0xfe && (b[1] & 0xc0) == 0xc0) || (b[0] & 0xfe) == 0xfc)
		return YX_ADDR_PRIVATE;
	if (b[0] == 0xff || memcmp(b, zero, 12) == 0 ||	/* multicast, ::a.b.c.d */
	    (b[0] == 0x20 && b[1] == 0x01 && b[2] == 0x0d && b[3] == 0xb8) ||
	    (b[0] == 0x20 && b[1] == 0x01 && b[2] == 0 && b[3] == 0) || /* Teredo */
	    (b[0] == 0 && b[1] == 0x64 && b[2] == 0xff && b[3] == 0x9b) ||
	    (b[0] == 0x01 && b[1] == 0 && memcmp(b + 2, zero, 6) == 0))
		return YX_ADDR_SPECIAL;
	return YX_ADDR_PUBLIC;
}

enum yx_addr_class
yx_egress_addr_class(const struct sockaddr *sa)
{
	const struct sockaddr_in	*s4;
	const struct sockaddr_in6	*s6;

	if (sa->sa_family == AF_INET) {
		s4 = (const struct sockaddr_in *)(const void *)sa;
		return egress_class4(ntohl(s4->sin_addr.s_addr));
	}
	if (sa->sa_family == AF_INET6) {
		s6 = (const struct sockaddr_in6 *)(const void *)sa;
		return egress_class6(s6->sin6_addr.s6_addr);
	}
	return YX_ADDR_SPECIAL;
}

const char *
yx_addr_class_name(enum yx_addr_class c)
{
	switch (c) {
	case YX_ADDR_PUBLIC: return "public";
	case YX_ADDR_LOOPBACK: return "loopback";
	case YX_ADDR_PRIVATE: return "private";
	case YX_ADDR_LINKLOCAL: return "link-local";
	case YX_ADDR_METADATA: return "metadata";
	default: return "special";
	}
}

int
yx_egress_policy_text(const struct yx_egress_policy *p, struct yx_buf *b)
{
	size_t	i;
	int	rc = YX_OK;

	for (i = 0; rc == YX_OK && i < p->nallow; i++) {
		if (p->allow[i].port == 0)
			rc = yx_buf_printf(b, "allow %s:*\n", p->allow[i].host);
		else
			rc = yx_buf_printf(b, "allow %s:%d\n", p->allow[i].host,
			    p->allow[i].port);
	}
	for (i = 0; rc == YX_OK && i < p->nprivate; i++)
		rc = yx_buf_printf(b, "private %s\n", p->priv[i].host);
	return rc;
}

/* An IPv4 or IPv6 address into *ss (port 0). true when it parsed. */
static bool
egress_addr_parse(const char *s, struct sockaddr_storage *ss)
{
	struct sockaddr_in	*s4 = (struct sockaddr_in *)(void *)ss;
	struct sockaddr_in6	*s6 = (struct sockaddr_in6 *)(void *)ss;

	memset(ss, 0, sizeof(*ss));
	if (inet_pton(AF_INET, s, &s4->sin_addr) == 1) {
		s4->sin_family = AF_INET;
		return true;
	}
	if (inet_pton(AF_INET6, s, &s6->sin6_addr) == 1) {
		s6->sin6_family = AF_INET6;
		return true;
	}
	return false;
}

static bool
egress_addr_eq(const struct sockaddr_storage *a, const struct sockaddr_storage *b)
{
	if (a->ss_family != b->ss_family)
		return false;
	if (a->ss_family == AF_INET)
		return ((const struct sockaddr_in *)(const void *)a)->sin_addr.s_addr ==
		    ((const struct sockaddr_in *)(const void *)b)->sin_addr.s_addr;
	return memcmp(&((const struct sockaddr_in6 *)(const void *)a)->sin6_addr,
		   &((const struct sockaddr_in6 *)(const void *)b)->sin6_addr,
		   16) == 0;
}

/* The hosts file into a heap string (caller frees); NULL on error. */
static char *
egress_hosts_read(const char *file)
{
	char	*buf;
	ssize_t	 n;
	size_t	 len = 0;
	int	 fd;

	if ((fd = open(file, O_RDONLY | O_CLOEXEC)) == -1)
		return NULL;
	if ((buf = malloc(HOSTS_FILE_MAX + 1)) == NULL) {
		close(fd);
		return NULL;
	}
	while (len < HOSTS_FILE_MAX &&
	    (n = read(fd, buf + len, HOSTS_FILE_MAX - len)) > 0)
		len += (size_t)n;
	close(fd);
	buf[len] = '\0';
	return buf;
}

/*
 * Call fn(arg, words, n) for each line of the hosts file (comments and
 * blank lines skipped, at most 16 words). Returns YX_OK or YX_E_IO.
 */
static int
egress_hosts_each(const char *file, void (*fn)(void *, char **, size_t),
    void *arg)
{
	char	*text, *line, *save = NULL, *w, *wsave, *words[16];
	size_t	 n;

	if ((text = egress_hosts_read(file)) == NULL)
		return YX_E_IO;
	for (line = strtok_r(text, "\n", &save); line != NULL;
	     line = strtok_r(NULL, "\n", &save)) {
		if ((w = strchr(line, '#')) != NULL)
			*w = '\0';
		n = 0;
		for (w = strtok_r(line, " \t\r", &wsave); w != NULL && n < 16;
		     w = strtok_r(NULL, " \t\r", &wsave))
			words[n++] = w;
		if (n >= 2)
			fn(arg, words, n);
	}
	free(text);
	return YX_OK;
}

struct hosts_lookup {
	const char		*name;
	struct sockaddr_storage	*out;
	size_t			 max, n;
};

static void
egress_lookup_line(void *arg, char **w, size_t n)
{
	struct hosts_lookup	*h = arg;
	struct sockaddr_storage	 ss;
	const char		*why;
	char			 norm[YX_EGRESS_NAME_MAX + 1];
	size_t			 i;

	if (strcmp(w[0], "redirect") == 0 || !egress_addr_parse(w[0], &ss))
		return;
	for (i = 1; i < n && h->n < h->max; i++)
		if (egress_norm(w[i], strlen(w[i]), false, norm, &why) == YX_OK &&
		    strcmp(norm, h->name) == 0)
			h->out[h->n++] = ss;
}

int
yx_egress_hosts_lookup(const char *file, const char *name,
    struct sockaddr_storage *out, size_t max, size_t *n)
{
	struct hosts_lookup	h = { name, out, max, 0 };
	int			rc;

	*n = 0;
	if ((rc = egress_hosts_each(file, egress_lookup_line, &h)) != YX_OK)
		return rc;
	*n = h.n;
	return h.n > 0 ? YX_OK : YX_E_NOT_FOUND;
}

struct hosts_redirect {
	struct sockaddr_storage	*sa;
	bool			 done;
};

static void
egress_redirect_line(void *arg, char **w, size_t n)
{
	struct hosts_redirect	*r = arg;
	struct sockaddr_storage	 from, to;
	in_port_t		 port;

	if (r->done || n != 3 || strcmp(w[0], "redirect") != 0 ||
	    !egress_addr_parse(w[1], &from) || !egress_addr_parse(w[2], &to) ||
	    !egress_addr_eq(&from, r->sa))
		return;
	port = r->sa->ss_family == AF_INET ?
	    ((struct sockaddr_in *)(void *)r->sa)->sin_port :
	    ((struct sockaddr_in6 *)(void *)r->sa)->sin6_port;
	*r->sa = to;
	if (to.ss_family == AF_INET)
		((struct sockaddr_in *)(void *)r->sa)->sin_port = port;
	else
		((struct sockaddr_in6 *)(void *)r->sa)->sin6_port = port;
	r->done = true;
}

void
yx_egress_hosts_redirect(const char *file, struct sockaddr_storage *sa)
{
	struct hosts_redirect r = { sa, false };

	(void)egress_hosts_each(file, egress_redirect_line, &r);
}
