/* SPDX-License-Identifier: MIT */
/*
 * exec_int.h - executor internals shared with tests and benchmarks (private
 * to src/exec; docs/agent.md "Transport selection").
 *
 * The executor runs a command through the in-sandbox agent when it answers
 * and through the engine exec path (driver exec of the runner) otherwise.
 * The environment picks the default (YUXI_EXEC_AGENT=auto|off|only, read by
 * yx_executor_new); tests force one path with yx_executor_set_transport()
 * and read the counters to prove which path ran.
 */
#ifndef YUXI_EXEC_INT_H
#define YUXI_EXEC_INT_H

#include <stdint.h>

#include "yuxi/executor.h"
#include "exec/agent_client.h"

enum yx_exec_transport {
	YX_EXEC_TRANSPORT_AUTO,		/* agent, else the engine path */
	YX_EXEC_TRANSPORT_ENGINE,	/* never the agent (no agent mounts) */
	YX_EXEC_TRANSPORT_AGENT,	/* agent only: fail instead of falling back */
};

struct yx_exec_stats {
	uint64_t	agent_runs;	/* commands answered by the agent */
	uint64_t	engine_runs;	/* commands run through the driver */
	uint64_t	agent_starts;	/* agent start execs that succeeded */
	uint64_t	agent_refused;	/* agent attempts that fell back */
};

/* Select the transport; AGENT/AUTO need the agent binary (see _new). */
void	yx_executor_set_transport(struct yx_executor *ex,
    enum yx_exec_transport			   t);
void	yx_executor_set_agent_opts(struct yx_executor *ex,
    const struct yx_agent_opts			   *o);
/* Copy the counters into *st. */
void	yx_executor_stats(const struct yx_executor *ex,
    struct yx_exec_stats			*st);
/*
 * Make sure <saves_dir>/etc/hosts holds the sandboxes' /etc/hosts
 * (etc_hosts.c); its path into path. YX_OK, or YX_E_IO with path "" (logged:
 * sandboxes are then made without it, with the engine's network setup).
 */
int	yx_exec_hosts_setup(const char *saves_dir, char *path, size_t len);
/*
 * Make sure <saves_dir>/mnt holds the sandboxes' /mnt (the symlinks
 * user-data and skills to the roots; etc_hosts.c); its path into path.
 * YX_OK, or YX_E_IO with path "" (logged: sandboxes then have no /mnt).
 */
int	yx_exec_mnt_setup(const char *saves_dir, char *path, size_t len);

#endif /* YUXI_EXEC_INT_H */
