/* SPDX-License-Identifier: MIT */
/*
 * test_limit.c - the per-user thread limit and the per-user counts
 * (src/threads/threads_limit.c): refusal at the limit, existing ids still
 * answered, room again after a delete, other users unaffected, and racing
 * creates from separate processes that never overshoot.
 */
#include "config.h"

#include <sys/wait.h>

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "yuxi/threads.h"
#include "../lib/storetest.h"

static char			base[256];
static struct yx_config		cfg;
static struct yx_thread_store	st;

static void
setup(void)
{
	storetest_open("yx-limit", base, sizeof(base), &cfg, &st);
}

static void
teardown(void)
{
	storetest_close(base, &st);
}

static int
create(const char *id, const char *owner, unsigned limit, bool *created,
    struct yx_errctx *err)
{
	struct yx_thread w = storetest_thread(id, owner, ""), out;

	yx_errctx_clear(err);
	return yx_thread_create_limited(&st, &w, limit, &out, created, err);
}

TestSuite(limit, .init = setup, .fini = teardown);

Test(limit, refused_at_the_limit_until_a_delete)
{
	struct yx_errctx	err;
	bool			created;

	cr_assert_eq(create("t1", "alice", 3, &created, &err), YX_OK);
	cr_assert(created);
	cr_assert_eq(create("t2", "alice", 3, &created, &err), YX_OK);
	cr_assert_eq(create("t3", "alice", 3, &created, &err), YX_OK);
	cr_assert_eq(create("t4", "alice", 3, &created, &err),
	    YX_E_THREAD_LIMIT);
	cr_assert_not(created);
	cr_expect(strstr(err.msg, "at most 3 threads per user") != NULL, "%s",
	    err.msg);
	cr_expect_eq(yx_thread_find(&st, "t4", &(struct yx_thread){ 0 }, NULL),
	    YX_E_NOT_FOUND);
	/* an id alice has is still answered; another's is still 409 */
	cr_assert_eq(create("t2", "alice", 3, &created, &err), YX_OK);
	cr_assert_not(created);
	cr_assert_eq(create("b1", "bob", 1, &created, &err), YX_OK);
	cr_assert_eq(create("t1", "bob", 1, &created, &err),
	    YX_E_THREAD_EXISTS);
	cr_assert_eq(create("b2", "bob", 1, &created, &err),
	    YX_E_THREAD_LIMIT);
	/* a delete makes room; no limit means none */
	cr_assert_eq(yx_thread_remove(&st, "t1", "alice", NULL), YX_OK);
	cr_assert_eq(create("t4", "alice", 3, &created, &err), YX_OK);
	cr_assert(created);
	cr_assert_eq(create("t5", "alice", 3, &created, &err),
	    YX_E_THREAD_LIMIT);
	cr_assert_eq(create("t5", "alice", 0, &created, &err), YX_OK);
	cr_assert(created);
}

Test(limit, bad_requests_keep_their_own_errors)
{
	struct yx_errctx	err;
	bool			created;

	cr_assert_eq(create("t1", "alice", 1, &created, &err), YX_OK);
	cr_assert_eq(create("bad/id", "alice", 1, &created, &err),
	    YX_E_INVALID_THREAD_ID);
	cr_assert_eq(create("t9", ".x", 1, &created, &err),
	    YX_E_UNAUTHENTICATED);
}

/*
 * 16 processes, each creating 4 threads of one user at once, limit 10:
 * exactly 10 exist afterwards, whoever won.
 */
Test(limit, racing_creates_never_overshoot)
{
	struct yx_owner_threads	*v = NULL;
	struct yx_thread	*list = NULL;
	int			 go[2], i, j, made = 0, status;
	pid_t			 pids[16];
	size_t			 n = 0;
	bool			 trunc;

	cr_assert_eq(pipe(go), 0);
	for (i = 0; i < 16; i++) {
		cr_assert_neq(pids[i] = fork(), -1);
		if (pids[i] == 0) {
			struct yx_errctx	err;
			char			id[32], c;
			bool			created;
			int			ok = 0;

			close(go[1]);
			if (read(go[0], &c, 1) < 0)	/* all start together */
				_exit(99);
			for (j = 0; j < 4; j++) {
				snprintf(id, sizeof(id), "r%d-%d", i, j);
				if (create(id, "carol", 10, &created, &err) ==
					YX_OK &&
				    created)
					ok++;
			}
			_exit(ok);
		}
	}
	close(go[0]);
	close(go[1]);	/* EOF: go */
	for (i = 0; i < 16; i++) {
		cr_assert_eq(waitpid(pids[i], &status, 0), pids[i]);
		cr_assert(WIFEXITED(status));
		made += WEXITSTATUS(status);
	}
	cr_expect_eq(made, 10, "%d creates succeeded", made);
	cr_assert_eq(yx_thread_list(&st, "carol", &list, &n, NULL), YX_OK);
	cr_expect_eq(n, 10);
	free(list);
	cr_assert_eq(yx_thread_owner_counts(&st, &v, &n, &trunc, NULL), YX_OK);
	cr_assert_eq(n, 1);
	cr_expect_str_eq(v[0].owner, "carol");
	cr_expect_eq(v[0].threads, 10);
	cr_expect_not(trunc);
	free(v);
}

Test(limit, owner_counts_sorted)
{
	struct yx_owner_threads	*v = NULL;
	struct yx_errctx	 err;
	size_t			 n;
	bool			 created, trunc;

	cr_assert_eq(yx_thread_owner_counts(&st, &v, &n, &trunc, NULL), YX_OK);
	cr_expect_eq(n, 0);
	cr_expect_null(v);
	cr_assert_eq(create("b1", "bob", 0, &created, &err), YX_OK);
	cr_assert_eq(create("a1", "alice", 0, &created, &err), YX_OK);
	cr_assert_eq(create("a2", "alice", 0, &created, &err), YX_OK);
	cr_assert_eq(create("c1", "carol", 0, &created, &err), YX_OK);
	cr_assert_eq(yx_thread_remove(&st, "c1", "carol", NULL), YX_OK);
	cr_assert_eq(yx_thread_owner_counts(&st, &v, &n, &trunc, NULL), YX_OK);
	cr_assert_eq(n, 2);	/* carol has none left */
	cr_expect_str_eq(v[0].owner, "alice");
	cr_expect_eq(v[0].threads, 2);
	cr_expect_str_eq(v[1].owner, "bob");
	cr_expect_eq(v[1].threads, 1);
	free(v);
}
