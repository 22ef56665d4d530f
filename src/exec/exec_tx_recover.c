/* SPDX-License-Identifier: MIT */
/*
 * exec_tx_recover.c - the recovery of every thread a crashed transaction
 * left something of (docs/design.md §10 "Crashes"), for the reaper's
 * passes and `yuxi-sandbox gc`: each such thread's journal finished or
 * undone and its transaction's layer and container removed
 * (yx_exec_tx_recover, exec_tx.c), under the thread's transaction lock,
 * not waited for: a thread a transaction of which runs is left to it.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "yuxi/executor.h"
#include "yuxi/threads.h"

struct tx_recover_ctx {
	struct yx_executor	*ex;
	struct yx_thread_store	*st;
	unsigned		 nrecovered;
};

/* One thread with a transaction's leftovers: recovered unless a
 * transaction of it runs (its lock is held). */
static void
tx_recover_one(void *arg, const char *tid)
{
	struct tx_recover_ctx	*c = arg;
	struct yx_thread	 t;
	int			 lock = -1;

	memset(&t, 0, sizeof(t));
	snprintf(t.thread_id, sizeof(t.thread_id), "%s", tid);
	if (yx_thread_txlock(c->st, &t, &lock, NULL) != YX_OK)
		return;
	if (yx_exec_tx_recover(c->ex, tid) == YX_OK)
		c->nrecovered++;
	close(lock);
}

unsigned
yx_exec_tx_recover_all(struct yx_executor *ex, struct yx_thread_store *st,
    unsigned *nrecovered)
{
	struct tx_recover_ctx	c = { ex, st, 0 };
	unsigned		n;

	n = yx_thread_tx_left(st, tx_recover_one, &c);
	if (nrecovered != NULL)
		*nrecovered = c.nrecovered;
	return n;
}
