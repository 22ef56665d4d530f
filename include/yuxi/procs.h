/* SPDX-License-Identifier: MIT */
/*
 * yuxi/procs.h - a thread's background processes (docs/api.md "Background
 * processes", docs/agent.md "Background processes").
 *
 * A background process belongs to the sandbox, not to a worker: the
 * in-sandbox agent's keeper (src/guest/agent_keeper.c) owns it, keeps the
 * last YUXI_PROCESS_OUTPUT_KEEP bytes of its output and its stdin, and
 * enforces its lifetime. The host keeps one record per process in the
 * thread's directory, <saves>/threads/<id>/procs/<process id> (JSON; the
 * sandbox never sees it), written before the process starts: a worker
 * crash or a service restart forgets nothing, and every listing asks the
 * keepers for the state of what the records say runs. A process whose
 * keeper is gone without leaving its outcome (the container was recreated
 * or reaped, the keeper was killed inside the sandbox) is reported "lost",
 * never dropped silently; the record goes only with DELETE, when the
 * records pass YX_PROC_RECORDS (the oldest ended first) or with the thread.
 *
 * Ownership: struct yx_proc_ctx is caller storage borrowing its
 * descriptors and rules; struct yx_proc carries a heap command (_fini);
 * arrays from yx_proc_list are freed with yx_proc_list_free.
 */
#ifndef YUXI_PROCS_H
#define YUXI_PROCS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "yuxi/buf.h"
#include "yuxi/config.h"
#include "yuxi/error.h"
#include "yuxi/path.h"

struct yx_executor;
struct yx_exec_request;
struct yx_thread_store;

#define YX_PROC_ID_SIZE		18	/* "p" + 16 hex + NUL */
#define YX_PROC_RECORDS		64	/* records kept per thread */
#define YX_PROC_WAIT_MAX_MS	30000	/* longest output long-poll */
#define YX_PROC_READ_MAX	(1 << 20)	/* output bytes one read returns */
#define YX_PROC_READ_DEFAULT	(256 << 10)

enum yx_proc_state {
	YX_PROC_RUNNING,
	YX_PROC_EXITED,		/* ended: exit_code (124 + timed_out at its lifetime) */
	YX_PROC_LOST,		/* its keeper is gone and left no outcome */
};

struct yx_proc {
	char		 id[YX_PROC_ID_SIZE];
	char		*command;	/* heap */
	int		 state;		/* enum yx_proc_state */
	int		 exit_code;	/* -1 unless exited */
	bool		 timed_out;
	int		 timeout;	/* its lifetime, seconds */
	int64_t		 started_at;	/* unix ms */
	int64_t		 ended_at;	/* unix ms, 0 while running or lost */
	uint64_t	 output_bytes;	/* written in all (as last seen) */
	int		 cols, rows;	/* its terminal's size as started;
					 * 0: on pipes */
	bool		 starting;	/* recorded, its start not answered yet:
					 * no keeper yet is no loss */
};
#define YX_PROC_START_MAX_MS	120000	/* a start never takes longer */

/* How to start one (yx_proc_start). */
struct yx_proc_opts {
	int	timeout;	/* its lifetime, s; <= 0: YUXI_PROCESS_LIFETIME */
	int	cols, rows;	/* > 0: on a terminal of that size
				 * (1..YX_PROC_TTY_MAX) */
};
#define YX_PROC_TTY_MAX		1000	/* a terminal's columns, rows */

/* One thread's processes as a request sees them. */
struct yx_proc_ctx {
	const struct yx_config		*cfg;
	int				 tdir;	/* the thread's directory */
	int				 rundir; /* its agent run directory (O_PATH) */
	unsigned			 uid;	/* its sandbox uid (keeper sockets) */
	const struct yx_mask_rule	*rules;	/* output masking, as execute's */
	size_t				 nrules;
	/* the request's whole budget for the keepers (yx_mono_ms(); 0: none):
	 * no keeper operation runs past it; a keeper that did not answer in
	 * time sets *stalled, one that answered *answered (each may be NULL) */
	int64_t				 until;
	bool				*stalled;
	bool				*answered;
};

/* A piece of output (yx_proc_output). */
struct yx_proc_chunk {
	struct yx_buf	 data;		/* masked; ends on a character boundary */
	uint64_t	 offset;	/* where data starts (>= the asked offset) */
	uint64_t	 next_offset;	/* ask from here next time */
	uint64_t	 dropped;	/* bytes between the asked offset and offset,
					 * gone from the ring */
	struct yx_proc	 proc;		/* its state (command not filled) */
};

void	yx_proc_fini(struct yx_proc *p);
void	yx_proc_list_free(struct yx_proc *v, size_t n);

/*
 * Start req->command in the background in c's thread (o->timeout: its
 * lifetime, <= 0: YUXI_PROCESS_LIFETIME, capped there; on a terminal of
 * o->cols x o->rows when set). YX_OK with *out; YX_E_PROCESS_LIMIT when
 * YUXI_PROCESS_MAX run already; the errors of yx_executor_spawn (the
 * record is then removed).
 */
int	yx_proc_start(struct yx_executor *ex, const struct yx_proc_ctx *c,
    const struct yx_exec_request *req, const struct yx_proc_opts *o,
    struct yx_proc *out, struct yx_errctx *err);

/* Resize the terminal of process id (SIGWINCH to its foreground group).
 * YX_OK; YX_E_NOT_FOUND; YX_E_NOT_RUNNING (ended); YX_E_BAD_REQUEST (not
 * on a terminal). */
int	yx_proc_resize(const struct yx_proc_ctx *c, const char *id, int cols,
    int rows, struct yx_errctx *err);

/* All records, oldest first, states refreshed from the keepers. *out is
 * a heap array (yx_proc_list_free). YX_OK, YX_E_NOMEM, YX_E_IO. */
int	yx_proc_list(const struct yx_proc_ctx *c, struct yx_proc **out,
    size_t *n, struct yx_errctx *err);
/* One, refreshed. YX_OK; YX_E_NOT_FOUND ("no such process"). */
int	yx_proc_get(const struct yx_proc_ctx *c, const char *id,
    struct yx_proc *out, struct yx_errctx *err);

/*
 * Output from `offset` (raw bytes written by the process; the oldest may
 * be gone: then it starts at the ring's start and `dropped` says how many
 * were skipped), at most max bytes, after waiting up to wait_ms while the
 * process runs and has nothing new. Host paths are masked; a host path or
 * a character cut by the end of what was read is held back for the next
 * read (next_offset stops before it) while the process runs. out is
 * caller storage (yx_proc_chunk_fini). YX_OK; YX_E_NOT_FOUND.
 */
int	yx_proc_output(const struct yx_proc_ctx *c, const char *id,
     uint64_t offset, int wait_ms, size_t max, struct yx_proc_chunk *out,
     struct yx_errctx *err);
void	yx_proc_chunk_fini(struct yx_proc_chunk *out);

/*
 * Write len bytes to the process's stdin (then close it with eof), within
 * c->until. YX_OK with *written (fewer than len when the process did not
 * take a piece within a second, or the budget ran out: the rest is the
 * caller's to send again) and *open (stdin still open); YX_E_NOT_FOUND;
 * YX_E_NOT_RUNNING when it ended or its stdin is closed.
 */
int	yx_proc_stdin(const struct yx_proc_ctx *c, const char *id,
    const char *data, size_t len, bool eof, size_t *written, bool *open,
    struct yx_errctx *err);

/* Kill the process's whole group (when it runs), forget it. YX_OK with
 * *out its last state; YX_E_NOT_FOUND. */
int	yx_proc_kill(const struct yx_proc_ctx *c, const char *id,
    struct yx_proc *out, struct yx_errctx *err);

/*
 * For the reaper: does thread_id have a process running that started less
 * than YUXI_PROCESS_KEEPALIVE seconds before now_ms (unix ms)? Such a
 * thread's sandbox is not idle. Asks the keepers; false when unsure.
 */
bool	yx_proc_keeps_alive(const struct yx_config *cfg,
    struct yx_thread_store *st, const char *thread_id, int64_t now_ms);

/* "running", "exited", "lost". */
const char *yx_proc_state_name(int state);

/*
 * A profile's services (docs/api.md "Services", src/exec/services.c): the
 * processes the in-sandbox agent starts with the box and keeps running.
 * Their output is read as a background process's, from their keepers.
 */
struct yx_profile;
struct yx_service;
struct yx_svc_state {
	const struct yx_service	*svc;		/* borrowed from the profile */
	char			 process_id[24];	/* "svc-" + its name */
	/* starting, running (no ready port), ready, backoff (it exited and
	 * starts again soon), stopped (no sandbox), unknown (no word yet) */
	char			 state[16];
	int			 pid;		/* inside the sandbox; 0: none */
	long			 restarts;
	int			 exit_code;	/* its last exit; -1: none */
	int64_t			 since;		/* unix ms of the state; 0 */
};

/* The states of p's services (p->nservices of them into out) in c's
 * sandbox; running: the thread has a sandbox (else all "stopped"). */
void	yx_svc_states(const struct yx_proc_ctx *c, const struct yx_profile *p,
    bool running, struct yx_svc_state *out);
/* The service `name` of p; NULL when p has none of that name. */
const struct yx_service *yx_svc_find(const struct yx_profile *p,
    const char *name);
/*
 * The output of p's service `name`, as yx_proc_output (out->proc: its
 * keeper's state, "lost" when there is none now: no sandbox, or its keeper
 * is starting again). YX_OK; YX_E_NOT_FOUND ("no such service").
 */
int	yx_svc_output(const struct yx_proc_ctx *c, const struct yx_profile *p,
    const char *name, uint64_t offset, int wait_ms, size_t max,
    struct yx_proc_chunk *out, struct yx_errctx *err);

#endif /* YUXI_PROCS_H */
