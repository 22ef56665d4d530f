/* SPDX-License-Identifier: MIT */
/*
 * provider_evict.c - which sandbox makes room for a new one (docs/design.md
 * §2 "Per-user limits and fair eviction"): a pure function over the slots,
 * called by provider.c under the table lock and by the table-driven tests
 * on plain arrays.
 *
 * Counts are derived from the slots on every call (a slot carries its
 * owner), never kept beside them: there is nothing to drift after a crash
 * or a repair. A user's running sandboxes are its slots in state creating,
 * active or warm; idle ones are active or warm without an operation in
 * flight (no holds). Among idle ones the order is always: warm before
 * active, then least recently used, then the lower slot.
 *
 * The fair share, when the table is full, is ceil(limit / users), where
 * users counts the owners of running sandboxes plus the requester. A
 * requester at or over its share evicts its own idle sandboxes first, then
 * only those of users over their share (more than the share), else gets
 * 503 capacity: one user's burst never evicts the idle sandbox of a user
 * within their share while it has idle ones of its own. A requester under
 * its share takes from users over theirs first, then its own, then the
 * least recently used idle sandbox of anyone.
 *
 * Per-owner counts use an open-addressing table on the stack (32 KiB),
 * sized for YX_EVICT_SLOTS_MAX slots: no allocation under the lock. A
 * larger table (none in production: the capacity is
 * YUXI_SANDBOX_MAX_REPLICAS, at most 4096) falls back to the global LRU.
 */
#include "config.h"

#include <string.h>

#include "provider/provider_int.h"

#define EVICT_BUCKETS	8192	/* a power of two, 2 x YX_EVICT_SLOTS_MAX */

/* Running sandboxes per owner, keyed by the owner's name. */
struct evict_users {
	const struct yx_shm_slot	*slots;
	uint16_t			 first[EVICT_BUCKETS];	/* 1 + a slot of the owner; 0 empty */
	uint16_t			 count[EVICT_BUCKETS];
	uint32_t			 nusers;
};

/* What the class predicates need. */
struct evict_ctx {
	const struct yx_shm_slot	*slots;
	uint32_t			 n;
	const char			*user;	/* the requester, "" when unknown */
	const struct evict_users	*u;	/* per-owner counts (fair mode) */
	uint32_t			 share;
};

typedef bool (*evict_class_fn)(const struct evict_ctx *,
    const struct yx_shm_slot *);

uint32_t
yx_provider_fair_share(uint32_t limit, uint32_t users)
{
	if (users <= 1)
		return limit;
	return (limit + users - 1) / users;
}

static bool
evict_running(const struct yx_shm_slot *s)
{
	return s->state == YX_SLOT_CREATING || s->state == YX_SLOT_ACTIVE ||
	    s->state == YX_SLOT_WARM;
}

static bool
evict_idle(const struct yx_shm_slot *s)
{
	return (s->state == YX_SLOT_WARM || s->state == YX_SLOT_ACTIVE) &&
	    s->nholds == 0;
}

/* FNV-1a of an owner name, bounded by the slot's field. */
static uint32_t
evict_hash(const char *s)
{
	uint32_t	h = 2166136261u;
	size_t		i;

	for (i = 0; i < YX_SHM_USER_MAX && s[i] != '\0'; i++)
		h = (h ^ (unsigned char)s[i]) * 16777619u;
	return h;
}

/* The bucket of owner `name`: its own, or the empty one it would take. */
static uint32_t
evict_bucket(const struct evict_users *u, const char *name)
{
	uint32_t b = evict_hash(name) & (EVICT_BUCKETS - 1);

	while (u->first[b] != 0 &&
	    strncmp(u->slots[u->first[b] - 1].owner_user, name,
		YX_SHM_USER_MAX) != 0)
		b = (b + 1) & (EVICT_BUCKETS - 1);
	return b;
}

static void
evict_count(struct evict_users *u, const struct yx_shm_slot *slots,
    uint32_t n)
{
	uint32_t i, b;

	memset(u, 0, sizeof(*u));
	u->slots = slots;
	for (i = 0; i < n; i++) {
		if (!evict_running(&slots[i]))
			continue;
		b = evict_bucket(u, slots[i].owner_user);
		if (u->first[b] == 0) {
			u->first[b] = (uint16_t)(i + 1);
			u->nusers++;
		}
		u->count[b]++;
	}
}

static bool
evict_mine(const struct evict_ctx *c, const struct yx_shm_slot *s)
{
	return strncmp(s->owner_user, c->user, YX_SHM_USER_MAX) == 0;
}

/* Another user's slot, and that user runs more than the fair share. */
static bool
evict_over(const struct evict_ctx *c, const struct yx_shm_slot *s)
{
	return !evict_mine(c, s) &&
	    c->u->count[evict_bucket(c->u, s->owner_user)] > c->share;
}

static bool
evict_any(const struct evict_ctx *c, const struct yx_shm_slot *s)
{
	(void)c;
	(void)s;
	return true;
}

/* Is idle slot a a better victim than idle slot b? */
static bool
evict_before(const struct yx_shm_slot *a, const struct yx_shm_slot *b)
{
	if (a->state != b->state)
		return a->state == YX_SLOT_WARM;
	return a->last_used_at < b->last_used_at;
}

/* The best idle victim of a class, or -1. */
static int
evict_lru(const struct evict_ctx *c, evict_class_fn take)
{
	const struct yx_shm_slot	*s;
	uint32_t			 i;
	int				 best = -1;

	for (i = 0; i < c->n; i++) {
		s = &c->slots[i];
		if (!evict_idle(s) || !take(c, s))
			continue;
		if (best < 0 || evict_before(s, &c->slots[best]))
			best = (int)i;
	}
	return best;
}

/* Table full, fair mode: the victim by share (see the top of the file). */
static int
evict_fair(struct evict_ctx *c, struct evict_users *u,
    const struct yx_evict_req *rq, struct yx_evict_choice *out)
{
	int v;

	evict_count(u, c->slots, c->n);
	c->u = u;
	out->users = u->nusers + (u->first[evict_bucket(u, c->user)] == 0);
	out->share = c->share = yx_provider_fair_share(rq->limit, out->users);
	if (out->mine >= out->share) {
		if ((v = evict_lru(c, evict_mine)) < 0)
			v = evict_lru(c, evict_over);
	} else if ((v = evict_lru(c, evict_over)) < 0 &&
	    (v = evict_lru(c, evict_mine)) < 0)
		v = evict_lru(c, evict_any);
	return v;
}

int
yx_prov_evict_choose(const struct yx_shm_slot *slots, uint32_t n,
    const struct yx_evict_req *rq, struct yx_evict_choice *out)
{
	struct evict_users	 u;
	struct evict_ctx	 c;
	uint32_t		 i, used = 0;

	memset(out, 0, sizeof(*out));
	memset(&c, 0, sizeof(c));
	out->victim = -1;
	c.slots = slots;
	c.n = n;
	c.user = rq->user != NULL ? rq->user : "";
	for (i = 0; i < n; i++) {
		used += slots[i].state != YX_SLOT_FREE;
		out->mine += evict_running(&slots[i]) && evict_mine(&c, &slots[i]);
	}
	/* The user's own cap: only its own idle sandboxes make room. */
	if (rq->user_max > 0 && c.user[0] != '\0' && out->mine >= rq->user_max) {
		out->victim = evict_lru(&c, evict_mine);
		return out->victim >= 0 ? YX_OK : YX_E_SANDBOX_LIMIT;
	}
	if (used < rq->limit)
		return YX_OK;
	if (rq->fair && n <= YX_EVICT_SLOTS_MAX)
		out->victim = evict_fair(&c, &u, rq, out);
	else
		out->victim = evict_lru(&c, evict_any);
	return out->victim >= 0 ? YX_OK : YX_E_CAPACITY;
}
