/* SPDX-License-Identifier: MIT */
/*
 * test_runner.c - yuxi-run on the host (it is a static binary, so it runs
 * here exactly as in a sandbox): combined output order, exit codes, signal
 * statuses, chdir and exec failures, the timeout killing the whole process
 * group, and the group being killed after a normal exit too.
 */
#include "config.h"

#include <fcntl.h>
#include <stdarg.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>

static char runner[4096];

static void
find_runner(void)
{
	const char *b = getenv("top_builddir");

	snprintf(runner, sizeof(runner), "%s/yuxi-run", b ? b : ".");
	cr_assert(access(runner, X_OK) == 0, "%s not built", runner);
}

/* Run yuxi-run with args; capture stdout+stderr into out. Returns status. */
static int
run(char *out, size_t outlen, double *secs, const char *a0, ...)
{
	const char	*argv[32];
	struct timespec	 t0, t1;
	va_list		 ap;
	int		 p[2], st, n = 0;
	size_t		 len = 0;
	ssize_t		 r;
	pid_t		 pid;

	find_runner();
	argv[n++] = runner;
	argv[n++] = a0;
	va_start(ap, a0);
	while (n < 31 && (argv[n] = va_arg(ap, const char *)) != NULL)
		n++;
	va_end(ap);
	argv[n] = NULL;
	cr_assert(pipe(p) == 0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if ((pid = fork()) == 0) {
		dup2(p[1], 1);
		dup2(p[1], 2);
		close(p[0]);
		close(p[1]);
		execv(argv[0], (char **)argv);
		_exit(99);
	}
	close(p[1]);
	while (len + 1 < outlen && (r = read(p[0], out + len, outlen - 1 - len)) > 0)
		len += (size_t)r;
	out[len] = '\0';
	close(p[0]);
	waitpid(pid, &st, 0);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (secs != NULL)
		*secs = (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
	cr_assert(WIFEXITED(st), "runner died of a signal");
	return WEXITSTATUS(st);
}

/* Count running processes whose command line contains `pat`. */
static int
count_procs(const char *pat)
{
	char	cmd[256], line[64];
	FILE	*f;
	int	n = -1;

	snprintf(cmd, sizeof(cmd), "pgrep -f -c -- '%s'", pat);
	if ((f = popen(cmd, "r")) == NULL)
		return -1;
	if (fgets(line, sizeof(line), f) != NULL)
		n = atoi(line);
	pclose(f);
	return n;
}

Test(runner, output_order_and_exit_code)
{
	char out[4096];

	cr_assert_eq(run(out, sizeof(out), NULL, "--", "/bin/sh", "-c",
			 "for i in 1 2 3; do echo out$i; echo err$i >&2; done; exit 42",
			 NULL),
	    42);
	cr_assert_str_eq(out, "out1\nerr1\nout2\nerr2\nout3\nerr3\n");
}

Test(runner, stdin_is_dev_null)
{
	char out[256];

	cr_assert_eq(run(out, sizeof(out), NULL, "--", "/bin/sh", "-c",
			 "cat; echo end", NULL),
	    0);
	cr_assert_str_eq(out, "end\n");
}

Test(runner, signal_status)
{
	char out[256];

	cr_assert_eq(run(out, sizeof(out), NULL, "--", "/bin/sh", "-c",
			 "kill -9 $$", NULL),
	    137);
	cr_assert_eq(run(out, sizeof(out), NULL, "--", "/bin/sh", "-c",
			 "kill -TERM $$", NULL),
	    143);
}

Test(runner, chdir)
{
	char out[512];

	cr_assert_eq(run(out, sizeof(out), NULL, "-C", "/", "--", "/bin/pwd",
			 NULL),
	    0);
	cr_assert_str_eq(out, "/\n");
	cr_assert_eq(run(out, sizeof(out), NULL, "-C", "/nonexistent-dir",
			 "--", "/bin/pwd", NULL),
	    126);
	cr_assert(strstr(out, "cannot change directory to /nonexistent-dir"),
	    "%s", out);
}

Test(runner, exec_failure)
{
	char out[512];

	cr_assert_eq(run(out, sizeof(out), NULL, "--", "/nonexistent-prog",
			 NULL),
	    127);
	cr_assert(strstr(out, "/nonexistent-prog: No such file"), "%s", out);
	cr_assert_eq(run(out, sizeof(out), NULL, "--", "/etc/passwd", NULL),
	    126);
	cr_assert_eq(run(out, sizeof(out), NULL, "-t", "x", "--", "true",
			 NULL),
	    125);
	cr_assert_eq(run(out, sizeof(out), NULL, NULL), 125);
}

Test(runner, timeout_kills_group)
{
	char	out[512];
	double	secs;

	/* a marker argument makes the processes easy to find */
	cr_assert_eq(run(out, sizeof(out), &secs, "-t", "1", "--", "/bin/sh",
			 "-c", "echo before; sleep 317 & sleep 317; : yxrt-timeout", NULL),
	    124);
	cr_assert_str_eq(out, "before\n");
	cr_assert(secs >= 0.9 && secs < 3.0, "took %.2f s", secs);
	usleep(100 * 1000);
	cr_assert_eq(count_procs("[y]xrt-timeout"), 0);
	cr_assert_eq(count_procs("^sleep 317$"), 0);
}

Test(runner, background_killed_after_exit)
{
	char	out[512];
	double	secs;

	cr_assert_eq(run(out, sizeof(out), &secs, "--", "/bin/sh", "-c",
			 "sh -c 'sleep 299; : yxrt-bg' & echo started", NULL),
	    0);
	cr_assert_str_eq(out, "started\n");
	cr_assert(secs < 2.0, "took %.2f s: it waited for the background", secs);
	usleep(100 * 1000);
	cr_assert_eq(count_procs("[y]xrt-bg"), 0);
}

Test(runner, large_output_complete)
{
	char	*out = malloc(600000);
	size_t	 n;

	cr_assert_eq(run(out, 600000, NULL, "--", "/bin/sh", "-c",
			 "head -c 500000 /dev/zero | tr '\\0' x", NULL),
	    0);
	n = strlen(out);
	cr_assert_eq(n, 500000);
	free(out);
}
