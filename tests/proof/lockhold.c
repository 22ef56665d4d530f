/* SPDX-License-Identifier: MIT */
/*
 * lockhold.c - test helper of the proof suite (docs/security.md, group 9):
 * attaches to the shared provider table named on the command line, takes
 * its lock exactly as a worker does (yx_table_lock), says "locked" on
 * stdout and stops itself with SIGSTOP while still holding the lock. The
 * test then shows that requests get 503 within the lock timeout instead of
 * hanging, and that after SIGKILL of this process the next locker repairs
 * the table (EOWNERDEAD) and the service recovers. Continued with SIGCONT
 * it unlocks and exits 0. Exit 1: the table could not be opened or locked.
 */
#include "config.h"

#include <signal.h>
#include <stdio.h>

#include "yuxi/error.h"
#include "yuxi/shm_table.h"

int
main(int argc, char **argv)
{
	struct yx_errctx	 err;
	struct yx_table		*t = NULL;
	int			 status = 1;

	if (argc != 2) {
		fprintf(stderr, "usage: lockhold /shm-name\n");
		return 2;
	}
	err.code = YX_OK;
	err.msg[0] = '\0';
	if (yx_table_open(&t, argv[1], 0, 0, &err) != YX_OK) {
		fprintf(stderr, "lockhold: open %s: %s\n", argv[1], err.msg);
		goto done;
	}
	if (yx_table_lock(t, &err) != YX_OK) {
		fprintf(stderr, "lockhold: lock: %s\n", err.msg);
		goto done;
	}
	printf("locked\n");
	fflush(stdout);
	raise(SIGSTOP);
	yx_table_unlock(t);
	status = 0;
done:
	yx_table_close(t);
	return status;
}
