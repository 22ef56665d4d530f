/* SPDX-License-Identifier: MIT */
/*
 * yuxi/sessions.h - a thread's sessions: long-lived shells that run the
 * thread's commands one at a time with their state kept between them
 * (docs/api.md "Sessions", docs/agent.md "Sessions").
 *
 * A session belongs to the sandbox, as a background process does: the
 * in-sandbox agent's keeper (src/guest/agent_session.c) owns the shell,
 * runs each command in it, kills a command at its timeout and ends the
 * session after YUXI_SESSION_IDLE without one. The host keeps one record
 * per session in the thread's directory, <thread>/sessions/<session id>
 * (JSON; the sandbox never sees it), written before the shell starts:
 * a worker crash or a service restart forgets nothing, and every listing
 * asks the keepers. A session whose keeper is gone without leaving its
 * outcome is "lost"; one whose shell ended is "ended" (with the reason);
 * the record goes with DELETE, when the records pass YX_SESSION_RECORDS
 * (the oldest ended first) or with the thread.
 *
 * A command runs through the executor (yx_exec_request.session_id), which
 * gives it execute's output cap, spill file, masking and stream form.
 *
 * Ownership: the yx_proc_ctx (include/yuxi/procs.h) is the caller's, as
 * for processes; struct yx_session is plain data; arrays from
 * yx_session_list are freed with free().
 */
#ifndef YUXI_SESSIONS_H
#define YUXI_SESSIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "yuxi/error.h"
#include "yuxi/executor.h"
#include "yuxi/procs.h"

#define YX_SESSION_ID_SIZE	18	/* "s" + 16 hex + NUL */
#define YX_SESSION_RECORDS	64	/* records kept per thread */
#define YX_SESSION_CMD_MAX	65000	/* bytes of one command */

enum yx_session_state {
	YX_SESSION_RUNNING,	/* its shell waits for commands (or runs one) */
	YX_SESSION_ENDED,	/* its shell ended: exit_code, end_reason */
	YX_SESSION_LOST,	/* its keeper is gone and left no outcome */
};

struct yx_session {
	char		 id[YX_SESSION_ID_SIZE];
	char		 shell[8];	/* "bash" or "sh" ("" while starting) */
	int		 state;		/* enum yx_session_state */
	int		 exit_code;	/* the shell's status once ended; -1 */
	/* why it ended: "exit" (a command ended the shell), "idle"
	 * (YUXI_SESSION_IDLE), "killed"; "" while running */
	char		 end_reason[8];
	bool		 busy;		/* a command runs (as its keeper says) */
	bool		 starting;	/* recorded, its shell not started yet */
	int64_t		 created_at, last_used, ended_at;	/* unix ms */
	uint64_t	 commands;	/* commands run */
	char		 cwd[4096];	/* after the last command */
};

/*
 * Start a session in c's thread: its shell ("auto": bash when the image
 * has it, else sh; "bash"; "sh") in req->cwd with req->env over the
 * profile's environment, as the thread's uid. YX_OK with *out;
 * YX_E_SESSION_LIMIT when YUXI_SESSION_MAX live already; the errors of
 * yx_executor_spawn (the record is then removed).
 */
int	yx_session_create(struct yx_executor *ex, const struct yx_proc_ctx *c,
    const struct yx_exec_request *req, const char *shell,
    struct yx_session *out, struct yx_errctx *err);

/* All records, oldest first, states refreshed from the keepers. *out is
 * a heap array (free()). YX_OK, YX_E_NOMEM, YX_E_IO. */
int	yx_session_list(const struct yx_proc_ctx *c, struct yx_session **out,
    size_t *n, struct yx_errctx *err);
/* One, refreshed. YX_OK; YX_E_SESSION_NOT_FOUND. */
int	yx_session_get(const struct yx_proc_ctx *c, const char *id,
    struct yx_session *out, struct yx_errctx *err);
/* Kill its shell and every process of it (when it runs), forget it.
 * YX_OK with *out its last state; YX_E_SESSION_NOT_FOUND. */
int	yx_session_delete(const struct yx_proc_ctx *c, const char *id,
    struct yx_session *out, struct yx_errctx *err);

/* The record of session id in the thread at tdir, as it is (its keeper
 * not asked: a command's own answer says busy or ended). YX_OK;
 * YX_E_SESSION_NOT_FOUND; YX_E_IO. */
int	yx_session_peek(int tdir, const char *id, struct yx_session *out,
    struct yx_errctx *err);

/*
 * After a command of session id (thread at tdir) ran through the
 * executor: its record takes the use, the directory and, when the shell
 * ended, the end. *out its state then (may be NULL).
 */
void	yx_session_note(int tdir, const char *id, const struct yx_exec_output *o,
    struct yx_session *out);

/* Running sessions in the records of the thread at tdir (not asked). */
unsigned	yx_session_live(int tdir);

/*
 * For the reaper: has thread_id a running session that ran a command (or
 * started) less than YUXI_SESSION_IDLE seconds (YUXI_PROCESS_KEEPALIVE
 * when that is 0) before now_ms? Such a thread's sandbox is not idle.
 */
bool	yx_session_keeps_alive(const struct yx_config *cfg,
    struct yx_thread_store *st, const char *thread_id, int64_t now_ms);

/* "running", "ended", "lost". */
const char *yx_session_state_name(int state);
/* "s" and 16 lowercase hex digits. */
bool	yx_session_id_valid(const char *id);

#endif /* YUXI_SESSIONS_H */
