/* SPDX-License-Identifier: MIT */
/*
 * prov_test.c - fixtures for the provider tests; see prov_test.h.
 */
#include "config.h"

#include <sys/wait.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "prov_test.h"

void
ptest_setup(struct ptest *pt, uint32_t cap)
{
	static int	 counter;
	struct yx_errctx err;
	int		 rc;

	memset(pt, 0, sizeof(*pt));
	snprintf(pt->shm, sizeof(pt->shm), "/yx-test-%d-%d", (int)getpid(),
	    ++counter);
	yx_table_unlink(pt->shm);
	yx_config_defaults(&pt->cfg);
	pt->cfg.max_replicas = (int)cap;
	pt->cfg.idle_timeout = 600;
	rc = yx_table_open(&pt->t, pt->shm, cap, YX_TABLE_CREATE, &err);
	cr_assert_eq(rc, YX_OK, "table open: %s", err.msg);
	pt->t->lock_timeout_ms = 2000;
	cr_assert_not_null(pt->e = fake_engine_new());
	cr_assert_not_null(pt->d = fake_driver_new(pt->e, &pt->cfg));
	cr_assert_eq(yx_provider_init(&pt->p, &pt->cfg, pt->t, pt->d), YX_OK);
	pt->p.wait_ms = 10000;
	pt->p.poll_ms = 5;
}

void
ptest_teardown(struct ptest *pt)
{
	yx_provider_fini(&pt->p);
	if (pt->d != NULL)
		pt->d->ops->free(pt->d);
	fake_engine_free(pt->e);
	yx_table_close(pt->t);
	yx_table_unlink(pt->shm);
}

struct yx_acquire_req
ptest_req(const char *thread, const char *fp)
{
	struct yx_acquire_req r;

	memset(&r, 0, sizeof(r));
	r.thread_id = thread;
	r.owner_user = "alice";
	r.agent_id = "agent1";
	r.skills_fp = fp;
	r.user_data_host = "/srv/saves/threads/x/user-data";
	return r;
}

struct yx_lease
ptest_acquire(struct ptest *pt, const char *thread)
{
	struct yx_acquire_req	 r = ptest_req(thread, NULL);
	struct yx_lease		 l;
	struct yx_errctx	 err;
	int			 rc;

	yx_errctx_clear(&err);
	rc = yx_provider_acquire(&pt->p, &r, &l, &err);
	cr_assert_eq(rc, YX_OK, "acquire %s: %s (%s)", thread,
	    yx_strerror(rc), err.msg);
	return l;
}

struct yx_lease
ptest_idle(struct ptest *pt, const char *thread)
{
	struct yx_lease l = ptest_acquire(pt, thread);

	yx_provider_unhold(&pt->p, &l);
	return l;
}

struct yx_shm_slot
ptest_slot(struct ptest *pt, const char *thread)
{
	struct yx_shm_slot	s;
	int			i;

	memset(&s, 0, sizeof(s));
	cr_assert_eq(yx_table_lock(pt->t, NULL), YX_OK);
	if ((i = yx_table_find_thread(pt->t, thread)) >= 0)
		s = pt->t->slots[i];
	yx_table_unlock(pt->t);
	return s;
}

int
ptest_wait(pid_t pid)
{
	int status;

	while (waitpid(pid, &status, 0) == -1)
		if (errno != EINTR)
			return -2;
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

void
ptest_sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };

	while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
		;
}

void
ptest_check_invariants(struct ptest *pt)
{
	struct yx_shm_slot	*s;
	uint32_t		 i, j, cnt[YX_SLOT_NSTATES] = { 0 };

	cr_assert_eq(yx_table_lock(pt->t, NULL), YX_OK);
	for (i = 0; i < pt->t->hdr->capacity; i++) {
		s = &pt->t->slots[i];
		cr_assert_lt(s->state, YX_SLOT_NSTATES);
		cnt[s->state]++;
		if (s->state == YX_SLOT_FREE)
			continue;
		cr_assert_leq(s->nholds, YX_SHM_HOLDS_MAX);
		for (j = 0; j < s->nholds; j++)
			cr_assert(yx_proc_alive(&s->holds[j]),
			    "slot %u holds dead pid %d", i, s->holds[j].pid);
		if (s->state == YX_SLOT_CREATING)
			cr_assert(yx_proc_alive(&s->owner),
			    "slot %u creating, owner %d dead", i,
			    s->owner.pid);
		if (s->thread_id[0] == '\0')
			continue;
		for (j = i + 1; j < pt->t->hdr->capacity; j++)
			cr_assert(pt->t->slots[j].state == YX_SLOT_FREE ||
				strcmp(pt->t->slots[j].thread_id,
				    s->thread_id) != 0,
			    "thread %s in slots %u and %u",
			    s->thread_id, i, j);
	}
	for (i = 0; i < YX_SLOT_NSTATES; i++)
		cr_assert_eq(cnt[i], pt->t->hdr->nstate[i],
		    "state %u counted %u, header says %u", i, cnt[i],
		    pt->t->hdr->nstate[i]);
	cr_assert_leq(yx_table_used(pt->t), (uint32_t)pt->cfg.max_replicas);
	yx_table_unlock(pt->t);
}
