/* SPDX-License-Identifier: MIT */
/*
 * provider_int.h - private to src/provider (and its tests): helpers shared
 * by provider.c (acquire/release/destroy) and provider_maint.c (reaper,
 * reconcile, list), and the test hook for sandbox_id derivation.
 */
#ifndef YUXI_PROVIDER_INT_H
#define YUXI_PROVIDER_INT_H

#include "yuxi/buf.h"
#include "yuxi/provider.h"

/*
 * Test hook: the digest behind sandbox ids. A hook writes 64 lowercase hex
 * characters plus NUL for a thread id. Tests install one that makes the
 * 8-character prefixes of two threads equal, to prove collisions are
 * detected. NULL restores SHA-256. Process-wide; not for production code.
 */
typedef void	(*yx_sid_hash_fn)(const char *thread_id, char hex[65]);
void		 yx_provider_set_hash_hook(yx_sid_hash_fn fn);

/* Metrics live in the shared header; bump them without the lock. */
#define YX_PROV_METRIC(p, field) \
	__atomic_fetch_add(&(p)->table->hdr->metrics.field, 1, __ATOMIC_RELAXED)

/* Slots in use allowed: min(cfg->max_replicas, table capacity). */
uint32_t	 yx_prov_limit(const struct yx_provider *p);
/* Stamp a claim (owner = me, claimed_at = now) and set the state. Locked. */
void		 yx_prov_claim(struct yx_provider *p, struct yx_shm_slot *s,
    const struct yx_shm_pid *me, enum yx_slot_state st);
/* True when slot s is still in `st`, of generation gen, claimed by me. */
bool		 yx_prov_owned(const struct yx_shm_slot *s, uint64_t gen,
    const struct yx_shm_pid *me, enum yx_slot_state st);
/*
 * Lock for a cleanup that must not be skipped (releasing our own claim):
 * retries a timed-out lock a few times. YX_OK or the last error.
 */
int		 yx_prov_lock_hard(struct yx_provider *p);
/* Driver remove of ref (id or name), counting engine errors. Unlocked. */
int		 yx_prov_remove(struct yx_provider *p, const char *ref,
    struct yx_errctx *err);
/*
 * Slot idx is DESTROYING, claimed by me at generation gen, lock not held:
 * remove container ref, then free the slot; if the engine fails, put the
 * slot back as warm (so a later pass retries). YX_OK or the driver error.
 */
int		 yx_prov_destroy_claimed(struct yx_provider *p, uint32_t idx,
    uint64_t gen, const struct yx_shm_pid *me, const char *ref,
    struct yx_errctx *err);
/* The container reference of a slot: its id, else its name. */
const char	*yx_prov_ref(const struct yx_shm_slot *s);
/* Copy with truncation to a fixed-size field. */

/* ---- provider_evict.c: which sandbox makes room (docs/design.md §2) ---- */

#define YX_EVICT_SLOTS_MAX	4096	/* fair choice up to this many slots */

/* A request for a new sandbox, as the eviction choice sees it. */
struct yx_evict_req {
	const char	*user;		/* the requester; NULL or "" = unknown */
	uint32_t	 limit;		/* slots allowed in use (yx_prov_limit) */
	uint32_t	 user_max;	/* running sandboxes per user; 0 = none */
	bool		 fair;		/* false: global LRU (control "fairevict") */
};

/* The choice and the figures behind it (messages, tests). */
struct yx_evict_choice {
	int		 victim;	/* slot to evict, -1 = none */
	uint32_t	 mine;		/* the requester's running sandboxes */
	uint32_t	 users;		/* owners of running ones + requester (full table) */
	uint32_t	 share;		/* fair share (full table, fair mode); else 0 */
};

/*
 * Pure: may a new sandbox be had for rq over slots[0..n), and what must go
 * first? Reads nothing but its arguments (holds of dead processes count as
 * holds: the caller drops them and asks again). YX_OK with victim -1 (room
 * left) or the slot to evict; YX_E_SANDBOX_LIMIT when the requester runs
 * user_max sandboxes and none of them is idle; YX_E_CAPACITY when the
 * table is full and no idle sandbox may be taken.
 */
int		 yx_prov_evict_choose(const struct yx_shm_slot *slots,
    uint32_t n, const struct yx_evict_req *rq, struct yx_evict_choice *out);

/* ---- provider_box.c: pre-started boxes (docs/design.md §2 "Pool") ---- */

/* <saves>/<sub> opened O_RDONLY, made (0711, ours) when absent; -1. */
int		 yx_prov_pool_dir(const struct yx_provider *p, const char *sub);

/* May req take a pool box? (a key, a pool, and the thread's user-data and
 * skills where the privileged helper finds them by name) */
bool		 yx_prov_pool_fits(const struct yx_provider *p,
    const struct yx_acquire_req *req);
/* Remove box's mounts and directories (its container is gone or going). */
int		 yx_prov_box_clear(struct yx_provider *p, const char *box,
    struct yx_errctx *err);

/* Mount list of a container spec; strings owned by the list. */
struct yx_prov_mounts {
	struct yx_mount	*m;
	size_t		 n;
};

/*
 * The driver's create of container `name` for req (provider_mounts.c): its
 * mounts (host paths translated), sandbox id sid, fingerprint fp, host
 * port port (0: none), req's settings or the service's; grouped: in an
 * engine shim group (docs/configuration.md "Shim groups"; a transaction's
 * short-lived container is not). The driver's answer (YX_OK with *info
 * filled), or YX_E_NOMEM for the mounts.
 */
int		 yx_prov_create(struct yx_provider *p,
    const struct yx_acquire_req *req, const char *name, const char *sid,
    const char *fp, int port, bool grouped, struct yx_container_info *info,
    struct yx_errctx *err);

#endif /* YUXI_PROVIDER_INT_H */
