/* SPDX-License-Identifier: MIT */
/*
 * yuxi/provider.h - the sandbox lifecycle over the shared table and a
 * container driver (docs/design.md §2, §3).
 *
 * thread_id -> sandbox_id -> container. sandbox_id is the first 8 hex
 * characters of SHA-256(thread_id), lengthened by 4 (12, 16, ... 64) while
 * it collides with another thread's slot or with a container of that name
 * whose thread label differs: two threads never share a container.
 *
 * yx_provider_acquire() returns a lease: the caller holds the sandbox (an
 * in-flight hold stamped with its pid and start time, which keeps the reaper
 * and evictions away), runs its command against lease->container_id, then
 * calls yx_provider_unhold(). Acquire tries, in order: the thread's slot
 * (active: touch; warm: make active), a running container of that name and
 * thread label (discover/adopt), a new container. The table lock is never
 * held across a driver call: a slot in state CREATING/DESTROYING, stamped
 * with its claimer, marks the work; others wait for it (bounded by wait_ms,
 * then YX_E_BUSY) or take it over when the claimer died.
 *
 * Capacity: at most min(cfg->max_replicas, table capacity) slots are in use;
 * when full, an idle sandbox (no holds; warm ones first, then the least
 * recently used) is evicted, chosen by fair share (provider_evict.c): a
 * requester at or over its share evicts its own first and never one of a
 * user within theirs; else YX_E_CAPACITY (the HTTP layer adds
 * Retry-After). A requester already running cfg->max_sandboxes_per_user
 * sandboxes evicts its own least recently used idle one, else gets
 * YX_E_SANDBOX_LIMIT.
 *
 * Host paths handed to the engine are translated with YUXI_HOST_PROJECT_DIR
 * (cfg->host_project_dir): when it is set, a host path equal to or below
 * `local_project_dir` (our own view of the project directory: the working
 * directory at yx_provider_init(), overridable) has that prefix replaced by
 * host_project_dir; other paths pass unchanged. This is for running the
 * service itself in a container that talks to the host's engine.
 *
 * Ownership: struct yx_provider is caller storage (init/fini); table, driver
 * and cfg are borrowed and must outlive it. Request strings are borrowed
 * for the duration of the call. Leases are plain values.
 */
#ifndef YUXI_PROVIDER_H
#define YUXI_PROVIDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "yuxi/config.h"
#include "yuxi/driver.h"
#include "yuxi/error.h"
#include "yuxi/ident.h"
#include "yuxi/shm_layout.h"
#include "yuxi/shm_table.h"

#define YX_SANDBOX_ID_LEN	8	/* default short id length */
#define YX_USER_DATA_TARGET	"/home/yuxi/user-data"
#define YX_SKILLS_TARGET	"/home/yuxi/skills"

enum yx_acquire_outcome {
	YX_ACQUIRE_HIT,		/* active slot reused */
	YX_ACQUIRE_WARM,	/* warm slot made active */
	YX_ACQUIRE_DISCOVERED,	/* running container adopted */
	YX_ACQUIRE_CREATED,	/* new container */
	YX_ACQUIRE_POOLED,	/* pool box assigned */
};

struct yx_skill_mount {
	const char	*name;		/* [A-Za-z0-9._-], not "." or ".." */
	const char	*host_path;	/* absolute host directory */
};

/*
 * What makes pool boxes alike (docs/design.md §2 "Pool"): the image and a
 * fingerprint of every other container setting. One pool per key; today
 * one key (the configuration's), profiles add more.
 */
struct yx_pool_key {
	char	image[YX_CFG_PATH];
	char	fp[YX_SHM_SKILLS_FP_MAX];	/* a box's slot skills_fp */
};

/* How the reaper makes a pool box. Borrowed pointers. */
struct yx_pool_spec {
	struct yx_pool_key	 key;
	const struct yx_config	*settings;	/* image, runtime, limits; NULL: cfg */
	const struct yx_mount	*extra;		/* the runner, the agent binary */
	size_t			 nextra;
	const char *const	*cmd;		/* NULL = the image's */
	const char		*run_target;	/* the box's run dir; NULL = none */
	unsigned		 uid, gid;	/* 0 = cfg's */
};

#define YX_POOL_RUN_DIR	"boxrun"	/* <saves>/boxrun/<box>: its run dir */

struct yx_acquire_req {
	const char			*thread_id;	/* validated here */
	const char			*owner_user;	/* may be NULL */
	const char			*agent_id;	/* may be NULL */
	const struct yx_skill_mount	*skills;	/* visible skills (ro) */
	size_t				 nskills;
	const char			*skills_fp;	/* fingerprint of the set; NULL = "" */
	const char			*user_data_host; /* -> /home/yuxi/user-data */
	bool				 user_data_ro;	/* ... read-only (default rw) */
	const struct yx_mount		*extra;		/* e.g. the runner binary (ro) */
	size_t				 nextra;
	unsigned			 uid, gid;	/* sandbox user; 0 = cfg's */
	int				 idle_timeout;	/* the thread's, seconds; 0 =
							 * cfg's idle_timeout */
	const char *const		*cmd;		/* container command; NULL = image's */
	/* container settings (image, runtime, limits) of a new container;
	 * NULL: the provider's cfg. Part of skills_fp's meaning: the caller
	 * fingerprints them */
	const struct yx_config		*settings;
	/* called right before a new container is created, when no container
	 * of the thread exists (an old one was removed); an error stops the
	 * acquire. NULL: none */
	int				(*before_create)(void *arg,
	    struct yx_errctx *err);
	void				*before_create_arg;
	/* called right before a pool box gets the thread's user-data
	 * (bound by path); an error leaves the box (it is removed) and the
	 * create path runs, where before_create decides. NULL: none */
	int				(*before_bind)(void *arg,
	    struct yx_errctx *err);
	/* Pool (YUXI_POOL_SIZE): the key a box must have to serve this
	 * thread (NULL: never a pool box); pool_adopt, when set, is called
	 * once the thread's mounts are in the box, before it is published
	 * (YX_OK, or the box is removed and the create path runs). */
	const struct yx_pool_key	*pool_key;
	int				(*pool_adopt)(void *arg, const char *box);
	void				*pool_arg;
};

/* What the executor needs; a plain value owned by the caller. */
struct yx_lease {
	uint32_t		 slot;
	uint64_t		 generation;	/* detects a reused slot */
	struct yx_shm_pid	 holder;
	enum yx_acquire_outcome	 outcome;
	int			 port;		/* published host port, 0 = none */
	char	thread_id[YX_SHM_THREAD_ID_MAX];
	char	sandbox_id[YX_SHM_SANDBOX_ID_MAX];
	char	container_id[YX_SHM_CONTAINER_ID_MAX];
	char	container_name[YX_SHM_CONTAINER_NAME_MAX];
};

struct yx_provider {
	const struct yx_config	*cfg;
	struct yx_table		*table;
	struct yx_driver	*driver;
	int			 wait_ms;	/* max wait on another's claim (30000) */
	int			 poll_ms;	/* sleep between polls (20) */
	bool			 verify;	/* inspect the container on table hits (true) */
	char			 local_project_dir[YX_CFG_PATH];
	/* optional veto of yx_provider_reap, asked without the table lock
	 * for an idle sandbox's thread: true keeps it (the reaper: a
	 * background process runs there, docs/api.md) */
	bool			(*keep)(void *arg, const char *thread_id,
	    int64_t now_ms);
	void			*keep_arg;
};

/* A copy of the table for admin, healthz and the CLI; no lock is kept. */
struct yx_provider_snapshot {
	struct yx_shm_slot	*slots;		/* non-free slots, heap */
	size_t			 nslots;
	uint32_t		 capacity;
	uint32_t		 nstate[YX_SLOT_NSTATES];
	struct yx_shm_metrics	 metrics;
};

/* Set up caller storage. YX_OK (cannot fail today besides bad arguments). */
int	yx_provider_init(struct yx_provider *p, const struct yx_config *cfg,
     struct yx_table *table, struct yx_driver *driver);
void	yx_provider_fini(struct yx_provider *p);

/*
 * Hold the thread's sandbox, making it when needed. YX_OK with *lease
 * filled (call yx_provider_unhold() when done). Errors:
 * YX_E_INVALID_THREAD_ID / YX_E_BAD_REQUEST for a bad request; YX_E_BUSY
 * when the table lock or another process's claim did not clear in time, or
 * the holds array is full; YX_E_CAPACITY when full and nothing may be
 * evicted; YX_E_SANDBOX_LIMIT when req->owner_user runs its maximum and none
 * of those is idle; the
 * driver's error (YX_E_BACKEND_UNAVAILABLE, YX_E_IMAGE_MISSING, ...) when the
 * engine failed, with no slot left claimed.
 */
int	yx_provider_acquire(struct yx_provider *p,
    const struct yx_acquire_req *req, struct yx_lease *lease,
    struct yx_errctx *err);
/* Drop the lease's hold. YX_OK, YX_E_NOT_FOUND when it was already gone
 * (slot reused or hold dropped), YX_E_BUSY when the lock timed out. */
int	yx_provider_unhold(struct yx_provider *p, const struct yx_lease *lease);

/* Move an active sandbox to the warm pool (container keeps running).
 * YX_OK (also when already warm), YX_E_NOT_FOUND, YX_E_BUSY. */
int	yx_provider_release(struct yx_provider *p, const char *sandbox_id,
    struct yx_errctx *err);
/*
 * Remove the container of a sandbox, named by sandbox_id or (when that is
 * NULL) by thread_id; user data is never touched. With a thread_id and no
 * slot, labelled containers of that thread are removed from the engine.
 * YX_OK; YX_E_NOT_FOUND when nothing matched; YX_E_BUSY when it has holds or
 * is being created/destroyed; driver errors (the slot is then kept).
 */
int	yx_provider_destroy(struct yx_provider *p, const char *sandbox_id,
    const char *thread_id, struct yx_errctx *err);

/*
 * Reaper: destroy sandboxes idle since before now_ms - idle_timeout, never
 * one with a hold; finish orphaned DESTROYING slots. *ndestroyed (may be
 * NULL) counts removals. YX_OK, or the first error (others still tried).
 */
int	yx_provider_reap(struct yx_provider *p, int64_t now_ms,
    unsigned *ndestroyed, struct yx_errctx *err);
/*
 * Reaper: compare the table with the engine's labelled containers. A
 * labelled container in no slot is adopted (valid thread label, thread
 * without slot, room) as warm, else removed; a slot whose container vanished
 * and has no holds is cleared. YX_OK or the driver's error.
 */
int	yx_provider_reconcile(struct yx_provider *p, struct yx_errctx *err);
/*
 * Reaper: start pool boxes of ps->key until cfg->pool_size of them are
 * ready (never beyond the table's limit, never evicting). *nmade (may be
 * NULL) counts boxes started. YX_OK or the first error.
 */
int	yx_provider_pool_fill(struct yx_provider *p,
    const struct yx_pool_spec *ps, unsigned *nmade, struct yx_errctx *err);
/* Reaper: clear box directories (and their mounts) that no slot names. */
int	yx_provider_pool_sweep(struct yx_provider *p, unsigned *ncleared,
    struct yx_errctx *err);
/* Is sandbox_id a pool box's (YX_PRIV_BOX_PREFIX...)? */
bool	yx_provider_is_box(const char *sandbox_id);
/* Master start: adopt running labelled containers, remove nothing. */
int	yx_provider_discover_all(struct yx_provider *p, struct yx_errctx *err);
/* Drop holds of dead processes, void dead claims (see yx_table_repair). */
int	yx_provider_drop_dead_holds(struct yx_provider *p, unsigned *ndropped,
    struct yx_errctx *err);

/* Counts of the table, copied under its lock (provider_view.c). */
struct yx_provider_stats {
	uint32_t		capacity;
	uint32_t		used;
	uint32_t		nstate[YX_SLOT_NSTATES];
	struct yx_shm_metrics	metrics;
};
/* YX_OK; YX_E_BACKEND_UNAVAILABLE (no table); YX_E_BUSY (lock timed out). */
int	yx_provider_stats(struct yx_table *t, struct yx_provider_stats *out,
    struct yx_errctx *err);

#define YX_SLOT_BY_SANDBOX	0x1	/* name is a sandbox id */
#define YX_SLOT_BY_THREAD	0x2	/* name is a thread id */
/* A copy of the slot named `name` (sandbox id first when both are asked).
 * YX_OK; YX_E_NOT_FOUND; YX_E_BUSY. */
int	yx_provider_slot(struct yx_table *t, const char *name, unsigned by,
    struct yx_shm_slot *out, struct yx_errctx *err);
/* The idle timeout (seconds, 0: the service's) of thread_id's sandbox, as
 * a PATCH set it. YX_OK; YX_E_NOT_FOUND (no sandbox); YX_E_BUSY. */
int	yx_provider_set_idle(struct yx_table *t, const char *thread_id, int idle_s);
/*
 * provider_orphans.c: the containers of this service (its label) whose
 * name starts with no live instance's prefix (the master's table lock
 * ends with YX_ORPHAN_PREFIX_TAG and its prefix) nor cfg's own; with only,
 * those that start with it. *out a heap array (caller frees). YX_OK;
 * driver errors. yx_orphans_remove removes them (*removed counts).
 */
#define YX_ORPHAN_PREFIX_TAG	"prefix="
struct yx_container_info;
int	yx_orphans_find(const struct yx_config *cfg, const char *only,
    struct yx_container_info **out, size_t *n, struct yx_errctx *err);
int	yx_orphans_remove(const struct yx_config *cfg,
    const struct yx_container_info *v, size_t n, unsigned *removed,
    struct yx_errctx *err);

/* The master's children besides workers and reaper (docs/security.md
 * "Supervised helpers"). */
enum yx_comp {
	YX_COMP_PRIV,		/* the privileged helper (yuxi-priv) */
	YX_COMP_EGRESS,		/* the egress proxy's supervisor (yuxi-egress) */
	YX_COMP_INGRESS,	/* the preview ingress's supervisor (yuxi-ingress) */
	YX_COMP_N
};
enum yx_comp_state {
	YX_COMP_UNUSED = 0,	/* not started: this configuration needs none */
	YX_COMP_UP,
	YX_COMP_DOWN,		/* died; the master starts it again (backoff) */
};
/* "privileged_helper", "egress_proxy", "preview_ingress". */
const char	*yx_comp_name(int c);
/* The master: component k is now in `state`; restarted counts a start
 * after a death. No lock (the master alone writes). */
void	yx_provider_comp_note(struct yx_table *t, int k, int state, bool restarted);
/* Its state (YX_COMP_UNUSED without a table) and restarts (may be NULL). */
int	yx_provider_comp_state(struct yx_table *t, int k, uint64_t *restarts);

/*
 * A sandbox whose process keepers stopped answering (docs/security.md):
 * yx_provider_stall marks thread_id's until until_ms (yx_mono_ms()), so
 * that the next requests answer at once instead of waiting on it again;
 * yx_provider_stalled is the milliseconds left of the mark (0: none).
 */
/* A preview request used thread_id's sandbox (docs/api.md "Previews"): it
 * is not idle now. YX_OK; YX_E_NOT_FOUND (no running sandbox: wake it);
 * YX_E_BUSY. */
int	yx_provider_touch(struct yx_table *t, const char *thread_id);
void	yx_provider_stall(struct yx_table *t, const char *thread_id, int64_t until_ms);
int64_t	yx_provider_stalled(struct yx_table *t, const char *thread_id);
/*
 * Readiness: the table answers its lock and is consistent (every slot in a
 * valid state with at most YX_SHM_HOLDS_MAX holds, the per-state counters
 * equal to a recount). Read only: repairs are the lock's and the master's.
 * YX_OK; YX_E_BACKEND_UNAVAILABLE (no table); YX_E_BUSY (lock timed out);
 * YX_E_INTERNAL with what disagrees.
 */
int	yx_provider_check(struct yx_table *t, struct yx_errctx *err);
/* The master after a child died: drop its holds and claims (as the next
 * locker would). Returns the count of repairs. */
unsigned yx_provider_repair(struct yx_table *t);

/* Running sandboxes (creating, active, warm) of one owner. */
struct yx_user_sandboxes {
	char		user[YX_SHM_USER_MAX];	/* "" = not known (adopted) */
	uint32_t	running;
	uint32_t	nstate[YX_SLOT_NSTATES];
};
/*
 * Per-owner counts of the table, copied under its lock (provider_view.c),
 * sorted by user. *out is a heap array (caller frees; NULL when *n is 0);
 * *capacity (may be NULL) the table's. YX_OK; YX_E_BACKEND_UNAVAILABLE (no
 * table); YX_E_NOMEM; YX_E_BUSY.
 */
int	yx_provider_users(struct yx_table *t, struct yx_user_sandboxes **out,
    size_t *n, uint32_t *capacity, struct yx_errctx *err);
/* The fair share of `users` owners in `limit` slots: ceil(limit / users)
 * (limit when users <= 1). */
uint32_t yx_provider_fair_share(uint32_t limit, uint32_t users);

/* Copy the table. YX_OK (snap owned by the caller), YX_E_NOMEM, YX_E_BUSY. */
int	yx_provider_list(struct yx_provider *p,
     struct yx_provider_snapshot *snap, struct yx_errctx *err);
void	yx_provider_snapshot_fini(struct yx_provider_snapshot *snap);

/* "free", "creating", "active", "warm", "destroying", "pooled"
 * ("unknown"). */
const char *yx_slot_state_name(int state);
const char *yx_acquire_outcome_name(int outcome);

/* sandbox_id of thread_id at `len` hex digits (8..64) into out[65].
 * YX_OK or YX_E_BAD_REQUEST / YX_E_INTERNAL. */
int	yx_sandbox_id_derive(const char *thread_id, size_t len, char *out);

/*
 * A transactional command's container (provider_tx.c; docs/design.md §10):
 * req's settings, uid and mounts (req->user_data_host: the transaction's
 * overlay), named yx_provider_tx_name(thread), outside the table. Create
 * removes a stale one of the name first; remove is NOT_FOUND-tolerant.
 */
#define YX_TX_NAME_MAX	(YX_CFG_PATH + 32)
void	yx_provider_tx_name(const struct yx_provider *p, const char *thread_id,
    char *buf, size_t len);
int	yx_provider_tx_create(struct yx_provider *p, const struct yx_acquire_req *req,
     const char *name, struct yx_container_info *info, struct yx_errctx *err);
int	yx_provider_tx_remove(struct yx_provider *p, const char *name);

#endif /* YUXI_PROVIDER_H */
