/* SPDX-License-Identifier: MIT */
/*
 * yuxi/shm_table.h - open, lock and repair the shared provider table
 * (docs/design.md §2; format in yuxi/shm_layout.h).
 *
 * The master opens the table with YX_TABLE_CREATE before forking; children
 * inherit the mapping (or attach by name with flags 0). All slot access
 * happens between yx_table_lock() and yx_table_unlock(). The lock is timed:
 * a holder that is stopped (SIGSTOP, a debugger) cannot wedge the service,
 * callers get YX_E_BUSY after `lock_timeout_ms` and answer 503. A holder
 * that died makes the next locker repair the table (dead holds dropped,
 * orphaned claims reset, counters recomputed) before the mutex is marked
 * consistent again.
 *
 * Never call the container engine, sleep, or log untrusted bytes while the
 * lock is held.
 *
 * Ownership: yx_table_open() returns a heap handle released by
 * yx_table_close() (NULL is a no-op), which unmaps but never unlinks; the
 * shared object outlives the processes until yx_table_unlink().
 */
#ifndef YUXI_SHM_TABLE_H
#define YUXI_SHM_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "yuxi/error.h"
#include "yuxi/clock.h"
#include "yuxi/shm_layout.h"

#define YX_TABLE_CREATE		0x1	/* create when missing (master) */
#define YX_TABLE_RECREATE	0x2	/* with CREATE: replace an incompatible table */

#define YX_TABLE_LOCK_TIMEOUT_MS 5000

struct yx_table {
	struct yx_shm_header	*hdr;
	struct yx_shm_slot	*slots;		/* hdr->capacity entries */
	size_t			 maplen;
	int			 lock_timeout_ms;	/* default YX_TABLE_LOCK_TIMEOUT_MS */
	char			 name[64];
};

/*
 * Open the table `name` ("/yuxi-sandbox"). With YX_TABLE_CREATE a missing
 * table is created with `capacity` slots; an existing one is attached when
 * its magic, version, size fingerprints and capacity match, and otherwise
 * refused (YX_E_INTERNAL with a message saying why) unless
 * YX_TABLE_RECREATE is given, in which case it is unlinked and made anew.
 * Without CREATE, capacity 0 accepts any capacity. Returns YX_OK and the
 * handle in *tp (caller owns it), or an error with *tp NULL.
 */
int	yx_table_open(struct yx_table **tp, const char *name, uint32_t capacity,
    int flags, struct yx_errctx *err);
/* Unmap and free the handle; NULL is a no-op. Does not unlink. */
void	yx_table_close(struct yx_table *t);
/* Remove the name. YX_OK, also when it did not exist. */
int	yx_table_unlink(const char *name);

/*
 * Lock the table. YX_OK: locked (after repairing it if the previous holder
 * died). YX_E_BUSY: not obtained within lock_timeout_ms. YX_E_INTERNAL: the
 * mutex is unrecoverable (the table must be recreated).
 */
int	yx_table_lock(struct yx_table *t, struct yx_errctx *err);
void	yx_table_unlock(struct yx_table *t);

/*
 * Under the lock: drop holds of dead processes, free CREATING slots whose
 * owner is dead, orphan DESTROYING slots whose owner is dead (owner pid 0,
 * the reaper finishes them), free slots with an invalid state, recompute
 * the per-state counters. Returns the number of fixes made.
 */
unsigned yx_table_repair(struct yx_table *t);

/*
 * Prove at start-up that robust process-shared mutexes work here: a forked
 * child locks one in a scratch shared mapping and exits; the parent must
 * then get EOWNERDEAD. YX_OK, or YX_E_INTERNAL with the reason.
 */
int	yx_table_selftest(struct yx_errctx *err);

/* Slot helpers; the caller holds the lock. */
void	yx_table_set_state(struct yx_table *t, struct yx_shm_slot *s,
    enum yx_slot_state st);
void	yx_table_slot_clear(struct yx_table *t, struct yx_shm_slot *s);
/* Index of the non-free slot of thread_id, or -1. */
int	yx_table_find_thread(const struct yx_table *t, const char *thread_id);
/* Index of the non-free slot with sandbox_id, or -1. */
int	yx_table_find_sandbox(const struct yx_table *t, const char *sandbox_id);
/* Number of non-free slots. */
uint32_t yx_table_used(const struct yx_table *t);
/* Remove one hold of `who`; true if one was found. */
bool	yx_table_hold_del(struct yx_shm_slot *s, const struct yx_shm_pid *who);
/* Add a hold of `who`: YX_OK, or YX_E_BUSY when holds[] is full. */
int	yx_table_hold_add(struct yx_shm_slot *s, const struct yx_shm_pid *who);
/* Drop holds of dead processes in one slot; returns how many. */
unsigned yx_table_slot_drop_dead(struct yx_shm_slot *s);

/* Process identity. */
/* Start time of pid (field 22 of /proc/<pid>/stat): YX_OK, or YX_E_NOT_FOUND
 * when the process does not exist or is a zombie. */
int	yx_proc_starttime(pid_t pid, uint64_t *start);
/* The calling process (cached per pid, so correct after fork()). */
void	yx_proc_self(struct yx_shm_pid *me);
/* True when the process stamped in p still runs (same pid and start). */
bool	yx_proc_alive(const struct yx_shm_pid *p);

#endif /* YUXI_SHM_TABLE_H */
