/* SPDX-License-Identifier: MIT */
/*
 * test_table.c - the shared table with real processes: format validation,
 * the robustness self-test, repair after a lock holder is SIGKILLed, the
 * timed lock against a SIGSTOPped holder, dead holds and dead claims.
 */
#include "config.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <sys/mman.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <time.h>
#include <criterion/criterion.h>

#include "yuxi/shm_table.h"
#include "prov_test.h"

Test(table, selftest_passes)
{
	struct yx_errctx err;

	yx_errctx_clear(&err);
	cr_assert_eq(yx_table_selftest(&err), YX_OK, "%s", err.msg);
}

Test(table, create_attach_and_validate)
{
	struct yx_table		*t = NULL, *u = NULL;
	struct yx_errctx	 err;
	char			 name[64];

	snprintf(name, sizeof(name), "/yx-test-open-%d", (int)getpid());
	yx_table_unlink(name);
	cr_assert_eq(yx_table_open(&t, name, 4, YX_TABLE_CREATE, &err), YX_OK);
	cr_assert_eq(t->hdr->magic, YX_SHM_MAGIC);
	cr_assert_eq(t->hdr->capacity, 4);
	cr_assert_eq(t->hdr->nstate[YX_SLOT_FREE], 4);
	/* attach with any capacity */
	cr_assert_eq(yx_table_open(&u, name, 0, 0, &err), YX_OK);
	cr_assert_eq(u->hdr->capacity, 4);
	yx_table_close(u);
	/* wrong capacity: refused without RECREATE */
	cr_assert_eq(yx_table_open(&u, name, 8, YX_TABLE_CREATE, &err),
	    YX_E_INTERNAL);
	cr_assert_null(u);
	cr_assert(strstr(err.msg, "capacity") != NULL, "%s", err.msg);
	/* a foreign layout version is refused, then recreated on request */
	t->hdr->version = YX_SHM_LAYOUT_VERSION + 1;
	cr_assert_eq(yx_table_open(&u, name, 0, 0, &err), YX_E_INTERNAL);
	cr_assert(strstr(err.msg, "version") != NULL, "%s", err.msg);
	t->hdr->version = YX_SHM_LAYOUT_VERSION;
	t->hdr->slot_size++;
	cr_assert_eq(yx_table_open(&u, name, 0, 0, &err), YX_E_INTERNAL);
	cr_assert(strstr(err.msg, "fingerprint") != NULL, "%s", err.msg);
	cr_assert_eq(yx_table_open(&u, name, 8,
			 YX_TABLE_CREATE | YX_TABLE_RECREATE, &err),
	    YX_OK, "%s", err.msg);
	cr_assert_eq(u->hdr->capacity, 8);
	cr_assert_eq(u->hdr->slot_size, sizeof(struct yx_shm_slot));
	yx_table_close(u);
	yx_table_close(t);
	yx_table_unlink(name);
	/* attach to nothing */
	cr_assert_neq(yx_table_open(&u, name, 0, 0, &err), YX_OK);
	cr_assert_eq(yx_table_open(&u, "noslash", 1, YX_TABLE_CREATE, &err),
	    YX_E_BAD_REQUEST);
}

/*
 * Attaching while another process is still creating the table (blank, no
 * magic yet) waits for it to be published instead of failing; a table
 * that is never published is refused after the wait, not waited on forever.
 */
Test(table, attach_waits_for_a_table_being_created)
{
	struct yx_table		*src = NULL, *u = NULL;
	struct yx_errctx	 err;
	char			 name[64], sname[64];
	size_t			 len = YX_SHM_SIZE(4);
	unsigned char		*m;
	pid_t			 pid;
	int			 fd, st;
	int64_t			 t0;
	struct timespec		 ts;

	snprintf(name, sizeof(name), "/yx-test-blank-%d", (int)getpid());
	snprintf(sname, sizeof(sname), "/yx-test-image-%d", (int)getpid());
	yx_table_unlink(name);
	yx_table_unlink(sname);
	cr_assert_eq(yx_table_open(&src, sname, 4, YX_TABLE_CREATE, &err), YX_OK);
	cr_assert_neq(fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600), -1);
	cr_assert_eq(ftruncate(fd, (off_t)len), 0);	/* blank: magic 0 */
	cr_assert_neq(pid = fork(), -1);
	if (pid == 0) {
		/* the "creator": publishes a valid table 150 ms later */
		m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (m == MAP_FAILED)
			_exit(1);
		usleep(150 * 1000);
		memcpy(m + sizeof(src->hdr->magic),
		    (char *)src->hdr + sizeof(src->hdr->magic),
		    len - sizeof(src->hdr->magic));
		__atomic_store_n(&((struct yx_shm_header *)m)->magic,
		    YX_SHM_MAGIC, __ATOMIC_RELEASE);
		_exit(0);
	}
	cr_assert_eq(yx_table_open(&u, name, 0, 0, &err), YX_OK, "%s", err.msg);
	cr_assert_eq(u->hdr->capacity, 4);
	yx_table_close(u);
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	/* never published: refused after the wait */
	memset(src->hdr, 0, sizeof(*src->hdr));
	cr_assert_eq(yx_table_unlink(name), YX_OK);
	close(fd);
	cr_assert_neq(fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600), -1);
	cr_assert_eq(ftruncate(fd, (off_t)len), 0);
	clock_gettime(CLOCK_MONOTONIC, &ts);
	t0 = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
	cr_assert_eq(yx_table_open(&u, name, 0, 0, &err), YX_E_INTERNAL);
	cr_assert(strstr(err.msg, "magic") != NULL, "%s", err.msg);
	clock_gettime(CLOCK_MONOTONIC, &ts);
	cr_assert_lt((int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000 - t0, 3000);
	close(fd);
	yx_table_close(src);
	yx_table_unlink(name);
	yx_table_unlink(sname);
}

Test(table, proc_identity)
{
	struct yx_shm_pid me, other;

	yx_proc_self(&me);
	cr_assert_eq(me.pid, getpid());
	cr_assert_neq(me.start, 0);
	cr_assert(yx_proc_alive(&me));
	other = me;
	other.start++;		/* same pid, another process: pid reuse */
	cr_assert_not(yx_proc_alive(&other));
	other.pid = 0;
	cr_assert_not(yx_proc_alive(&other));
}

/*
 * Child: lock the table, claim slot 0 CREATING for thread "dying" with a
 * hold, report through the pipe, then hang until killed.
 */
static pid_t
spawn_dying_holder(struct yx_table *t, int *rfd)
{
	struct yx_shm_pid	 me;
	struct yx_shm_slot	*s;
	int			 fds[2];
	pid_t			 pid;

	cr_assert_eq(pipe(fds), 0);
	cr_assert_neq(pid = fork(), -1);
	if (pid == 0) {
		close(fds[0]);
		if (yx_table_lock(t, NULL) != YX_OK)
			_exit(1);
		yx_proc_self(&me);
		s = &t->slots[0];
		s->owner = me;
		snprintf(s->thread_id, sizeof(s->thread_id), "dying");
		yx_table_set_state(t, s, YX_SLOT_CREATING);
		(void)yx_table_hold_add(s, &me);
		(void)write(fds[1], "x", 1);
		for (;;)
			pause();
	}
	close(fds[1]);
	*rfd = fds[0];
	return pid;
}

Test(table, sigkilled_lock_holder_is_repaired)
{
	struct ptest	 pt;
	char		 c;
	int		 rfd;
	pid_t		 pid;

	ptest_setup(&pt, 4);
	pid = spawn_dying_holder(pt.t, &rfd);
	cr_assert_eq(read(rfd, &c, 1), 1);
	close(rfd);
	kill(pid, SIGKILL);
	cr_assert_eq(ptest_wait(pid), -1);
	cr_assert_eq(pt.t->hdr->nstate[YX_SLOT_CREATING], 1);
	cr_assert_eq(yx_table_lock(pt.t, NULL), YX_OK);
	cr_assert_eq(pt.t->hdr->metrics.lock_repairs, 1);
	cr_assert_eq(pt.t->slots[0].state, YX_SLOT_FREE);
	cr_assert_eq(pt.t->slots[0].nholds, 0);
	yx_table_unlock(pt.t);
	/* the mutex is consistent again: plain lock/unlock works */
	cr_assert_eq(yx_table_lock(pt.t, NULL), YX_OK);
	yx_table_unlock(pt.t);
	cr_assert_eq(pt.t->hdr->metrics.lock_repairs, 1);
	ptest_check_invariants(&pt);
	ptest_teardown(&pt);
}

Test(table, sigstopped_holder_gives_busy_then_repair)
{
	struct ptest	 pt;
	struct yx_errctx err;
	int64_t		 t0, dt;
	char		 c;
	int		 rfd;
	pid_t		 pid;

	ptest_setup(&pt, 4);
	pt.t->lock_timeout_ms = 300;
	pid = spawn_dying_holder(pt.t, &rfd);
	cr_assert_eq(read(rfd, &c, 1), 1);
	close(rfd);
	kill(pid, SIGSTOP);
	t0 = yx_now_ms();
	cr_assert_eq(yx_table_lock(pt.t, &err), YX_E_BUSY);
	dt = yx_now_ms() - t0;
	cr_assert_geq(dt, 250, "gave up after %lld ms", (long long)dt);
	cr_assert_leq(dt, 2000, "gave up after %lld ms", (long long)dt);
	kill(pid, SIGKILL);
	cr_assert_eq(ptest_wait(pid), -1);
	cr_assert_eq(yx_table_lock(pt.t, NULL), YX_OK);
	cr_assert_eq(pt.t->hdr->metrics.lock_repairs, 1);
	cr_assert_eq(pt.t->slots[0].state, YX_SLOT_FREE);
	yx_table_unlock(pt.t);
	ptest_check_invariants(&pt);
	ptest_teardown(&pt);
}

Test(table, holds_of_exited_process_are_dropped)
{
	struct ptest		 pt;
	struct yx_shm_pid	 me;
	struct yx_shm_slot	*s;
	pid_t			 pid;

	ptest_setup(&pt, 4);
	cr_assert_eq(yx_table_lock(pt.t, NULL), YX_OK);
	s = &pt.t->slots[1];
	snprintf(s->thread_id, sizeof(s->thread_id), "t1");
	yx_table_set_state(pt.t, s, YX_SLOT_ACTIVE);
	yx_proc_self(&me);
	cr_assert_eq(yx_table_hold_add(s, &me), YX_OK);
	yx_table_unlock(pt.t);
	cr_assert_neq(pid = fork(), -1);
	if (pid == 0) {
		struct yx_shm_pid child;

		yx_proc_self(&child);
		if (yx_table_lock(pt.t, NULL) != YX_OK)
			_exit(1);
		(void)yx_table_hold_add(&pt.t->slots[1], &child);
		(void)yx_table_hold_add(&pt.t->slots[1], &child);
		yx_table_unlock(pt.t);
		_exit(0);	/* exits holding two holds */
	}
	cr_assert_eq(ptest_wait(pid), 0);
	cr_assert_eq(pt.t->slots[1].nholds, 3);
	cr_assert_eq(yx_table_lock(pt.t, NULL), YX_OK);
	cr_assert_eq(yx_table_repair(pt.t), 2);
	cr_assert_eq(s->nholds, 1);
	cr_assert_eq(s->holds[0].pid, getpid());
	cr_assert_eq(s->state, YX_SLOT_ACTIVE);
	cr_assert_eq(pt.t->hdr->metrics.holds_dropped, 2);
	yx_table_unlock(pt.t);
	ptest_check_invariants(&pt);
	ptest_teardown(&pt);
}

Test(table, hold_array_full_is_busy)
{
	struct yx_shm_slot	s;
	struct yx_shm_pid	me;
	int			i;

	memset(&s, 0, sizeof(s));
	yx_proc_self(&me);
	for (i = 0; i < YX_SHM_HOLDS_MAX; i++)
		cr_assert_eq(yx_table_hold_add(&s, &me), YX_OK);
	cr_assert_eq(yx_table_hold_add(&s, &me), YX_E_BUSY);
	cr_assert(yx_table_hold_del(&s, &me));
	cr_assert_eq(s.nholds, YX_SHM_HOLDS_MAX - 1);
}

Test(table, dead_destroying_claim_is_orphaned_not_lost)
{
	struct ptest		 pt;
	struct yx_shm_slot	*s;

	ptest_setup(&pt, 2);
	cr_assert_eq(yx_table_lock(pt.t, NULL), YX_OK);
	s = &pt.t->slots[0];
	snprintf(s->thread_id, sizeof(s->thread_id), "gone");
	s->owner.pid = 999999999;	/* no such process */
	s->owner.start = 1;
	yx_table_set_state(pt.t, s, YX_SLOT_DESTROYING);
	s = &pt.t->slots[1];
	s->state = 77;			/* torn garbage */
	cr_assert_eq(yx_table_repair(pt.t), 2);
	cr_assert_eq(pt.t->slots[0].state, YX_SLOT_DESTROYING);
	cr_assert_eq(pt.t->slots[0].owner.pid, 0);
	cr_assert_eq(pt.t->slots[1].state, YX_SLOT_FREE);
	cr_assert_eq(pt.t->hdr->nstate[YX_SLOT_DESTROYING], 1);
	cr_assert_eq(pt.t->hdr->nstate[YX_SLOT_FREE], 1);
	yx_table_unlock(pt.t);
	ptest_teardown(&pt);
}
