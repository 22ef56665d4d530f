/* SPDX-License-Identifier: MIT */
/*
 * test_records.c - preview tokens and records (src/preview/preview.c):
 * a made preview is found by its host name and by nothing else (a table
 * of names that are not it), it is listed, replaced, revoked, expired and
 * gone with its thread; the index left behind is never enough; tokens are
 * 32 characters of [a-z2-7] and differ.
 */
#include "config.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "yuxi/clock.h"
#include "yuxi/preview.h"
#include "yuxi/threads.h"
#include "../lib/storetest.h"

static char			base[256];
static struct yx_config		cfg;
static struct yx_thread_store	st;

static void
setup(void)
{
	struct yx_thread w, t;
	bool		 created;

	storetest_open("yx-preview", base, sizeof(base), &cfg, &st);
	snprintf(cfg.preview_domain, sizeof(cfg.preview_domain), "preview.example.org:8443");
	w = storetest_thread("t1", "alice", "coder");
	cr_assert_eq(yx_thread_create(&st, &w, &t, &created, NULL), YX_OK);
	w = storetest_thread("t2", "bob", "coder");
	cr_assert_eq(yx_thread_create(&st, &w, &t, &created, NULL), YX_OK);
}

static void
teardown(void)
{
	storetest_close(base, &st);
}

TestSuite(records, .init = setup, .fini = teardown);

/* Make a preview of t1's port; its host name into host. */
static void
make(int port, int ttl, char *token, char *host, size_t hlen, struct yx_preview *p)
{
	cr_assert_eq(yx_preview_create(&st, &cfg, "t1", port, ttl, token, p, NULL), YX_OK);
	snprintf(host, hlen, "%s.preview.example.org", token);
}

Test(records, tokens_are_160_bits_of_base32_and_differ)
{
	struct yx_preview	p;
	char			a[YX_PREVIEW_TOKEN_LEN + 1], b[YX_PREVIEW_TOKEN_LEN + 1], h[128];

	make(8000, 60, a, h, sizeof(h), &p);
	make(8001, 60, b, h, sizeof(h), &p);
	cr_assert_eq(strlen(a), 32);
	cr_assert(yx_preview_token_valid(a, strlen(a)));
	cr_assert_eq(strspn(a, "abcdefghijklmnopqrstuvwxyz234567"), 32);
	cr_assert_str_neq(a, b);
	cr_assert_eq(strncmp(p.prefix, b, 6), 0);
	cr_assert_eq(strlen(p.prefix), 6);
}

Test(records, found_by_its_host_and_by_nothing_else)
{
	struct yx_preview	p, q;
	char			tok[YX_PREVIEW_TOKEN_LEN + 1], host[128], tid[YX_THREAD_ID_SIZE];
	char			bad[40][160];
	size_t			n = 0, i;

	make(8000, 60, tok, host, sizeof(host), &p);
	cr_assert_eq(yx_preview_lookup(&st, &cfg, host, tid, &q), YX_OK);
	cr_assert_str_eq(tid, "t1");
	cr_assert_eq(q.port, 8000);
	cr_assert_str_eq(q.token, tok);
	snprintf(bad[n++], 160, "%s.preview.example.org.", tok);	/* trailing dot */
	snprintf(bad[n++], 160, "%s.preview.example.org:8443", tok);	/* a port */
	snprintf(bad[n++], 160, "%s.example.org", tok);		/* another domain */
	snprintf(bad[n++], 160, "%s.preview.example.org.evil", tok);
	snprintf(bad[n++], 160, "%s.xpreview.example.org", tok);
	snprintf(bad[n++], 160, "x%s.preview.example.org", tok);	/* 33 characters */
	snprintf(bad[n++], 160, "%.31s.preview.example.org", tok);	/* 31 */
	snprintf(bad[n++], 160, "a.%s.preview.example.org", tok);	/* deeper */
	snprintf(bad[n++], 160, "%s", tok);
	snprintf(bad[n++], 160, "preview.example.org");
	snprintf(bad[n++], 160, "%s", "");
	snprintf(bad[n++], 160, "%.31s1.preview.example.org", tok);	/* 1: not base32 */
	snprintf(bad[n++], 160, "%.31s%c.preview.example.org", tok,
	    tok[31] == 'a' ? 'b' : 'a');				/* one off */
	snprintf(bad[n++], 160, "%.6saaaaaaaaaaaaaaaaaaaaaaaaaa.preview.example.org", tok);
	snprintf(bad[n++], 160, "%s.PREVIEW.example.org", tok);	/* nginx's $host is lower case */
	for (i = 0; i < strlen(tok); i++)
		if (tok[i] >= 'a' && tok[i] <= 'z') {
			snprintf(bad[n], 160, "%s.preview.example.org", tok);
			bad[n++][i] -= 32;	/* upper case: not what nginx passes */
			break;
		}
	for (i = 0; i < n; i++)
		cr_expect_eq(yx_preview_lookup(&st, &cfg, bad[i], tid, &q), YX_E_NOT_FOUND,
		    "%s", bad[i]);
	cr_assert_eq(yx_preview_lookup(&st, &cfg, NULL, tid, &q), YX_E_NOT_FOUND);
	cfg.preview_domain[0] = '\0';	/* previews off: nothing is found */
	cr_assert_eq(yx_preview_lookup(&st, &cfg, host, tid, &q), YX_E_NOT_FOUND);
}

Test(records, replaced_revoked_expired_and_gone_with_the_thread)
{
	struct yx_preview	 p, q, *v = NULL;
	char			 a[YX_PREVIEW_TOKEN_LEN + 1], b[YX_PREVIEW_TOKEN_LEN + 1];
	char			 ha[128], hb[128], hc[128], tid[YX_THREAD_ID_SIZE], tomb[64];
	struct yx_thread	 t;
	size_t			 n;

	make(8000, 60, a, ha, sizeof(ha), &p);
	make(8000, 60, b, hb, sizeof(hb), &p);		/* replaces the first */
	cr_assert_eq(yx_preview_lookup(&st, &cfg, ha, tid, &q), YX_E_NOT_FOUND);
	cr_assert_eq(yx_preview_lookup(&st, &cfg, hb, tid, &q), YX_OK);
	cr_assert_eq(yx_preview_list(&st, &cfg, "t1", &v, &n), YX_OK);
	cr_assert_eq(n, 1);
	cr_assert_str_eq(v[0].token, b);
	free(v);
	cr_assert_eq(yx_preview_delete(&st, &cfg, "t1", 8000, &q), YX_OK);
	cr_assert_str_eq(q.token, b);
	cr_assert_eq(yx_preview_lookup(&st, &cfg, hb, tid, &q), YX_E_NOT_FOUND);
	cr_assert_eq(yx_preview_delete(&st, &cfg, "t1", 8000, &q), YX_E_NOT_FOUND);
	/* expired: not found, not listed, the record removed */
	make(8001, 1, a, hc, sizeof(hc), &p);
	cr_assert_eq(yx_preview_lookup(&st, &cfg, hc, tid, &q), YX_OK);
	usleep(1100 * 1000);
	cr_assert_eq(yx_preview_lookup(&st, &cfg, hc, tid, &q), YX_E_NOT_FOUND);
	cr_assert_eq(yx_preview_list(&st, &cfg, "t1", &v, &n), YX_OK);
	cr_assert_eq(n, 0);
	free(v);
	/* the thread's deletion takes its previews; a new thread of the same
	 * id does not get them */
	make(8002, 60, a, ha, sizeof(ha), &p);
	cr_assert_eq(yx_thread_retire(&st, "t1", "alice", &t, tomb, sizeof(tomb), NULL), YX_OK);
	cr_assert_eq(yx_thread_purge(&st, &t, tomb, NULL), YX_OK);
	cr_assert_eq(yx_preview_lookup(&st, &cfg, ha, tid, &q), YX_E_NOT_FOUND);
	t = storetest_thread("t1", "bob", "coder");
	{
		struct yx_thread got;
		bool		 created;

		cr_assert_eq(yx_thread_create(&st, &t, &got, &created, NULL), YX_OK);
	}
	cr_assert_eq(yx_preview_lookup(&st, &cfg, ha, tid, &q), YX_E_NOT_FOUND);
	/* the sweep drops every index entry that names nothing any more,
	 * once it is older than a create takes */
	cr_assert_geq(yx_preview_sweep(&st, &cfg, yx_now_ms() + 61000, 1000), 1);
	cr_assert_eq(yx_preview_sweep(&st, &cfg, yx_now_ms() + 61000, 1000), 0);
}

/*
 * A create writes the index entry, then the record: a sweep between the
 * two must not take the entry (CI saw a just-made URL 404 for good when
 * the reaper swept while a loaded machine fsynced the record).
 */
Test(records, a_create_under_way_is_no_orphan)
{
	char	path[512];
	FILE	*f;

	snprintf(path, sizeof(path), "%s/saves/preview", base);
	(void)mkdir(path, 0700);
	snprintf(path, sizeof(path), "%s/saves/preview/idx", base);
	(void)mkdir(path, 0700);
	snprintf(path, sizeof(path), "%s/saves/preview/idx/%064d", base, 7);
	cr_assert_not_null(f = fopen(path, "w"));
	fprintf(f, "v1 t2 9000 %lld\n", (long long)yx_now_ms() + 60000);
	fclose(f);
	/* its record not written yet: the entry stays */
	cr_assert_eq(yx_preview_sweep(&st, &cfg, yx_now_ms(), 1000), 0);
	cr_assert_eq(access(path, F_OK), 0);
	/* a minute on and still no record: an orphan, removed */
	cr_assert_eq(yx_preview_sweep(&st, &cfg, yx_now_ms() + 61000, 1000), 1);
	cr_assert_eq(access(path, F_OK), -1);
}

Test(records, the_limit_counts_live_previews_of_other_ports)
{
	struct yx_preview	p;
	char			tok[YX_PREVIEW_TOKEN_LEN + 1], h[128];

	cfg.preview_max = 2;
	make(8000, 60, tok, h, sizeof(h), &p);
	make(8001, 1, tok, h, sizeof(h), &p);
	cr_assert_eq(yx_preview_create(&st, &cfg, "t1", 8002, 60, tok, &p, NULL),
	    YX_E_PREVIEW_LIMIT);
	make(8001, 60, tok, h, sizeof(h), &p);	/* its own port: a replacement */
	cr_assert_eq(yx_preview_create(&st, &cfg, "t2", 8002, 60, tok, &p, NULL), YX_OK);
	cr_assert_eq(yx_preview_create(&st, &cfg, "nosuch", 8002, 60, tok, &p, NULL),
	    YX_E_NOT_FOUND);
}

Test(records, socket_names_and_urls)
{
	char name[YX_PREVIEW_NAME_MAX], url[YX_PREVIEW_URL_MAX], other[YX_PREVIEW_NAME_MAX];

	yx_preview_sock_name("t1", 8000, name);
	yx_preview_sock_name("t2", 8000, other);
	cr_assert_eq(strlen(name), 16 + 1 + 4 + 5);
	cr_assert_str_eq(name + 16, "-8000.sock");
	cr_assert_str_neq(name, other);
	yx_preview_url(&cfg, "abcdefghijklmnopqrstuvwxyz234567", url, sizeof(url));
	cr_assert_str_eq(url, "https://abcdefghijklmnopqrstuvwxyz234567.preview.example.org:8443/");
}
