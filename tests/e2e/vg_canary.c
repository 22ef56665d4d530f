/* SPDX-License-Identifier: MIT */
/*
 * vg_canary.c - the known-bad program of tests/e2e/test_valgrind.py: a
 * forked child (as the daemon's workers are) branches on heap memory it
 * never wrote and loses blocks it allocated; the parent is clean. The test
 * runs it under the options it runs the daemon with and requires its log
 * check to flag the child and pass the parent, so a check that cannot see
 * a worker's errors fails. Compiled by the test itself, without -Werror.
 */
#include <sys/wait.h>

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static int __attribute__((noinline))
canary_pick(const char *p)
{
	return p[3] == 'x';	/* never written: uninitialised */
}

static void __attribute__((noinline))
canary_lose(void)
{
	char	*q;
	int	 i;

	for (i = 0; i < 4; i++) {
		q = malloc(64);
		if (q != NULL)
			q[0] = (char)i;	/* then lost: definitely */
	}
}

int
main(void)
{
	char	*p;
	pid_t	 pid;

	if ((pid = fork()) == -1)
		return 1;
	if (pid == 0) {
		if ((p = malloc(16)) == NULL)
			_exit(1);
		if (canary_pick(p))
			puts("x");
		free(p);
		canary_lose();
		exit(0);
	}
	return waitpid(pid, NULL, 0) == pid ? 0 : 1;
}
