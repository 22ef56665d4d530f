/* SPDX-License-Identifier: MIT */
/*
 * test_provider.c - the sandbox lifecycle over a real shared table with
 * real processes and an in-test fake engine (fake_driver.c) that can be
 * slow, fail, and lose containers: outcomes, the 50-process stampede,
 * short-id collisions, capacity and eviction, the reaper and holds, claim
 * takeover after SIGKILL, engine failures, skills changes, reconcile and
 * discovery, ports and host path translation.
 */
#include "config.h"

#include <sys/mman.h>

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "provider/provider_int.h"
#include "prov_test.h"

Test(provider, outcomes_created_hit_warm)
{
	struct ptest	 pt;
	struct yx_lease	 a, b, c;
	char		 sid[65];

	ptest_setup(&pt, 4);
	a = ptest_acquire(&pt, "thread-1");
	cr_assert_eq(a.outcome, YX_ACQUIRE_CREATED);
	cr_assert_eq(yx_sandbox_id_derive("thread-1", 8, sid), YX_OK);
	cr_assert_str_eq(a.sandbox_id, sid);
	cr_assert_eq(strlen(sid), 8);
	cr_assert_str_eq(a.container_name + strlen(pt.cfg.container_prefix),
	    sid);
	cr_assert_neq(a.container_id[0], '\0');
	cr_assert_eq(ptest_slot(&pt, "thread-1").nholds, 1);
	cr_assert_eq(yx_provider_unhold(&pt.p, &a), YX_OK);
	cr_assert_eq(yx_provider_unhold(&pt.p, &a), YX_E_NOT_FOUND);
	b = ptest_acquire(&pt, "thread-1");
	cr_assert_eq(b.outcome, YX_ACQUIRE_HIT);
	cr_assert_str_eq(b.container_id, a.container_id);
	cr_assert_eq(yx_provider_unhold(&pt.p, &b), YX_OK);
	cr_assert_eq(yx_provider_release(&pt.p, a.sandbox_id, NULL), YX_OK);
	cr_assert_eq(ptest_slot(&pt, "thread-1").state, YX_SLOT_WARM);
	c = ptest_acquire(&pt, "thread-1");
	cr_assert_eq(c.outcome, YX_ACQUIRE_WARM);
	cr_assert_eq(ptest_slot(&pt, "thread-1").state, YX_SLOT_ACTIVE);
	cr_assert_str_eq(c.container_id, a.container_id);
	cr_assert_eq(pt.e->create_calls, 1);
	cr_assert_eq(pt.t->hdr->metrics.acquire_created, 1);
	cr_assert_eq(pt.t->hdr->metrics.acquire_hit, 1);
	cr_assert_eq(pt.t->hdr->metrics.acquire_warm, 1);
	cr_assert_eq(yx_provider_release(&pt.p, "nope", NULL), YX_E_NOT_FOUND);
	ptest_check_invariants(&pt);
	ptest_teardown(&pt);
}

Test(provider, bad_requests)
{
	struct ptest		 pt;
	struct yx_acquire_req	 r;
	struct yx_lease		 l;
	struct yx_skill_mount	 sk = { "../etc", "/srv/skills/x" };

	ptest_setup(&pt, 2);
	r = ptest_req("bad/thread", NULL);
	cr_assert_eq(yx_provider_acquire(&pt.p, &r, &l, NULL),
	    YX_E_INVALID_THREAD_ID);
	r = ptest_req("", NULL);
	cr_assert_eq(yx_provider_acquire(&pt.p, &r, &l, NULL),
	    YX_E_INVALID_THREAD_ID);
	r = ptest_req("ok", NULL);
	r.skills = &sk;
	r.nskills = 1;
	cr_assert_eq(yx_provider_acquire(&pt.p, &r, &l, NULL),
	    YX_E_BAD_REQUEST);
	cr_assert_eq(pt.e->create_calls, 0);
	ptest_teardown(&pt);
}

Test(provider, discovers_running_and_starts_stopped)
{
	struct ptest	 pt;
	struct yx_lease	 l;
	char		 sid[65], name[128];

	ptest_setup(&pt, 4);
	yx_sandbox_id_derive("t-disc", 8, sid);
	snprintf(name, sizeof(name), "%s%s", pt.cfg.container_prefix, sid);
	fake_add(pt.e, name, "t-disc", sid, "", false);
	l = ptest_acquire(&pt, "t-disc");
	cr_assert_eq(l.outcome, YX_ACQUIRE_DISCOVERED);
	cr_assert_eq(pt.e->create_calls, 0);
	cr_assert_eq(pt.e->start_calls, 1);
	cr_assert_eq(pt.t->hdr->metrics.acquire_discovered, 1);
	yx_provider_unhold(&pt.p, &l);
	/* stopped behind our back: started again on the next acquire */
	fake_stop(pt.e, name);
	l = ptest_acquire(&pt, "t-disc");
	cr_assert_eq(l.outcome, YX_ACQUIRE_HIT);
	cr_assert_eq(pt.e->start_calls, 2);
	cr_assert_eq(fake_count(pt.e), 1);
	ptest_teardown(&pt);
}

Test(provider, vanished_container_is_recreated)
{
	struct ptest	 pt;
	struct yx_lease	 a, b;

	ptest_setup(&pt, 4);
	a = ptest_idle(&pt, "t-van");
	cr_assert(fake_vanish(pt.e, a.container_name));
	b = ptest_acquire(&pt, "t-van");
	cr_assert_eq(b.outcome, YX_ACQUIRE_CREATED);
	cr_assert_str_neq(b.container_id, a.container_id);
	cr_assert_str_eq(b.container_name, a.container_name);
	cr_assert_eq(pt.e->create_calls, 2);
	cr_assert_eq(ptest_slot(&pt, "t-van").nholds, 1);
	ptest_check_invariants(&pt);
	ptest_teardown(&pt);
}

#define STAMPEDE 50

Test(provider, fifty_processes_one_new_thread_one_create, .timeout = 60)
{
	struct ptest	 pt;
	char(*ids)[YX_CONTAINER_ID_MAX];
	pid_t		 pids[STAMPEDE];
	int		 i;

	ptest_setup(&pt, 8);
	pt.e->create_delay_ms = 200;
	ids = mmap(NULL, STAMPEDE * YX_CONTAINER_ID_MAX,
	    PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	cr_assert_neq(ids, MAP_FAILED);
	memset(ids, 0, STAMPEDE * YX_CONTAINER_ID_MAX);
	for (i = 0; i < STAMPEDE; i++) {
		cr_assert_neq(pids[i] = fork(), -1);
		if (pids[i] == 0) {
			struct yx_acquire_req	r = ptest_req("t-herd", NULL);
			struct yx_lease		l;
			struct yx_driver	*d;

			/* each worker has its own driver */
			d = fake_driver_new(pt.e, &pt.cfg);
			pt.p.driver = d;
			if (yx_provider_acquire(&pt.p, &r, &l, NULL) != YX_OK)
				_exit(1);
			memcpy(ids[i], l.container_id, YX_CONTAINER_ID_MAX);
			_exit(yx_provider_unhold(&pt.p, &l) == YX_OK ? 0 : 2);
		}
	}
	for (i = 0; i < STAMPEDE; i++)
		cr_assert_eq(ptest_wait(pids[i]), 0, "child %d failed", i);
	cr_assert_eq(pt.e->create_calls, 1);
	cr_assert_eq(fake_count(pt.e), 1);
	for (i = 1; i < STAMPEDE; i++)
		cr_assert_str_eq(ids[i], ids[0]);
	cr_assert_neq(ids[0][0], '\0');
	cr_assert_eq(ptest_slot(&pt, "t-herd").nholds, 0);
	cr_assert_eq(pt.t->hdr->metrics.acquire_created, 1);
	cr_assert_eq(pt.t->hdr->metrics.acquire_hit, STAMPEDE - 1);
	ptest_check_invariants(&pt);
	munmap(ids, STAMPEDE * YX_CONTAINER_ID_MAX);
	ptest_teardown(&pt);
}

/* Hook: every thread's id starts with "deadbeef". */
static void
colliding_hash(const char *thread_id, char hex[65])
{
	char buf[65];

	yx_provider_set_hash_hook(NULL);
	yx_sandbox_id_derive(thread_id, 64, buf);
	yx_provider_set_hash_hook(colliding_hash);
	memcpy(buf, "deadbeef", 8);
	memcpy(hex, buf, 65);
}

Test(provider, colliding_short_ids_never_share_in_table)
{
	struct ptest	 pt;
	struct yx_lease	 a, b;

	ptest_setup(&pt, 4);
	yx_provider_set_hash_hook(colliding_hash);
	a = ptest_acquire(&pt, "alpha");
	b = ptest_acquire(&pt, "beta");
	cr_assert_str_eq(a.sandbox_id, "deadbeef");
	cr_assert_eq(strlen(b.sandbox_id), 12);
	cr_assert_eq(strncmp(b.sandbox_id, "deadbeef", 8), 0);
	cr_assert_str_neq(a.container_id, b.container_id);
	cr_assert_str_neq(a.container_name, b.container_name);
	cr_assert_eq(pt.e->create_calls, 2);
	/* lookups by sandbox id stay unambiguous */
	cr_assert_eq(yx_provider_unhold(&pt.p, &b), YX_OK);
	cr_assert_eq(yx_provider_destroy(&pt.p, b.sandbox_id, NULL, NULL),
	    YX_OK);
	cr_assert_eq(ptest_slot(&pt, "alpha").state, YX_SLOT_ACTIVE);
	cr_assert_eq(ptest_slot(&pt, "beta").state, YX_SLOT_FREE);
	/* the table alone must see it: alpha's container is gone from the
	 * engine, yet beta may not take alpha's sandbox id */
	cr_assert(fake_vanish(pt.e, a.container_name));
	b = ptest_acquire(&pt, "beta");
	cr_assert_eq(strlen(b.sandbox_id), 12, "beta got %s", b.sandbox_id);
	cr_assert_str_eq(ptest_slot(&pt, "alpha").sandbox_id, "deadbeef");
	yx_provider_set_hash_hook(NULL);
	ptest_teardown(&pt);
}

Test(provider, colliding_short_id_with_foreign_container)
{
	struct ptest			 pt;
	struct yx_lease			 b;
	struct yx_container_info	 ci;
	char				 name[128];

	ptest_setup(&pt, 4);
	yx_provider_set_hash_hook(colliding_hash);
	/* alpha's container runs, but alpha has no slot (e.g. restart) */
	snprintf(name, sizeof(name), "%sdeadbeef", pt.cfg.container_prefix);
	fake_add(pt.e, name, "alpha", "deadbeef", "", true);
	b = ptest_acquire(&pt, "beta");
	cr_assert_eq(b.outcome, YX_ACQUIRE_CREATED);
	cr_assert_eq(strlen(b.sandbox_id), 12);
	cr_assert_str_neq(b.container_name, name);
	cr_assert(fake_get(pt.e, b.container_name, &ci));
	cr_assert_str_eq(ci.thread_id, "beta");
	cr_assert(fake_get(pt.e, name, &ci));
	cr_assert_str_eq(ci.thread_id, "alpha");	/* untouched */
	yx_provider_set_hash_hook(NULL);
	ptest_teardown(&pt);
}

Test(provider, capacity_evicts_lru_idle_then_refuses)
{
	struct ptest	 pt;
	struct yx_lease	 a, c, d;
	struct yx_acquire_req r = ptest_req("t-d", NULL);
	struct yx_errctx err;

	ptest_setup(&pt, 2);
	a = ptest_idle(&pt, "t-a");
	ptest_sleep_ms(5);
	ptest_idle(&pt, "t-b");
	c = ptest_acquire(&pt, "t-c");		/* evicts t-a, the LRU */
	cr_assert_eq(c.outcome, YX_ACQUIRE_CREATED);
	cr_assert_eq(ptest_slot(&pt, "t-a").state, YX_SLOT_FREE);
	cr_assert_not(fake_get(pt.e, a.container_name, &(struct yx_container_info){ 0 }));
	cr_assert_eq(pt.t->hdr->metrics.evictions, 1);
	ptest_acquire(&pt, "t-b");		/* hold both */
	cr_assert_eq(yx_provider_acquire(&pt.p, &r, &d, &err), YX_E_CAPACITY);
	cr_assert_eq(fake_count(pt.e), 2);
	cr_assert_eq(yx_table_used(pt.t), 2);
	ptest_check_invariants(&pt);
	ptest_teardown(&pt);
}

Test(provider, eviction_prefers_warm)
{
	struct ptest	 pt;
	struct yx_lease	 b, c;

	ptest_setup(&pt, 2);
	ptest_idle(&pt, "t-a");		/* older, active idle */
	ptest_sleep_ms(5);
	b = ptest_idle(&pt, "t-b");		/* newer, warm */
	yx_provider_release(&pt.p, b.sandbox_id, NULL);
	c = ptest_acquire(&pt, "t-c");
	cr_assert_eq(ptest_slot(&pt, "t-b").state, YX_SLOT_FREE);
	cr_assert_eq(ptest_slot(&pt, "t-a").state, YX_SLOT_ACTIVE);
	yx_provider_unhold(&pt.p, &c);
	ptest_teardown(&pt);
}

Test(provider, reaper_never_destroys_held)
{
	struct ptest	 pt;
	struct yx_lease	 a;
	unsigned	 n = 99;

	ptest_setup(&pt, 4);
	pt.cfg.idle_timeout = 1;
	a = ptest_acquire(&pt, "t-held");
	ptest_idle(&pt, "t-idle");
	/* nothing idle yet */
	cr_assert_eq(yx_provider_reap(&pt.p, yx_now_ms(), &n, NULL), YX_OK);
	cr_assert_eq(n, 0);
	cr_assert_eq(yx_provider_reap(&pt.p, yx_now_ms() + 5000, &n, NULL),
	    YX_OK);
	cr_assert_eq(n, 1);
	cr_assert_eq(ptest_slot(&pt, "t-idle").state, YX_SLOT_FREE);
	cr_assert_eq(ptest_slot(&pt, "t-held").state, YX_SLOT_ACTIVE);
	cr_assert(fake_get(pt.e, a.container_name, &(struct yx_container_info){ 0 }));
	cr_assert_eq(yx_provider_unhold(&pt.p, &a), YX_OK);
	cr_assert_eq(yx_provider_reap(&pt.p, yx_now_ms() + 5000, &n, NULL),
	    YX_OK);
	cr_assert_eq(n, 1);
	cr_assert_eq(fake_count(pt.e), 0);
	cr_assert_eq(pt.t->hdr->metrics.reaper_destroys, 2);
	ptest_check_invariants(&pt);
	ptest_teardown(&pt);
}

Test(provider, dead_holder_holds_dropped_then_reaped)
{
	struct ptest	 pt;
	unsigned	 n;
	pid_t		 pid;

	ptest_setup(&pt, 4);
	pt.cfg.idle_timeout = 1;
	cr_assert_neq(pid = fork(), -1);
	if (pid == 0) {
		struct yx_acquire_req	r = ptest_req("t-leak", NULL);
		struct yx_lease		l;

		_exit(yx_provider_acquire(&pt.p, &r, &l, NULL) == YX_OK ?
			0 :
			1); /* dies holding it */
	}
	cr_assert_eq(ptest_wait(pid), 0);
	cr_assert_eq(ptest_slot(&pt, "t-leak").nholds, 1);
	/* the held slot is not reaped while the hold is believed live... */
	cr_assert_eq(yx_provider_drop_dead_holds(&pt.p, &n, NULL), YX_OK);
	cr_assert_eq(n, 1);
	cr_assert_eq(ptest_slot(&pt, "t-leak").nholds, 0);
	cr_assert_eq(yx_provider_reap(&pt.p, yx_now_ms() + 5000, &n, NULL),
	    YX_OK);
	cr_assert_eq(n, 1);
	cr_assert_eq(fake_count(pt.e), 0);
	ptest_teardown(&pt);
}

Test(provider, creating_claim_of_killed_owner_is_taken_over, .timeout = 30)
{
	struct ptest	 pt;
	struct yx_lease	 l;
	int		 i;
	pid_t		 pid;

	ptest_setup(&pt, 4);
	pt.e->create_delay_ms = 10000;
	cr_assert_neq(pid = fork(), -1);
	if (pid == 0) {
		struct yx_acquire_req	r = ptest_req("t-orphan", NULL);
		struct yx_lease		cl;

		yx_provider_acquire(&pt.p, &r, &cl, NULL);
		_exit(0);
	}
	for (i = 0; i < 500 && pt.e->create_calls == 0; i++)
		ptest_sleep_ms(5);
	cr_assert_eq(ptest_slot(&pt, "t-orphan").state, YX_SLOT_CREATING);
	kill(pid, SIGKILL);
	cr_assert_eq(ptest_wait(pid), -1);
	pt.e->create_delay_ms = 0;
	l = ptest_acquire(&pt, "t-orphan");
	cr_assert_eq(l.outcome, YX_ACQUIRE_CREATED);
	cr_assert_eq(ptest_slot(&pt, "t-orphan").state, YX_SLOT_ACTIVE);
	cr_assert_eq(fake_count(pt.e), 1);
	ptest_check_invariants(&pt);
	ptest_teardown(&pt);
}

Test(provider, engine_unavailable_fails_cleanly)
{
	struct ptest		 pt;
	struct yx_acquire_req	 r = ptest_req("t-down", NULL);
	struct yx_lease		 l;
	struct yx_errctx	 err;

	ptest_setup(&pt, 4);
	pt.e->fail_create = YX_E_BACKEND_UNAVAILABLE;
	cr_assert_eq(yx_provider_acquire(&pt.p, &r, &l, &err),
	    YX_E_BACKEND_UNAVAILABLE);
	cr_assert_eq(pt.t->hdr->nstate[YX_SLOT_CREATING], 0);
	cr_assert_eq(yx_table_used(pt.t), 0);
	cr_assert_geq(pt.t->hdr->metrics.engine_errors, 1);
	pt.e->fail_create = 0;
	pt.e->fail_inspect = YX_E_BACKEND_UNAVAILABLE;
	cr_assert_eq(yx_provider_acquire(&pt.p, &r, &l, &err),
	    YX_E_BACKEND_UNAVAILABLE);
	cr_assert_eq(yx_table_used(pt.t), 0);
	pt.e->fail_inspect = 0;
	l = ptest_acquire(&pt, "t-down");
	cr_assert_eq(l.outcome, YX_ACQUIRE_CREATED);
	ptest_check_invariants(&pt);
	ptest_teardown(&pt);
}

Test(provider, skills_change_recreates)
{
	struct ptest			 pt;
	struct yx_acquire_req		 r = ptest_req("t-sk", "fp-one");
	struct yx_lease			 a, b;
	struct yx_container_info	 ci;
	struct yx_skill_mount		 sk = { "pdf", "/srv/skills/pdf" };

	ptest_setup(&pt, 4);
	cr_assert_eq(yx_provider_acquire(&pt.p, &r, &a, NULL), YX_OK);
	yx_provider_unhold(&pt.p, &a);
	r.skills_fp = "fp-two";
	r.skills = &sk;
	r.nskills = 1;
	cr_assert_eq(yx_provider_acquire(&pt.p, &r, &b, NULL), YX_OK);
	cr_assert_eq(b.outcome, YX_ACQUIRE_CREATED);
	cr_assert_str_neq(a.container_id, b.container_id);
	cr_assert_eq(fake_count(pt.e), 1);
	cr_assert(fake_get(pt.e, b.container_name, &ci));
	cr_assert_str_eq(ci.skills_fp, "fp-two");
	cr_assert_str_eq(ptest_slot(&pt, "t-sk").skills_fp, "fp-two");
	cr_assert_eq(pt.e->last_nmounts, 2);
	cr_assert_str_eq(pt.e->last_mount_target[1], "/home/yuxi/skills/pdf");
	cr_assert_str_eq(pt.e->last_mount_target[0], "/home/yuxi/user-data");
	ptest_teardown(&pt);
}

Test(provider, destroy_refuses_held_and_keeps_nothing)
{
	struct ptest	 pt;
	struct yx_lease	 a;

	ptest_setup(&pt, 4);
	a = ptest_acquire(&pt, "t-del");
	cr_assert_eq(yx_provider_destroy(&pt.p, a.sandbox_id, NULL, NULL),
	    YX_E_BUSY);
	cr_assert_eq(fake_count(pt.e), 1);
	yx_provider_unhold(&pt.p, &a);
	cr_assert_eq(yx_provider_destroy(&pt.p, NULL, "t-del", NULL), YX_OK);
	cr_assert_eq(fake_count(pt.e), 0);
	cr_assert_eq(yx_table_used(pt.t), 0);
	cr_assert_eq(yx_provider_destroy(&pt.p, a.sandbox_id, NULL, NULL),
	    YX_E_NOT_FOUND);
	/* a thread whose container exists but has no slot */
	fake_add(pt.e, "yuxi-sandbox-0000aaaa", "t-del", "0000aaaa", "", true);
	cr_assert_eq(yx_provider_destroy(&pt.p, NULL, "t-del", NULL), YX_OK);
	cr_assert_eq(fake_count(pt.e), 0);
	ptest_teardown(&pt);
}

Test(provider, reconcile_adopts_removes_and_clears)
{
	struct ptest	 pt;
	struct yx_lease	 g;
	char		 sid[65], name[128];

	ptest_setup(&pt, 4);
	ptest_idle(&pt, "t-rec");
	g = ptest_idle(&pt, "t-gone");
	fake_vanish(pt.e, g.container_name);
	/* an orphan with a valid label: adopted */
	yx_sandbox_id_derive("t-orph", 8, sid);
	snprintf(name, sizeof(name), "%s%s", pt.cfg.container_prefix, sid);
	fake_add(pt.e, name, "t-orph", sid, "", true);
	/* a duplicate for a thread that has a slot: removed */
	fake_add(pt.e, "yuxi-sandbox-dup", "t-rec", "dup", "", true);
	/* a bad label: removed */
	fake_add(pt.e, "yuxi-sandbox-bad", "../x", "bad", "", true);
	ptest_sleep_ms(2);
	cr_assert_eq(yx_provider_reconcile(&pt.p, NULL), YX_OK);
	cr_assert_eq(ptest_slot(&pt, "t-orph").state, YX_SLOT_WARM);
	cr_assert_eq(ptest_slot(&pt, "t-gone").state, YX_SLOT_FREE);
	cr_assert_eq(ptest_slot(&pt, "t-rec").state, YX_SLOT_ACTIVE);
	cr_assert_eq(fake_count(pt.e), 2);
	cr_assert_not(fake_get(pt.e, "yuxi-sandbox-dup",
	    &(struct yx_container_info){ 0 }));
	cr_assert_eq(pt.t->hdr->metrics.reconcile_adopted, 1);
	cr_assert_eq(pt.t->hdr->metrics.reconcile_removed, 2);
	ptest_check_invariants(&pt);
	ptest_teardown(&pt);
}

Test(provider, reconcile_leaves_other_instances_alone)
{
	struct ptest pt;

	ptest_setup(&pt, 4);
	ptest_idle(&pt, "t-mine");
	/* another service instance on the same engine: same labels, other
	 * prefix; neither an orphan to adopt nor one to remove */
	fake_add(pt.e, "other-instance-1234abcd", "t-theirs", "1234abcd", "", true);
	fake_add(pt.e, "other-instance-bad", "../x", "bad", "", true);
	ptest_sleep_ms(2);
	cr_assert_eq(yx_provider_reconcile(&pt.p, NULL), YX_OK);
	cr_assert_eq(yx_provider_discover_all(&pt.p, NULL), YX_OK);
	cr_assert(fake_get(pt.e, "other-instance-1234abcd",
	    &(struct yx_container_info){ 0 }));
	cr_assert(fake_get(pt.e, "other-instance-bad",
	    &(struct yx_container_info){ 0 }));
	cr_assert_eq(ptest_slot(&pt, "t-theirs").state, YX_SLOT_FREE);
	cr_assert_eq(pt.t->hdr->metrics.reconcile_removed, 0);
	cr_assert_eq(yx_provider_destroy(&pt.p, NULL, "t-theirs", NULL),
	    YX_E_NOT_FOUND);
	cr_assert_eq(fake_count(pt.e), 3);
	ptest_teardown(&pt);
}

Test(provider, restart_rediscovers_instead_of_duplicating)
{
	struct ptest	 pt;
	struct yx_lease	 a, b;
	char		 name[128];

	ptest_setup(&pt, 4);
	a = ptest_idle(&pt, "t-r1");
	snprintf(name, sizeof(name), "%s", a.container_name);
	/* "restart": a fresh table, the engine keeps its containers */
	yx_table_close(pt.t);
	yx_table_unlink(pt.shm);
	cr_assert_eq(yx_table_open(&pt.t, pt.shm, 4, YX_TABLE_CREATE, NULL),
	    YX_OK);
	pt.p.table = pt.t;
	cr_assert_eq(yx_provider_discover_all(&pt.p, NULL), YX_OK);
	cr_assert_eq(ptest_slot(&pt, "t-r1").state, YX_SLOT_WARM);
	b = ptest_acquire(&pt, "t-r1");
	cr_assert_eq(b.outcome, YX_ACQUIRE_WARM);
	cr_assert_str_eq(b.container_id, a.container_id);
	cr_assert_eq(pt.e->create_calls, 1);
	ptest_teardown(&pt);
}

Test(provider, ports_lowest_free_when_networked)
{
	struct ptest	 pt;
	struct yx_lease	 a, b, c;

	ptest_setup(&pt, 4);
	a = ptest_acquire(&pt, "t-p0");
	cr_assert_eq(a.port, 0);		/* network none: no port */
	cr_assert_eq(pt.e->last_host_port, 0);
	snprintf(pt.cfg.network, sizeof(pt.cfg.network), "bridge");
	pt.cfg.base_port = 20000;
	a = ptest_acquire(&pt, "t-p1");
	b = ptest_acquire(&pt, "t-p2");
	cr_assert_eq(a.port, 20000);
	cr_assert_eq(b.port, 20001);
	cr_assert_eq(pt.e->last_host_port, 20001);
	yx_provider_unhold(&pt.p, &a);
	cr_assert_eq(yx_provider_destroy(&pt.p, a.sandbox_id, NULL, NULL),
	    YX_OK);
	c = ptest_acquire(&pt, "t-p3");
	cr_assert_eq(c.port, 20000);
	ptest_teardown(&pt);
}

Test(provider, host_project_dir_translation)
{
	struct ptest		 pt;
	struct yx_acquire_req	 r = ptest_req("t-host", NULL);
	struct yx_lease		 l;
	struct yx_mount		 ex = { "/elsewhere/runner", "/opt/runner", true };

	ptest_setup(&pt, 4);
	snprintf(pt.cfg.host_project_dir, sizeof(pt.cfg.host_project_dir),
	    "/host/proj");
	snprintf(pt.p.local_project_dir, sizeof(pt.p.local_project_dir),
	    "/srv");
	r.user_data_host = "/srv/saves/threads/t-host/user-data";
	r.extra = &ex;
	r.nextra = 1;
	cr_assert_eq(yx_provider_acquire(&pt.p, &r, &l, NULL), YX_OK);
	cr_assert_str_eq(pt.e->last_mount_host[0],
	    "/host/proj/saves/threads/t-host/user-data");
	cr_assert_str_eq(pt.e->last_mount_host[1], "/elsewhere/runner");
	cr_assert_str_eq(pt.e->last_mount_target[1], "/opt/runner");
	ptest_teardown(&pt);
}

Test(provider, list_snapshot)
{
	struct ptest			 pt;
	struct yx_provider_snapshot	 snap;
	struct yx_lease			 a, b;

	ptest_setup(&pt, 4);
	a = ptest_acquire(&pt, "t-l1");
	b = ptest_idle(&pt, "t-l2");
	yx_provider_release(&pt.p, b.sandbox_id, NULL);
	cr_assert_eq(yx_provider_list(&pt.p, &snap, NULL), YX_OK);
	cr_assert_eq(snap.nslots, 2);
	cr_assert_eq(snap.capacity, 4);
	cr_assert_eq(snap.nstate[YX_SLOT_ACTIVE], 1);
	cr_assert_eq(snap.nstate[YX_SLOT_WARM], 1);
	cr_assert_eq(snap.metrics.acquire_created, 2);
	cr_assert_str_eq(yx_slot_state_name((int)snap.slots[0].state),
	    "active");
	yx_provider_snapshot_fini(&snap);
	yx_provider_snapshot_fini(&snap);
	yx_provider_unhold(&pt.p, &a);
	ptest_teardown(&pt);
}
