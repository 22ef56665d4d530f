/* SPDX-License-Identifier: MIT */
/*
 * provider_view.c - what the rest of the service may know of the shared
 * table, copied out under its lock: counts and counters (health, metrics,
 * doctor), running sandboxes per owner (admin, metrics), one slot (a
 * thread's sandbox, an operator's argument), and the master's repair after
 * a child died. Nothing outside src/provider takes
 * the table lock; see include/yuxi/provider.h.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "provider/provider_int.h"
#include "yuxi/clock.h"

int
yx_provider_stats(struct yx_table *t, struct yx_provider_stats *out,
    struct yx_errctx *err)
{
	int rc;

	memset(out, 0, sizeof(*out));
	if (t == NULL)
		return yx_fail(err, YX_E_BACKEND_UNAVAILABLE, "no shared table");
	if ((rc = yx_table_lock(t, err)) != YX_OK)
		return rc;
	out->capacity = t->hdr->capacity;
	out->used = yx_table_used(t);
	memcpy(out->nstate, t->hdr->nstate, sizeof(out->nstate));
	out->metrics = t->hdr->metrics;
	yx_table_unlock(t);
	return YX_OK;
}

static int
prov_users_cmp(const void *a, const void *b)
{
	const struct yx_user_sandboxes *x = a, *y = b;

	return strcmp(x->user, y->user);
}

/* Merge the sorted one-slot entries of v[0..n) per user; returns the count. */
static size_t
prov_users_merge(struct yx_user_sandboxes *v, size_t n)
{
	size_t i, k, m = 0;

	for (i = 0; i < n; i++) {
		if (m > 0 && strcmp(v[m - 1].user, v[i].user) == 0) {
			v[m - 1].running += v[i].running;
			for (k = 0; k < YX_SLOT_NSTATES; k++)
				v[m - 1].nstate[k] += v[i].nstate[k];
		} else if (m++ != i)
			v[m - 1] = v[i];
	}
	return m;
}

int
yx_provider_users(struct yx_table *t, struct yx_user_sandboxes **out,
    size_t *n, uint32_t *capacity, struct yx_errctx *err)
{
	struct yx_user_sandboxes	*v = NULL;
	const struct yx_shm_slot	*s;
	uint32_t			 i, cap;
	size_t				 m = 0;
	int				 rc;

	*out = NULL;
	*n = 0;
	if (t == NULL)
		return yx_fail(err, YX_E_BACKEND_UNAVAILABLE, "no shared table");
	cap = t->hdr->capacity;
	/* allocate before locking: no allocator calls under the lock */
	if ((v = calloc(cap > 0 ? cap : 1, sizeof(*v))) == NULL)
		return yx_fail(err, YX_E_NOMEM, NULL);
	if ((rc = yx_table_lock(t, err)) != YX_OK) {
		free(v);
		return rc;
	}
	for (i = 0; i < cap; i++) {
		s = &t->slots[i];
		if (s->state != YX_SLOT_CREATING && s->state != YX_SLOT_ACTIVE &&
		    s->state != YX_SLOT_WARM)
			continue;
		(void)yx_strlcpy(v[m].user, s->owner_user, sizeof(v[m].user));
		v[m].running = 1;
		v[m++].nstate[s->state] = 1;
	}
	yx_table_unlock(t);
	if (m > 0)
		qsort(v, m, sizeof(*v), prov_users_cmp);
	if ((*n = prov_users_merge(v, m)) == 0) {
		free(v);
		v = NULL;
	}
	*out = v;
	if (capacity != NULL)
		*capacity = cap;
	return YX_OK;
}

int
yx_provider_slot(struct yx_table *t, const char *name, unsigned by,
    struct yx_shm_slot *out, struct yx_errctx *err)
{
	int i = -1, rc;

	memset(out, 0, sizeof(*out));
	if (t == NULL || name == NULL)
		return yx_fail(err, YX_E_NOT_FOUND, "no such sandbox");
	if ((rc = yx_table_lock(t, err)) != YX_OK)
		return rc;
	if (by & YX_SLOT_BY_SANDBOX)
		i = yx_table_find_sandbox(t, name);
	if (i < 0 && (by & YX_SLOT_BY_THREAD))
		i = yx_table_find_thread(t, name);
	if (i >= 0)
		*out = t->slots[i];
	yx_table_unlock(t);
	return i >= 0 ? YX_OK : yx_fail(err, YX_E_NOT_FOUND, "no such sandbox");
}

int
yx_provider_set_idle(struct yx_table *t, const char *thread_id, int idle_s)
{
	int i, rc;

	if (t == NULL)
		return YX_E_NOT_FOUND;
	if ((rc = yx_table_lock(t, NULL)) != YX_OK)
		return rc;
	if ((i = yx_table_find_thread(t, thread_id)) >= 0)
		t->slots[i].idle_s = idle_s;
	yx_table_unlock(t);
	return i >= 0 ? YX_OK : YX_E_NOT_FOUND;
}

const char *
yx_comp_name(int c)
{
	switch (c) {
	case YX_COMP_PRIV: return "privileged_helper";
	case YX_COMP_EGRESS: return "egress_proxy";
	case YX_COMP_INGRESS: return "preview_ingress";
	default: return "?";
	}
}

void
yx_provider_comp_note(struct yx_table *t, int k, int state, bool restarted)
{
	if (t == NULL || k < 0 || k >= YX_COMP_N)
		return;
	__atomic_store_n(&t->hdr->comp_state[k], state, __ATOMIC_RELEASE);
	if (restarted)
		__atomic_add_fetch(&t->hdr->comp_restarts[k], 1, __ATOMIC_RELEASE);
}

int
yx_provider_comp_state(struct yx_table *t, int k, uint64_t *restarts)
{
	if (restarts != NULL)
		*restarts = t != NULL && k >= 0 && k < YX_COMP_N ?
		    __atomic_load_n(&t->hdr->comp_restarts[k], __ATOMIC_ACQUIRE) :
		    0;
	if (t == NULL || k < 0 || k >= YX_COMP_N)
		return YX_COMP_UNUSED;
	return __atomic_load_n(&t->hdr->comp_state[k], __ATOMIC_ACQUIRE);
}

void
yx_provider_stall(struct yx_table *t, const char *thread_id, int64_t until_ms)
{
	int i;

	if (t == NULL || yx_table_lock(t, NULL) != YX_OK)
		return;
	if ((i = yx_table_find_thread(t, thread_id)) >= 0)
		t->slots[i].stalled_until = until_ms;
	yx_table_unlock(t);
}

int
yx_provider_touch(struct yx_table *t, const char *thread_id)
{
	int i, rc = YX_E_NOT_FOUND;

	if (t == NULL || yx_table_lock(t, NULL) != YX_OK)
		return YX_E_BUSY;
	if ((i = yx_table_find_thread(t, thread_id)) >= 0 &&
	    (t->slots[i].state == YX_SLOT_ACTIVE || t->slots[i].state == YX_SLOT_WARM)) {
		t->slots[i].last_used_at = yx_now_ms();
		rc = YX_OK;
	}
	yx_table_unlock(t);
	return rc;
}

int64_t
yx_provider_stalled(struct yx_table *t, const char *thread_id)
{
	int64_t	left = 0, now = yx_mono_ms();
	int	i;

	if (t == NULL || yx_table_lock(t, NULL) != YX_OK)
		return 0;
	if ((i = yx_table_find_thread(t, thread_id)) >= 0 &&
	    t->slots[i].stalled_until > now)
		left = t->slots[i].stalled_until - now;
	yx_table_unlock(t);
	return left;
}

unsigned
yx_provider_repair(struct yx_table *t)
{
	unsigned n = 0;

	if (t != NULL && yx_table_lock(t, NULL) == YX_OK) {
		n = yx_table_repair(t);
		yx_table_unlock(t);
	}
	return n;
}

int
yx_provider_check(struct yx_table *t, struct yx_errctx *err)
{
	uint32_t	cnt[YX_SLOT_NSTATES] = { 0 }, i, bad = 0;
	int		rc;

	if (t == NULL)
		return yx_fail(err, YX_E_BACKEND_UNAVAILABLE, "no shared table");
	if ((rc = yx_table_lock(t, err)) != YX_OK)
		return rc;
	for (i = 0; i < t->hdr->capacity; i++) {
		const struct yx_shm_slot *s = &t->slots[i];

		if (s->state >= YX_SLOT_NSTATES || s->nholds > YX_SHM_HOLDS_MAX)
			bad++;
		else
			cnt[s->state]++;
	}
	if (bad == 0 && memcmp(cnt, t->hdr->nstate, sizeof(cnt)) != 0)
		rc = yx_fail(err, YX_E_INTERNAL,
		    "per-state counters disagree with the slots");
	else if (bad > 0)
		rc = yx_fail(err, YX_E_INTERNAL, "%u slot(s) with an invalid state",
		    bad);
	yx_table_unlock(t);
	return rc;
}
