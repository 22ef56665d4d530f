/*
 * test_store.c - the thread store (src/threads): create/get/list/remove,
 * ownership, atomic creation, safe removal that never follows symlinks.
 */
#include "config.h"

#include <sys/stat.h>

#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "yuxi/threads.h"

static char			base[256];
static struct yx_config		cfg;
static struct yx_thread_store	st;

static void
setup(void)
{
	snprintf(base, sizeof(base), "/tmp/yx-store-XXXXXX");
	cr_assert_not_null(mkdtemp(base));
	yx_config_defaults(&cfg);
	snprintf(cfg.saves_dir, sizeof(cfg.saves_dir), "%s/saves", base);
	cr_assert_eq(yx_thread_store_init(&st, &cfg, NULL), YX_OK);
}

static void
teardown(void)
{
	int fd;

	yx_thread_store_fini(&st);
	fd = open("/tmp", O_RDONLY | O_DIRECTORY);
	yx_tree_remove(fd, base + 5);
	close(fd);
}

static struct yx_thread
want(const char *id, const char *owner)
{
	struct yx_thread t;

	memset(&t, 0, sizeof(t));
	snprintf(t.thread_id, sizeof(t.thread_id), "%s", id);
	snprintf(t.owner, sizeof(t.owner), "%s", owner);
	snprintf(t.agent_id, sizeof(t.agent_id), "coder");
	return t;
}

TestSuite(store, .init = setup, .fini = teardown);

Test(store, create_then_same_owner_is_unchanged)
{
	struct yx_thread w = want("t1", "alice"), a, b;
	bool created;

	cr_assert_eq(yx_thread_create(&st, &w, &a, &created, NULL), YX_OK);
	cr_assert(created);
	cr_assert_str_eq(a.owner, "alice");
	cr_assert_gt(a.created_ms, 0);
	snprintf(w.agent_id, sizeof(w.agent_id), "other");
	cr_assert_eq(yx_thread_create(&st, &w, &b, &created, NULL), YX_OK);
	cr_assert_not(created);
	cr_assert_str_eq(b.agent_id, "coder");
	cr_assert_eq(b.created_ms, a.created_ms);
}

Test(store, other_owner_conflicts_and_gets_not_found)
{
	struct yx_thread w = want("t2", "alice"), o;
	struct yx_errctx e1, e2;
	bool created;

	cr_assert_eq(yx_thread_create(&st, &w, &o, &created, NULL), YX_OK);
	w = want("t2", "bob");
	cr_assert_eq(yx_thread_create(&st, &w, &o, &created, NULL), YX_E_THREAD_EXISTS);
	cr_assert_eq(yx_thread_get(&st, "t2", "bob", &o, &e1), YX_E_NOT_FOUND);
	cr_assert_eq(yx_thread_get(&st, "nope", "bob", &o, &e2), YX_E_NOT_FOUND);
	cr_assert_str_eq(e1.msg, e2.msg);
	cr_assert_eq(yx_thread_remove(&st, "t2", "bob", NULL), YX_E_NOT_FOUND);
	cr_assert_eq(yx_thread_get(&st, "t2", "alice", &o, NULL), YX_OK);
}

Test(store, invalid_ids_and_users)
{
	struct yx_thread w = want("bad id", "alice"), o;
	bool created;

	cr_assert_eq(yx_thread_create(&st, &w, &o, &created, NULL), YX_E_INVALID_THREAD_ID);
	cr_assert_eq(yx_thread_get(&st, "../x", "alice", &o, NULL), YX_E_INVALID_THREAD_ID);
	cr_assert_eq(yx_thread_get(&st, ".tmp-1", "alice", &o, NULL), YX_E_INVALID_THREAD_ID);
	cr_assert(yx_user_valid("alice@example.org"));
	cr_assert_not(yx_user_valid(""));
	cr_assert_not(yx_user_valid(".hidden"));
	cr_assert_not(yx_user_valid("a b"));
	cr_assert_not(yx_user_valid("a\nb"));
}

Test(store, layout_created)
{
	struct yx_thread w = want("t3", "alice"), o;
	struct stat sb;
	char p[512];
	bool created;

	cr_assert_eq(yx_thread_create(&st, &w, &o, &created, NULL), YX_OK);
	snprintf(p, sizeof(p), "%s/saves/threads/t3/user-data/uploads/attachments", base);
	cr_assert_eq(stat(p, &sb), 0);
	cr_assert(S_ISDIR(sb.st_mode));
	if (geteuid() == 0)
		cr_assert_eq(sb.st_uid, 1000);
	snprintf(p, sizeof(p), "%s/saves/threads/t3/thread.json", base);
	cr_assert_eq(stat(p, &sb), 0);
}

Test(store, list_newest_first_only_own)
{
	struct yx_thread w, o, *v = NULL;
	const char *ids[] = { "a1", "a2", "a3" };
	size_t n = 0, i;
	bool created;

	for (i = 0; i < 3; i++) {
		w = want(ids[i], "alice");
		cr_assert_eq(yx_thread_create(&st, &w, &o, &created, NULL), YX_OK);
		usleep(3000);
	}
	w = want("b1", "bob");
	cr_assert_eq(yx_thread_create(&st, &w, &o, &created, NULL), YX_OK);
	cr_assert_eq(yx_thread_list(&st, "alice", &v, &n, NULL), YX_OK);
	cr_assert_eq(n, 3);
	cr_assert_str_eq(v[0].thread_id, "a3");
	cr_assert_str_eq(v[2].thread_id, "a1");
	free(v);
}

Test(store, remove_never_follows_symlinks)
{
	struct yx_thread w = want("t4", "alice"), o;
	char p[512], victim[512], link[512];
	struct stat sb;
	bool created;
	int fd;

	/* a file outside that a hostile sandbox points symlinks at */
	snprintf(victim, sizeof(victim), "%s/victim", base);
	cr_assert_eq(mkdir(victim, 0755), 0);
	snprintf(p, sizeof(p), "%s/victim/keep.txt", base);
	fd = open(p, O_CREAT | O_WRONLY, 0644);
	cr_assert_geq(fd, 0);
	close(fd);
	cr_assert_eq(yx_thread_create(&st, &w, &o, &created, NULL), YX_OK);
	snprintf(link, sizeof(link), "%s/saves/threads/t4/user-data/workspace/evil", base);
	cr_assert_eq(symlink(victim, link), 0);
	snprintf(link, sizeof(link), "%s/saves/threads/t4/user-data/workspace/evil2", base);
	cr_assert_eq(symlink(p, link), 0);
	cr_assert_eq(yx_thread_remove(&st, "t4", "alice", NULL), YX_OK);
	cr_assert_eq(stat(p, &sb), 0, "the symlink target was removed");
	snprintf(p, sizeof(p), "%s/saves/threads/t4", base);
	cr_assert_neq(lstat(p, &sb), 0);
	cr_assert_eq(yx_thread_get(&st, "t4", "alice", &o, NULL), YX_E_NOT_FOUND);
}

Test(store, sweep_removes_leftovers)
{
	char p[512];

	snprintf(p, sizeof(p), "%s/saves/threads/.tmp-0011", base);
	cr_assert_eq(mkdir(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/saves/threads/.tmp-0011/user-data", base);
	cr_assert_eq(mkdir(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/saves/threads/.trash-22", base);
	cr_assert_eq(mkdir(p, 0755), 0);
	cr_assert_eq(yx_thread_store_sweep(&st), 2);
	cr_assert_neq(access(p, F_OK), 0);
}

Test(store, iso8601)
{
	char b[40];

	cr_assert_str_eq(yx_iso8601_ms(1700000000123LL, b, sizeof(b)),
	    "2023-11-14T22:13:20.123Z");
}
