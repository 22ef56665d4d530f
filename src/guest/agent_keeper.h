/* SPDX-License-Identifier: MIT */
/*
 * agent_keeper.h - the keeper of one background process inside the
 * sandbox (docs/agent.md "Background processes"); called by yuxi-agent's
 * handler for a request that ends with 'B' (agent_proto.h).
 *
 * libc only, no heap: the output ring is one anonymous mapping of the
 * requested size, made once (untouched pages cost nothing).
 */
#ifndef YUXI_AGENT_KEEPER_H
#define YUXI_AGENT_KEEPER_H

#include <stddef.h>

#include "guest/run_core.h"

struct keep_req {
	const struct run_args	*args;		/* argv, env, cwd (in is set here) */
	long			 timeout;	/* lifetime in seconds, 0: none */
	const char		*id;		/* [a-z0-9], checked by the caller */
	size_t			 ring;		/* output bytes kept */
	const char		*dir;		/* agent.sock's directory */
	int			 recdir;	/* the records' directory, -1: none */
	/* 'P' (agent_proto.h): NULL, a process on pipes; "pty COLS ROWS",
	 * on a terminal; "session SHELL IDLE", a session's shell */
	const char		*mode;
};

/*
 * Become the keeper of k's process: listen on <dir>/proc.<id>.sock, start
 * the process (own group, stdin and stdout+stderr on pipes of ours, or on
 * a terminal; or a session's shell), answer 'S' on conn (or 'F' when it
 * cannot start) and close conn; then keep its output, serve the host's
 * operations, enforce the lifetime, and leave <dir>/proc.<id>.exit when it
 * ends. Exits: after 'K', or 10 minutes after the process ended (a
 * session's keeper: 30 seconds).
 */
void	agent_keep(int conn, const struct keep_req *k)
    __attribute__((noreturn));

#endif /* YUXI_AGENT_KEEPER_H */
