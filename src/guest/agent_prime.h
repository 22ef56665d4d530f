/* SPDX-License-Identifier: MIT */
/*
 * agent_prime.h - primed shells: the agent's fast path for "/bin/sh -c CMD"
 * (docs/agent.md "Primed shells").
 *
 * Starting /bin/sh is most of what a short command costs inside the box
 * (~0.5 of ~0.75 ms here: exec, the dynamic loader, the shell's start).
 * So every spare handler starts "/bin/sh -s" ahead of its request, with
 * the directory and environment the last "/bin/sh -c" request had (the
 * executor sends the same ones for every command of a sandbox), waiting on
 * a pipe for its script. When the request that comes is such a command
 * with that very directory and environment, the handler writes the
 * command there behind a prefix that puts stdin on /dev/null and stdout
 * and stderr on the host's pipe, says "started" through descriptor 9,
 * closes it and clears the -s flag: from then on the shell is what
 * "/bin/sh -c CMD" would be (same $0, $-, $#, line numbers, descriptors,
 * error messages). Anything else (another argv, environment or directory,
 * a command longer than one atomic pipe write, a primed shell that died,
 * a first line that does not parse) and the handler drops the primed
 * shell and spawns the command as before: a command runs exactly once,
 * one way or the other, since the shell runs nothing of it before it
 * acknowledged.
 *
 * libc only, no allocation; one primed shell per process (a spare).
 */
#ifndef YUXI_AGENT_PRIME_H
#define YUXI_AGENT_PRIME_H
#include <stddef.h>
#include <sys/types.h>

#include "guest/run_core.h"

/* The daemon, before its first spare: the key its children share. */
void	prime_init(void);

/* A spare, before it waits for a connection: start a primed shell for
 * the last published key, if there is one. Failures leave none. */
void	prime_start(void);

/* What a spare without a primed shell also waits on (readable once a key
 * is published: then prime_start), or -1. The spares forked before the
 * first command of a sandbox thus get their shells after it. */
int	prime_wait_fd(void);

/*
 * A request came (cwd may be NULL). When it is "/bin/sh -c CMD", publish
 * its directory and environment for the next spares. Returns the primed
 * shell's pid when it fits the request (then prime_run), else 0 after
 * dropping a primed shell that does not.
 */
pid_t	prime_fits(const char *cwd, char *const *argv, size_t nargv,
    char *const *env, size_t nenv);

/*
 * Run cmd in the primed shell prime_fits() accepted, its output on *out
 * (the host's pipe). Waits for the shell's acknowledgement, the deadline
 * (yx_mono_ms clock, 0 = none) or the host's hang-up on conn. Returns 1
 * when the command runs or may run (c->pid and c->pidfd filled, c->rfd
 * -1: run_supervise() sees the deadline or hang-up at once), with *out
 * closed and set to -1 once the shell holds its own copy; 0 when the shell
 * ended without running anything (it is reaped: spawn the command anew).
 */
int	prime_run(struct run_cmd *c, const char *cmd, int *out, int conn,
    long long deadline);

/* Drop the primed shell, if any (kill and reap it). */
void	prime_drop(void);

#endif /* YUXI_AGENT_PRIME_H */
