/* SPDX-License-Identifier: MIT */
/*
 * test_tablelock.c - the lock of a shared table's owner
 * (src/common/tablelock.c): a second taker, in another process, gets
 * YX_E_BUSY with the holder's line; the lock is the open file
 * description's, so a child forked by the holder keeps it after the
 * holder itself dropped its descriptor... until the child exits too; a
 * holder that dies (SIGKILL) leaves no stale owner; dropping it removes
 * the lock object.
 */
#include "config.h"

#include <sys/stat.h>
#include <sys/wait.h>

#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "yuxi/error.h"
#include "yuxi/tablelock.h"

static char	name[64];

static void
setup(void)
{
	snprintf(name, sizeof(name), "/yxtltest%ld", (long)getpid());
}

static void
teardown(void)
{
	char path[128];

	snprintf(path, sizeof(path), "/dev/shm%s.lock", name);
	(void)unlink(path);
}

TestSuite(tablelock, .init = setup, .fini = teardown);

/* In a child: try to take it; exit 0 taken, 1 busy with want in the line, 2 else. */
static int
other_try(const char *want)
{
	struct yx_tablelock	l;
	char			holder[256];
	pid_t			pid;
	int			rc, ws;

	if ((pid = fork()) == 0) {
		rc = yx_tablelock_take(&l, name, "the other", holder, sizeof(holder));
		if (rc == YX_OK)
			_exit(0);
		_exit(rc == YX_E_BUSY && strstr(holder, want) != NULL ? 1 : 2);
	}
	cr_assert_gt(pid, 0);
	cr_assert_eq(waitpid(pid, &ws, 0), pid);
	return WIFEXITED(ws) ? WEXITSTATUS(ws) : 3;
}

Test(tablelock, second_taker_is_refused_with_the_holders_line)
{
	struct yx_tablelock	l;
	char			holder[256], path[128];
	struct stat		sb;

	cr_assert_eq(yx_tablelock_take(&l, name, "instance 'a' (master pid 1)", holder,
			 sizeof(holder)),
	    YX_OK, "%s", holder);
	cr_assert_eq(other_try("instance 'a' (master pid 1)"), 1);
	snprintf(path, sizeof(path), "/dev/shm%s.lock", name);
	cr_assert_eq(stat(path, &sb), 0);
	cr_assert_eq(sb.st_mode & 0777, 0644);
	yx_tablelock_drop(&l);
	cr_assert_neq(stat(path, &sb), 0, "the lock object is removed");
	yx_tablelock_drop(&l);	/* idempotent */
	cr_assert_eq(other_try(""), 0);
}

Test(tablelock, held_while_a_forked_child_lives)
{
	struct yx_tablelock	l;
	char			holder[256];
	int			p[2], ws;
	pid_t			child;
	char			c;

	cr_assert_eq(yx_tablelock_take(&l, name, "master", holder, sizeof(holder)), YX_OK);
	cr_assert_eq(pipe(p), 0);
	if ((child = fork()) == 0) {	/* a worker: inherits it, lives on */
		close(p[1]);
		(void)read(p[0], &c, 1);
		_exit(0);
	}
	close(p[0]);
	close(l.fd);	/* the master's descriptor gone, not the child's */
	l.fd = -1;
	cr_assert_eq(other_try("master"), 1);
	close(p[1]);	/* the child leaves */
	cr_assert_eq(waitpid(child, &ws, 0), child);
	cr_assert_eq(other_try(""), 0);
}

Test(tablelock, a_killed_holder_leaves_no_owner)
{
	struct yx_tablelock	l;
	char			holder[256];
	int			ws;
	pid_t			pid;

	if ((pid = fork()) == 0) {
		if (yx_tablelock_take(&l, name, "doomed", holder, sizeof(holder)) != YX_OK)
			_exit(1);
		pause();
		_exit(0);
	}
	cr_assert_gt(pid, 0);
	for (int i = 0; i < 100 && other_try("doomed") != 1; i++)
		usleep(10 * 1000);
	cr_assert_eq(other_try("doomed"), 1);
	kill(pid, SIGKILL);
	cr_assert_eq(waitpid(pid, &ws, 0), pid);
	cr_assert_eq(other_try(""), 0);
}

Test(tablelock, name_too_long)
{
	struct yx_tablelock	l;
	char			holder[256], big[100];

	memset(big, 'x', sizeof(big) - 1);
	big[0] = '/';
	big[sizeof(big) - 1] = '\0';
	cr_assert_eq(yx_tablelock_take(&l, big, "x", holder, sizeof(holder)),
	    YX_E_BAD_REQUEST);
	cr_assert(strstr(holder, "too long") != NULL);
}
