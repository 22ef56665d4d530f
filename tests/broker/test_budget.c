/* SPDX-License-Identifier: MIT */
/*
 * test_budget.c - the budget of one listing, glob or grep (docs/security.md
 * "Request budgets"): file bytes read, wall time and the gone check stop the
 * walk at the next entry; the answer is what was found so far, `truncated`
 * with the reason. Each protection test also runs its control, the same
 * walk with that budget off, which must show what the budget saves (more
 * bytes read, more time spent). Times are printed; the one bound checked
 * is the time budget's own (budget plus a slack for one entry's work).
 */
#include "config.h"

#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "yuxi/broker.h"
#include "yuxi/clock.h"
#include "helpers.h"

TestSuite(budget, .init = fx_setup, .fini = fx_teardown, .timeout = 120);

#define UD		YX_ROOT_USER_DATA
#define MIB		(1u << 20)
#define SLACK_MS	1000	/* one 10 MiB read and a busy machine */

#define assert_rc(rc, want) \
	cr_assert_eq((rc), (want), "rc %d (%s), want %d (%s)", (rc), \
	    yx_strerror(rc), (want), yx_strerror(want))

/*
 * Directory `dir` (user-data relative) holding `n` hardlinks f000.. of one
 * `size`-byte text file whose first line is "needle": what a sandbox can
 * build in seconds with one file's worth of disk.
 */
static void
mk_links(const char *dir, size_t size, int n)
{
	char	 first[PATH_MAX], rel[128], *data;
	size_t	 i;
	int	 k;

	cr_assert_not_null(data = malloc(size));
	memset(data, 'x', size);
	for (i = 99; i < size; i += 100)
		data[i] = '\n';
	memcpy(data, "needle\n", 7);
	fx_mkdir(dir);
	snprintf(rel, sizeof(rel), "%s/f000", dir);
	fx_put(rel, data, size);
	free(data);
	snprintf(first, sizeof(first), "%s", fx_path(rel));
	for (k = 1; k < n; k++) {
		snprintf(rel, sizeof(rel), "%s/f%03d", dir, k);
		cr_assert_eq(link(first, fx_path(rel)), 0, "link %d", k);
	}
}

static struct yx_broker_grep *
grep_timed(const char *rel, int64_t *msp)
{
	struct yx_broker_grep	*g = NULL;
	struct yx_errctx	 e;
	int64_t			 t0 = yx_mono_ms();

	assert_rc(yx_broker_grep(&fx.b, UD, rel, "needle", NULL, 0, &g, &e),
	    YX_OK);
	*msp = yx_mono_ms() - t0;
	return g;
}

/* walk_bytes: the grep stops at the first file that does not fit. */
Test(budget, grep_bytes_budget)
{
	struct yx_broker_limits	 lim = { .walk_bytes = 4 * MIB };
	struct yx_broker_grep	*g;
	int64_t			 ms, ms0;

	mk_links("workspace/h", MIB, 40);
	fx_reopen(&lim);
	g = grep_timed("workspace/h", &ms);
	cr_assert(g->truncated);
	cr_assert_eq(g->cut, YX_CUT_BYTES);
	cr_assert_str_eq(yx_broker_cut_name(g->cut), "bytes");
	cr_assert_eq(g->n, 4, "4 files of 1 MiB fit in 4 MiB, got %zu", g->n);
	yx_broker_grep_free(g);
	/* control: no byte budget reads all 40 */
	lim.walk_bytes = UINT64_MAX;
	fx_reopen(&lim);
	g = grep_timed("workspace/h", &ms0);
	cr_assert(!g->truncated);
	cr_assert_eq(g->n, 40);
	yx_broker_grep_free(g);
	printf("budget: grep 40 x 1 MiB hardlinks: walk_bytes=4m read 4 files "
	       "in %lld ms; unlimited read 40 in %lld ms\n",
	    (long long)ms,
	    (long long)ms0);
}

/* time_ms: a grep over 2 GiB of hardlinks ends within budget + slack. */
Test(budget, grep_time_budget)
{
	struct yx_broker_limits	 lim = { .walk_bytes = UINT64_MAX,
		.time_ms = 200 };
	struct yx_broker_grep	*g;
	int64_t			 ms, ms0;
	size_t			 n;

	mk_links("workspace/h", 10 * MIB, 200);
	fx_reopen(&lim);
	g = grep_timed("workspace/h", &ms);
	cr_assert(g->truncated);
	cr_assert_eq(g->cut, YX_CUT_TIME);
	cr_assert_str_eq(yx_broker_cut_name(g->cut), "time");
	cr_assert_lt(g->n, 200);
	cr_assert_lt(ms, 200 + SLACK_MS, "time budget 200 ms, took %lld ms",
	    (long long)ms);
	n = g->n;
	yx_broker_grep_free(g);
	/* control: without the time budget the same walk runs far longer */
	lim.time_ms = -1;
	fx_reopen(&lim);
	g = grep_timed("workspace/h", &ms0);
	cr_assert(!g->truncated);
	cr_assert_eq(g->n, 200);
	cr_assert_gt(ms0, 200, "control: the walk must outlast the budget "
			       "(%lld ms)",
	    (long long)ms0);
	yx_broker_grep_free(g);
	printf("budget: grep 200 x 10 MiB hardlinks: time_ms=200 stopped after "
	       "%zu files in %lld ms; unlimited took %lld ms\n",
	    n, (long long)ms,
	    (long long)ms0);
}

static int gone_calls;

static bool
gone_now(void *arg)
{
	(void)arg;
	gone_calls++;
	return true;
}

/* A requester gone at the first check: every walk stops at once. */
Test(budget, gone_stops_every_walk)
{
	struct yx_broker_limits	 lim = { .walk_bytes = UINT64_MAX,
		.time_ms = -1,
		.gone = gone_now };
	struct yx_broker_list	*l = NULL;
	struct yx_broker_grep	*g;
	char			 rel[64];
	int64_t			 ms;
	int			 i;

	mk_links("workspace/h", MIB, 40);
	for (i = 0; i < 3000; i++) {
		snprintf(rel, sizeof(rel), "workspace/many/e%04d", i);
		if (i == 0)
			fx_mkdir("workspace/many");
		fx_puts(rel, "");
	}
	fx_reopen(&lim);
	g = grep_timed("workspace/h", &ms);
	cr_assert(g->truncated);
	cr_assert_eq(g->cut, YX_CUT_GONE);
	cr_assert_str_eq(yx_broker_cut_name(g->cut), "client_gone");
	cr_assert_eq(g->n, 0);
	yx_broker_grep_free(g);
	assert_rc(yx_broker_glob(&fx.b, UD, "workspace", "**", &l, NULL), YX_OK);
	cr_assert_eq(l->cut, YX_CUT_GONE);
	cr_assert_eq(l->n, 0);
	yx_broker_list_free(l);
	assert_rc(yx_broker_ls(&fx.b, UD, "workspace/many", &l, NULL), YX_OK);
	cr_assert(l->truncated);
	cr_assert_eq(l->cut, YX_CUT_GONE);
	cr_assert_eq(l->n, 0);
	yx_broker_list_free(l);
	cr_assert_geq(gone_calls, 3);
	/* control: nobody asks, everything is walked */
	lim.gone = NULL;
	fx_reopen(&lim);
	g = grep_timed("workspace/h", &ms);
	cr_assert(!g->truncated);
	cr_assert_eq(g->n, 40);
	yx_broker_grep_free(g);
	assert_rc(yx_broker_ls(&fx.b, UD, "workspace/many", &l, NULL), YX_OK);
	cr_assert_eq(l->n, 1000);
	cr_assert_eq(l->cut, YX_CUT_RESULTS);
	yx_broker_list_free(l);
}

/* The gone check is a slow peer here: 20 ms per question, never gone. */
static bool
gone_slow(void *arg)
{
	struct timespec ts = { 0, 20 * 1000 * 1000 };

	(void)arg;
	gone_calls++;
	nanosleep(&ts, NULL);
	return false;
}

/* ls and glob stop on time as well (time spent in the gone check). */
Test(budget, ls_and_glob_time_budget)
{
	struct yx_broker_limits	 lim = { .time_ms = 10, .gone = gone_slow };
	struct yx_broker_list	*l = NULL;
	char			 rel[64];
	int			 i;

	fx_mkdir("workspace/many");
	for (i = 0; i < 3000; i++) {
		snprintf(rel, sizeof(rel), "workspace/many/e%04d", i);
		fx_puts(rel, "");
	}
	fx_reopen(&lim);
	assert_rc(yx_broker_ls(&fx.b, UD, "workspace/many", &l, NULL), YX_OK);
	cr_assert(l->truncated);
	cr_assert_eq(l->cut, YX_CUT_TIME);
	cr_assert_lt(l->n, 1000);
	yx_broker_list_free(l);
	assert_rc(yx_broker_glob(&fx.b, UD, "workspace", "**/e*", &l, NULL),
	    YX_OK);
	cr_assert(l->truncated);
	cr_assert_eq(l->cut, YX_CUT_TIME);
	cr_assert_lt(l->n, 1000);
	yx_broker_list_free(l);
	/* control: no time budget, the same slow peer, full answers */
	lim.time_ms = -1;
	fx_reopen(&lim);
	assert_rc(yx_broker_glob(&fx.b, UD, "workspace/many", "e000*", &l, NULL),
	    YX_OK);
	cr_assert(!l->truncated);
	cr_assert_eq(l->n, 10, "n %zu cut %d calls %d", l->n, l->cut, gone_calls);
	yx_broker_list_free(l);
}
