/* SPDX-License-Identifier: MIT */
/*
 * yuxi/threads.h - the thread store (docs/design.md §5, docs/api.md "Threads").
 *
 * A thread is a directory <YUXI_SAVES_DIR>/threads/<thread_id>/ holding the
 * record thread.json ({thread_id, owner, agent_id, agent_config_id,
 * created_at, uid, metadata, idle_timeout, and on a front the sandbox host
 * it is placed on: host}) beside user-data/ (the sandbox's private tree, owned by
 * the thread's uid/gid) and, with a uid range, the passwd and group files
 * bind-mounted into its sandbox. A thread belongs to the user who created
 * it; every lookup takes the caller and answers YX_E_NOT_FOUND alike for an
 * unknown thread and for another user's, so callers cannot tell them apart.
 *
 * Beside threads/ the store keeps (docs/security.md "Between tenants"):
 * - owners/<user>/<thread_id>: an empty file per thread, the per-owner
 *   index a listing reads, so it costs what the caller owns. Written after
 *   the thread is published and removed before its data; a listing checks
 *   every record it reads, so a stale entry is never shown.
 * - uids/<uid> -> <thread_id>: with a uid range (YUXI_SANDBOX_UID_RANGE),
 *   each thread gets its own host uid (and gid of the same number) from the
 *   range: a symlink created O_EXCL-like (symlinkat fails on EEXIST) claims
 *   it. Allocation rotates through the range (uids/.cursor), so a freed uid
 *   comes back only after the whole range was used.
 * - run/<thread_id>/: the sandbox's agent directory (src/exec), removed with
 *   the thread and when a thread of that id is created again.
 *
 * With a disk quota (YUXI_THREAD_DISK_QUOTA, docs/configuration.md) a new
 * thread's user-data/ is a filesystem of its own: the ext4 image
 * user-data.img beside it in the thread directory, mounted on it by the
 * privileged helper (include/yuxi/priv.h) before the thread is published,
 * so the sandbox and the broker only ever see the mounted image. Beneath
 * the mount, user-data/ is an empty directory of the service. The mount
 * moves with the directory's renames; it is unmounted and the image
 * dropped before the directory is removed (a removal never descends into a
 * mounted image: it waits for a later sweep instead), and mounted again by
 * the start-up reconcile (after a reboot).
 *
 * Creation is atomic: the whole directory is built under a hidden temporary
 * name (".tmp-...") and renamed into place with RENAME_NOREPLACE, so a thread
 * directory is either absent or complete. Deletion renames the directory to a
 * hidden tombstone (".trash-...") first, freeing the id at once, then removes
 * the tree with an iterative unlinkat() walk that never follows a symlink,
 * within the store's budget: what is left then stays in the tombstone for
 * the reaper's sweep. Hidden names can never be thread ids ('.' is not in
 * [A-Za-z0-9_-]).
 *
 * Ownership: struct yx_thread_store is caller storage (_init/_fini); it
 * holds directory descriptors. Records are plain values.
 */
#ifndef YUXI_THREADS_H
#define YUXI_THREADS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "yuxi/clock.h"
#include "yuxi/config.h"
#include "yuxi/error.h"
#include "yuxi/ident.h"
#include "yuxi/priv.h"

struct json_object;

#define YX_AGENT_ID_MAX		128	/* bytes of an agent or config id */
#define YX_THREADS_LIST_MAX	1000	/* threads returned by one listing */
#define YX_THREADS_SCAN_MAX	100000	/* directory entries one listing reads */
#define YX_THREAD_HOST_MAX	32	/* bytes of a placement (yuxi/hostlist.h) */

/*
 * A thread's metadata (docs/api.md "Threads"): at most YX_META_KEYS pairs,
 * keys of 1..YX_META_KEY_MAX bytes of [A-Za-z0-9_.-], values of at most
 * YX_META_VALUE_MAX bytes of UTF-8 without control characters, keys
 * unique, in the order they were set.
 */
#define YX_META_KEYS		16
#define YX_META_KEY_MAX		64
#define YX_META_VALUE_MAX	256
struct yx_thread_meta {
	unsigned	n;
	char		key[YX_META_KEYS][YX_META_KEY_MAX + 1];
	char		value[YX_META_KEYS][YX_META_VALUE_MAX + 1];
};

struct yx_thread {
	char		thread_id[YX_THREAD_ID_SIZE];
	char		owner[YX_USER_MAX + 1];
	char		agent_id[YX_AGENT_ID_MAX + 1];		/* "" = none */
	char		agent_config_id[YX_AGENT_ID_MAX + 1];	/* "" = none */
	int64_t		created_ms;				/* unix ms */
	unsigned	uid, gid;	/* the sandbox's host uid/gid */
	bool		own_uid;	/* uid is the thread's own (from the range) */
	char		host[YX_THREAD_HOST_MAX + 1];	/* a front's placement: the
							 * sandbox host's name; "" = none */
	struct yx_thread_meta meta;	/* the caller's metadata */
	int		idle_timeout;	/* seconds its sandbox may idle; 0 = the
					 * service's YUXI_SANDBOX_IDLE_TIMEOUT */
};

struct yx_thread_store {
	int		dirfd;		/* <saves>/threads, O_DIRECTORY; -1 when closed */
	int		ownfd;		/* <saves>/owners; -1 */
	int		uidfd;		/* <saves>/uids; -1 without a uid range */
	int		runfd;		/* <saves>/run (O_PATH); -1 */
	unsigned	uid, gid;	/* shared sandbox user (threads without their own) */
	unsigned	uid_base;	/* the range, uid_count 0 = none */
	unsigned	uid_count;
	bool		chown_ok;	/* false when not root: skip fchown */
	int64_t		remove_budget_ms; /* of one remove (request budget); 0 none */
	int64_t		disk_quota;	/* bytes of a new thread's disk; 0 none */
	int		disk_fs;	/* its filesystem: enum yx_disk_fs */
};

/* Start-up repair counts (yx_thread_store_reconcile). */
struct yx_thread_repair {
	unsigned	index_added;	/* owner-index entries written */
	unsigned	index_dropped;	/* stale owner-index entries removed */
	unsigned	uids_dropped;	/* uid claims of absent threads removed */
	unsigned	runs_dropped;	/* run directories of absent threads removed */
	unsigned	disks_mounted;	/* disk images mounted again */
	unsigned	disks_failed;	/* disk images that could not be */
};

/* A thread's disk image (yx_thread_disk_usage). */
struct yx_thread_disk {
	uint64_t	quota;		/* bytes of the image */
	uint64_t	size;		/* bytes of its filesystem */
	uint64_t	used;
	uint64_t	avail;		/* what the sandbox can still write */
};

/* All disk images together (yx_thread_disk_totals). */
struct yx_thread_disk_totals {
	unsigned	images;		/* threads with a mounted image */
	unsigned	unmounted;	/* threads whose image is not mounted */
	unsigned	full;		/* images with less than 5 % available */
	uint64_t	quota;		/* sums over the mounted images */
	uint64_t	used;
	bool		truncated;	/* stopped after YX_THREADS_SCAN_MAX entries */
};

/*
 * Open (creating when missing) <cfg->saves_dir>/threads, owners/, run/ and,
 * with a uid range, uids/. YX_OK, or an error with a message naming the
 * directory.
 */
int	yx_thread_store_init(struct yx_thread_store *st, const struct yx_config *cfg,
     struct yx_errctx *err);
void	yx_thread_store_fini(struct yx_thread_store *st);

/*
 * Create thread `want->thread_id` for `want->owner` (created_ms and the uid
 * are set here). YX_OK with *created true and *out the new record; YX_OK
 * with *created false and *out the existing record when the same owner
 * already has it; YX_E_THREAD_EXISTS when another user owns it;
 * YX_E_INVALID_THREAD_ID for a bad id; YX_E_CAPACITY when the uid range is
 * exhausted; YX_E_IO and friends otherwise.
 */
int	yx_thread_create(struct yx_thread_store *st, const struct yx_thread *want,
    struct yx_thread *out, bool *created, struct yx_errctx *err);

/*
 * yx_thread_create() under the per-user limit (threads_limit.c): refuses
 * with YX_E_THREAD_LIMIT when `want->owner` already owns `limit` threads
 * (0: no limit) and `want->thread_id` does not exist yet (an existing id
 * gets create's answer: the record, or YX_E_THREAD_EXISTS). Counting and
 * creating are serialised per owner across processes (an flock of
 * owners/<owner>), so concurrent creates never overshoot; YX_E_BUSY when
 * that lock does not come within 5 s. Otherwise as yx_thread_create().
 */
int	yx_thread_create_limited(struct yx_thread_store *st,
    const struct yx_thread *want, unsigned limit, struct yx_thread *out,
    bool *created, struct yx_errctx *err);

#define YX_OWNERS_MAX	10000	/* users one yx_thread_owner_counts() returns */

/* A user of the owner index and the number of its threads. */
struct yx_owner_threads {
	char		owner[YX_USER_MAX + 1];
	unsigned	threads;
};

/*
 * Every user with threads and their count (index entries, as the limit
 * counts them), sorted by name; at most YX_OWNERS_MAX users and
 * YX_THREADS_SCAN_MAX entries per user (*truncated when a bound stopped
 * the scan). *out is a heap array (caller frees; NULL when *n is 0).
 * YX_OK, YX_E_NOMEM, YX_E_IO.
 */
int	yx_thread_owner_counts(struct yx_thread_store *st,
    struct yx_owner_threads **out, size_t *n, bool *truncated,
    struct yx_errctx *err);

/*
 * Read the record of `id` owned by `owner`. YX_OK; YX_E_INVALID_THREAD_ID;
 * YX_E_NOT_FOUND when absent or owned by someone else (same message).
 */
int	yx_thread_get(struct yx_thread_store *st, const char *id, const char *owner,
    struct yx_thread *out, struct yx_errctx *err);

/*
 * Operator lookup (the CLI): the record of `id` whoever owns it. YX_OK;
 * YX_E_INVALID_THREAD_ID; YX_E_NOT_FOUND.
 */
int	yx_thread_find(struct yx_thread_store *st, const char *id,
    struct yx_thread *out, struct yx_errctx *err);

/*
 * The threads of `owner`, newest first, at most YX_THREADS_LIST_MAX. *out is
 * a heap array (caller frees; NULL when *n is 0). YX_OK, YX_E_NOMEM, YX_E_IO.
 */
int	yx_thread_list(struct yx_thread_store *st, const char *owner,
    struct yx_thread **out, size_t *n, struct yx_errctx *err);

/*
 * A change of a thread's record (PATCH /api/threads/{id}): metadata as a
 * JSON merge patch (RFC 7396: a string sets a key, null removes it) when
 * meta is not NULL; the idle timeout when set_idle (0: back to the
 * service's default).
 */
struct yx_thread_patch {
	struct json_object	*meta;		/* borrowed; an object, or NULL */
	bool			 set_idle;
	int			 idle_timeout;
};

/*
 * Apply patch to thread `id` of `owner`, serialised with other updates of
 * the thread (an flock of its directory) and written through a temporary
 * file and rename. YX_OK with *out the new record; YX_E_INVALID_METADATA
 * when the merged metadata breaks a rule (nothing written); errors as
 * yx_thread_get(); YX_E_IO and friends.
 */
int	yx_thread_update(struct yx_thread_store *st, const char *id,
    const char *owner, const struct yx_thread_patch *patch,
    struct yx_thread *out, struct yx_errctx *err);

/* threads_meta.c: metadata rules, pure. */
/*
 * Metadata from a JSON object (a create's "metadata"): YX_OK with *m, or
 * YX_E_INVALID_METADATA with a message naming the rule broken.
 */
int	yx_thread_meta_parse(struct json_object *o, struct yx_thread_meta *m,
    struct yx_errctx *err);
/* Merge patch o into *m (RFC 7396; o an object): YX_OK or as _parse. */
int	yx_thread_meta_merge(struct yx_thread_meta *m, struct json_object *o,
    struct yx_errctx *err);
/* The metadata as a new JSON object (caller puts); NULL: no memory. */
struct json_object *yx_thread_meta_json(const struct yx_thread_meta *m);
/* Is key set to value? */
bool	yx_thread_meta_has(const struct yx_thread_meta *m, const char *key,
    const char *value);

/*
 * Remove thread `id` of `owner` and all its data. YX_OK (also when the
 * budget ran out first: the id is free and the rest of the data stays in
 * a hidden tombstone for yx_thread_store_sweep_trash); YX_E_NOT_FOUND as
 * for yx_thread_get(); YX_E_IO when the tree could not be removed entirely
 * (the id is free anyway: the rest stays in a hidden tombstone).
 * Equivalent to yx_thread_retire() then yx_thread_purge().
 */
int	yx_thread_remove(struct yx_thread_store *st, const char *id, const char *owner,
    struct yx_errctx *err);

/*
 * First half of a removal: check the owner, rename the thread directory to
 * a tombstone (the id is free from here on: lookups answer not found) and
 * drop its owner-index entry. YX_OK with *t the removed record and tomb
 * (size >= 64) its tombstone name; errors as yx_thread_get().
 */
int	yx_thread_retire(struct yx_thread_store *st, const char *id, const char *owner,
    struct yx_thread *t, char *tomb, size_t tomblen, struct yx_errctx *err);
/*
 * Second half: remove the thread's run directory and tombstone and free its
 * uid. Call it once nothing runs for the thread any more (its sandbox is
 * destroyed). The tombstone goes within the store's budget
 * (remove_budget_ms): what is left then stays for the reaper's sweep, and
 * the uid stays claimed until the start-up reconcile. YX_OK (also then) or
 * YX_E_IO (what stayed is swept later).
 */
int	yx_thread_purge(struct yx_thread_store *st, const struct yx_thread *t,
    const char *tomb, struct yx_errctx *err);

/*
 * Start-up repair after a crash: rebuild the owner index from the records,
 * drop uid claims and run directories of threads that do not exist (or of
 * another instance of the id). Never changes a record. Counts in *rep (may
 * be NULL). Call before workers start.
 */
void	yx_thread_store_reconcile(struct yx_thread_store *st,
    struct yx_thread_repair			      *rep);

/* The host paths of a thread, beneath YUXI_SAVES_DIR (yx_thread_path). */
enum yx_thread_part {
	YX_TP_USER_DATA,	/* threads/<id>/user-data */
	YX_TP_PASSWD,		/* threads/<id>/passwd (own uid only) */
	YX_TP_GROUP,		/* threads/<id>/group (own uid only) */
	YX_TP_RUN,		/* run/<id>: the agent directory */
};

/*
 * Host path of `part` of thread `thread_id` under saves_dir into buf (size
 * len). YX_OK; YX_E_INVALID_THREAD_ID; YX_E_BAD_REQUEST when it does not
 * fit. Paths are names only: open them beneath trusted descriptors.
 */
int	yx_thread_path(const char *saves_dir, const char *thread_id,
    enum yx_thread_part part, char *buf, size_t len);

/*
 * The sandbox's /etc/passwd and /etc/group (bind-mounted read-only) into
 * new files "passwd" and "group" of directory dfd: an own uid has no entry
 * in the image, and programs that look the user up (whoami, a shell
 * prompt) should find "yuxi". YX_OK or an errno-mapped error.
 */
int	yx_thread_etc_write(int dfd, unsigned uid, unsigned gid);

/*
 * Uids of pool boxes (docs/design.md §2 "Pool", Uids). A box claims a uid
 * of the range as threads do (<saves>/uids/<uid>, a symlink naming its
 * holder): "<box>" while it waits, "<box>/<thread>" once it serves that
 * thread. The thread keeps its own uid, which owns its files on disk; the
 * box sees them as its own through an idmapped mount (src/priv).
 */
/* Claim a free uid for box. YX_OK with *uid; YX_E_NOT_FOUND without a
 * range; YX_E_CAPACITY when every uid is taken. */
int	yx_uid_claim_box(const struct yx_config *cfg, const char *box,
    unsigned *uid);
/* Box's claim of uid now names thread_id too. YX_OK; YX_E_NOT_FOUND when
 * uid is not box's. */
int	yx_uid_tag_box(const struct yx_config *cfg, unsigned uid,
    const char *box, const char *thread_id);
/* Free uid if box holds it (waiting or serving); otherwise (uid 0: a box
 * that died before it wrote its uid down) every claim naming box, by a
 * scan of the claims. */
void	yx_uid_release_box(const struct yx_config *cfg, unsigned uid,
    const char *box);
/* Does uid belong to a box serving thread_id? One readlink. */
bool	yx_uid_serves(const char *saves_dir, unsigned uid,
    const char *thread_id);

/*
 * Open the thread's directory (O_DIRECTORY|O_NOFOLLOW) for the broker.
 * Returns a descriptor the caller closes, or -1 with errno set.
 */
int	yx_thread_dirfd(struct yx_thread_store *st, const char *id);

/*
 * The disk image of thread `id` (no owner check: callers looked the thread
 * up). YX_OK with *u; YX_E_NOT_FOUND when it has no mounted image;
 * YX_E_INVALID_THREAD_ID. statfs only: no privilege needed.
 */
int	yx_thread_disk_usage(struct yx_thread_store *st, const char *id,
    struct yx_thread_disk *u);
/* Sums over every thread's image (at most YX_THREADS_SCAN_MAX entries). */
void	yx_thread_disk_totals(struct yx_thread_store *st,
    struct yx_thread_disk_totals *tot);

/*
 * With a disk quota: mount again every thread's image that is not mounted
 * (after the privileged helper was started again: the reaper; nothing else
 * of the store is touched). Returns the count mounted.
 */
unsigned yx_thread_store_remount(struct yx_thread_store *st);

/* Remove leftover ".tmp-*" and ".trash-*" entries (start-up, before any
 * worker runs; no time limit). Returns the count removed. */
unsigned yx_thread_store_sweep(struct yx_thread_store *st);
/*
 * Remove ".trash-*" tombstones (never ".tmp-*": a worker may be building
 * one) within budget_ms (<= 0: no limit), skipping any that another process
 * is removing. The reaper calls it every pass. Returns the count removed;
 * *leftp (may be NULL) gets the count still there.
 */
unsigned yx_thread_store_sweep_trash(struct yx_thread_store *st,
    int64_t budget_ms, unsigned *leftp);

/*
 * Snapshots (threads_snap.c; docs/api.md "Snapshots"). A thread's
 * snapshots need its user-data on a btrfs disk image
 * (YUXI_THREAD_DISK_FS=btrfs); the privileged helper makes them. Each
 * call takes a thread the caller looked up as its owner's.
 */
#define YX_SNAP_NAME_MAX	128

struct yx_thread_snap {
	char		id[YX_PRIV_SNAP_ID_SIZE];	/* "s" + 16 hex */
	char		name[YX_SNAP_NAME_MAX + 1];	/* the caller's; may be "" */
	int64_t		created_ms;
	uint64_t	size_bytes;	/* held by it alone (as of the filesystem's
					 * last commit) */
};

/* A new snapshot of t's user-data named `name` (may be NULL): YX_OK with
 * *out; YX_E_SNAPSHOT_LIMIT with `max` of them already; YX_E_UNSUPPORTED
 * (no btrfs image); YX_E_BAD_REQUEST (name); the helper's errors. */
int	yx_thread_snap_create(struct yx_thread_store *st, const struct yx_thread *t,
    const char *name, int max, struct yx_thread_snap *out, struct yx_errctx *err);
/* Snapshot sid of t: YX_OK or YX_E_NOT_FOUND. */
int	yx_thread_snap_get(struct yx_thread_store *st, const struct yx_thread *t,
    const char *sid, struct yx_thread_snap *out, struct yx_errctx *err);
/* All of t's, newest first: *vp heap (caller frees), *np entries (an empty
 * list for a thread that cannot have any). */
int	yx_thread_snap_list(struct yx_thread_store *st, const struct yx_thread *t,
    struct yx_thread_snap **vp, size_t *np, struct yx_errctx *err);
int	yx_thread_snap_delete(struct yx_thread_store *st, const struct yx_thread *t,
    const char *sid, struct yx_errctx *err);
/* Make t's user-data exactly snapshot sid's. No sandbox of t may run (the
 * caller destroyed it, holding the transaction lock). */
int	yx_thread_snap_restore(struct yx_thread_store *st, const struct yx_thread *t,
    const char *sid, struct yx_errctx *err);
/* Copy snapshot sid of src into dst's (new, empty) user-data, the files
 * made dst's uid. YX_E_NOT_FOUND; YX_E_QUOTA_EXCEEDED; YX_E_IO. */
int	yx_thread_snap_copy(struct yx_thread_store *st, const struct yx_thread *src,
    const char *sid, const struct yx_thread *dst, struct yx_errctx *err);
/* The thread's transaction lock (one transaction, restore at a time), not
 * waited for: YX_OK with *fdp (close it to let go), YX_E_THREAD_BUSY. */
int	yx_thread_txlock(struct yx_thread_store *st, const struct yx_thread *t,
    int *fdp, struct yx_errctx *err);
/* fn(arg, id) for each thread whose directory holds a transaction's
 * journal or layer (what a crash leaves; the reaper recovers them).
 * Returns how many. */
unsigned yx_thread_tx_left(struct yx_thread_store *st,
    void (*fn)(void *, const char *), void *arg);

#endif /* YUXI_THREADS_H */
