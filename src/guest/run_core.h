/* SPDX-License-Identifier: MIT */
/*
 * run_core.h - how one command runs inside a sandbox; shared by the two
 * in-sandbox helpers, yuxi-run (the engine exec path) and yuxi-agent (the
 * agent path), so that both paths are the same code: process group,
 * descriptors, combined output, timeout, statuses.
 *
 * libc only, no allocation (the helpers are static binaries).
 *
 * Semantics (docs/api.md "execute", docs/agent.md):
 *  - the command is spawned (vfork + exec, no copy of the caller) in its own
 *    process group with stdin on /dev/null (or a pipe of a background
 *    process's keeper) and stdout+stderr on one pipe, so
 *    output keeps its write order; it inherits descriptors 0, 1 and 2 only
 *    and gets SIGKILL if its supervisor dies (PR_SET_PDEATHSIG);
 *  - at the deadline the whole group is killed (SIGKILL): status 124;
 *  - when the main process exits, what is left of the group is killed
 *    (background jobs included: a command that wants a daemon must setsid
 *    itself), then what the pipe already holds is copied (bounded), and
 *    its status is returned: the exit code, or 128+N when killed by
 *    signal N.
 */
#ifndef YUXI_RUN_CORE_H
#define YUXI_RUN_CORE_H

#include <stddef.h>

#include "yuxi/clock.h"
#include <sys/types.h>

#define RUN_STATUS_TIMEOUT	124
#define RUN_STATUS_USAGE	125
#define RUN_STATUS_NOEXEC	126
#define RUN_STATUS_NOTFOUND	127
#define RUN_BROKEN		(-1)	/* the output sink failed */

/* Output sink: 0, or -1 when the reader is gone. */
typedef int (*run_out_fn)(void *arg, const char *p, size_t n);

struct run_cmd {
	pid_t		 pid;		/* main process = process group id */
	int		 rfd;		/* read end of the output pipe */
	int		 pidfd;		/* -1: polled with waitid instead */
	long long	 deadline_ms;	/* yx_mono_ms() clock; 0 = none */
	/*
	 * Optional extra descriptor: when it reports watch_events, on_watch
	 * says whether to go on (-1) or the status to end with (the group is
	 * then killed). yuxi-run watches its signalfd, the agent its client.
	 */
	int		 watch_fd;
	short		 watch_events;
	int		(*on_watch)(void *arg);
	run_out_fn	 out;		/* may be NULL once rfd is -1 (the */
	void		*arg;		/* caller handed the pipe to a reader) */
};

/*
 * Note which signals the caller ignores, once its dispositions are set, so
 * that a spawned command gets only those reset to default (it would inherit
 * them ignored). Optional: without it all are reset, a few syscalls more.
 */
void		run_init(void);

/* "yuxi: a b c\n" into buf (truncated to fit); its length. */
/* Write all n bytes of p to fd (a socket: send() without SIGPIPE),
 * restarting on EINTR. 0, or -1 when the reader is gone. */
int		run_write_all(int fd, const void *p, size_t n, int sock);
size_t		run_fmt(char *buf, size_t len, const char *a, const char *b,
    const char *c);
/* The agent's line on fd 2: fmt holds its "yuxi-agent: " and its newline;
 * cut to 511 bytes (newline and all). */
void		run_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* What to run: argv (PATH searched as execvpe does) with envp, in cwd. */
struct run_args {
	const char	*cwd;		/* NULL: stay */
	char *const	*argv;
	char *const	*envp;
	int		 in;		/* its stdin; -1: /dev/null */
	/* a session's shell (agent_session.c): this descriptor becomes its
	 * RUN_CTL_FD, where it reports each command's end; <= 2: none */
	int		 ctl;
	/* a terminal's slave (agent_keeper.c "pty"): the command leads a
	 * new session with it as controlling terminal and as 0, 1 and 2
	 * (in and the output pipe are then unused); <= 2: none */
	int		 tty;
};
#define RUN_CTL_FD	9

/*
 * Spawn *a in its own process group, stdout and stderr on out (the caller
 * keeps its own copy, and closes it when it likes), or, with out -1, on a
 * new pipe whose read end becomes c->rfd; with a->tty, on that terminal
 * (out is then ignored, c->rfd -1). Fills c->pid, c->rfd (-1 with a
 * given out), c->pidfd. 0, or the errno of a failed pipe, dup or vfork.
 * When the child cannot change to a->cwd or exec a->argv it says why on
 * its output and exits 126 (cannot change directory, not executable) or
 * 127 (not found), as yuxi-run always has, so both exec paths report it
 * the same way.
 */
int		run_spawn(struct run_cmd *c, const struct run_args *a, int out);

/*
 * A primed shell (yuxi-agent's fast path, docs/agent.md "Primed shells"):
 * "/bin/sh -s" started before its command is known, with envp, in the
 * directory dirfd, in its own group like any command, stdin the read end
 * script (the command arrives there, with a prefix that moves stdin to
 * /dev/null and stdout+stderr to the host's pipe), stdout and stderr on
 * /dev/null meanwhile, and the pipe ack's write end on RUN_PRIME_ACK_FD
 * (the prefix writes one byte there before the command's first word, then
 * closes it). script and ack: O_CLOEXEC, > 2, not RUN_PRIME_ACK_FD; the
 * caller closes its copies. Fills c->pid and c->pidfd (c->rfd -1). 0 or
 * an errno. A child that cannot set up exits 125, one that cannot exec
 * the shell 126: either way it never acknowledges.
 */
#define RUN_PRIME_ACK_FD	9
struct run_prime_args {
	char *const	*envp;
	int		 dirfd;
	int		 script;
	int		 ack;
};
int		run_prime(struct run_cmd *c, const struct run_prime_args *a);
/* Supervise until the end (see above); the status or RUN_BROKEN. Closes
 * c->rfd and c->pidfd and reaps the main process. */
int		run_supervise(struct run_cmd *c);

#endif /* YUXI_RUN_CORE_H */
