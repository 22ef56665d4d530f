/* SPDX-License-Identifier: MIT */
/*
 * threads_int.h - private interfaces of the thread store (src/threads):
 * the disk-image steps (threads_disk.c) that threads.c runs when it
 * builds, removes, sweeps and reconciles thread directories, and the uid
 * claims (threads_uids.c).
 */
#ifndef YUXI_THREADS_INT_H
#define YUXI_THREADS_INT_H

#include "yuxi/threads.h"

/*
 * With a disk quota: give directory `name` (open as tfd, still a hidden
 * temporary) its disk image, mounted on its user-data/, whose root
 * belongs to t's uid. YX_OK also without a quota (nothing done); errors of
 * the helper (YX_E_BACKEND_UNAVAILABLE without one), logged.
 */
int	thread_disk_make(struct yx_thread_store *st, int tfd, const char *name,
    const struct yx_thread *t);
/*
 * Before directory `name` of threads/ is removed: unmount its image and
 * delete it (through the helper). YX_OK when nothing is mounted on its
 * user-data/ any more, so the removal may go ahead; YX_E_BUSY otherwise
 * (logged): the caller leaves the directory for a later sweep.
 */
int	thread_disk_drop(struct yx_thread_store *st, const char *name);
/* Start-up reconcile of threads/<name>: mount its image if it has one that
 * is not mounted (arg: struct yx_thread_repair *). */
void	thread_disk_fix(struct yx_thread_store *st, int dfd, const char *name,
    void *arg);

/* Can this process chown (root, or CAP_CHOWN in its effective set)? */
bool	threads_may_chown(void);

/* Give thread t (being created) its uid: its own from the range, or the
 * shared user. YX_OK, YX_E_CAPACITY (no uid left) or errno-mapped. */
int	thread_uid_assign(struct yx_thread_store *st, struct yx_thread *t);
/* Free the claim of t's uid if it is still t's. */
void	thread_uid_free(struct yx_thread_store *st, const struct yx_thread *t);
/* Point t's claim at its tombstone tomb (its files are still on disk). */
void	thread_uid_hand(struct yx_thread_store *st, const struct yx_thread *t,
    const char *tomb);
/* After tombstone tomb is gone: free the claim handed to it. */
void	thread_uid_release_tomb(struct yx_thread_store *st, const char *tomb);
/* Is claim target that of a pool box whose directory is still there? */
bool	thread_uid_box_left(struct yx_thread_store *st, const char *target);

#endif /* YUXI_THREADS_INT_H */
