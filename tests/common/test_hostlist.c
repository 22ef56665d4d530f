/* SPDX-License-Identifier: MIT */
/*
 * test_hostlist.c - the sandbox hosts of a front (src/common/hostlist.c):
 * YUXI_SANDBOX_PROVISIONER_URL accepted and refused item by item, default
 * names, and rendezvous placement: the score pinned to SHA-256 (the tests'
 * Python computes the same), every host in every order, an even spread,
 * and a host removed moving only the keys it had.
 */
#include "config.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "yuxi/error.h"
#include "yuxi/hostlist.h"

Test(hostlist, accepted)
{
	static const struct {
		const char	*spec;
		size_t		 n;
		const char	*name0, *url0, *name1;
	} ok[] = {
		{ "", 0, NULL, NULL, NULL },
		{ "https://127.0.0.1:9443", 1, "127.0.0.1-9443", "https://127.0.0.1:9443", NULL },
		{ "p1=https://127.0.0.1:9443,p2=https://127.0.0.1:9444", 2, "p1",
		    "https://127.0.0.1:9443", "p2" },
		{ " p1=https://h1.example/sb , p2=https://h2.example", 2, "p1",
		    "https://h1.example/sb", "p2" },
		{ "v6=https://[::1]:8443", 1, "v6", "https://[::1]:8443", NULL },
		{ "h=https://a-host-name-longer-than-thirty-two-bytes.example", 1, "h",
		    "https://a-host-name-longer-than-thirty-two-bytes.example", NULL },
		{ "A.b_c-9=https://x", 1, "A.b_c-9", "https://x", NULL },
	};
	struct yx_hostlist	l;
	char			why[200];
	size_t			i;

	for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		cr_assert_eq(yx_hostlist_parse(ok[i].spec, &l, why, sizeof(why)), YX_OK,
		    "%s: %s", ok[i].spec, why);
		cr_assert_eq(l.n, ok[i].n, "%s", ok[i].spec);
		if (ok[i].name0 != NULL) {
			cr_expect_str_eq(l.v[0].name, ok[i].name0);
			cr_expect_str_eq(l.v[0].url, ok[i].url0);
		}
		if (ok[i].name1 != NULL)
			cr_expect_str_eq(l.v[1].name, ok[i].name1);
	}
}

Test(hostlist, refused)
{
	static const char *const bad[] = {
		"http://127.0.0.1:9443",		/* not https */
		"127.0.0.1:9443",
		"https://",
		"https://h/",				/* trailing slash */
		"https://h?x=1",
		"https://h#f",
		"https://u@h",
		"https://h/a b",
		"p1=https://a,p1=https://b",		/* name twice */
		"p1=https://a,p2=https://a",		/* URL twice */
		"p1=https://a,,p2=https://b",		/* empty item */
		"-x=https://a",
		".x=https://a",
		"a/b=https://a",
		"=https://a",
		"a_very_long_name_of_thirty_three_=https://a",
		"https://a-host-name-longer-than-thirty-two-bytes.example",	/* no name */
		"https://[::1]:8443",			/* no name: "[" cannot start one */
		"https://h;x",
		"https://h:1\"",
	};
	struct yx_hostlist	l;
	char			why[200], spec[4096];
	size_t			i, k;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		why[0] = '\0';
		cr_expect_eq(yx_hostlist_parse(bad[i], &l, why, sizeof(why)),
		    YX_E_BAD_REQUEST, "%s accepted", bad[i]);
		cr_expect(why[0] != '\0', "%s: no reason", bad[i]);
	}
	spec[0] = '\0';
	for (k = 0; k <= YX_HOSTS_MAX; k++)
		snprintf(spec + strlen(spec), sizeof(spec) - strlen(spec), "%sh%zu=https://h%zu",
		    k > 0 ? "," : "", k, k);
	cr_expect_eq(yx_hostlist_parse(spec, &l, why, sizeof(why)), YX_E_BAD_REQUEST);
	cr_expect(strstr(why, "too many") != NULL, "%s", why);
}

Test(hostlist, score_is_sha256)
{
	/* hashlib.sha256(b"p1\nsp00").hexdigest()[:16] */
	cr_expect_eq(yx_host_score("p1", "sp00"), 0x40b3a442f2b0e101ULL);
	cr_expect_eq(yx_host_score("p2", "sp00"), 0x6d08403c779bd85fULL);
	cr_expect_eq(yx_host_score("a", ""), 0x87428fc522803d31ULL);
}

static void
three(struct yx_hostlist *l, size_t n)
{
	char why[200];

	cr_assert_eq(yx_hostlist_parse(n == 3 ? "a=https://a,b=https://b,c=https://c" :
						"a=https://a,b=https://b",
			 l, why, sizeof(why)),
	    YX_OK, "%s", why);
}

Test(hostlist, order_spread_and_stability)
{
	struct yx_hostlist	l3, l2;
	size_t			order[YX_HOSTS_MAX], o2[YX_HOSTS_MAX], first[3] = { 0 };
	char			key[32];
	unsigned		seen, moved = 0, kept = 0;
	int			k;
	size_t			i;

	three(&l3, 3);
	three(&l2, 2);
	cr_assert_eq(yx_hostlist_find(&l3, "b"), 1);
	cr_assert_eq(yx_hostlist_find(&l3, "z"), -1);
	for (k = 0; k < 9000; k++) {
		snprintf(key, sizeof(key), "t-%d", k);
		yx_hostlist_order(&l3, key, order);
		for (i = 0, seen = 0; i < 3; i++)
			seen |= 1u << order[i];
		cr_assert_eq(seen, 7u, "%s: not every host", key);
		cr_assert(yx_host_score(l3.v[order[0]].name, key) >=
		    yx_host_score(l3.v[order[1]].name, key));
		first[order[0]]++;
		/* c removed: a key that had a or b keeps it; one of c's moves */
		yx_hostlist_order(&l2, key, o2);
		if (order[0] == 2)
			moved++;
		else {
			cr_assert_eq(o2[0], order[0], "%s moved without its host going", key);
			kept++;
		}
	}
	for (i = 0; i < 3; i++)	/* 3000 expected each; 6 sigma is ~270 */
		cr_expect(first[i] > 2700 && first[i] < 3300, "host %zu first for %zu keys",
		    i, first[i]);
	cr_expect_eq(moved + kept, 9000u);
}
