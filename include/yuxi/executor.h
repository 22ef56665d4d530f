/* SPDX-License-Identifier: MIT */
/*
 * yuxi/executor.h - run one agent command in a thread's sandbox (docs/api.md
 * "POST /api/execute"; docs/design.md §4 "Commands").
 *
 * The executor checks the command path policy, acquires the thread's sandbox
 * through the provider (lazily creating it), runs the command through the
 * in-sandbox runner (process group, timeout kills the whole tree, exit 124),
 * keeps at most cfg->output_limit bytes in memory while spilling the full text
 * to /home/yuxi/user-data/large_tool_results/ when it is longer, masks host
 * paths in the output and releases its hold on the sandbox.
 *
 * Ownership: struct yx_executor is heap (yx_executor_new/_free) and borrows
 * the config and driver, which must outlive it. One per process (after fork).
 */
#ifndef YUXI_EXECUTOR_H
#define YUXI_EXECUTOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "yuxi/agents.h"
#include "yuxi/config.h"
#include "yuxi/error.h"
#include "yuxi/threads.h"
#include "yuxi/path.h"
#include "yuxi/skills.h"

struct yx_executor;
struct yx_driver;
struct yx_table;
struct yx_provider;

struct yx_exec_request {
	const char			*thread_id;	/* validated by the caller */
	const char			*owner;		/* user that owns the thread */
	const char			*agent_id;	/* may be "" */
	const struct yx_skill_set	*skills;	/* visible skills; may be NULL */
	const struct yx_profile		*profile;	/* yx_agents_profile(); NULL:
							 * the service's settings */
	const char			*command;
	int				 timeout_sec;	/* <= 0: the profile's default;
							 * capped at its max (600) */
	/* the thread's sandbox user (uid 0: cfg's shared one); with own_uid
	 * its user-data must belong to uid (else: not found) and the
	 * thread's passwd/group files are mounted */
	unsigned			 uid, gid;
	bool				 own_uid;
	int64_t				 instance;	/* the thread's created_ms */
};

struct yx_exec_output {
	char	*output;		/* heap, NUL-terminated, masked; caller: _fini */
	size_t	 len;
	int	 exit_code;
	bool	 truncated;
	bool	 timed_out;
	int64_t	 duration_ms;
	char	 full_output_path[YX_VPATH_MAX];	/* "" unless truncated */
	unsigned layout_repaired;	/* bit i: yx_broker_layout[i] was not a
					 * directory and has been made again */
	const char *refused;	/* "path_not_allowed" when the command path
				 * policy refused it (exit 126, output the
				 * reason, nothing ran); NULL otherwise */
};

struct yx_executor	*yx_executor_new(const struct yx_config *cfg, struct yx_table *table,
    struct yx_driver *drv, struct yx_errctx *err);
void			 yx_executor_free(struct yx_executor *ex);
/* The executor's provider (borrowed), for release/destroy/list callers. */
struct yx_provider	*yx_executor_provider(struct yx_executor *ex);

/*
 * Run req->command. YX_OK with *out filled (the command's own failure is an
 * exit code, not an error; a command the path policy refuses is one too:
 * exit 126, `refused` set, the reason as output, no container touched);
 * YX_E_CAPACITY when no sandbox can be had; YX_E_BACKEND_UNAVAILABLE /
 * YX_E_IMAGE_MISSING when the engine fails. out is zeroed first.
 */
int	yx_executor_run(struct yx_executor *ex, const struct yx_exec_request *req,
     struct yx_exec_output *out, struct yx_errctx *err);
void	yx_exec_output_fini(struct yx_exec_output *out);

/* Fill the thread fields of req (id, owner, agent, user) from t. */
void	yx_exec_request_thread(struct yx_exec_request *req,
    const struct yx_thread			   *t);

#endif /* YUXI_EXECUTOR_H */
