/* SPDX-License-Identifier: MIT */
/*
 * provider_view.c - what the rest of the service may know of the shared
 * table, copied out under its lock: counts and counters (health, metrics,
 * doctor), one slot (a thread's sandbox, an operator's argument), and the
 * master's repair after a child died. Nothing outside src/provider takes
 * the table lock; see include/yuxi/provider.h.
 */
#include "config.h"

#include <string.h>

#include "provider/provider_int.h"

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
