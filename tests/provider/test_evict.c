/* SPDX-License-Identifier: MIT */
/*
 * test_evict.c - the eviction choice (src/provider/provider_evict.c): a
 * table of snapshots, each a row of slots written "owner/state/holds/used"
 * (state c creating, a active, w warm, d destroying; "f" a free slot), a
 * requester and the settings, with the expected answer; then the same
 * rules through yx_provider_acquire() over a real shared table and the
 * fake engine (the per-user cap, fairness, the owner learned on use).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "provider/provider_int.h"
#include "prov_test.h"

#define NSLOTS	16

static const struct evict_case {
	const char	*name;
	const char	*slots;
	const char	*user;		/* the requester (NULL: unknown) */
	unsigned	 limit;
	unsigned	 user_max;
	bool		 fair;
	int		 rc;
	int		 victim;
	unsigned	 share;		/* expected when fair and full; else 0 */
} cases[] = {
	{ "room left", "A/a/0/1 f f", "A", 3, 0, true, YX_OK, -1, 0 },
	{ "free slots beyond the limit do not count", "A/a/1/1 f B/a/1/2",
	    "A", 2, 0, true, YX_E_CAPACITY, -1, 1 },
	{ "one user: warm before active", "A/a/0/1 A/w/0/5 A/a/0/2", "A", 3,
	    0, true, YX_OK, 1, 3 },
	{ "one user: least recently used", "A/a/0/5 A/a/0/1 A/a/0/3", "A", 3,
	    0, true, YX_OK, 1, 3 },
	{ "ties: the lower slot", "A/a/0/1 A/a/0/1", "A", 2, 0, true, YX_OK,
	    0, 2 },
	{ "held sandboxes are never taken", "A/a/1/1 A/w/2/2", "A", 2, 0,
	    true, YX_E_CAPACITY, -1, 2 },
	/* the acceptance case: A's burst at its share, B within its share */
	{ "A at share evicts its own, not B's older one",
	    "B/a/0/1 A/a/0/2 A/a/0/3", "A", 3, 0, true, YX_OK, 1, 2 },
	{ "control: global LRU takes B's", "B/a/0/1 A/a/0/2 A/a/0/3", "A", 3,
	    0, false, YX_OK, 0, 0 },
	{ "A at share, all of A busy: capacity, B kept",
	    "B/a/0/1 A/a/1/2 A/a/1/3", "A", 3, 0, true, YX_E_CAPACITY, -1, 2 },
	{ "control: A busy takes B's", "B/a/0/1 A/a/1/2 A/a/1/3", "A", 3, 0,
	    false, YX_OK, 0, 0 },
	{ "A at share, own busy: a user over share pays, not one within",
	    "A/a/1/1 A/a/1/2 B/a/0/6 B/a/0/4 B/a/0/5 C/a/0/0", "A", 6, 0,
	    true, YX_OK, 3, 2 },
	{ "newcomer takes from the user over share",
	    "A/a/0/3 A/a/0/1 A/a/0/2", "B", 3, 0, true, YX_OK, 1, 2 },
	{ "under share: over-share user first, even with own idle",
	    "B/w/0/5 B/a/0/1 B/a/0/2 A/a/0/0", "A", 4, 0, true, YX_OK, 0, 2 },
	{ "under share, nobody over: own idle before others",
	    "B/a/0/1 B/a/0/2 A/a/0/3", "A", 3, 0, true, YX_OK, 2, 2 },
	{ "under share, nobody over, own busy: anyone's LRU",
	    "B/a/0/5 B/a/0/2 A/a/1/3", "A", 3, 0, true, YX_OK, 1, 2 },
	{ "new user, all at share: anyone's LRU",
	    "A/a/0/3 A/a/0/2 B/a/0/4 B/a/0/1", "C", 4, 0, true, YX_OK, 3, 2 },
	{ "creating is running, destroying is not; neither is idle",
	    "A/c/0/0 A/d/0/0 B/a/0/1", "A", 3, 0, true, YX_OK, 2, 2 },
	{ "adopted (no owner) count as one user over share",
	    "/w/0/9 /w/0/8 /a/0/7 A/a/1/1", "A", 4, 0, true, YX_OK, 1, 2 },
	{ "per-user cap: own LRU, warm first, with room in the table",
	    "A/a/0/1 A/w/0/9 B/a/0/0 f", "A", 10, 2, true, YX_OK, 1, 0 },
	{ "per-user cap: none of own idle", "A/a/1/1 A/a/1/2 B/a/0/0 f", "A",
	    10, 2, true, YX_E_SANDBOX_LIMIT, -1, 0 },
	{ "per-user cap also in the control", "A/a/1/1 A/a/1/2 B/a/0/0 f",
	    "A", 10, 2, false, YX_E_SANDBOX_LIMIT, -1, 0 },
	{ "per-user cap: below it", "A/a/1/1 B/a/0/0 f", "A", 10, 2, true,
	    YX_OK, -1, 0 },
	{ "per-user cap never takes another's", "A/a/1/1 B/w/0/0", "A", 2, 1,
	    true, YX_E_SANDBOX_LIMIT, -1, 0 },
	{ "unknown requester: no per-user cap", "/a/0/1 f", NULL, 5, 1, true,
	    YX_OK, -1, 0 },
};

/* Parse a row of slots into s[0..*n). */
static void
parse_slots(const char *row, struct yx_shm_slot *s, uint32_t *n)
{
	char		 buf[512], *tok, *save = NULL, owner[YX_SHM_USER_MAX];
	char		 st;
	unsigned	 holds, i;
	long long	 used;

	*n = 0;
	memset(s, 0, NSLOTS * sizeof(*s));
	snprintf(buf, sizeof(buf), "%s", row);
	for (tok = strtok_r(buf, " ", &save); tok != NULL;
	     tok = strtok_r(NULL, " ", &save)) {
		cr_assert_lt(*n, NSLOTS);
		if (strcmp(tok, "f") == 0) {
			(*n)++;
			continue;
		}
		owner[0] = '\0';
		if (tok[0] == '/')
			cr_assert_eq(sscanf(tok, "/%c/%u/%lld", &st, &holds, &used), 3,
			    "%s", tok);
		else
			cr_assert_eq(sscanf(tok, "%64[^/]/%c/%u/%lld", owner, &st,
					 &holds, &used),
			    4, "%s", tok);
		snprintf(s[*n].owner_user, sizeof(s[*n].owner_user), "%s", owner);
		s[*n].state = st == 'c' ? YX_SLOT_CREATING :
		    st == 'a'		? YX_SLOT_ACTIVE :
		    st == 'w'		? YX_SLOT_WARM :
					  YX_SLOT_DESTROYING;
		s[*n].nholds = holds;
		for (i = 0; i < holds; i++)
			s[*n].holds[i].pid = 1;
		s[*n].last_used_at = used;
		(*n)++;
	}
}

Test(evict, table)
{
	struct yx_shm_slot	 slots[NSLOTS];
	struct yx_evict_req	 rq;
	struct yx_evict_choice	 ch;
	uint32_t		 n;
	size_t			 i;
	int			 rc;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		parse_slots(cases[i].slots, slots, &n);
		memset(&rq, 0, sizeof(rq));
		rq.user = cases[i].user;
		rq.limit = cases[i].limit;
		rq.user_max = cases[i].user_max;
		rq.fair = cases[i].fair;
		rc = yx_prov_evict_choose(slots, n, &rq, &ch);
		cr_expect_eq(rc, cases[i].rc, "%s: rc %s, want %s",
		    cases[i].name, yx_strerror(rc), yx_strerror(cases[i].rc));
		cr_expect_eq(ch.victim, cases[i].victim, "%s: victim %d, want %d",
		    cases[i].name, ch.victim, cases[i].victim);
		cr_expect_eq(ch.share, cases[i].share, "%s: share %u, want %u",
		    cases[i].name, ch.share, cases[i].share);
	}
}

Test(evict, fair_share)
{
	cr_expect_eq(yx_provider_fair_share(3, 0), 3);
	cr_expect_eq(yx_provider_fair_share(3, 1), 3);
	cr_expect_eq(yx_provider_fair_share(3, 2), 2);
	cr_expect_eq(yx_provider_fair_share(100, 3), 34);
	cr_expect_eq(yx_provider_fair_share(4, 4), 1);
	cr_expect_eq(yx_provider_fair_share(2, 5), 1);
}

/* Requesters and owners: the counts the choice reports. */
Test(evict, counts_reported)
{
	struct yx_shm_slot	 slots[NSLOTS];
	struct yx_evict_req	 rq = { "A", 4, 0, true };
	struct yx_evict_choice	 ch;
	uint32_t		 n;

	parse_slots("A/a/0/1 A/c/0/2 B/w/0/3 C/d/0/0", slots, &n);
	cr_assert_eq(yx_prov_evict_choose(slots, n, &rq, &ch), YX_OK);
	cr_expect_eq(ch.mine, 2);
	cr_expect_eq(ch.users, 2);	/* C's only slot is being destroyed */
	cr_expect_eq(ch.share, 2);
	cr_expect_eq(ch.victim, 0);
	rq.user = "D";
	cr_assert_eq(yx_prov_evict_choose(slots, n, &rq, &ch), YX_OK);
	cr_expect_eq(ch.mine, 0);
	cr_expect_eq(ch.users, 3);
}

/* A full 4096-slot table of 4096 users: still one answer, and quickly. */
Test(evict, many_users)
{
	struct yx_shm_slot	*s;
	struct yx_evict_req	 rq = { "u7", YX_EVICT_SLOTS_MAX, 0, true };
	struct yx_evict_choice	 ch;
	uint32_t		 i;

	cr_assert_not_null(s = calloc(YX_EVICT_SLOTS_MAX, sizeof(*s)));
	for (i = 0; i < YX_EVICT_SLOTS_MAX; i++) {
		snprintf(s[i].owner_user, sizeof(s[i].owner_user), "u%u", i);
		s[i].state = YX_SLOT_ACTIVE;
		s[i].last_used_at = 10000 - i;
	}
	cr_assert_eq(yx_prov_evict_choose(s, YX_EVICT_SLOTS_MAX, &rq, &ch),
	    YX_OK);
	cr_expect_eq(ch.users, YX_EVICT_SLOTS_MAX);
	cr_expect_eq(ch.share, 1);
	cr_expect_eq(ch.victim, 7);	/* at its share: its own */
	rq.user = "new";
	cr_assert_eq(yx_prov_evict_choose(s, YX_EVICT_SLOTS_MAX, &rq, &ch),
	    YX_OK);
	cr_expect_eq(ch.victim, YX_EVICT_SLOTS_MAX - 1);	/* anyone's LRU */
	free(s);
}

/* ---- through yx_provider_acquire() -------------------------------------- */

static int
acquire_as(struct ptest *pt, const char *user, const char *thread,
    struct yx_lease *l, struct yx_errctx *err)
{
	struct yx_acquire_req r = ptest_req(thread, NULL);

	r.owner_user = user;
	yx_errctx_clear(err);
	return yx_provider_acquire(&pt->p, &r, l, err);
}

Test(evict, provider_per_user_cap)
{
	struct ptest		 pt;
	struct yx_lease		 a, b, c, d;
	struct yx_errctx	 err;

	ptest_setup(&pt, 8);
	pt.cfg.max_sandboxes_per_user = 1;
	cr_assert_eq(acquire_as(&pt, "alice", "t-a", &a, &err), YX_OK);
	cr_assert_eq(yx_provider_unhold(&pt.p, &a), YX_OK);
	/* the second evicts alice's first (idle), though the table has room */
	cr_assert_eq(acquire_as(&pt, "alice", "t-b", &b, &err), YX_OK, "%s",
	    err.msg);
	cr_expect_eq(ptest_slot(&pt, "t-a").state, YX_SLOT_FREE);
	cr_expect_eq(pt.t->hdr->metrics.evictions, 1);
	/* t-b is held: a third has nothing of alice's to evict */
	cr_assert_eq(acquire_as(&pt, "alice", "t-c", &c, &err),
	    YX_E_SANDBOX_LIMIT);
	cr_expect(strstr(err.msg, "at most 1 running per user") != NULL, "%s",
	    err.msg);
	cr_expect_eq(ptest_slot(&pt, "t-c").state, YX_SLOT_FREE);
	/* bob is not limited by alice's */
	cr_assert_eq(acquire_as(&pt, "bob", "t-d", &d, &err), YX_OK);
	/* the held one still works: hits are never refused */
	cr_assert_eq(yx_provider_unhold(&pt.p, &b), YX_OK);
	cr_assert_eq(acquire_as(&pt, "alice", "t-b", &b, &err), YX_OK);
	cr_assert_eq(yx_provider_unhold(&pt.p, &b), YX_OK);
	cr_assert_eq(yx_provider_unhold(&pt.p, &d), YX_OK);
	ptest_check_invariants(&pt);
	ptest_teardown(&pt);
}

Test(evict, provider_burst_keeps_others_idle)
{
	struct ptest		 pt;
	struct yx_lease		 l;
	struct yx_errctx	 err;
	struct yx_shm_slot	 b;
	char			 tid[32];
	int			 i;

	ptest_setup(&pt, 3);
	cr_assert_eq(acquire_as(&pt, "bob", "t-bob", &l, &err), YX_OK);
	cr_assert_eq(yx_provider_unhold(&pt.p, &l), YX_OK);
	b = ptest_slot(&pt, "t-bob");
	for (i = 0; i < 6; i++) {
		snprintf(tid, sizeof(tid), "t-alice-%d", i);
		ptest_sleep_ms(2);	/* distinct last-use times */
		cr_assert_eq(acquire_as(&pt, "alice", tid, &l, &err), YX_OK,
		    "%s: %s", tid, err.msg);
		cr_assert_eq(yx_provider_unhold(&pt.p, &l), YX_OK);
		cr_assert_eq(ptest_slot(&pt, "t-bob").generation, b.generation,
		    "bob's idle sandbox evicted by alice's %s", tid);
	}
	cr_expect_eq(pt.t->hdr->metrics.evictions, 4);
	/* alice's held ones and bob's idle one: alice's next is refused */
	cr_assert_eq(acquire_as(&pt, "alice", "t-alice-4", &l, &err), YX_OK);
	cr_assert_eq(acquire_as(&pt, "alice", "t-alice-5", &l, &err), YX_OK);
	cr_assert_eq(acquire_as(&pt, "alice", "t-alice-x", &l, &err),
	    YX_E_CAPACITY);
	cr_expect(strstr(err.msg, "fair share") != NULL, "%s", err.msg);
	cr_expect_eq(ptest_slot(&pt, "t-bob").generation, b.generation);
	ptest_teardown(&pt);
}

/* A slot adopted without an owner takes the owner of its first use. */
Test(evict, provider_owner_learned_on_use)
{
	struct ptest		 pt;
	struct yx_lease		 l;
	struct yx_errctx	 err;
	int			 i;

	ptest_setup(&pt, 4);
	cr_assert_eq(acquire_as(&pt, "alice", "t-a", &l, &err), YX_OK);
	cr_assert_eq(yx_provider_unhold(&pt.p, &l), YX_OK);
	cr_assert_eq(yx_table_lock(pt.t, NULL), YX_OK);
	i = yx_table_find_thread(pt.t, "t-a");
	pt.t->slots[i].owner_user[0] = '\0';
	yx_table_unlock(pt.t);
	cr_assert_eq(acquire_as(&pt, "alice", "t-a", &l, &err), YX_OK);
	cr_expect_str_eq(ptest_slot(&pt, "t-a").owner_user, "alice");
	cr_assert_eq(yx_provider_unhold(&pt.p, &l), YX_OK);
	ptest_teardown(&pt);
}
