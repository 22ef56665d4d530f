/* SPDX-License-Identifier: MIT */
/*
 * yuxi/executor.h - run one agent command in a thread's sandbox (docs/api.md
 * "POST /api/execute"; docs/design.md §4 "Commands").
 *
 * The executor checks the command path policy, acquires the thread's sandbox
 * through the provider (lazily creating it) and runs the command through the
 * in-sandbox agent, over its unix socket (docs/agent.md); only where the
 * agent cannot be started does an engine exec of the in-sandbox runner run
 * it instead, the fallback (YUXI_EXEC_AGENT=off: always). Either way the
 * command has its own process group and a timeout kills the whole tree (exit
 * 124). The executor keeps at most cfg->output_limit bytes in memory while
 * spilling the full text to /home/yuxi/user-data/large_tool_results/ when it
 * is longer, masks host paths in the output and releases its hold on the
 * sandbox. src/exec/exec_int.h lists the files that do each step.
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

#define YX_EXEC_USER_ENV_MAX	64		/* a request's env entries */
#define YX_EXEC_USER_ENV_BYTES	(32 << 10)	/* ... names and values in all */

struct yx_executor;
struct yx_driver;
struct yx_table;
struct yx_provider;

/* A transactional command (docs/api.md "Transactions"). */
enum yx_tx_mode {
	YX_TX_NONE = 0,
	YX_TX_COMMIT,		/* commit_on_success */
	YX_TX_DISCARD,
};

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
	int				 idle_timeout;	/* the thread's, s; 0: cfg's */
	/*
	 * The caller's working directory and environment (docs/api.md "cwd",
	 * "env"; checked by the caller: yx_exec_opts_parse). cwd: a canonical
	 * path of the namespace (NULL: the workspace), which must be a
	 * directory (else YX_E_CWD_NOT_FOUND); env: nenv "NAME=value" set over
	 * the profile's environment (borrowed).
	 */
	const char			*cwd;
	const char *const		*env;
	size_t				 nenv;
	/*
	 * The stream form (docs/api.md "POST /api/execute", "stream"): with
	 * on_stream set, each piece of the output within the cap goes to it,
	 * masked, as the command writes it, instead of into out->output (the
	 * cap, the spill file and the result fields are as always; a refusal's
	 * reason is still out->output). on_tick (may be NULL) is called right
	 * after the command started and then every YX_EXEC_TICK_MS while it
	 * runs. An error from either stops the command (its process group is
	 * killed) and is what yx_executor_run returns.
	 */
	int				(*on_stream)(void *arg, const char *data,
	    size_t len);
	int				(*on_tick)(void *arg);
	void				*stream_arg;
	/*
	 * A session's command (docs/api.md "Sessions"): run it in the shell
	 * of this session (its keeper's id; cwd and env are then the
	 * session's own) instead of a new /bin/sh -c. NULL: a command.
	 */
	const char			*session_id;
	/*
	 * A transaction: the command runs in a container of its own over a
	 * copy-on-write layer of the thread's files; its changes are applied
	 * (YX_TX_COMMIT, exit 0, no conflict) or dropped. The caller holds the
	 * thread's transaction lock (yx_thread_txlock). Never with
	 * session_id (the caller runs a session's transactional command as a
	 * command in the session's directory); processes it leaves running
	 * are killed with its container and the changes are not applied.
	 */
	enum yx_tx_mode			 tx;
};

/* What a session's command adds to its output (yx_exec_output). */
struct yx_exec_session {
	bool	 busy;		/* another command of it ran: nothing ran */
	bool	 ended;		/* its shell ended (exit_code is its status);
				 * when nothing ran: before this command */
	bool	 ran;		/* the command ran (cwd is set) */
	char	 cwd[4096];	/* the shell's directory after the command */
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
	struct yx_exec_session *session;	/* caller storage, filled for
						 * a session's command; NULL */
	/* a transaction's outcome: applied, and its reply fields as JSON
	 * text ("applied", "changes", "changes_total", "conflicts"...; heap,
	 * freed by _fini); NULL for a plain command */
	bool	 tx_applied;
	char	*tx_json;
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

/*
 * Start req->command as the thread's background process `id` (docs/api.md
 * "Background processes"): the same policy check, host layout, sandbox and
 * agent as a command, then the in-sandbox agent's keeper owns it
 * (docs/agent.md). req->timeout_sec is its lifetime (not capped at 600 s);
 * sp says which process, the output bytes it keeps, its mode. YX_OK once the keeper said it started;
 * YX_E_PATH_NOT_ALLOWED (refused by the path policy, nothing ran);
 * YX_E_AGENT_UNAVAILABLE when the agent is not used or cannot be started
 * (the engine exec path cannot keep a process); acquire's errors.
 */
/* A background process to start (yx_executor_spawn). */
struct yx_spawn {
	const char	*id;		/* [a-z0-9], <= 32 bytes */
	size_t		 ring;		/* output bytes its keeper keeps */
	/* NULL: on pipes; "pty COLS ROWS": on a terminal; "session SHELL
	 * IDLE": a session's shell (docs/agent.md "Sessions") */
	const char	*mode;
	char		 started[33];	/* out: what the keeper said ("shell=bash") */
};
int	yx_executor_spawn(struct yx_executor *ex, const struct yx_exec_request *req,
    struct yx_spawn *sp, struct yx_errctx *err);

/*
 * The thread's agent run directory, opened as the executor opens it (an
 * O_PATH fd in *fdp, the caller closes it), and its sandbox uid in *uidp,
 * for talking to its process keepers. YX_OK or the error of
 * yx_agent_rundir_open.
 */
int	yx_executor_rundir(struct yx_executor *ex,
    const struct yx_exec_request *req, int *fdp, unsigned *uidp,
    struct yx_errctx *err);

/*
 * Connect to the agent of the run directory rundir_fd (from
 * yx_executor_rundir) as the executor does: agent.sock resolved beneath
 * it without following anything, a socket owned by uid, connected through
 * /proc/self/fd, descriptors from the sandbox refused where the kernel
 * can. YX_OK with a non-blocking socket in *sockp (the caller's);
 * YX_E_BACKEND_UNAVAILABLE (no agent listens, or the checks failed).
 */
int	yx_executor_agent_dial(int rundir_fd, unsigned uid, int *sockp,
    struct yx_errctx *err);
/* The output masking rules of req's thread, as execute applies them. */
#define YX_EXEC_MASKS	14
struct yx_exec_masks {
	struct yx_mask_rule	rules[YX_EXEC_MASKS];
	size_t			n;
	char			from[YX_EXEC_MASKS][YX_CFG_PATH + 200];
};
int	yx_executor_mask_rules(struct yx_executor *ex,
    const struct yx_exec_request *req, struct yx_exec_masks *m);

/*
 * The reaper: start pool boxes (YUXI_POOL_SIZE) of this executor's settings
 * until the pool is full, each with the runner, the agent binary and its
 * own run directory, the agent started as its command. *nmade (may be
 * NULL) counts them. YX_OK or yx_provider_pool_fill's error.
 */
int	yx_executor_pool_fill(struct yx_executor *ex, unsigned *nmade,
    struct yx_errctx *err);

/*
 * Finish or undo a commit a crash interrupted (its journal), and remove a
 * transaction's container and layer left behind, for thread tid. The
 * caller holds the thread's transaction lock. YX_OK when there was a
 * journal, YX_E_NOT_FOUND when not.
 */
int	yx_exec_tx_recover(struct yx_executor *ex, const char *tid);

/*
 * yx_exec_tx_recover for each thread of st that a crashed transaction left
 * something of (yx_thread_tx_left), each under its transaction lock, not
 * waited for: a thread whose lock is held (a transaction of it runs) is
 * skipped. Returns how many threads were looked at; *nrecovered (may be
 * NULL) counts those that had a journal.
 */
unsigned yx_exec_tx_recover_all(struct yx_executor *ex, struct yx_thread_store *st,
    unsigned *nrecovered);

/* Fill the thread fields of req (id, owner, agent, user) from t. */
void	yx_exec_request_thread(struct yx_exec_request *req,
    const struct yx_thread			   *t);

#endif /* YUXI_EXECUTOR_H */
