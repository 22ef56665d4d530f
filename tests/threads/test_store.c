/* SPDX-License-Identifier: MIT */
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

#include <json-c/json.h>

#include "yuxi/threads.h"
#include "yuxi/tree.h"
#include "../lib/storetest.h"

static char			base[256];
static struct yx_config		cfg;
static struct yx_thread_store	st;

static void
setup(void)
{
	storetest_open("yx-store", base, sizeof(base), &cfg, &st);
}

static void
teardown(void)
{
	storetest_close(base, &st);
}

/* A thread of the agent "coder". */
static struct yx_thread
want(const char *id, const char *owner)
{
	return storetest_thread(id, owner, "coder");
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
		cr_assert_eq(sb.st_uid, o.uid);
	snprintf(p, sizeof(p), "%s/saves/threads/t3/thread.json", base);
	cr_assert_eq(stat(p, &sb), 0);
}

/* Each thread has its own uid from the range (root only: chown). */
Test(store, own_uid_per_thread)
{
	struct yx_thread	w, a, b, again;
	char			p[512], buf[512];
	bool			created;
	FILE			*f;
	size_t			n;

	if (geteuid() != 0)
		cr_skip_test("needs root (files are given to the thread's uid)");
	w = want("ua", "alice");
	cr_assert_eq(yx_thread_create(&st, &w, &a, &created, NULL), YX_OK);
	w = want("ub", "bob");
	cr_assert_eq(yx_thread_create(&st, &w, &b, &created, NULL), YX_OK);
	cr_assert(a.own_uid && b.own_uid);
	cr_assert_neq(a.uid, b.uid);
	cr_assert(a.uid >= YX_UID_RANGE_BASE && a.uid < YX_UID_RANGE_BASE + YX_UID_RANGE_COUNT);
	cr_assert_eq(a.gid, a.uid);
	/* the record keeps it */
	cr_assert_eq(yx_thread_get(&st, "ua", "alice", &again, NULL), YX_OK);
	cr_assert_eq(again.uid, a.uid);
	/* the sandbox's passwd names it "yuxi" */
	cr_assert_eq(yx_thread_path(cfg.saves_dir, a.thread_id, YX_TP_PASSWD, p,
			 sizeof(p)),
	    YX_OK);
	cr_assert_not_null(f = fopen(p, "r"));
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	fclose(f);
	snprintf(p, sizeof(p), "yuxi:x:%u:%u:", a.uid, a.uid);
	cr_assert(strstr(buf, p) != NULL, "%s", buf);
	/* deleted and created again (by anyone): never the same uid at once */
	cr_assert_eq(yx_thread_remove(&st, "ua", "alice", NULL), YX_OK);
	w = want("ua", "bob");
	cr_assert_eq(yx_thread_create(&st, &w, &again, &created, NULL), YX_OK);
	cr_assert_neq(again.uid, a.uid);
}

/* Without a range (YUXI_SANDBOX_UID_RANGE=off) every thread is uid:gid. */
Test(store, shared_uid_without_range)
{
	struct yx_thread_store	s2;
	struct yx_config	c2 = cfg;
	struct yx_thread	w = want("sh", "alice"), o;
	bool			created;

	c2.uid_count = 0;
	cr_assert_eq(yx_thread_store_init(&s2, &c2, NULL), YX_OK);
	cr_assert_eq(yx_thread_create(&s2, &w, &o, &created, NULL), YX_OK);
	cr_assert(!o.own_uid);
	cr_assert_eq(o.uid, 1000);
	yx_thread_store_fini(&s2);
}

/* Deleting a thread removes its run directory; a new thread of the id
 * starts without one (finding 1 of the cross-tenant review). */
Test(store, run_directory_goes_with_the_thread)
{
	struct yx_thread	w = want("rx", "alice"), o;
	struct stat		sb;
	char			p[512];
	bool			created;
	int			fd;

	cr_assert_eq(yx_thread_create(&st, &w, &o, &created, NULL), YX_OK);
	snprintf(p, sizeof(p), "%s/saves/run/rx", base);
	cr_assert_eq(mkdir(p, 0700), 0);
	snprintf(p, sizeof(p), "%s/saves/run/rx/secret", base);
	cr_assert_neq(fd = open(p, O_CREAT | O_WRONLY, 0600), -1);
	close(fd);
	cr_assert_eq(yx_thread_remove(&st, "rx", "alice", NULL), YX_OK);
	snprintf(p, sizeof(p), "%s/saves/run/rx", base);
	cr_assert_eq(lstat(p, &sb), -1, "run directory survived the delete");
	/* a stale one (left by a crash) is dropped when the id is created again */
	cr_assert_eq(mkdir(p, 0700), 0);
	w = want("rx", "bob");
	cr_assert_eq(yx_thread_create(&st, &w, &o, &created, NULL), YX_OK);
	cr_assert_eq(lstat(p, &sb), -1, "stale run directory handed on");
}

/* Listing reads the owner's index only; stale entries show nothing. */
Test(store, list_uses_the_owner_index)
{
	struct yx_thread	 w, o, *v = NULL;
	size_t			 n;
	char			 p[512];
	bool			 created;
	int			 i, fd;

	for (i = 0; i < 30; i++) {
		snprintf(p, sizeof(p), "b%d", i);
		w = want(p, "bob");
		cr_assert_eq(yx_thread_create(&st, &w, &o, &created, NULL), YX_OK);
	}
	w = want("a1", "alice");
	cr_assert_eq(yx_thread_create(&st, &w, &o, &created, NULL), YX_OK);
	snprintf(p, sizeof(p), "%s/saves/owners/alice/a1", base);
	cr_assert_eq(access(p, F_OK), 0, "no index entry");
	/* a planted entry naming bob's thread shows nothing to alice */
	snprintf(p, sizeof(p), "%s/saves/owners/alice/b3", base);
	cr_assert_neq(fd = open(p, O_CREAT | O_WRONLY, 0600), -1);
	close(fd);
	cr_assert_eq(yx_thread_list(&st, "alice", &v, &n, NULL), YX_OK);
	cr_assert_eq(n, 1);
	cr_assert_str_eq(v[0].thread_id, "a1");
	free(v);
	/* a user without threads */
	cr_assert_eq(yx_thread_list(&st, "carol", &v, &n, NULL), YX_OK);
	cr_assert_eq(n, 0);
	free(v);
	/* start-up repair: the planted entry goes, a lost one comes back */
	snprintf(p, sizeof(p), "%s/saves/owners/bob/b7", base);
	cr_assert_eq(unlink(p), 0);
	{
		struct yx_thread_repair rep;

		yx_thread_store_reconcile(&st, &rep);
		cr_assert_eq(rep.index_added, 1);
		cr_assert_eq(rep.index_dropped, 1);
	}
	cr_assert_eq(access(p, F_OK), 0);
	cr_assert_eq(yx_thread_list(&st, "bob", &v, &n, NULL), YX_OK);
	cr_assert_eq(n, 30);
	free(v);
}

/* Start-up repair drops the uid claims and run dirs of absent threads. */
Test(store, reconcile_drops_leftovers)
{
	struct yx_thread_repair	rep;
	char			p[512];

	if (geteuid() != 0)
		cr_skip_test("needs root");
	snprintf(p, sizeof(p), "%s/saves/uids/%u", base, YX_UID_RANGE_BASE + 7);
	cr_assert_eq(symlink("gone", p), 0);
	snprintf(p, sizeof(p), "%s/saves/run/gone", base);
	cr_assert_eq(mkdir(p, 0700), 0);
	yx_thread_store_reconcile(&st, &rep);
	cr_assert_eq(rep.uids_dropped, 1);
	cr_assert_eq(rep.runs_dropped, 1);
	cr_assert_eq(access(p, F_OK), -1);
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

/* A JSON object from text (the test's own; caller puts). */
static struct json_object *
jobj(const char *s)
{
	struct json_object *o = json_tokener_parse(s);

	cr_assert_not_null(o, "bad test JSON: %s", s);
	return o;
}

Test(store, metadata_rules)
{
	static const char *const bad[] = {
		"[]",
		"{\"\":\"x\"}",
		"{\"a b\":\"x\"}",
		"{\"k\":1}",
		"{\"k\":null}",
		"{\"k\":\"tab\\there\"}",
		"{\"k\":\"nul\\u0000\"}",
		"{\"k\":\"\\u007f\"}",
		"{\"k/x\":\"v\"}",
	};
	struct yx_thread_meta	m;
	struct json_object	*o;
	struct yx_errctx	e;
	char			buf[400], key[80];
	size_t			i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		o = jobj(bad[i]);
		cr_expect_eq(yx_thread_meta_parse(o, &m, &e), YX_E_INVALID_METADATA,
		    "accepted %s", bad[i]);
		cr_expect_eq(m.n, 0);
		json_object_put(o);
	}
	/* the limits: 64-byte keys, 256-byte values, 16 keys; one more fails */
	memset(key, 'k', 64);
	key[64] = '\0';
	memset(buf, 'v', 256);
	buf[256] = '\0';
	o = json_object_new_object();
	json_object_object_add(o, key, json_object_new_string(buf));
	cr_assert_eq(yx_thread_meta_parse(o, &m, &e), YX_OK, "%s", e.msg);
	json_object_put(o);
	o = json_object_new_object();
	key[64] = 'k';
	key[65] = '\0';
	json_object_object_add(o, key, json_object_new_string("v"));
	cr_expect_eq(yx_thread_meta_parse(o, &m, &e), YX_E_INVALID_METADATA);
	json_object_put(o);
	o = json_object_new_object();
	buf[256] = 'v';
	buf[257] = '\0';
	json_object_object_add(o, "k", json_object_new_string(buf));
	cr_expect_eq(yx_thread_meta_parse(o, &m, &e), YX_E_INVALID_METADATA);
	json_object_put(o);
	o = json_object_new_object();
	for (i = 0; i < YX_META_KEYS; i++) {
		snprintf(key, sizeof(key), "k%zu", i);
		json_object_object_add(o, key, json_object_new_string("\xe4\xbd\xa0"));
	}
	cr_assert_eq(yx_thread_meta_parse(o, &m, &e), YX_OK);
	cr_expect_eq(m.n, YX_META_KEYS);
	json_object_object_add(o, "one-more", json_object_new_string("v"));
	cr_expect_eq(yx_thread_meta_parse(o, &m, &e), YX_E_INVALID_METADATA);
	json_object_put(o);
}

Test(store, metadata_stored_and_merged)
{
	struct yx_thread	w = want("mt", "alice"), t;
	struct yx_thread_patch	p;
	struct json_object	*o;
	bool			created;

	o = jobj("{\"project\":\"x\",\"run\":\"7\"}");
	cr_assert_eq(yx_thread_meta_parse(o, &w.meta, NULL), YX_OK);
	json_object_put(o);
	w.idle_timeout = 5;
	cr_assert_eq(yx_thread_create(&st, &w, &t, &created, NULL), YX_OK);
	cr_assert_eq(yx_thread_get(&st, "mt", "alice", &t, NULL), YX_OK);
	cr_expect(yx_thread_meta_has(&t.meta, "project", "x"));
	cr_expect(yx_thread_meta_has(&t.meta, "run", "7"));
	cr_expect_not(yx_thread_meta_has(&t.meta, "run", "8"));
	cr_expect_eq(t.idle_timeout, 5);
	/* a merge patch: null removes, a string sets, the rest stays */
	memset(&p, 0, sizeof(p));
	p.meta = jobj("{\"run\":null,\"k\":\"v\"}");
	p.set_idle = true;
	cr_assert_eq(yx_thread_update(&st, "mt", "alice", &p, &t, NULL), YX_OK);
	json_object_put(p.meta);
	cr_assert_eq(yx_thread_get(&st, "mt", "alice", &t, NULL), YX_OK);
	cr_expect_eq(t.meta.n, 2);
	cr_expect(yx_thread_meta_has(&t.meta, "project", "x"));
	cr_expect(yx_thread_meta_has(&t.meta, "k", "v"));
	cr_expect_eq(t.idle_timeout, 0);
	/* a patch that breaks a rule changes nothing */
	p.meta = jobj("{\"a\":\"1\",\"bad key\":\"2\"}");
	p.set_idle = false;
	cr_expect_eq(yx_thread_update(&st, "mt", "alice", &p, &t, NULL),
	    YX_E_INVALID_METADATA);
	json_object_put(p.meta);
	cr_assert_eq(yx_thread_get(&st, "mt", "alice", &t, NULL), YX_OK);
	cr_expect_eq(t.meta.n, 2);
	/* another user's thread is not found, as everywhere */
	p.meta = NULL;
	p.set_idle = true;
	p.idle_timeout = 9;
	cr_expect_eq(yx_thread_update(&st, "mt", "bob", &p, &t, NULL), YX_E_NOT_FOUND);
}
