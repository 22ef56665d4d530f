/* SPDX-License-Identifier: MIT */
/*
 * provider_maint.c - the provider's housekeeping (docs/design.md §1 "reaper",
 * §2): explicit destroy, the idle reaper, reconcile with the engine,
 * discovery at master start, dropping holds of dead processes, and table
 * snapshots for admin/healthz/CLI.
 *
 * Same discipline as provider.c: decide and claim under the table lock,
 * call the driver unlocked, then publish after checking the claim is still
 * ours. The reaper pre-scans the slots without the lock (cheap; values may
 * be torn) and re-checks every candidate under the lock before acting,
 * because holders come and go and pids get reused.
 *
 * Reconcile matches the engine's list with the slots in O(n log n): one
 * locked copy of the slots' container ids and names, sorted, looked up for
 * each listed container (only one unknown there is checked again under
 * the lock), and the listed ids and names sorted for the slots' side, so a
 * pass over a thousand sandboxes costs a thousand lookups, not a million
 * comparisons (docs/benchmarks.md "A thousand sandboxes on one host").
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "yuxi/log.h"
#include "provider/provider_int.h"

/*
 * Locked: claim slot s for destruction unless it is in use. YX_OK with ref
 * and gen set, YX_E_BUSY when held or claimed by a live process.
 */
static int
maint_claim_destroy(struct yx_provider *p, struct yx_shm_slot *s,
    const struct yx_shm_pid *me, char *ref, size_t reflen, uint64_t *gen)
{
	if ((s->state == YX_SLOT_CREATING || s->state == YX_SLOT_DESTROYING) &&
	    s->owner.pid != 0 && yx_proc_alive(&s->owner))
		return YX_E_BUSY;
	if (s->nholds > 0)
		(void)yx_table_slot_drop_dead(s);
	if (s->nholds > 0)
		return YX_E_BUSY;
	(void)yx_strlcpy(ref, yx_prov_ref(s), reflen);
	yx_prov_claim(p, s, me, YX_SLOT_DESTROYING);
	*gen = s->generation;
	return YX_OK;
}

/*
 * Remove labelled containers of a thread that has no slot. Every thread's
 * deletion asks (its second look, h_threads.c): the engine lists that
 * thread's containers only where the driver can say so, else all of them
 * (megabytes of JSON with a thousand sandboxes, the engine's time too).
 */
static int
maint_destroy_unslotted(struct yx_provider *p, const char *thread_id,
    struct yx_errctx *err)
{
	struct yx_container_info	*cs = NULL;
	size_t				 n = 0, i;
	int				 rc, found = 0;

	if (p->driver->ops->list_thread != NULL)
		rc = p->driver->ops->list_thread(p->driver, thread_id, &cs, &n, err);
	else
		rc = p->driver->ops->list(p->driver, &cs, &n, err);
	if (rc != YX_OK) {
		YX_PROV_METRIC(p, engine_errors);
		return rc;
	}
	for (i = 0; i < n && rc == YX_OK; i++)
		if (strcmp(cs[i].thread_id, thread_id) == 0) {
			rc = yx_prov_remove(p, cs[i].id, err);
			found++;
		}
	free(cs);
	if (rc == YX_OK && found == 0)
		rc = yx_fail(err, YX_E_NOT_FOUND, "no sandbox for the thread");
	return rc;
}

int
yx_provider_destroy(struct yx_provider *p, const char *sandbox_id,
    const char *thread_id, struct yx_errctx *err)
{
	char			 ref[YX_SHM_CONTAINER_NAME_MAX];
	struct yx_shm_pid	 me;
	uint64_t		 gen = 0;
	int			 i, rc;

	if (sandbox_id == NULL && thread_id == NULL)
		return yx_fail(err, YX_E_BAD_REQUEST, NULL);
	yx_proc_self(&me);
	if ((rc = yx_table_lock(p->table, err)) != YX_OK)
		return rc;
	i = sandbox_id != NULL ? yx_table_find_sandbox(p->table, sandbox_id) :
				 yx_table_find_thread(p->table, thread_id);
	if (i >= 0 &&
	    (rc = maint_claim_destroy(p, &p->table->slots[i], &me, ref,
		 sizeof(ref), &gen)) != YX_OK)
		yx_fail(err, rc, "sandbox in use");
	yx_table_unlock(p->table);
	if (rc != YX_OK)
		return rc;
	if (i < 0 && sandbox_id == NULL)
		return maint_destroy_unslotted(p, thread_id, err);
	if (i < 0)
		return yx_fail(err, YX_E_NOT_FOUND, "no such sandbox");
	return yx_prov_destroy_claimed(p, (uint32_t)i, gen, &me, ref, err);
}

/* Locked: may slot s be reaped at now_ms? (idle, unheld or orphaned) */
static bool
maint_reapable(struct yx_shm_slot *s, int64_t now_ms, int64_t idle_ms)
{
	if (s->state == YX_SLOT_DESTROYING)
		return s->owner.pid == 0 || !yx_proc_alive(&s->owner);
	if (s->state != YX_SLOT_ACTIVE && s->state != YX_SLOT_WARM)
		return false;
	if (s->nholds > 0)
		(void)yx_table_slot_drop_dead(s);
	return s->nholds == 0 && idle_ms > 0 &&
	    s->last_used_at + idle_ms <= now_ms;
}

/* Unlocked pre-scan filter; a false positive is re-checked under the lock. */
static bool
maint_reap_candidate(const struct yx_shm_slot *s, int64_t now_ms,
    int64_t idle_ms)
{
	uint32_t	st = __atomic_load_n(&s->state, __ATOMIC_RELAXED);
	int64_t		used = __atomic_load_n(&s->last_used_at,
	     __ATOMIC_RELAXED);

	if (st == YX_SLOT_DESTROYING)
		return true;
	return (st == YX_SLOT_ACTIVE || st == YX_SLOT_WARM) && idle_ms > 0 &&
	    used + idle_ms <= now_ms;
}

/*
 * The caller's veto (p->keep) for an idle active or warm slot, asked
 * without the lock on a copy of its thread id: slow work (the reaper asks
 * the sandbox) never runs under the lock, and the locked re-check still
 * decides. A torn copy only asks about the wrong thread once.
 */
static bool
maint_kept(struct yx_provider *p, const struct yx_shm_slot *s,
    int64_t now_ms)
{
	char tid[YX_SHM_THREAD_ID_MAX];

	if (p->keep == NULL ||
	    __atomic_load_n(&s->state, __ATOMIC_RELAXED) == YX_SLOT_DESTROYING)
		return false;
	memcpy(tid, s->thread_id, sizeof(tid));
	tid[sizeof(tid) - 1] = '\0';
	return tid[0] != '\0' && p->keep(p->keep_arg, tid, now_ms);
}

int
yx_provider_reap(struct yx_provider *p, int64_t now_ms, unsigned *ndestroyed,
    struct yx_errctx *err)
{
	char			 ref[YX_SHM_CONTAINER_NAME_MAX];
	struct yx_shm_pid	 me;
	struct yx_shm_slot	*s;
	int64_t			 dflt_ms = (int64_t)p->cfg->idle_timeout * 1000;
	int64_t			 idle_ms;
	int32_t			 idle_s;
	uint64_t		 gen;
	uint32_t		 i;
	unsigned		 n = 0;
	int			 rc, first = YX_OK;

	yx_proc_self(&me);
	for (i = 0; i < p->table->hdr->capacity; i++) {
		s = &p->table->slots[i];
		/* the thread's own idle timeout (POST/PATCH /api/threads) */
		idle_s = __atomic_load_n(&s->idle_s, __ATOMIC_RELAXED);
		idle_ms = idle_s > 0 ? (int64_t)idle_s * 1000 : dflt_ms;
		if (!maint_reap_candidate(s, now_ms, idle_ms) ||
		    maint_kept(p, s, now_ms))
			continue;
		if ((rc = yx_table_lock(p->table, err)) != YX_OK) {
			first = rc;
			break;
		}
		rc = YX_E_BUSY;
		if (maint_reapable(s, now_ms, idle_ms))
			rc = maint_claim_destroy(p, s, &me, ref, sizeof(ref),
			    &gen);
		yx_table_unlock(p->table);
		if (rc != YX_OK)
			continue;
		rc = yx_prov_destroy_claimed(p, i, gen, &me, ref, err);
		if (rc == YX_OK) {
			n++;
			YX_PROV_METRIC(p, reaper_destroys);
		} else if (first == YX_OK)
			first = rc;
	}
	if (ndestroyed != NULL)
		*ndestroyed = n;
	return first;
}

/* Locked: does any slot name container c (by id or by name)? */
static bool
maint_known(const struct yx_table *t, const struct yx_container_info *c)
{
	const struct yx_shm_slot	*s;
	uint32_t			 i;

	for (i = 0; i < t->hdr->capacity; i++) {
		s = &t->slots[i];
		if (s->state == YX_SLOT_FREE)
			continue;
		if ((s->container_id[0] != '\0' &&
			strcmp(s->container_id, c->id) == 0) ||
		    strcmp(s->container_name, c->name) == 0)
			return true;
	}
	return false;
}

static int
maint_free_slot(const struct yx_table *t)
{
	uint32_t i;

	for (i = 0; i < t->hdr->capacity; i++)
		if (t->slots[i].state == YX_SLOT_FREE)
			return (int)i;
	return -1;
}

/* Locked: can container c be adopted into slot `f`? */
static bool
maint_adoptable(struct yx_provider *p, const struct yx_container_info *c,
    int f)
{
	char	 name[YX_SHM_CONTAINER_NAME_MAX];
	size_t	 sl = strlen(c->sandbox_id);

	if (f < 0 || !c->running ||
	    !yx_thread_id_valid(c->thread_id, strlen(c->thread_id)) ||
	    sl < 1 || sl > 64 || yx_table_used(p->table) >= yx_prov_limit(p))
		return false;
	if (yx_table_find_thread(p->table, c->thread_id) >= 0 ||
	    yx_table_find_sandbox(p->table, c->sandbox_id) >= 0)
		return false;
	snprintf(name, sizeof(name), "%s%s", p->cfg->container_prefix,
	    c->sandbox_id);
	return strcmp(name, c->name) == 0;
}

/* Locked: adopt container c as a warm sandbox in free slot f. */
static void
maint_adopt(struct yx_provider *p, const struct yx_container_info *c,
    uint32_t f)
{
	struct yx_shm_slot *s = &p->table->slots[f];

	yx_table_slot_clear(p->table, s);
	s->generation = ++p->table->hdr->generation;
	(void)yx_strlcpy(s->thread_id, c->thread_id, sizeof(s->thread_id));
	(void)yx_strlcpy(s->sandbox_id, c->sandbox_id, sizeof(s->sandbox_id));
	(void)yx_strlcpy(s->container_id, c->id, sizeof(s->container_id));
	(void)yx_strlcpy(s->container_name, c->name, sizeof(s->container_name));
	(void)yx_strlcpy(s->skills_fp, c->skills_fp, sizeof(s->skills_fp));
	/* TODO: the driver does not report published ports; adopted
	 * sandboxes record none. */
	s->created_at = s->last_used_at = yx_now_ms();
	yx_table_set_state(p->table, s, YX_SLOT_WARM);
	YX_PROV_METRIC(p, reconcile_adopted);
}

/*
 * Locked: mark an unwanted container with a DESTROYING placeholder slot so
 * that acquires of its thread wait instead of adopting it meanwhile. Returns
 * the slot index, or -1 when no slot is free (removed unprotected then).
 */
static int
maint_placeholder(struct yx_provider *p, const struct yx_container_info *c,
    int f, const struct yx_shm_pid *me, uint64_t *gen)
{
	struct yx_shm_slot *s;

	if (f < 0)
		return -1;
	s = &p->table->slots[f];
	yx_table_slot_clear(p->table, s);
	s->generation = ++p->table->hdr->generation;
	if (yx_thread_id_valid(c->thread_id, strlen(c->thread_id)) &&
	    yx_table_find_thread(p->table, c->thread_id) < 0)
		(void)yx_strlcpy(s->thread_id, c->thread_id,
		    sizeof(s->thread_id));
	(void)yx_strlcpy(s->container_id, c->id, sizeof(s->container_id));
	(void)yx_strlcpy(s->container_name, c->name, sizeof(s->container_name));
	yx_prov_claim(p, s, me, YX_SLOT_DESTROYING);
	*gen = s->generation;
	return f;
}

/*
 * Adopt or (when allowed) remove one listed container. A container that a
 * live acquire is creating right now is never taken for an orphan: its
 * CREATING slot carries the container name from the claim on, so
 * maint_known() matches it by name before the id is known.
 */
static int
maint_sync_one(struct yx_provider *p, const struct yx_container_info *c,
    bool remove, const struct yx_shm_pid *me, struct yx_errctx *err)
{
	char		 name[YX_SHM_CONTAINER_NAME_MAX * 4];
	uint64_t	 gen = 0;
	int		 f, ph = -1, rc;
	bool		 act = false, adopted = false;

	if ((rc = yx_table_lock(p->table, err)) != YX_OK)
		return rc;
	if (!maint_known(p->table, c)) {
		f = maint_free_slot(p->table);
		if (maint_adoptable(p, c, f)) {
			maint_adopt(p, c, (uint32_t)f);
			adopted = true;
		} else if (remove) {
			ph = maint_placeholder(p, c, f, me, &gen);
			act = true;
		}
	}
	yx_table_unlock(p->table);
	log_escape(name, sizeof(name), c->name, strlen(c->name));
	/* routine (every start, every CLI command after a stop: the count is
	 * in /metrics' reconcile_adopted); a debug line, not the CLI's stderr */
	if (adopted)
		log_debug("reconcile: adopted %s as warm", name);
	if (!act)
		return YX_OK;
	log_info("reconcile: removing %s (%s)", name, c->running ? "not adoptable" : "stopped");
	if (ph >= 0)
		rc = yx_prov_destroy_claimed(p, (uint32_t)ph, gen, me, c->id,
		    err);
	else
		rc = yx_prov_remove(p, c->id, err);
	if (rc == YX_OK)
		YX_PROV_METRIC(p, reconcile_removed);
	return rc;
}

/* qsort/bsearch over arrays of string pointers. */
static int
maint_strp_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Is key one of the n sorted strings of v? */
static bool
maint_in(const char *const *v, size_t n, const char *key)
{
	return key[0] != '\0' && n > 0 &&
	    bsearch(&key, v, n, sizeof(*v), maint_strp_cmp) != NULL;
}

/*
 * The listed containers' ids and names, each sorted (heap, in one block
 * the caller frees: ids first, then names; both point into cs). NULL when
 * out of memory.
 */
static const char **
maint_listed_index(const struct yx_container_info *cs, size_t n)
{
	const char	**v;
	size_t		  i;

	if ((v = calloc(2 * n + 1, sizeof(*v))) == NULL)
		return NULL;
	for (i = 0; i < n; i++) {
		v[i] = cs[i].id;
		v[n + i] = cs[i].name;
	}
	qsort(v, n, sizeof(*v), maint_strp_cmp);
	qsort(v + n, n, sizeof(*v), maint_strp_cmp);
	return v;
}

static bool
maint_listed(const struct yx_shm_slot *s, const char *const *idx, size_t n)
{
	return maint_in(idx, n, s->container_id) ||
	    (s->container_id[0] == '\0' && maint_in(idx + n, n, s->container_name));
}

/* Clear idle slots published before t0 whose container is not listed. */
static int
maint_clear_vanished(struct yx_provider *p,
    const struct yx_container_info *cs, size_t n, int64_t t0,
    struct yx_errctx *err)
{
	struct yx_shm_slot	 *s;
	const char		**idx;
	uint32_t		  i;
	int			  rc;

	/* sorted before the lock: no allocation under it */
	if ((idx = maint_listed_index(cs, n)) == NULL)
		return yx_fail(err, YX_E_NOMEM, NULL);
	if ((rc = yx_table_lock(p->table, err)) != YX_OK) {
		free(idx);
		return rc;
	}
	for (i = 0; i < p->table->hdr->capacity; i++) {
		s = &p->table->slots[i];
		if ((s->state != YX_SLOT_ACTIVE && s->state != YX_SLOT_WARM &&
			s->state != YX_SLOT_POOLED) ||
		    s->created_at >= t0 || maint_listed(s, idx, n))
			continue;
		if (s->nholds > 0)
			(void)yx_table_slot_drop_dead(s);
		if (s->nholds == 0)
			yx_table_slot_clear(p->table, s);
	}
	yx_table_unlock(p->table);
	free(idx);
	return YX_OK;
}

/*
 * The slots' container ids and names as one locked copy, each sorted
 * (known->v: ids, then names; known->n of each), for lookups without the
 * lock. YX_OK, or an error (nothing to free then).
 */
struct maint_known_set {
	char		(*ids)[YX_SHM_CONTAINER_ID_MAX];
	char		(*names)[YX_SHM_CONTAINER_NAME_MAX];
	const char	**v;
	size_t		  n;
};

static void
maint_known_fini(struct maint_known_set *k)
{
	free(k->ids);
	free(k->names);
	free(k->v);
	memset(k, 0, sizeof(*k));
}

static int
maint_known_init(struct yx_provider *p, struct maint_known_set *k,
    struct yx_errctx *err)
{
	const struct yx_shm_slot	*s;
	uint32_t			 cap = p->table->hdr->capacity, i;
	size_t				 j;
	int				 rc;

	memset(k, 0, sizeof(*k));
	if ((k->ids = calloc(cap + 1, sizeof(*k->ids))) == NULL ||
	    (k->names = calloc(cap + 1, sizeof(*k->names))) == NULL ||
	    (k->v = calloc(2 * (size_t)cap + 1, sizeof(*k->v))) == NULL) {
		maint_known_fini(k);
		return yx_fail(err, YX_E_NOMEM, NULL);
	}
	if ((rc = yx_table_lock(p->table, err)) != YX_OK) {
		maint_known_fini(k);
		return rc;
	}
	for (i = 0; i < cap; i++) {
		s = &p->table->slots[i];
		if (s->state == YX_SLOT_FREE)
			continue;
		memcpy(k->ids[k->n], s->container_id, sizeof(k->ids[0]));
		memcpy(k->names[k->n], s->container_name, sizeof(k->names[0]));
		k->n++;
	}
	yx_table_unlock(p->table);
	for (j = 0; j < k->n; j++) {
		k->ids[j][YX_SHM_CONTAINER_ID_MAX - 1] = '\0';
		k->names[j][YX_SHM_CONTAINER_NAME_MAX - 1] = '\0';
		k->v[j] = k->ids[j];
		k->v[k->n + j] = k->names[j];
	}
	qsort(k->v, k->n, sizeof(*k->v), maint_strp_cmp);
	qsort(k->v + k->n, k->n, sizeof(*k->v), maint_strp_cmp);
	return YX_OK;
}

/* Did a slot name c (by id or by name) when the copy was taken? */
static bool
maint_known_has(const struct maint_known_set *k,
    const struct yx_container_info *c)
{
	return maint_in(k->v, k->n, c->id) || maint_in(k->v + k->n, k->n, c->name);
}

/* reconcile (remove = true) and discover_all (false). */
static int
maint_sync(struct yx_provider *p, bool remove, struct yx_errctx *err)
{
	struct yx_container_info	*cs = NULL;
	struct maint_known_set		 known;
	struct yx_shm_pid		 me;
	size_t				 n = 0, i;
	int64_t				 t0 = yx_now_ms();
	int				 rc, first = YX_OK;

	yx_proc_self(&me);
	if ((rc = p->driver->ops->list(p->driver, &cs, &n, err)) != YX_OK) {
		YX_PROV_METRIC(p, engine_errors);
		return rc;
	}
	/* the copy after the list: a container whose slot went meanwhile is
	 * not in it and gets maint_sync_one's locked check; a slot made
	 * meanwhile is in it (its container, unlisted, waits for next pass) */
	if ((rc = maint_known_init(p, &known, err)) != YX_OK) {
		free(cs);
		return rc;
	}
	for (i = 0; i < n; i++)
		if (!maint_known_has(&known, &cs[i]) &&
		    (rc = maint_sync_one(p, &cs[i], remove, &me, err)) !=
			YX_OK &&
		    first == YX_OK)
			first = rc;
	maint_known_fini(&known);
	if (remove && (rc = maint_clear_vanished(p, cs, n, t0, err)) != YX_OK && first == YX_OK)
		first = rc;
	free(cs);
	return first;
}

int
yx_provider_reconcile(struct yx_provider *p, struct yx_errctx *err)
{
	return maint_sync(p, true, err);
}

int
yx_provider_discover_all(struct yx_provider *p, struct yx_errctx *err)
{
	return maint_sync(p, false, err);
}

int
yx_provider_drop_dead_holds(struct yx_provider *p, unsigned *ndropped,
    struct yx_errctx *err)
{
	unsigned	n = 0;
	int		rc;

	if ((rc = yx_table_lock(p->table, err)) == YX_OK) {
		n = yx_table_repair(p->table);
		yx_table_unlock(p->table);
	}
	if (ndropped != NULL)
		*ndropped = n;
	return rc;
}

int
yx_provider_list(struct yx_provider *p, struct yx_provider_snapshot *snap,
    struct yx_errctx *err)
{
	struct yx_table	*t = p->table;
	uint32_t	 i;
	int		 rc;

	memset(snap, 0, sizeof(*snap));
	snap->capacity = t->hdr->capacity;
	/* Allocate before locking: no allocator calls under the lock. */
	if ((snap->slots = calloc(snap->capacity,
		 sizeof(*snap->slots))) == NULL)
		return yx_fail(err, YX_E_NOMEM, NULL);
	if ((rc = yx_table_lock(t, err)) != YX_OK) {
		yx_provider_snapshot_fini(snap);
		return rc;
	}
	for (i = 0; i < t->hdr->capacity; i++)
		if (t->slots[i].state != YX_SLOT_FREE)
			snap->slots[snap->nslots++] = t->slots[i];
	memcpy(snap->nstate, t->hdr->nstate, sizeof(snap->nstate));
	snap->metrics = t->hdr->metrics;
	yx_table_unlock(t);
	return YX_OK;
}

void
yx_provider_snapshot_fini(struct yx_provider_snapshot *snap)
{
	if (snap == NULL)
		return;
	free(snap->slots);
	memset(snap, 0, sizeof(*snap));
}
