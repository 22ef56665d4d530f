/* SPDX-License-Identifier: MIT */
/*
 * test_rules.c - the pure half of egress filtering (src/egress/rule.c),
 * table-driven: rule syntax, request names (IP literals in every spelling
 * the resolver takes are refused), wildcard matching by labels, address
 * classes, the canonical policy text and the resolver override file.
 */
#include "config.h"

#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "yuxi/egress.h"

Test(rules, parse)
{
	static const struct {
		const char	*in;
		int		 rc;
		const char	*host;
		int		 port;
	} t[] = {
		{ "pypi.example:443", YX_OK, "pypi.example", 443 },
		{ "PyPI.Example.:443", YX_OK, "pypi.example", 443 },
		{ "*.github.example:443", YX_OK, "*.github.example", 443 },
		{ "api.*.example:*", YX_OK, "api.*.example", 0 },
		{ "localhost:8080", YX_OK, "localhost", 8080 },
		{ "a-b.example:65535", YX_OK, "a-b.example", 65535 },
		{ "pypi.example", YX_E_BAD_REQUEST, NULL, 0 },
		{ "pypi.example:", YX_E_BAD_REQUEST, NULL, 0 },
		{ "pypi.example:0", YX_E_BAD_REQUEST, NULL, 0 },
		{ "pypi.example:65536", YX_E_BAD_REQUEST, NULL, 0 },
		{ "pypi.example:+80", YX_E_BAD_REQUEST, NULL, 0 },
		{ "pypi.example:8o", YX_E_BAD_REQUEST, NULL, 0 },
		{ "127.0.0.1:80", YX_E_BAD_REQUEST, NULL, 0 },
		{ "[::1]:80", YX_E_BAD_REQUEST, NULL, 0 },
		{ "::1:80", YX_E_BAD_REQUEST, NULL, 0 },
		{ "10.1:80", YX_E_BAD_REQUEST, NULL, 0 },
		{ "0x7f000001:80", YX_E_BAD_REQUEST, NULL, 0 },
		{ "2130706433:80", YX_E_BAD_REQUEST, NULL, 0 },
		{ "example.123:80", YX_E_BAD_REQUEST, NULL, 0 },
		{ "*:80", YX_E_BAD_REQUEST, NULL, 0 },
		{ "*.*:80", YX_E_BAD_REQUEST, NULL, 0 },
		{ "example.*:80", YX_E_BAD_REQUEST, NULL, 0 },
		{ "a..example:80", YX_E_BAD_REQUEST, NULL, 0 },
		{ "-a.example:80", YX_E_BAD_REQUEST, NULL, 0 },
		{ "a-.example:80", YX_E_BAD_REQUEST, NULL, 0 },
		{ "a_b.example:80", YX_E_BAD_REQUEST, NULL, 0 },
		{ "a b.example:80", YX_E_BAD_REQUEST, NULL, 0 },
		{ "**.example:80", YX_E_BAD_REQUEST, NULL, 0 },
		{ ":80", YX_E_BAD_REQUEST, NULL, 0 },
	};
	struct yx_egress_rule	r;
	char			why[128];
	size_t			i;

	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		cr_expect_eq(yx_egress_rule_parse(t[i].in, true, &r, why, sizeof(why)),
		    t[i].rc, "%s: %s", t[i].in, why);
		if (t[i].rc != YX_OK)
			continue;
		cr_expect_str_eq(r.host, t[i].host, "%s", t[i].in);
		cr_expect_eq(r.port, t[i].port, "%s", t[i].in);
	}
	/* without a port (allow_private) */
	cr_expect_eq(yx_egress_rule_parse("allowed.test", false, &r, why, sizeof(why)), YX_OK);
	cr_expect_str_eq(r.host, "allowed.test");
	cr_expect_eq(yx_egress_rule_parse("allowed.test:80", false, &r, why, sizeof(why)),
	    YX_E_BAD_REQUEST);
}

Test(rules, request_names)
{
	static const struct {
		const char	*in;
		int		 rc;
		const char	*out;
	} t[] = {
		{ "Allowed.TEST", YX_OK, "allowed.test" },
		{ "allowed.test.", YX_OK, "allowed.test" },
		{ "xn--bcher-kva.example", YX_OK, "xn--bcher-kva.example" },
		{ "127.0.0.1", YX_E_FORBIDDEN, NULL },
		{ "169.254.169.254", YX_E_FORBIDDEN, NULL },
		{ "127.1", YX_E_FORBIDDEN, NULL },
		{ "0x7f.1", YX_E_FORBIDDEN, NULL },
		{ "0177.0.0.1", YX_E_FORBIDDEN, NULL },
		{ "2130706433", YX_E_FORBIDDEN, NULL },
		{ "0x7f000001", YX_E_FORBIDDEN, NULL },
		{ "1.2.3.999", YX_E_FORBIDDEN, NULL },
		{ "[::1]", YX_E_FORBIDDEN, NULL },
		{ "::ffff:127.0.0.1", YX_E_FORBIDDEN, NULL },
		{ "*.example", YX_E_BAD_REQUEST, NULL },	/* no wildcard in a request */
		{ "", YX_E_BAD_REQUEST, NULL },
		{ "a..b", YX_E_BAD_REQUEST, NULL },
		{ "a/b.example", YX_E_BAD_REQUEST, NULL },
		{ "a%2eb.example", YX_E_BAD_REQUEST, NULL },
	};
	char		 out[YX_EGRESS_NAME_MAX + 1], lng[300];
	const char	*why;
	size_t		 i;

	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		cr_expect_eq(yx_egress_name_norm(t[i].in, strlen(t[i].in), out, &why),
		    t[i].rc, "%s", t[i].in);
		if (t[i].rc == YX_OK)
			cr_expect_str_eq(out, t[i].out);
	}
	/* a NUL inside the given length */
	cr_expect_eq(yx_egress_name_norm("a\0b.example", 11, out, &why), YX_E_BAD_REQUEST);
	/* 254 bytes */
	memset(lng, 'a', sizeof(lng));
	for (i = 50; i < 254; i += 51)
		lng[i] = '.';
	cr_expect_eq(yx_egress_name_norm(lng, 254, out, &why), YX_E_BAD_REQUEST);
	cr_expect_eq(yx_egress_name_norm(lng, 253, out, &why), YX_OK, "%s", why);
}

Test(rules, matching)
{
	static const struct {
		const char	*pattern, *name;
		bool		 match;
	} t[] = {
		{ "allowed.test", "allowed.test", true },
		{ "allowed.test", "denied.test", false },
		{ "allowed.test", "x.allowed.test", false },
		{ "*.github.example", "api.github.example", true },
		{ "*.github.example", "github.example", false },
		{ "*.github.example", "a.b.github.example", false },
		{ "*.github.example", "api.github.example.evil", false },
		{ "*.github.example", "apigithub.example", false },
		{ "api.*.example", "api.eu.example", true },
		{ "api.*.example", "www.eu.example", false },
		{ "*.*.example", "a.b.example", true },
	};
	struct yx_egress_policy	*p = calloc(1, sizeof(*p));
	char			 why[64];
	size_t			 i;

	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		cr_expect_eq(yx_egress_host_match(t[i].pattern, t[i].name), t[i].match,
		    "%s ~ %s", t[i].pattern, t[i].name);
	cr_assert_eq(yx_egress_rule_parse("allowed.test:8080", true, &p->allow[0], why,
			 sizeof(why)),
	    YX_OK);
	cr_assert_eq(yx_egress_rule_parse("*.github.example:*", true, &p->allow[1], why,
			 sizeof(why)),
	    YX_OK);
	p->nallow = 2;
	cr_assert_eq(yx_egress_rule_parse("allowed.test", false, &p->priv[0], why,
			 sizeof(why)),
	    YX_OK);
	p->nprivate = 1;
	cr_expect(yx_egress_allows(p, "allowed.test", 8080));
	cr_expect_not(yx_egress_allows(p, "allowed.test", 8081));
	cr_expect(yx_egress_allows(p, "api.github.example", 22));
	cr_expect_not(yx_egress_allows(p, "denied.test", 8080));
	cr_expect(yx_egress_private_ok(p, "allowed.test"));
	cr_expect_not(yx_egress_private_ok(p, "api.github.example"));
	free(p);
}

static enum yx_addr_class
cls(const char *a)
{
	struct sockaddr_storage	ss;
	struct sockaddr_in	*s4 = (struct sockaddr_in *)(void *)&ss;
	struct sockaddr_in6	*s6 = (struct sockaddr_in6 *)(void *)&ss;

	memset(&ss, 0, sizeof(ss));
	if (inet_pton(AF_INET, a, &s4->sin_addr) == 1)
		s4->sin_family = AF_INET;
	else {
		cr_assert_eq(inet_pton(AF_INET6, a, &s6->sin6_addr), 1, "%s", a);
		s6->sin6_family = AF_INET6;
	}
	return yx_egress_addr_class((struct sockaddr *)(void *)&ss);
}

Test(rules, address_classes)
{
	static const struct {
		const char		*addr;
		enum yx_addr_class	 c;
	} t[] = {
		{ "93.184.216.34", YX_ADDR_PUBLIC },
		{ "8.8.8.8", YX_ADDR_PUBLIC },
		{ "127.0.0.1", YX_ADDR_LOOPBACK },
		{ "127.255.0.9", YX_ADDR_LOOPBACK },
		{ "10.1.2.3", YX_ADDR_PRIVATE },
		{ "172.16.0.1", YX_ADDR_PRIVATE },
		{ "172.31.255.255", YX_ADDR_PRIVATE },
		{ "172.32.0.1", YX_ADDR_PUBLIC },
		{ "192.168.1.1", YX_ADDR_PRIVATE },
		{ "100.64.0.1", YX_ADDR_PRIVATE },
		{ "100.100.100.200", YX_ADDR_METADATA },
		{ "169.254.169.254", YX_ADDR_METADATA },
		{ "169.254.1.1", YX_ADDR_LINKLOCAL },
		{ "0.0.0.0", YX_ADDR_SPECIAL },
		{ "224.0.0.1", YX_ADDR_SPECIAL },
		{ "255.255.255.255", YX_ADDR_SPECIAL },
		{ "192.0.2.7", YX_ADDR_SPECIAL },
		{ "203.0.113.9", YX_ADDR_SPECIAL },
		{ "198.18.0.1", YX_ADDR_SPECIAL },
		{ "2606:2800:220:1::1", YX_ADDR_PUBLIC },
		{ "::1", YX_ADDR_LOOPBACK },
		{ "::", YX_ADDR_SPECIAL },
		{ "::ffff:127.0.0.1", YX_ADDR_LOOPBACK },
		{ "::ffff:169.254.169.254", YX_ADDR_METADATA },
		{ "::ffff:8.8.8.8", YX_ADDR_PUBLIC },
		{ "64:ff9b::a9fe:a9fe", YX_ADDR_METADATA },
		{ "::127.0.0.1", YX_ADDR_SPECIAL },
		{ "fe80::1", YX_ADDR_LINKLOCAL },
		{ "fc00::1", YX_ADDR_PRIVATE },
		{ "fd12:3456::1", YX_ADDR_PRIVATE },
		{ "fd00:ec2::254", YX_ADDR_METADATA },
		{ "fec0::1", YX_ADDR_PRIVATE },
		{ "ff02::1", YX_ADDR_SPECIAL },
		{ "2001:db8::1", YX_ADDR_SPECIAL },
		{ "2001:0:4136:e378::1", YX_ADDR_SPECIAL },
		{ "2002:7f00:1::1", YX_ADDR_SPECIAL },
		{ "2002:0808:0808::1", YX_ADDR_PUBLIC },
	};
	size_t i;

	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		cr_expect_eq(cls(t[i].addr), t[i].c, "%s: %s", t[i].addr,
		    yx_addr_class_name(cls(t[i].addr)));
}

Test(rules, policy_text)
{
	struct yx_egress_policy	*p = calloc(1, sizeof(*p));
	struct yx_buf		 b;
	char			 why[64];

	cr_assert_eq(yx_egress_rule_parse("a.example:443", true, &p->allow[0], why, 64), YX_OK);
	cr_assert_eq(yx_egress_rule_parse("*.b.example:*", true, &p->allow[1], why, 64), YX_OK);
	cr_assert_eq(yx_egress_rule_parse("a.example", false, &p->priv[0], why, 64), YX_OK);
	p->nallow = 2;
	p->nprivate = 1;
	yx_buf_init(&b, 4096);
	cr_assert_eq(yx_egress_policy_text(p, &b), YX_OK);
	cr_assert_str_eq(b.data, "allow a.example:443\nallow *.b.example:*\n"
				 "private a.example\n");
	yx_buf_fini(&b);
	free(p);
}

Test(rules, hosts_override)
{
	struct sockaddr_storage	 out[4], sa;
	struct sockaddr_in	*s4 = (struct sockaddr_in *)(void *)&sa;
	char			 path[] = "/tmp/yx-hosts-XXXXXX", a[64];
	size_t			 n;
	FILE			*f;
	int			 fd;

	cr_assert_neq(fd = mkstemp(path), -1);
	cr_assert_not_null(f = fdopen(fd, "w"));
	fputs("# test names\n127.0.0.1 allowed.test Denied.Test\n"
	      "::1 allowed.test # and v6\nbogus line here\n"
	      "redirect 169.254.169.254 127.0.0.1\n",
	    f);
	fclose(f);
	cr_assert_eq(yx_egress_hosts_lookup(path, "allowed.test", out, 4, &n), YX_OK);
	cr_assert_eq(n, 2);
	cr_assert_eq(out[0].ss_family, AF_INET);
	cr_assert_eq(out[1].ss_family, AF_INET6);
	cr_assert_eq(yx_egress_hosts_lookup(path, "denied.test", out, 4, &n), YX_OK);
	cr_assert_eq(n, 1);
	cr_assert_eq(yx_egress_hosts_lookup(path, "other.test", out, 4, &n), YX_E_NOT_FOUND);
	cr_assert_eq(yx_egress_hosts_lookup("/nonexistent/x", "a.test", out, 4, &n), YX_E_IO);
	memset(&sa, 0, sizeof(sa));
	s4->sin_family = AF_INET;
	s4->sin_port = htons(80);
	inet_pton(AF_INET, "169.254.169.254", &s4->sin_addr);
	yx_egress_hosts_redirect(path, &sa);
	inet_ntop(AF_INET, &s4->sin_addr, a, sizeof(a));
	cr_assert_str_eq(a, "127.0.0.1");
	cr_assert_eq(ntohs(s4->sin_port), 80);
	inet_pton(AF_INET, "10.0.0.1", &s4->sin_addr);
	yx_egress_hosts_redirect(path, &sa);	/* not listed: unchanged */
	inet_ntop(AF_INET, &s4->sin_addr, a, sizeof(a));
	cr_assert_str_eq(a, "10.0.0.1");
	unlink(path);
}
