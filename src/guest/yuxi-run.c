/* SPDX-License-Identifier: MIT */
/*
 * yuxi-run.c - the in-sandbox command runner (a tiny static binary).
 *
 * Bind-mounted read-only into every sandbox at /opt/yuxi/bin/yuxi-run; the
 * executor runs each command as
 *	yuxi-run [-t SECONDS] [-C DIR] -- /bin/sh -c 'CMD'
 * The Engine API can neither time out nor kill an exec, so this program
 * does: it starts the command in its own process group with stdin from
 * /dev/null and stdout+stderr on one pipe (so output keeps its write order),
 * copies the pipe to its own stdout, and
 *   - at the deadline kills the whole group with SIGKILL and exits 124;
 *   - on SIGTERM/SIGINT/SIGHUP kills the group and exits 128+N;
 *   - when the command's main process exits, kills what is left of the group
 *     (background jobs included: nothing a command started outlives it; a
 *     command that wants a daemon must use setsid itself), copies what the
 *     pipe already holds and exits with the command's status (128+N when it
 *     was killed by signal N).
 * Its own failures: 125 usage, 126 cannot chdir / not executable, 127 not
 * found. No dynamic allocation; it links nothing but libc. How the command
 * is spawned and supervised is run_core.c, the same code the in-sandbox
 * agent runs (docs/agent.md), so both exec paths behave alike.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "guest/run_core.h"

extern char **environ;

static void
run_msg(const char *a, const char *b, const char *c)
{
	char	line[1024];

	(void)!write(2, line, run_fmt(line, sizeof(line), a, b, c));
}

/* Copy output to stdout; 0, or -1 when the reader is gone. */
static int
run_copy_out(void *arg, const char *p, size_t n)
{
	(void)arg;
	return run_write_all(1, p, n, 0);
}

/* The signalfd reported: SIGTERM, SIGINT or SIGHUP end the run. */
static int
run_on_signal(void *arg)
{
	struct signalfd_siginfo	ssi;
	int			fd = *(int *)arg;

	if (read(fd, &ssi, sizeof(ssi)) != sizeof(ssi))
		return -1;
	return 128 + (int)ssi.ssi_signo;
}

/* Parse argv; fills the timeout, directory and command. 0 or -1. */
static int
run_args(int argc, char **argv, long *timeout, const char **dir,
    char ***cmd)
{
	char	*end;
	int	 c;

	while ((c = getopt(argc, argv, "+t:C:")) != -1) {
		switch (c) {
		case 't':
			errno = 0;
			*timeout = strtol(optarg, &end, 10);
			if (errno || *end != '\0' || *timeout < 0 ||
			    *timeout > 86400)
				return -1;
			break;
		case 'C':
			*dir = optarg;
			break;
		default:
			return -1;
		}
	}
	if (optind >= argc)
		return -1;
	*cmd = argv + optind;
	return 0;
}

int
main(int argc, char *argv[])
{
	struct run_cmd	 c;
	struct run_args	 a;
	sigset_t	 mask;
	const char	*dir = NULL;
	char		**cmd = NULL;
	long		 timeout = 0;
	int		 sfd, e, st;

	if (run_args(argc, argv, &timeout, &dir, &cmd) == -1) {
		run_msg("usage: yuxi-run [-t SECONDS] [-C DIR] -- COMMAND "
			"[ARG...]",
		    "", "");
		return RUN_STATUS_USAGE;
	}
	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	(void)signal(SIGPIPE, SIG_IGN);
	(void)signal(SIGCHLD, SIG_DFL);	/* an ignored one would reap for us */
	run_init();
	if (sigprocmask(SIG_BLOCK, &mask, NULL) == -1 ||
	    (sfd = signalfd(-1, &mask, SFD_CLOEXEC)) == -1) {
		run_msg("setup failed: ", strerror(errno), "");
		return RUN_STATUS_USAGE;
	}
	memset(&c, 0, sizeof(c));
	a.cwd = dir;
	a.argv = cmd;
	a.envp = environ;
	a.in = a.ctl = a.tty = -1;
	if ((e = run_spawn(&c, &a, -1)) != 0) {
		run_msg("cannot start: ", strerror(e), "");
		return RUN_STATUS_USAGE;
	}
	c.deadline_ms = timeout > 0 ? yx_mono_ms() + timeout * 1000LL : 0;
	c.watch_fd = sfd;
	c.watch_events = POLLIN;
	c.on_watch = run_on_signal;
	c.out = run_copy_out;
	c.arg = &sfd;
	st = run_supervise(&c);
	return st == RUN_BROKEN ? 128 + SIGPIPE : st;
}
