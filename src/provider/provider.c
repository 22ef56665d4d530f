/* SPDX-License-Identifier: MIT */
/*
 * provider.c - acquire, unhold, release and destroy sandboxes (docs/design.md
 * §3) over the shared table and a container driver; see
 * include/yuxi/provider.h for the contract.
 *
 * Every decision is taken under the table lock by prov_decide(), which
 * returns one step: DONE (a hold was taken), WAIT (someone else's claim is
 * in progress), EVICT (we claimed an idle victim DESTROYING), or BUILD (we
 * claimed the thread's slot CREATING). The driver is then called with the
 * lock released, and the result is published under the lock again, after
 * checking that the claim is still ours (same state, generation, pid and
 * start time).
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "yuxi/hash.h"
#include "yuxi/log.h"
#include "yuxi/priv.h"
#include "yuxi/threads.h"
#include "provider/provider_int.h"
#include "common/control_int.h"

enum yx_prov_action {
	YX_STEP_DONE,
	YX_STEP_WAIT,
	YX_STEP_EVICT,
	YX_STEP_BUILD,
	YX_STEP_ASSIGN,		/* a pool box claimed CREATING for the thread */
};

/* The outcome of one locked decision; owned claims are named by slot+gen. */
struct yx_prov_step {
	enum yx_prov_action	 action;
	uint32_t		 slot;
	uint64_t		 gen;
	char			 ref[YX_SHM_CONTAINER_NAME_MAX]; /* to remove first */
	char			 sid[YX_SHM_SANDBOX_ID_MAX];
	char			 name[YX_SHM_CONTAINER_NAME_MAX];
	char			 box[YX_SHM_SANDBOX_ID_MAX]; /* pool box to clear with ref */
	char			 cid[YX_SHM_CONTAINER_ID_MAX]; /* ASSIGN: the box's */
	unsigned		 uid;	/* ASSIGN: the box's own uid, 0 = none */
};

static yx_sid_hash_fn yx_sid_hook;

void
yx_provider_set_hash_hook(yx_sid_hash_fn fn)
{
	yx_sid_hook = fn;
}

static void
prov_sid_sha256(const char *thread_id, char hex[65])
{
	(void)yx_sha256_hex(thread_id, strlen(thread_id), hex);
}

int
yx_sandbox_id_derive(const char *thread_id, size_t len, char *out)
{
	char hex[65];

	if (thread_id == NULL || len < 1 || len > 64)
		return YX_E_BAD_REQUEST;
	if (yx_sid_hook != NULL)
		yx_sid_hook(thread_id, hex);
	else
		prov_sid_sha256(thread_id, hex);
	hex[64] = '\0';
	if (strlen(hex) != 64)
		return YX_E_INTERNAL;
	memcpy(out, hex, len);
	out[len] = '\0';
	return YX_OK;
}

const char *
yx_slot_state_name(int state)
{
	static const char *names[] = { "free", "creating", "active", "warm",
		"destroying", "pooled" };

	if (state < 0 || state >= YX_SLOT_NSTATES)
		return "unknown";
	return names[state];
}

const char *
yx_acquire_outcome_name(int outcome)
{
	static const char *names[] = { "hit", "warm", "discovered",
		"created", "pooled" };

	if (outcome < 0 || outcome > YX_ACQUIRE_POOLED)
		return "unknown";
	return names[outcome];
}

uint32_t
yx_prov_limit(const struct yx_provider *p)
{
	uint32_t cap = p->table->hdr->capacity;

	if (p->cfg->max_replicas > 0 && (uint32_t)p->cfg->max_replicas < cap)
		return (uint32_t)p->cfg->max_replicas;
	return cap;
}

void
yx_prov_claim(struct yx_provider *p, struct yx_shm_slot *s,
    const struct yx_shm_pid *me, enum yx_slot_state st)
{
	/* Owner first: a claim torn by our death must look ownerless. */
	s->owner = *me;
	s->claimed_at = yx_now_ms();
	yx_table_set_state(p->table, s, st);
}

bool
yx_prov_owned(const struct yx_shm_slot *s, uint64_t gen,
    const struct yx_shm_pid *me, enum yx_slot_state st)
{
	return s->state == st && s->generation == gen &&
	    s->owner.pid == me->pid && s->owner.start == me->start;
}

const char *
yx_prov_ref(const struct yx_shm_slot *s)
{
	return s->container_id[0] != '\0' ? s->container_id :
					    s->container_name;
}

int
yx_prov_remove(struct yx_provider *p, const char *ref, struct yx_errctx *err)
{
	int rc;

	rc = p->driver->ops->remove(p->driver, ref, err);
	if (rc == YX_E_NOT_FOUND)
		rc = YX_OK;
	if (rc != YX_OK)
		YX_PROV_METRIC(p, engine_errors);
	return rc;
}

int
yx_prov_lock_hard(struct yx_provider *p)
{
	int i, rc = YX_E_BUSY;

	for (i = 0; i < 5 && rc == YX_E_BUSY; i++)
		rc = yx_table_lock(p->table, NULL);
	return rc;
}

#ifdef YX_CONTROL_UNSAFE
/* Control (YX_CONTROL_OFF=poolsingle): slot idx, a used pool box claimed
 * DESTROYING by me, goes back to the pool with its container as it is. */
static int
prov_pool_return(struct yx_provider *p, uint32_t idx, uint64_t gen,
    const struct yx_shm_pid *me, const char *ref)
{
	struct yx_container_info	 info;
	struct yx_shm_slot		*s = &p->table->slots[idx];
	int				 rc;

	memset(&info, 0, sizeof(info));
	if ((rc = p->driver->ops->inspect(p->driver, ref, &info, NULL)) !=
		YX_OK ||
	    (rc = yx_priv_pool_unbind(s->sandbox_id, NULL)) != YX_OK ||
	    (rc = yx_prov_lock_hard(p)) != YX_OK)
		return rc;
	rc = YX_E_NOT_FOUND;
	if (yx_prov_owned(s, gen, me, YX_SLOT_DESTROYING)) {
		s->thread_id[0] = s->owner_user[0] = s->agent_id[0] = '\0';
		(void)yx_strlcpy(s->skills_fp, info.skills_fp,
		    sizeof(s->skills_fp));
		s->nholds = 0;
		memset(&s->owner, 0, sizeof(s->owner));
		yx_table_set_state(p->table, s, YX_SLOT_POOLED);
		log_warnx("control: pool box %s back in the pool", s->sandbox_id);
		rc = YX_OK;
	}
	yx_table_unlock(p->table);
	return rc;
}
#endif

int
yx_prov_destroy_claimed(struct yx_provider *p, uint32_t idx, uint64_t gen,
    const struct yx_shm_pid *me, const char *ref, struct yx_errctx *err)
{
	struct yx_shm_slot	*s = &p->table->slots[idx];
	char			 box[YX_SHM_SANDBOX_ID_MAX];
	int			 rc, lrc;

	/* ours while claimed: a pool box's mounts go after its container */
	(void)yx_strlcpy(box, s->sandbox_id, sizeof(box));
#ifdef YX_CONTROL_UNSAFE
	/* control: a used box goes back to the pool (single use off) */
	if (yx_provider_is_box(box) && s->thread_id[0] != '\0' &&
	    yx_control_off("poolsingle") &&
	    prov_pool_return(p, idx, gen, me, ref) == YX_OK)
		return YX_OK;
#endif
	rc = yx_prov_remove(p, ref, err);
	if (rc == YX_OK && yx_provider_is_box(box))
		rc = yx_prov_box_clear(p, box, err);
	if ((lrc = yx_prov_lock_hard(p)) != YX_OK)
		return rc != YX_OK ? rc : lrc;	/* repair/reaper finish it */
	if (yx_prov_owned(s, gen, me, YX_SLOT_DESTROYING)) {
		if (rc == YX_OK)
			yx_table_slot_clear(p->table, s);
		else {
			memset(&s->owner, 0, sizeof(s->owner));
			yx_table_set_state(p->table, s, YX_SLOT_WARM);
		}
	}
	yx_table_unlock(p->table);
	return rc;
}

int
yx_provider_init(struct yx_provider *p, const struct yx_config *cfg,
    struct yx_table *table, struct yx_driver *driver)
{
	if (p == NULL || cfg == NULL || table == NULL || driver == NULL)
		return YX_E_BAD_REQUEST;
	memset(p, 0, sizeof(*p));
	p->cfg = cfg;
	p->table = table;
	p->driver = driver;
	p->wait_ms = 30000;
	p->poll_ms = 20;
	p->verify = true;
	if (getcwd(p->local_project_dir, sizeof(p->local_project_dir)) == NULL)
		p->local_project_dir[0] = '\0';
	return YX_OK;
}

void
yx_provider_fini(struct yx_provider *p)
{
	if (p != NULL)
		memset(p, 0, sizeof(*p));
}

static bool
prov_skill_name_valid(const char *n)
{
	size_t i, len;

	if (n == NULL || (len = strlen(n)) == 0 || len > 128 ||
	    strcmp(n, ".") == 0 || strcmp(n, "..") == 0)
		return false;
	for (i = 0; i < len; i++)
		if (!((n[i] >= 'a' && n[i] <= 'z') ||
			(n[i] >= 'A' && n[i] <= 'Z') ||
			(n[i] >= '0' && n[i] <= '9') || n[i] == '_' ||
			n[i] == '-' || n[i] == '.'))
			return false;
	return true;
}

/* YX_OK, or the error for the first bad field of req. */
static int
prov_req_check(const struct yx_provider *p,
    const struct yx_acquire_req *req, struct yx_errctx *err)
{
	size_t i;

	if (req->thread_id == NULL ||
	    !yx_thread_id_valid(req->thread_id, strlen(req->thread_id)))
		return yx_fail(err, YX_E_INVALID_THREAD_ID, NULL);
	if (req->user_data_host == NULL || req->user_data_host[0] != '/')
		return yx_fail(err, YX_E_BAD_REQUEST,
		    "user-data host path must be absolute");
	if (req->skills_fp != NULL &&
	    strlen(req->skills_fp) >= YX_SHM_SKILLS_FP_MAX)
		return yx_fail(err, YX_E_BAD_REQUEST,
		    "skills fingerprint too long");
	for (i = 0; i < req->nskills; i++)
		if (!prov_skill_name_valid(req->skills[i].name) ||
		    req->skills[i].host_path == NULL ||
		    req->skills[i].host_path[0] != '/')
			return yx_fail(err, YX_E_BAD_REQUEST,
			    "invalid skill mount");
	if (strlen(p->cfg->container_prefix) + 64 >= YX_SHM_CONTAINER_NAME_MAX)
		return yx_fail(err, YX_E_BAD_REQUEST,
		    "container prefix too long");
	return YX_OK;
}

static const char *
prov_fp(const struct yx_acquire_req *req)
{
	return req->skills_fp != NULL ? req->skills_fp : "";
}

/*
 * Under the lock: the shortest sandbox id of thread_id, at least minlen
 * long, that no other thread's slot uses. YX_OK with sid and name filled,
 * or YX_E_INTERNAL when even 64 digits collide.
 */
static int
prov_pick_sid(struct yx_provider *p, const char *thread_id, size_t minlen,
    char *sid, char *name)
{
	struct yx_table	*t = p->table;
	size_t		 len;
	int		 i;

	for (len = minlen; len <= 64; len += 4) {
		if (yx_sandbox_id_derive(thread_id, len, sid) != YX_OK)
			return YX_E_INTERNAL;
		i = yx_table_find_sandbox(t, sid);
		if (i < 0 || strcmp(t->slots[i].thread_id, thread_id) == 0) {
			snprintf(name, YX_SHM_CONTAINER_NAME_MAX, "%s%s",
			    p->cfg->container_prefix, sid);
			return YX_OK;
		}
	}
	return YX_E_INTERNAL;
}

/* Under the lock: the lowest free published port, 0 when not publishing.
 * YX_OK or YX_E_CAPACITY. */
static int
prov_alloc_port(struct yx_provider *p, int32_t *port)
{
	struct yx_table	*t = p->table;
	uint32_t	 i;
	int32_t		 cand;

	*port = 0;
	if (strcmp(p->cfg->network, "none") == 0 || p->cfg->base_port <= 0)
		return YX_OK;
	for (cand = p->cfg->base_port; cand <= 65535; cand++) {
		for (i = 0; i < t->hdr->capacity; i++)
			if (t->slots[i].state != YX_SLOT_FREE &&
			    t->slots[i].port == cand)
				break;
		if (i == t->hdr->capacity) {
			*port = cand;
			return YX_OK;
		}
	}
	return YX_E_CAPACITY;
}

/*
 * Locked, slot s just claimed CREATING by us for its thread: when it holds
 * a pool box, that box (container and mounts) is removed first (st->ref,
 * st->box) and the slot takes the thread's own sandbox id and name, so the
 * build makes an ordinary sandbox. YX_OK or YX_E_INTERNAL (slot cleared).
 */
static int
prov_unbox(struct yx_provider *p, struct yx_shm_slot *s,
    struct yx_prov_step *st)
{
	char sid[YX_SHM_SANDBOX_ID_MAX], name[YX_SHM_CONTAINER_NAME_MAX];

	if (!yx_provider_is_box(s->sandbox_id))
		return YX_OK;
	(void)yx_strlcpy(st->ref, yx_prov_ref(s), sizeof(st->ref));
	(void)yx_strlcpy(st->box, s->sandbox_id, sizeof(st->box));
	if (prov_pick_sid(p, s->thread_id, YX_SANDBOX_ID_LEN, sid, name) !=
	    YX_OK) {
		yx_table_slot_clear(p->table, s);
		return YX_E_INTERNAL;
	}
	(void)yx_strlcpy(s->sandbox_id, sid, sizeof(s->sandbox_id));
	(void)yx_strlcpy(s->container_name, name, sizeof(s->container_name));
	s->uid = 0;
	return YX_OK;
}

/* Locked: drop holds of dead processes from sandboxes; the count dropped. */
static unsigned
prov_drop_dead_running(struct yx_provider *p)
{
	struct yx_shm_slot	*s;
	uint32_t		 i;
	unsigned		 n = 0;

	for (i = 0; i < p->table->hdr->capacity; i++) {
		s = &p->table->slots[i];
		if ((s->state == YX_SLOT_ACTIVE || s->state == YX_SLOT_WARM) &&
		    s->nholds > 0)
			n += yx_table_slot_drop_dead(s);
	}
	return n;
}

/*
 * Locked: room for a new sandbox of req (provider_evict.c decides). A
 * refusal is checked again after dropping holds of dead processes, which
 * the pure choice counts as live. YX_OK with ch->victim (-1: room) or
 * YX_E_CAPACITY / YX_E_SANDBOX_LIMIT.
 */
static int
prov_choose(struct yx_provider *p, const struct yx_acquire_req *req,
    struct yx_evict_choice *ch)
{
	struct yx_table		*t = p->table;
	struct yx_evict_req	 rq;
	int			 rc;

	memset(&rq, 0, sizeof(rq));
	rq.user = req->owner_user;
	rq.limit = yx_prov_limit(p);
	if (p->cfg->max_sandboxes_per_user > 0)
		rq.user_max = (uint32_t)p->cfg->max_sandboxes_per_user;
	rq.fair = true;
	if (YX_CONTROL_OFF("fairevict"))	/* control: global LRU */
		rq.fair = false;
	rc = yx_prov_evict_choose(t->slots, t->hdr->capacity, &rq, ch);
	if (rc != YX_OK && prov_drop_dead_running(p) > 0)
		rc = yx_prov_evict_choose(t->slots, t->hdr->capacity, &rq, ch);
	return rc;
}

/* The refusal of prov_choose() in words for the caller. */
static int
prov_refuse(struct yx_provider *p, int rc, const struct yx_evict_choice *ch,
    struct yx_errctx *err)
{
	if (rc == YX_E_SANDBOX_LIMIT)
		return yx_fail(err, rc,
		    "all %u of your sandboxes are in use (at most %d running "
		    "per user)",
		    ch->mine, p->cfg->max_sandboxes_per_user);
	if (ch->share > 0 && ch->users > 1 && ch->mine >= ch->share)
		return yx_fail(err, rc,
		    "all %u sandboxes are in use; you run %u, your fair share",
		    yx_prov_limit(p), ch->mine);
	return yx_fail(err, rc, "all %u sandboxes are in use",
	    yx_prov_limit(p));
}

static void
prov_lease_fill(struct yx_lease *l, const struct yx_shm_slot *s,
    uint32_t idx, const struct yx_shm_pid *me)
{
	l->slot = idx;
	l->generation = s->generation;
	l->holder = *me;
	l->port = s->port;
	(void)yx_strlcpy(l->thread_id, s->thread_id, sizeof(l->thread_id));
	(void)yx_strlcpy(l->sandbox_id, s->sandbox_id, sizeof(l->sandbox_id));
	(void)yx_strlcpy(l->container_id, s->container_id,
	    sizeof(l->container_id));
	(void)yx_strlcpy(l->container_name, s->container_name,
	    sizeof(l->container_name));
}

static void
prov_step_own(struct yx_prov_step *st, enum yx_prov_action a,
    uint32_t idx, const struct yx_shm_slot *s)
{
	st->action = a;
	st->slot = idx;
	st->gen = s->generation;
	(void)yx_strlcpy(st->sid, s->sandbox_id, sizeof(st->sid));
	(void)yx_strlcpy(st->name, s->container_name, sizeof(st->name));
}

/* Locked: the thread has slot idx. Hold it, or claim it, or wait. */
static int
prov_decide_slot(struct yx_provider *p, const struct yx_acquire_req *req,
    const struct yx_shm_pid *me, uint32_t idx, struct yx_prov_step *st,
    struct yx_lease *lease)
{
	struct yx_shm_slot	*s = &p->table->slots[idx];
	int			 rc;

	if (s->state == YX_SLOT_CREATING || s->state == YX_SLOT_DESTROYING) {
		if (s->owner.pid != 0 && yx_proc_alive(&s->owner)) {
			st->action = YX_STEP_WAIT;
			return YX_OK;
		}
		/* Claimer died (or orphaned removal): take it over. */
		yx_prov_claim(p, s, me, YX_SLOT_CREATING);
		if ((rc = prov_unbox(p, s, st)) != YX_OK)
			return rc;
		s->container_id[0] = '\0';
		prov_step_own(st, YX_STEP_BUILD, idx, s);
		return YX_OK;
	}
	if (strcmp(s->skills_fp, prov_fp(req)) != 0) {
		/* Visible skills changed: recreate once nobody uses it. */
		if (s->nholds > 0)
			(void)yx_table_slot_drop_dead(s);
		if (s->nholds > 0) {
			st->action = YX_STEP_WAIT;
			return YX_OK;
		}
		(void)yx_strlcpy(st->ref, yx_prov_ref(s), sizeof(st->ref));
		yx_prov_claim(p, s, me, YX_SLOT_CREATING);
		if ((rc = prov_unbox(p, s, st)) != YX_OK)
			return rc;
		s->container_id[0] = '\0';
		(void)yx_strlcpy(s->skills_fp, prov_fp(req),
		    sizeof(s->skills_fp));
		prov_step_own(st, YX_STEP_BUILD, idx, s);
		return YX_OK;
	}
	if ((rc = yx_table_hold_add(s, me)) != YX_OK)
		return rc;
	/* adopted after a restart, the slot learns its owner on first use */
	if (s->owner_user[0] == '\0' && req->owner_user != NULL)
		(void)yx_strlcpy(s->owner_user, req->owner_user,
		    sizeof(s->owner_user));
	lease->outcome = s->state == YX_SLOT_WARM ? YX_ACQUIRE_WARM :
						    YX_ACQUIRE_HIT;
	if (s->state == YX_SLOT_WARM)
		yx_table_set_state(p->table, s, YX_SLOT_ACTIVE);
	s->last_used_at = yx_now_ms();
	s->idle_s = req->idle_timeout;	/* a PATCH since the last command */
	prov_lease_fill(lease, s, idx, me);
	st->action = YX_STEP_DONE;
	return YX_OK;
}

/*
 * Locked, the thread has no slot: take a pool box of req's key for it when
 * one is ready and the requester may have another sandbox (a full table
 * does not matter: the box holds its slot already). The slot keeps the
 * box's sandbox id and container and becomes the thread's, CREATING and
 * claimed by us; nothing else ever makes a slot POOLED again, so the box
 * serves this thread only. True with st set (ASSIGN), else false.
 */
static bool
prov_pool_take(struct yx_provider *p, const struct yx_acquire_req *req,
    const struct yx_shm_pid *me, int rc, const struct yx_evict_choice *ch,
    struct yx_prov_step *st)
{
	struct yx_table		*t = p->table;
	struct yx_shm_slot	*s;
	uint32_t		 i;

	if (rc != YX_OK && rc != YX_E_CAPACITY)
		return false;	/* the user's own limit */
	if (p->cfg->max_sandboxes_per_user > 0 && req->owner_user != NULL &&
	    req->owner_user[0] != '\0' &&
	    ch->mine >= (uint32_t)p->cfg->max_sandboxes_per_user)
		return false;
	/* a thread of its own uid takes only a box of its own uid: never the
	 * shared user's, which other threads' sandboxes run as */
	for (i = 0; i < t->hdr->capacity; i++)
		if (t->slots[i].state == YX_SLOT_POOLED &&
		    strcmp(t->slots[i].skills_fp, req->pool_key->fp) == 0 &&
		    (t->slots[i].uid != 0 || req->uid == 0 ||
			req->uid == p->cfg->uid))
			break;
	if (i == t->hdr->capacity)
		return false;
	s = &t->slots[i];
	(void)yx_strlcpy(s->thread_id, req->thread_id, sizeof(s->thread_id));
	(void)yx_strlcpy(s->owner_user, req->owner_user, sizeof(s->owner_user));
	(void)yx_strlcpy(s->agent_id, req->agent_id, sizeof(s->agent_id));
	(void)yx_strlcpy(s->skills_fp, prov_fp(req), sizeof(s->skills_fp));
	s->idle_s = req->idle_timeout;
	yx_prov_claim(p, s, me, YX_SLOT_CREATING);
	prov_step_own(st, YX_STEP_ASSIGN, i, s);
	(void)yx_strlcpy(st->cid, s->container_id, sizeof(st->cid));
	st->uid = s->uid;
	return true;
}

/* Locked: claim a free slot CREATING for the thread. */
static int
prov_decide_new(struct yx_provider *p, const struct yx_acquire_req *req,
    const struct yx_shm_pid *me, bool pool, struct yx_prov_step *st,
    struct yx_errctx *err)
{
	struct yx_table		*t = p->table;
	struct yx_shm_slot	*s;
	struct yx_evict_choice	 ch;
	char			 sid[YX_SHM_SANDBOX_ID_MAX];
	char			 name[YX_SHM_CONTAINER_NAME_MAX];
	int32_t			 port;
	uint32_t		 i;
	int			 rc;

	rc = prov_choose(p, req, &ch);
	if (pool && prov_pool_take(p, req, me, rc, &ch, st))
		return YX_OK;
	if (rc != YX_OK)
		return prov_refuse(p, rc, &ch, err);
	if (ch.victim >= 0) {
		s = &t->slots[ch.victim];
		(void)yx_strlcpy(st->ref, yx_prov_ref(s), sizeof(st->ref));
		yx_prov_claim(p, s, me, YX_SLOT_DESTROYING);
		prov_step_own(st, YX_STEP_EVICT, (uint32_t)ch.victim, s);
		return YX_OK;
	}
	for (i = 0; i < t->hdr->capacity; i++)
		if (t->slots[i].state == YX_SLOT_FREE)
			break;
	if (i == t->hdr->capacity)
		return yx_fail(err, YX_E_CAPACITY, "no free slot");
	if ((rc = prov_pick_sid(p, req->thread_id, YX_SANDBOX_ID_LEN, sid,
		 name)) != YX_OK)
		return yx_fail(err, rc, "no unique sandbox id");
	if ((rc = prov_alloc_port(p, &port)) != YX_OK)
		return yx_fail(err, rc, "no free port");
	s = &t->slots[i];
	yx_table_slot_clear(t, s);
	s->generation = ++t->hdr->generation;
	(void)yx_strlcpy(s->thread_id, req->thread_id, sizeof(s->thread_id));
	(void)yx_strlcpy(s->sandbox_id, sid, sizeof(s->sandbox_id));
	(void)yx_strlcpy(s->container_name, name, sizeof(s->container_name));
	(void)yx_strlcpy(s->owner_user, req->owner_user, sizeof(s->owner_user));
	(void)yx_strlcpy(s->agent_id, req->agent_id, sizeof(s->agent_id));
	(void)yx_strlcpy(s->skills_fp, prov_fp(req), sizeof(s->skills_fp));
	s->port = port;
	s->idle_s = req->idle_timeout;
	yx_prov_claim(p, s, me, YX_SLOT_CREATING);
	prov_step_own(st, YX_STEP_BUILD, i, s);
	return YX_OK;
}

/* One locked decision. YX_OK with *st set, or an error (lock released). */
static int
prov_decide(struct yx_provider *p, const struct yx_acquire_req *req,
    const struct yx_shm_pid *me, bool pool, struct yx_prov_step *st,
    struct yx_lease *lease, struct yx_errctx *err)
{
	int i, rc;

	memset(st, 0, sizeof(*st));
	if ((rc = yx_table_lock(p->table, err)) != YX_OK)
		return rc;
	if ((i = yx_table_find_thread(p->table, req->thread_id)) >= 0) {
		rc = prov_decide_slot(p, req, me, (uint32_t)i, st, lease);
		if (rc == YX_E_BUSY)
			yx_fail(err, rc, "too many operations in flight");
	} else
		rc = prov_decide_new(p, req, me, pool, st, err);
	yx_table_unlock(p->table);
	return rc;
}

/* Driver create of the container for step st. YX_OK with *info filled. */
static int
prov_create(struct yx_provider *p, const struct yx_acquire_req *req,
    const struct yx_prov_step *st, int port, struct yx_container_info *info,
    struct yx_errctx *err)
{
	int rc;

	if (req->before_create != NULL &&
	    (rc = req->before_create(req->before_create_arg, err)) != YX_OK)
		return rc;
	return yx_prov_create(p, req, st->name, st->sid, prov_fp(req), port, true,
	    info, err);
}

/*
 * Locked helper for a name collision: move our claim to a longer sandbox id
 * (longer than the colliding one). YX_OK with st->sid/name updated.
 */
static int
prov_lengthen(struct yx_provider *p, const struct yx_acquire_req *req,
    const struct yx_shm_pid *me, struct yx_prov_step *st,
    struct yx_errctx *err)
{
	struct yx_shm_slot	*s = &p->table->slots[st->slot];
	char			 sid[YX_SHM_SANDBOX_ID_MAX];
	char			 name[YX_SHM_CONTAINER_NAME_MAX];
	int			 rc;

	if ((rc = yx_table_lock(p->table, err)) != YX_OK)
		return rc;
	if (!yx_prov_owned(s, st->gen, me, YX_SLOT_CREATING))
		rc = yx_fail(err, YX_E_INTERNAL, "sandbox claim lost");
	else if ((rc = prov_pick_sid(p, req->thread_id,
		      strlen(st->sid) + 4, sid, name)) != YX_OK)
		rc = yx_fail(err, rc, "no unique sandbox id");
	else {
		(void)yx_strlcpy(s->sandbox_id, sid, sizeof(s->sandbox_id));
		(void)yx_strlcpy(s->container_name, name,
		    sizeof(s->container_name));
		(void)yx_strlcpy(st->sid, sid, sizeof(st->sid));
		(void)yx_strlcpy(st->name, name, sizeof(st->name));
	}
	yx_table_unlock(p->table);
	return rc;
}

/*
 * Unlocked, claim held: find or make the container. Discover first (a
 * running container of our name and thread), recreate on a skills
 * mismatch, start a stopped one, create when absent. YX_OK with *info and
 * *outcome set, or an error.
 */
static int
prov_materialise(struct yx_provider *p, const struct yx_acquire_req *req,
    const struct yx_shm_pid *me, struct yx_prov_step *st, int port,
    struct yx_container_info *info, enum yx_acquire_outcome *outcome,
    struct yx_errctx *err)
{
	const struct yx_driver_ops	*ops = p->driver->ops;
	int				 rc = YX_E_INTERNAL, tries;

	for (tries = 0; tries < 20; tries++) {
		memset(info, 0, sizeof(*info));
		rc = ops->inspect(p->driver, st->name, info, err);
		if (rc == YX_E_NOT_FOUND) {
			rc = prov_create(p, req, st, port, info, err);
			if (rc == YX_E_FILE_EXISTS)
				continue;	/* made behind us: inspect it */
			*outcome = YX_ACQUIRE_CREATED;
			return rc;
		}
		if (rc != YX_OK)
			return rc;
		if (strcmp(info->thread_id, req->thread_id) != 0) {
			/* Another thread's container has our short id. */
			if ((rc = prov_lengthen(p, req, me, st, err)) != YX_OK)
				return rc;
			continue;
		}
		if (strcmp(info->skills_fp, prov_fp(req)) != 0) {
			if ((rc = yx_prov_remove(p, info->id, err)) != YX_OK)
				return rc;
			continue;
		}
		if (!info->running &&
		    (rc = ops->start(p->driver, info->id, err)) != YX_OK)
			return rc;
		*outcome = YX_ACQUIRE_DISCOVERED;
		return YX_OK;
	}
	return yx_fail(err, rc, "container for the sandbox keeps changing");
}

/* Locked: publish the built container into our claimed slot and hold it. */
static int
prov_publish(struct yx_provider *p, const struct yx_shm_pid *me,
    const struct yx_prov_step *st, const struct yx_container_info *info,
    enum yx_acquire_outcome outcome, struct yx_lease *lease,
    struct yx_errctx *err)
{
	struct yx_shm_slot	*s = &p->table->slots[st->slot];
	int			 rc;

	if (!yx_prov_owned(s, st->gen, me, YX_SLOT_CREATING))
		return yx_fail(err, YX_E_INTERNAL, "sandbox claim lost");
	(void)yx_strlcpy(s->container_id, info->id, sizeof(s->container_id));
	memset(&s->owner, 0, sizeof(s->owner));
	s->created_at = s->last_used_at = yx_now_ms();
	yx_table_set_state(p->table, s, YX_SLOT_ACTIVE);
	if ((rc = yx_table_hold_add(s, me)) != YX_OK)
		return yx_fail(err, rc, "too many operations in flight");
	lease->outcome = outcome;
	prov_lease_fill(lease, s, st->slot, me);
	if (outcome == YX_ACQUIRE_CREATED)
		YX_PROV_METRIC(p, acquire_created);
	else if (outcome == YX_ACQUIRE_POOLED)
		YX_PROV_METRIC(p, acquire_pooled);
	else
		YX_PROV_METRIC(p, acquire_discovered);
	return YX_OK;
}

/*
 * Unlocked, we own slot st->slot CREATING with pool box st->sid in it (its
 * container st->cid): bind the thread's user-data and skills into the box
 * (the privileged helper), let the caller adopt it, publish it. On any
 * failure the box is removed, never handed back to the pool (some of the
 * thread's files may be in it): *pool is then false and the caller takes
 * the create path. YX_OK with *lease, or an error.
 */
static int
prov_assign(struct yx_provider *p, const struct yx_acquire_req *req,
    const struct yx_shm_pid *me, const struct yx_prov_step *st,
    struct yx_lease *lease, bool *pool, struct yx_errctx *err)
{
	struct yx_container_info	 info;
	struct yx_shm_slot		*s = &p->table->slots[st->slot];
	size_t				 i;
	int				 rc, lrc;
	bool				 gone = false;

	rc = req->before_bind != NULL ?
	    req->before_bind(req->before_create_arg, err) :
	    YX_OK;
	if (rc == YX_OK)
		rc = yx_priv_pool_bind(req->thread_id, st->sid, err);
	for (i = 0; rc == YX_OK && i < req->nskills; i++)
		rc = yx_priv_pool_skill(req->skills[i].name, st->sid, err);
	/* the box's uid now serves this thread: its agent directory, owned
	 * by that uid, is the thread's (yx_uid_serves) */
	if (rc == YX_OK && st->uid != 0 &&
	    (rc = yx_uid_tag_box(p->cfg, st->uid, st->sid, req->thread_id)) !=
		YX_OK)
		(void)yx_fail(err, rc, "pool box uid %u: claim not tagged",
		    st->uid);
	if (rc == YX_OK && req->pool_adopt != NULL)
		rc = req->pool_adopt(req->pool_arg, st->sid);
	if ((lrc = yx_prov_lock_hard(p)) != YX_OK)
		return rc != YX_OK ? rc : lrc;	/* repair voids the claim */
	if (rc == YX_OK) {
		memset(&info, 0, sizeof(info));
		(void)yx_strlcpy(info.id, st->cid, sizeof(info.id));
		rc = prov_publish(p, me, st, &info, YX_ACQUIRE_POOLED, lease,
		    err);
	} else if (yx_prov_owned(s, st->gen, me, YX_SLOT_CREATING)) {
		yx_prov_claim(p, s, me, YX_SLOT_DESTROYING);
		gone = true;
	}
	yx_table_unlock(p->table);
	if (rc == YX_OK)
		return YX_OK;
	log_warnx("pool box %s not assigned: %s", st->sid, err != NULL ? err->msg : "");
	if (gone)
		(void)yx_prov_destroy_claimed(p, st->slot, st->gen, me, st->cid,
		    NULL);
	*pool = false;
	return rc;
}

/*
 * Unlocked, we own slot st->slot in CREATING: remove st->ref if set, find or
 * make the container, publish it. On failure the slot is freed (a container
 * made meanwhile is left to reconcile). YX_OK with *lease, or an error.
 */
static int
prov_build(struct yx_provider *p, const struct yx_acquire_req *req,
    const struct yx_shm_pid *me, struct yx_prov_step *st,
    struct yx_lease *lease, struct yx_errctx *err)
{
	struct yx_container_info	 info;
	enum yx_acquire_outcome		 outcome = YX_ACQUIRE_CREATED;
	struct yx_shm_slot		*s = &p->table->slots[st->slot];
	int				 rc, lrc, port;

	port = s->port;		/* ours while we own the claim */
	rc = YX_OK;
	if (st->ref[0] != '\0')
		rc = yx_prov_remove(p, st->ref, err);
	if (rc == YX_OK && st->box[0] != '\0')
		rc = yx_prov_box_clear(p, st->box, err);
	if (rc == YX_OK)
		rc = prov_materialise(p, req, me, st, port, &info, &outcome,
		    err);
	if (rc != YX_OK && rc != YX_E_INTERNAL && rc != YX_E_NOMEM)
		YX_PROV_METRIC(p, engine_errors);
	if ((lrc = yx_prov_lock_hard(p)) != YX_OK)
		return rc != YX_OK ? rc : lrc;	/* claim is voided by repair */
	if (rc == YX_OK)
		rc = prov_publish(p, me, st, &info, outcome, lease, err);
	else if (yx_prov_owned(s, st->gen, me, YX_SLOT_CREATING))
		yx_table_slot_clear(p->table, s);
	yx_table_unlock(p->table);
	return rc;
}

/*
 * After a table hit: check the container is still there. YX_OK with
 * st->action DONE (fine), BUILD (vanished: we now own the slot CREATING
 * and our hold was dropped) or WAIT (someone else is on it; hold dropped);
 * or an engine error (hold dropped).
 */
static int
prov_verify(struct yx_provider *p, const struct yx_shm_pid *me,
    struct yx_prov_step *st, struct yx_lease *lease, struct yx_errctx *err)
{
	struct yx_container_info	 info;
	struct yx_shm_slot		*s = &p->table->slots[lease->slot];
	const char			*ref;
	bool				 mine;
	int				 rc;

	ref = lease->container_id[0] != '\0' ? lease->container_id :
					       lease->container_name;
	memset(&info, 0, sizeof(info));
	rc = p->driver->ops->inspect(p->driver, ref, &info, err);
	/* a pool box carries no thread label: its slot names it by id */
	mine = rc == YX_OK &&
	    (strcmp(info.thread_id, lease->thread_id) == 0 ||
		(yx_provider_is_box(lease->sandbox_id) &&
		    strcmp(info.id, lease->container_id) == 0));
	if (mine && !info.running)
		rc = p->driver->ops->start(p->driver, ref, err);
	if (rc == YX_OK && mine)
		return YX_OK;
	if (rc != YX_OK && rc != YX_E_NOT_FOUND) {
		YX_PROV_METRIC(p, engine_errors);
		(void)yx_provider_unhold(p, lease);
		return rc;
	}
	/* Vanished (or replaced by a foreign one): rebuild the slot. */
	if ((rc = yx_prov_lock_hard(p)) != YX_OK)
		return rc;		/* our hold is dropped by repair later */
	(void)yx_table_hold_del(s, me);
	st->action = YX_STEP_WAIT;
	if (s->state == YX_SLOT_ACTIVE && s->generation == lease->generation &&
	    strcmp(s->container_id, lease->container_id) == 0) {
		yx_prov_claim(p, s, me, YX_SLOT_CREATING);
		/* a vanished pool box: its mounts and uid go before the build */
		if (prov_unbox(p, s, st) == YX_OK) {
			s->container_id[0] = '\0';
			prov_step_own(st, YX_STEP_BUILD, lease->slot, s);
		}
	}
	yx_table_unlock(p->table);
	memset(lease, 0, sizeof(*lease));
	return YX_OK;
}

static void
prov_sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };

	while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
		;
}

/* Count a table hit in the metrics. */
static void
prov_count_hit(struct yx_provider *p, const struct yx_lease *lease)
{
	if (lease->outcome == YX_ACQUIRE_WARM)
		YX_PROV_METRIC(p, acquire_warm);
	else
		YX_PROV_METRIC(p, acquire_hit);
}

int
yx_provider_acquire(struct yx_provider *p, const struct yx_acquire_req *req,
    struct yx_lease *lease, struct yx_errctx *err)
{
	struct yx_prov_step	 st;
	struct yx_shm_pid	 me;
	int64_t			 deadline;
	bool			 pool;
	int			 rc;

	memset(lease, 0, sizeof(*lease));
	if ((rc = prov_req_check(p, req, err)) != YX_OK)
		return rc;
	pool = yx_prov_pool_fits(p, req);
	yx_proc_self(&me);
	deadline = yx_now_ms() + p->wait_ms;
	for (;;) {
		if ((rc = prov_decide(p, req, &me, pool, &st, lease, err)) !=
		    YX_OK)
			break;
		if (st.action == YX_STEP_DONE && p->verify &&
		    (rc = prov_verify(p, &me, &st, lease, err)) != YX_OK)
			break;
		if (st.action == YX_STEP_DONE) {
			prov_count_hit(p, lease);
			break;
		}
		if (st.action == YX_STEP_BUILD) {
			rc = prov_build(p, req, &me, &st, lease, err);
			break;
		}
		if (st.action == YX_STEP_ASSIGN) {
			rc = prov_assign(p, req, &me, &st, lease, &pool, err);
			if (rc != YX_OK && !pool)
				continue;	/* that box is gone: create path */
			break;
		}
		if (st.action == YX_STEP_EVICT) {
			rc = yx_prov_destroy_claimed(p, st.slot, st.gen, &me,
			    st.ref, err);
			if (rc != YX_OK)
				break;
			YX_PROV_METRIC(p, evictions);
			continue;
		}
		if (yx_now_ms() >= deadline) {
			rc = yx_fail(err, YX_E_BUSY,
			    "sandbox is being prepared by another request");
			break;
		}
		prov_sleep_ms(p->poll_ms);
	}
	return rc;
}

int
yx_provider_unhold(struct yx_provider *p, const struct yx_lease *lease)
{
	struct yx_shm_slot	*s;
	int			 rc;

	if (lease->slot >= p->table->hdr->capacity)
		return YX_E_NOT_FOUND;
	if ((rc = yx_table_lock(p->table, NULL)) != YX_OK)
		return rc;
	s = &p->table->slots[lease->slot];
	rc = YX_E_NOT_FOUND;
	if (s->state != YX_SLOT_FREE && s->generation == lease->generation &&
	    yx_table_hold_del(s, &lease->holder)) {
		s->last_used_at = yx_now_ms();
		rc = YX_OK;
	}
	yx_table_unlock(p->table);
	return rc;
}

int
yx_provider_release(struct yx_provider *p, const char *sandbox_id,
    struct yx_errctx *err)
{
	struct yx_shm_slot	*s;
	int			 i, rc;

	if (sandbox_id == NULL)
		return yx_fail(err, YX_E_BAD_REQUEST, NULL);
	if ((rc = yx_table_lock(p->table, err)) != YX_OK)
		return rc;
	if ((i = yx_table_find_sandbox(p->table, sandbox_id)) < 0)
		rc = yx_fail(err, YX_E_NOT_FOUND, "no such sandbox");
	else {
		s = &p->table->slots[i];
		if (s->state == YX_SLOT_ACTIVE)
			yx_table_set_state(p->table, s, YX_SLOT_WARM);
		else if (s->state != YX_SLOT_WARM)
			rc = yx_fail(err, YX_E_BUSY, "sandbox is %s",
			    yx_slot_state_name((int)s->state));
	}
	yx_table_unlock(p->table);
	return rc;
}
