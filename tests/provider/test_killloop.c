/* SPDX-License-Identifier: MIT */
/*
 * test_killloop.c - kill-loop soak of the shared table: in each round
 * children work on the table (through the provider with a fake engine, or
 * by locking the table and scribbling claims and holds), and are SIGKILLed
 * at random points, often while holding the lock. After every round the
 * next locker must repair the table, and after drop_dead_holds the
 * invariants hold: at most one slot per thread, no hold of a dead pid, no
 * CREATING slot with a dead owner, per-state counters exact, max_replicas
 * respected. At the end, reap + reconcile leave no container leaked.
 *
 * KILLLOOP_ROUNDS is small for `make check`; the soak build (SOAK_TESTS)
 * compiles this file with a few thousand.
 */
#include "config.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "prov_test.h"

#ifndef KILLLOOP_ROUNDS
#define KILLLOOP_ROUNDS 300
#endif
#define NTHREADS 6

/* Child body A: provider operations forever, until killed. */
static void __attribute__((noreturn))
child_provider(struct ptest *pt, unsigned seed)
{
	struct yx_acquire_req	 r;
	struct yx_lease		 l;
	struct yx_driver	*d;
	char			 thread[16];
	int			 op;

	srandom(seed);
	d = fake_driver_new(pt->e, &pt->cfg);
	pt->p.driver = d;
	pt->p.wait_ms = 200;
	for (;;) {
		snprintf(thread, sizeof(thread), "k%ld", random() % NTHREADS);
		r = ptest_req(thread, (random() % 8) == 0 ? "fp2" : NULL);
		op = (int)(random() % 10);
		if (op < 6) {
			if (yx_provider_acquire(&pt->p, &r, &l, NULL) ==
				YX_OK &&
			    random() % 4 != 0)
				(void)yx_provider_unhold(&pt->p, &l);
		} else if (op < 8)
			(void)yx_provider_destroy(&pt->p, NULL, thread, NULL);
		else if (op < 9)
			(void)yx_provider_reap(&pt->p, yx_now_ms() + 3600000,
			    NULL, NULL);
		else
			(void)yx_provider_reconcile(&pt->p, NULL);
	}
}

/* Child body B: lock and scribble half-finished claims and holds. */
static void __attribute__((noreturn))
child_scribbler(struct ptest *pt, unsigned seed)
{
	struct yx_shm_pid	 me;
	struct yx_shm_slot	*s;
	volatile unsigned	 spin;
	uint32_t		 i;

	srandom(seed);
	yx_proc_self(&me);
	for (;;) {
		if (yx_table_lock(pt->t, NULL) != YX_OK)
			continue;
		i = (uint32_t)(random() % pt->t->hdr->capacity);
		s = &pt->t->slots[i];
		if (s->state == YX_SLOT_FREE) {
			s->owner = me;
			snprintf(s->thread_id, sizeof(s->thread_id), "k%ld",
			    random() % NTHREADS);
			if (yx_table_find_thread(pt->t, s->thread_id) < 0)
				yx_table_set_state(pt->t, s,
				    YX_SLOT_CREATING);
			else
				memset(s, 0, sizeof(*s));
		} else
			(void)yx_table_hold_add(s, &me);
		for (spin = 0; spin < (unsigned)(random() % 20000); spin++)
			;
		yx_table_unlock(pt->t);
	}
}

static pid_t
spawn(struct ptest *pt, int kind, unsigned seed)
{
	pid_t pid = fork();

	cr_assert_neq(pid, -1);
	if (pid == 0) {
		if (kind == 0)
			child_provider(pt, seed);
		child_scribbler(pt, seed);
	}
	return pid;
}

static void
check_no_leak(struct ptest *pt)
{
	struct yx_provider_snapshot	 snap;
	struct yx_container_info	 ci;
	unsigned			 n;
	size_t				 i;

	cr_assert_eq(yx_provider_drop_dead_holds(&pt->p, &n, NULL), YX_OK);
	cr_assert_eq(yx_provider_reap(&pt->p, yx_now_ms() + 3600000, &n, NULL),
	    YX_OK);
	ptest_sleep_ms(2);
	cr_assert_eq(yx_provider_reconcile(&pt->p, NULL), YX_OK);
	cr_assert_eq(yx_provider_list(&pt->p, &snap, NULL), YX_OK);
	/* everything left is adopted warm (unheld) and really exists */
	for (i = 0; i < snap.nslots; i++) {
		cr_assert_eq(snap.slots[i].state, YX_SLOT_WARM,
		    "slot of %s is %s", snap.slots[i].thread_id,
		    yx_slot_state_name((int)snap.slots[i].state));
		cr_assert(fake_get(pt->e, snap.slots[i].container_id, &ci));
	}
	cr_assert_eq((size_t)fake_count(pt->e), snap.nslots,
	    "%d containers, %zu slots", fake_count(pt->e), snap.nslots);
	yx_provider_snapshot_fini(&snap);
}

Test(killloop, random_sigkill_keeps_invariants, .timeout = 3600)
{
	struct ptest	 pt;
	pid_t		 a, b;
	unsigned	 n;
	int		 round;

	ptest_setup(&pt, 4);
	pt.t->lock_timeout_ms = 2000;
	srandom((unsigned)getpid());
	for (round = 0; round < KILLLOOP_ROUNDS; round++) {
		pt.e->create_delay_ms = (int)(random() % 3);
		a = spawn(&pt, 0, (unsigned)random());
		b = spawn(&pt, round % 2, (unsigned)random());
		ptest_sleep_ms((int)(random() % 4));
		kill(a, SIGKILL);
		ptest_sleep_ms((int)(random() % 2));
		kill(b, SIGKILL);
		cr_assert_eq(ptest_wait(a), -1);
		cr_assert_eq(ptest_wait(b), -1);
		cr_assert_eq(yx_provider_drop_dead_holds(&pt.p, &n, NULL),
		    YX_OK);
		ptest_check_invariants(&pt);
	}
	cr_log_info("%d rounds, %llu lock repairs", KILLLOOP_ROUNDS,
	    (unsigned long long)pt.t->hdr->metrics.lock_repairs);
	cr_assert_gt(pt.t->hdr->metrics.lock_repairs, 0,
	    "no child was ever killed holding the lock");
	check_no_leak(&pt);
	ptest_teardown(&pt);
}
