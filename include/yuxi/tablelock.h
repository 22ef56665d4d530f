/* SPDX-License-Identifier: MIT */
/*
 * yuxi/tablelock.h - who owns a shared table (YUXI_SHM_NAME): one lock per
 * table name, so that a second instance configured with the same name
 * refuses to start instead of replacing the first one's table under it
 * (docs/deployment.md "Several instances on one host").
 *
 * The lock is flock(2) on a POSIX shared-memory object of its own,
 * "<YUXI_SHM_NAME>.lock" (/dev/shm/yuxi-sandbox.lock), which holds one line
 * saying who holds it. flock belongs to the open file description: the
 * master takes it before anything else and its children inherit it across
 * fork, so the lock is held for as long as any process of the instance
 * lives, and the kernel drops it when the last one exits (or is killed):
 * a crash never leaves a stale owner. The descriptor is close-on-exec.
 *
 * The CLI takes it only for a moment: to remove a table it made itself
 * while no service ran (src/cli/main.c).
 *
 * Ownership: struct yx_tablelock is caller storage; yx_tablelock_drop
 * releases what yx_tablelock_take got.
 */
#ifndef YUXI_TABLELOCK_H
#define YUXI_TABLELOCK_H

#include <stddef.h>

struct yx_tablelock {
	int	fd;		/* -1: not held */
	char	name[80];	/* "<shm name>.lock" */
};

/* Not held. */
void	yx_tablelock_init(struct yx_tablelock *l);
/*
 * Take the lock of table shm_name without waiting and write desc (one
 * line naming the holder, e.g. "instance 'a', master pid 42") into it.
 * YX_OK: held. YX_E_BUSY: another live process holds it; what it wrote
 * ("a process" when nothing) in holder (holderlen bytes). YX_E_IO or
 * YX_E_BAD_REQUEST (the name too long): the reason in holder.
 */
int	yx_tablelock_take(struct yx_tablelock *l, const char *shm_name,
    const char *desc, char *holder, size_t holderlen);
/* Remove the lock object and release the lock; idempotent. */
void	yx_tablelock_drop(struct yx_tablelock *l);

/*
 * Every table lock a live process holds on this host (the lock objects in
 * /dev/shm): fn(arg, holder's line) for each. A lock nobody holds (its
 * instance is gone) is skipped. YX_OK or YX_E_IO (no /dev/shm).
 */
int	yx_tablelock_each_live(void (*fn)(void *arg, const char *desc), void *arg);

#endif /* YUXI_TABLELOCK_H */
