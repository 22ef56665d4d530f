/* SPDX-License-Identifier: MIT */
/*
 * daemon_int.h - private interfaces of yuxi-sandboxd (src/daemon).
 *
 * Processes: the master (master.c) owns the listen socket, the shared
 * provider table and the request-metrics segment (metrics.c), forks the
 * workers (worker.c) and the reaper (reaper.c) and respawns them. Workers
 * route each request (router.c) to a handler (h_threads.c, h_ops.c,
 * h_users.c, h_fs.c, h_exec.c). Every handler answers exactly once through the
 * yx_http_send_* functions and returns YX_OK, or an error code that the
 * router turns into the error response when nothing was sent yet. Every
 * request ends with one log line, one metrics sample and, for the API, one
 * audit line (audit.c) with what the handler noted.
 */
#ifndef YUXI_DAEMON_INT_H
#define YUXI_DAEMON_INT_H

#include <limits.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "yuxi/agents.h"
#include "yuxi/config.h"
#include "yuxi/driver.h"
#include "yuxi/executor.h"
#include "yuxi/http.h"
#include "yuxi/procs.h"
#include "yuxi/provider.h"
#include "yuxi/ready.h"
#include "yuxi/shm_table.h"
#include "yuxi/tablelock.h"
#include "yuxi/threads.h"

struct yx_executor;
struct yx_remote_ctx;

/* ---- metrics.c: per-route counters shared by all workers ---------------- */

#define YX_METRIC_ROUTES	64	/* >= number of routes + 1 (unmatched) */
#define YX_METRIC_STATUSES	17
#define YX_METRIC_BUCKETS	12

struct yx_metrics {
	_Atomic uint64_t	req[YX_METRIC_ROUTES][YX_METRIC_STATUSES];
	_Atomic uint64_t	lat[YX_METRIC_ROUTES][YX_METRIC_BUCKETS + 1];
	_Atomic uint64_t	lat_sum_us[YX_METRIC_ROUTES];
	_Atomic uint64_t	respawns;
	_Atomic uint64_t	child_exits;
	_Atomic int32_t		workers_alive;
	_Atomic int64_t		started_ms;
	_Atomic uint64_t	reloads;	/* SIGHUPs that made a generation */
	_Atomic uint64_t	reloads_refused;	/* ... whose configuration did not validate */
	_Atomic uint32_t	generation;	/* of the configuration new workers run */
	_Atomic int32_t		draining;	/* set by a stopping master, see worker.c */
	_Atomic uint64_t	audit_lines;	/* audit lines written */
	_Atomic uint64_t	audit_errors;	/* audit lines lost (open or write failed) */
};

/* Anonymous MAP_SHARED segment made by the master before fork; NULL on failure. */
struct yx_metrics	*yx_metrics_new(void);
void			 yx_metrics_free(struct yx_metrics *m);
void			 yx_metrics_record(struct yx_metrics *m, int route, int status,
		  int64_t usec);
/* Append the Prometheus text exposition to b; ready: the readiness
 * results (YX_READY_N of them) or NULL. */
int			 yx_metrics_render(struct yx_metrics *m, struct yx_table *t,
    const struct yx_ready_result *ready, struct yx_buf *b);

/* ---- audit.c: one JSON line per API request (YUXI_AUDIT_LOG) ------------ */

#define YX_AUDIT_CMD_MAX	4096	/* bytes of a command kept in a line */
#define YX_AUDIT_PATH_MAX	1024	/* bytes of a path kept in a line */

/* What a handler notes about its request for the audit line; the router
 * clears it before each request. */
struct yx_audit_note {
	bool		has_command;
	char		command[YX_AUDIT_CMD_MAX + 1];
	size_t		command_len;	/* bytes kept: cut on a character boundary */
	uint64_t	command_bytes;	/* bytes of the whole command */
	bool		has_path;
	char		path[YX_AUDIT_PATH_MAX + 1];
	size_t		path_len;
	bool		has_exit;
	int		exit_code;
	bool		has_preview;	/* a preview made or revoked: its port and */
	int		preview_port;	/* prefix ([a-z2-7], the token's first 6) */
	char		preview_prefix[8];
	bool		has_meta;	/* the thread's metadata, once it was loaded */
	struct yx_thread_meta meta;
};

/* A worker's audit log: opened O_APPEND, one write(2) per line. */
struct yx_audit {
	const char		*path;		/* borrowed; "" = no audit log */
	int			 fd;		/* -1 when not open */
	bool			 failing;	/* a lost line was logged: quiet until one is written */
	struct yx_metrics	*metrics;	/* counters; may be NULL */
};

/* Open cfg->audit_log (a failure is logged and counted per lost line). */
void	yx_audit_init(struct yx_audit *a, const struct yx_config *cfg,
    struct yx_metrics *m);
/* Close and open the file again (logrotate, SIGUSR1). */
void	yx_audit_reopen(struct yx_audit *a);
void	yx_audit_fini(struct yx_audit *a);
/* Note the thread's metadata (every request that loaded the thread). */
void	yx_audit_note_meta(struct yx_audit_note *n, const struct yx_thread_meta *m);
/* Note the command (kept up to YX_AUDIT_CMD_MAX bytes) or the path. */
void	yx_audit_note_command(struct yx_audit_note *n, const char *cmd, size_t len);
void	yx_audit_note_path(struct yx_audit_note *n, const char *path, size_t len);
/*
 * The line of request r (operation op, now_ms unix ms, dur_us its
 * duration) with the newline, appended to b. Pure: unit-tested. YX_OK or
 * the buffer's error.
 */
int	yx_audit_format(struct yx_buf *b, const struct yx_http_req *r,
    const struct yx_audit_note *n, const char *op, int64_t now_ms, int64_t dur_us);
/* Format and write one line; failures are counted, never fatal. */
void	yx_audit_write(struct yx_audit *a, const struct yx_http_req *r,
    const struct yx_audit_note *n, const char *op, int64_t dur_us);
/* Append the thread disk-image figures (only with a disk quota). */
int			 yx_metrics_render_disk(const struct yx_config *cfg,
    struct yx_thread_store *st, struct yx_buf *b);

/* ---- worker context ------------------------------------------------------ */

/* A wait slot of a long-poll (slots.c); -1 in each: none held. */
struct yx_wait_slot {
	int	user;	/* the user's slot's descriptor */
	int	fair;	/* the user's share of the waiters */
	int	k;	/* the waiters' byte */
};

struct yx_route;

struct yx_wctx {
	const struct yx_config	*cfg;
	struct yx_table		*table;		/* inherited mapping; NULL if none */
	struct yx_driver	*drv;		/* this process's driver */
	struct yx_provider	 prov;
	bool			 prov_ok;
	struct yx_thread_store	 store;
	struct yx_agents	*agents;
	struct yx_metrics	*metrics;
	struct yx_executor	*exec;		/* NULL: execute answers 503 */
	struct yx_remote_ctx	*remote;	/* front or provisioner (remote_int.h) */
	struct yx_ready		 ready;		/* readiness checks, cached engine ping */
	struct yx_audit		 audit;
	struct yx_audit_note	 note;		/* of the request being served */
	/* the request being served, as the router prepared it */
	const struct yx_route	*route;		/* its route; NULL: none */
	struct json_object	*body;		/* its JSON body (YX_R_JSON): the router's */
	struct yx_buf		 raw;		/* ... as it came (a front forwards it) */
	int			 slot;		/* the user's slot it holds (YX_R_SLOT), -1 */
	struct yx_wait_slot	 wait;		/* a long-poll's (YX_R_WAIT), when it waits */
	bool			 waiting;	/* it asked to wait and holds w->wait */
};

typedef int (*yx_handler_fn)(struct yx_wctx *, struct yx_http_req *, const char *arg);

/*
 * What a route needs (struct yx_route.needs), declared in the one route
 * table (router.c) beside its handler, the way tmux declares each
 * command's cmd_entry: the router enforces the first group once, before
 * any handler runs; a front (h_front.c) checks the second before it
 * forwards a YX_R_FWD route to the thread's host, and the modes say
 * where a route exists at all (elsewhere it is an unknown path).
 */
#define YX_R_USER	0x000001	/* an identity, else 401 (router) */
#define YX_R_ADMIN	0x000002	/* the admin role, else 403 (router) */
#define YX_R_JSON	0x000004	/* a JSON object body, read and parsed by the
					 * router (w->body, w->raw), else 400; its
					 * thread_id and path are in it */
#define YX_R_JSON_OPT	0x000008	/* ... and an absent body is {} */
#define YX_R_SLOT	0x000010	/* holds its worker: one of the user's slots,
					 * else 503 capacity, Retry-After: 1 (router) */
#define YX_R_WAIT	0x000020	/* may wait (wait_ms > 0): a wait slot when one is
					 * free (w->waiting), else it answers at once */
#define YX_R_OWNER	0x000040	/* the caller's own thread (the body's, the
					 * query's or /api/threads/{}): the one 404 */
#define YX_R_WRITE	0x000080	/* writes files: /home/yuxi/skills is read-only */
#define YX_R_PATH	0x000100	/* a path (the body's or the query's) */
#define YX_R_TOP	0x000200	/* ... where "/" is the namespace root */
#define YX_R_EXEC	0x000400	/* a command: command, timeout, stream */
#define YX_R_CMD	0x000800	/* a background process's command, timeout */
#define YX_R_PROC	0x001000	/* a process id in the path */
#define YX_R_SESS	0x080000	/* a session id in the path */
#define YX_R_STREAM	0x002000	/* a body of raw bytes, streamed on */
#define YX_R_ACCEL	0x004000	/* a download nginx sends (X-Accel-Redirect) */
#define YX_R_FWD	0x008000	/* a front forwards it to the thread's host */
#define YX_R_STANDALONE	0x010000	/* exists in YUXI_MODE=standalone */
#define YX_R_FRONT	0x020000	/* ... front */
#define YX_R_PROVISIONER 0x040000	/* ... provisioner */

struct yx_route {
	enum yx_method	 method;
	const char	*pattern;	/* "/api/threads/{}": {} is one segment */
	const char	*name;		/* the operation: audit "op", unique */
	yx_handler_fn	 fn;		/* the handler (standalone, provisioner) */
	unsigned	 needs;		/* YX_R_* */
	const char	*dflt;		/* a YX_R_PATH route's path when absent;
					 * NULL: required */
	yx_handler_fn	 front;		/* a front's own handler; NULL: forwarded
					 * (YX_R_FWD) or fn */
};

/* router.c */
extern const struct yx_route	yx_routes[];
extern const size_t		yx_nroutes;
/* Route and answer one request; returns the route index for metrics. */
int	yx_router_dispatch(struct yx_wctx *w, struct yx_http_req *r);
/*
 * The end of every request, answered or refused before routing: one
 * metrics sample (route index idx; yx_nroutes = unmatched), one log line
 * and, for a path under /api/, one audit line. t0_us: yx_mono_us() at its
 * start.
 */
void	yx_router_finish(struct yx_wctx *w, struct yx_http_req *r, size_t idx,
    int64_t t0_us);
/* Path captured by route matching: YX_OK, YX_E_NOT_FOUND, YX_E_METHOD_NOT_ALLOWED. */
int	yx_router_match(enum yx_method m, const char *path, size_t *idx,
    char *arg, size_t arglen);

/* ---- shared handler helpers (h_common.c) --------------------------------- */

/* 401 unless the request carries an identity. */
int	yx_need_user(struct yx_http_req *r);
/* 401 without an identity, 403 forbidden ("admin only") without the role. */
int	yx_need_admin(struct yx_http_req *r);
/*
 * The caller's thread named by id: YX_OK with *t; otherwise the error
 * response (400 invalid_thread_id, 404 not_found) has been sent and the
 * code is returned.
 */
int	yx_load_thread(struct yx_wctx *w, struct yx_http_req *r, const char *id,
    size_t idlen, struct yx_thread *t);
/* Send an error from an errctx (falls back to the code's text). */
int	yx_send_errctx(struct yx_http_req *r, int rc, const struct yx_errctx *e);
/*
 * The fields execute and a background process share in their JSON body:
 * "thread_id" (valid), "command" (non-empty), "timeout" (absent, null, or a
 * positive integer, capped at cap seconds; *timeout 0 when absent). The
 * strings borrow body's. Sends the error reply itself.
 */
int	yx_parse_command(struct yx_http_req *r, struct json_object *body,
    const char **tid, const char **cmd, int *timeout, int cap);
/*
 * thread_req.c: a thread create's JSON body (w->body) into want:
 * "thread_id" (a new random id when absent, unless id_required),
 * "agent_id" and "agent_config_id" (checked against the agents file),
 * "metadata", "idle_timeout", the caller as owner. Sends the error reply.
 */
int	yx_parse_thread_create(struct yx_wctx *w, struct yx_http_req *r, bool id_required,
    struct yx_thread *want);
/* thread_req.c: a PATCH's body (w->body) into *p (borrowing it). YX_OK,
 * or the 400's code with its message in e (not sent). */
int	yx_parse_thread_patch(struct yx_wctx *w, struct yx_thread_patch *p,
    struct yx_errctx *e);
/* thread_req.c: the API view of a record (caller puts). */
struct json_object *yx_thread_json(const struct yx_thread *t);
/*
 * thread_req.c: a create of POST /api/threads (front false), or a front's
 * registration on its host, POST /api/sandboxes (front true), up to the
 * record: the body (a front names the id), a fork's source, the record
 * (under YUXI_MAX_THREADS_PER_USER unless a front's: the front counts a
 * user's threads), a fork's snapshot copied into it (a front registering
 * a thread the host has: nothing copied; a caller's fork to an existing
 * id: 409). YX_OK with the record in *t and whether it is new in
 * *created; otherwise the reply is sent and rc is its code.
 */
int	yx_thread_req_create(struct yx_wctx *w, struct yx_http_req *r, bool front,
    struct yx_thread *t, bool *created);
/*
 * thread_req.c: nbytes (at most 32) random bytes (RAND_bytes; random()
 * when it fails) as hex digits into buf, as many as len holds with the NUL
 * (a new thread's id, an MCP session's).
 */
void	yx_rand_hex(char *buf, size_t len, size_t nbytes);
/* Is the engine up? Pings at most every YX_READY_CACHE_MS. */
bool	yx_engine_up(struct yx_wctx *w);
/* "disk" of thread id: {quota_bytes, used_bytes, available_bytes} of its
 * mounted disk image, or NULL (JSON null) when it has none. */
struct json_object *yx_disk_json(struct yx_wctx *w, const char *id);
/* "JSON string or absent" field helper; YX_OK or YX_E_BAD_REQUEST (also
 * for a string holding NUL). */
int	yx_json_opt_str(struct json_object *o, const char *key, const char **out);
/* h_common.c: YX_OK when arg can be a process id, else the 404 is sent. */
int	yx_need_proc_id(struct yx_http_req *r, const char *arg);

/* ---- slots.c: what one user, or one sandbox host, may hold of the workers */

/* Slot k of n on fd, an OFD write lock on byte k (the kernel drops it
 * with the file description, also when the process dies): the first free
 * one's k, or -1 when all are taken. */
int	yx_byte_slot_take(int fd, int n);
void	yx_byte_slot_give(int fd, int k);
/* How many slots one user has (YUXI_USER_COMMANDS; 0: no cap). */
int	yx_slots_per_user(const struct yx_config *cfg);
/*
 * One of user's slots: YX_OK with *fd holding it (-1: no cap, or the slot
 * file could not be used, logged once per worker: the request goes
 * uncounted), or YX_E_BUSY when all are taken. yx_slot_user_give(-1)
 * does nothing. yx_slot_user_refuse answers the 503 capacity (Retry-After:
 * 1) of a refused one.
 */
int	yx_slot_user_take(const struct yx_config *cfg, const char *user, int *fd);
void	yx_slot_user_give(int fd);
int	yx_slot_user_refuse(const struct yx_config *cfg, struct yx_http_req *r);
/*
 * A long-poll's wait: one of user's slots, one of the user's share of the
 * waiters (half of YUXI_PROCESS_WAITERS, at least one) and one of the
 * waiters. true with *ws holding them, false (nothing held) when any is
 * taken. yx_slot_wait_give on an empty *ws does nothing.
 */
bool	yx_slot_wait_take(const struct yx_config *cfg, const char *user,
    struct yx_wait_slot *ws);
void	yx_slot_wait_give(struct yx_wait_slot *ws);
/*
 * A front's call to one sandbox host (name, one of nhosts): one of
 * YUXI_HOST_CALLS slots of that host (0: half the workers, at least 1; no
 * cap with one host or a value of YUXI_WORKERS or more). YX_OK with *fd
 * holding it (-1: no cap, or uncounted), or YX_E_BUSY when the host holds
 * them all. yx_slot_host_give(-1) does nothing.
 */
int	yx_slots_per_host(const struct yx_config *cfg, size_t nhosts);
int	yx_slot_host_take(const struct yx_config *cfg, size_t nhosts, const char *host,
     int *fd);
void	yx_slot_host_give(int fd);
/*
 * h_common.c: a command's "cwd" and "env" (docs/api.md "POST /api/execute"),
 * checked: cwd a path of the namespace (400 invalid_path otherwise), env
 * an object of at most YX_EXEC_USER_ENV_MAX names [A-Za-z_][A-Za-z0-9_]*
 * with string values, YX_EXEC_USER_ENV_BYTES in all, never a proxy
 * variable of a profile with network (400 invalid_env). The strings are
 * the struct's own (caller storage, ~33 KiB). yx_exec_opts_parse sends
 * the 400 itself; yx_exec_opts_apply points req at them.
 */
struct yx_exec_opts {
	bool		 has_cwd;
	char		 cwd[YX_VPATH_MAX];
	const char	*env[YX_EXEC_USER_ENV_MAX];
	size_t		 nenv;
	char		 store[YX_EXEC_USER_ENV_BYTES + 2 * YX_EXEC_USER_ENV_MAX];
};
int	yx_exec_opts_parse(struct yx_http_req *r, struct json_object *body,
     const struct yx_profile *prof, struct yx_exec_opts *o);
void	yx_exec_opts_apply(const struct yx_exec_opts *o, struct yx_exec_request *req);

/* {key: []}: a new object and, in *a, its empty array (NULL: no memory). */
struct json_object *yx_json_list(const char *key, struct json_object **a);

/* handlers */
int	yx_h_threads_create(struct yx_wctx *, struct yx_http_req *, const char *);
int	yx_h_threads_list(struct yx_wctx *, struct yx_http_req *, const char *);
int	yx_h_threads_get(struct yx_wctx *, struct yx_http_req *, const char *);
int	yx_h_threads_delete(struct yx_wctx *, struct yx_http_req *, const char *);
/* h_snap.c: a thread's snapshots (docs/api.md "Snapshots") */
int	yx_h_snap_create(struct yx_wctx *, struct yx_http_req *, const char *);
int	yx_h_snap_list(struct yx_wctx *, struct yx_http_req *, const char *);
int	yx_h_snap_delete(struct yx_wctx *, struct yx_http_req *, const char *);
int	yx_h_snap_restore(struct yx_wctx *, struct yx_http_req *, const char *);
/* A thread create's "from_snapshot": YX_OK with the source thread in src
 * and the snapshot's id in sid ("" when the body has none), or the error
 * sent (404 for another user's thread or snapshot). */
int	yx_snap_fork_source(struct yx_wctx *w, struct yx_http_req *r,
    struct yx_thread *src, char *sid, size_t slen);
int	yx_h_threads_patch(struct yx_wctx *, struct yx_http_req *, const char *);
int	yx_h_healthz(struct yx_wctx *, struct yx_http_req *, const char *);
int	yx_h_readyz(struct yx_wctx *, struct yx_http_req *, const char *);
/*
 * ready_reply.c: a /readyz answer, built by yx_ready_begin, one yx_ready_add per
 * check, then yx_ready_send (200 when ready, else 503; it owns the arrays
 * from then on, as does a failing yx_ready_begin).
 */
struct yx_ready_json {
	struct json_object	*checks;	/* [{"name","ok","detail"}] */
	struct json_object	*failing;	/* [names] */
	unsigned		 bad;		/* checks not ok */
	struct json_object	*protections;	/* {...} or NULL (yx_ready_protections) */
	struct json_object	*warnings;	/* [texts] or NULL */
};
/* The instance's protections (yx_ready_protect) into j: "protections" and,
 * when the defaults asked for one the host does not give, "warnings". */
void	yx_ready_protections(struct yx_ready_json *j, const struct yx_config *cfg);
int	yx_ready_begin(struct yx_ready_json *j);
void	yx_ready_add(struct yx_ready_json *j, const char *name, bool ok, const char *detail);
int	yx_ready_send(struct yx_http_req *r, struct yx_ready_json *j, bool ready);
int	yx_h_metrics(struct yx_wctx *, struct yx_http_req *, const char *);
int	yx_h_admin_list(struct yx_wctx *, struct yx_http_req *, const char *);
int	yx_h_admin_release(struct yx_wctx *, struct yx_http_req *, const char *);
int	yx_h_admin_destroy(struct yx_wctx *, struct yx_http_req *, const char *);
int	yx_h_admin_users(struct yx_wctx *, struct yx_http_req *, const char *);
/* h_users.c: append the bounded per-user gauges of GET /metrics to b. */
int	yx_users_metrics(struct yx_wctx *w, struct yx_buf *b);
int	yx_h_execute(struct yx_wctx *, struct yx_http_req *, const char *);
int	yx_h_procs_start(struct yx_wctx *, struct yx_http_req *, const char *);
int	yx_h_procs_list(struct yx_wctx *, struct yx_http_req *, const char *);
int	yx_h_procs_get(struct yx_wctx *, struct yx_http_req *, const char *);
int	yx_h_procs_kill(struct yx_wctx *, struct yx_http_req *, const char *);
int	yx_h_procs_output(struct yx_wctx *, struct yx_http_req *, const char *);
int	yx_h_procs_stdin(struct yx_wctx *, struct yx_http_req *, const char *);
int	yx_h_procs_resize(struct yx_wctx *, struct yx_http_req *, const char *);
int	yx_h_services_list(struct yx_wctx *, struct yx_http_req *, const char *);
int	yx_h_services_output(struct yx_wctx *, struct yx_http_req *, const char *);
/* The states of the thread's profile services (keeper_req.c), for
 * GET /api/threads/{id} and GET /api/services; NULL when it has none. */
struct json_object *yx_services_json(struct yx_wctx *w, const struct yx_thread *t);
int	yx_h_sessions_create(struct yx_wctx *, struct yx_http_req *, const char *);
int	yx_h_sessions_list(struct yx_wctx *, struct yx_http_req *, const char *);
int	yx_h_sessions_get(struct yx_wctx *, struct yx_http_req *, const char *);
int	yx_h_sessions_delete(struct yx_wctx *, struct yx_http_req *, const char *);
int	yx_h_fs_ls(struct yx_wctx *, struct yx_http_req *, const char *);
int	yx_h_fs_cat(struct yx_wctx *, struct yx_http_req *, const char *);
int	yx_h_fs_write(struct yx_wctx *, struct yx_http_req *, const char *);
int	yx_h_fs_edit(struct yx_wctx *, struct yx_http_req *, const char *);
int	yx_h_fs_delete(struct yx_wctx *, struct yx_http_req *, const char *);
int	yx_h_fs_glob(struct yx_wctx *, struct yx_http_req *, const char *);
int	yx_h_fs_grep(struct yx_wctx *, struct yx_http_req *, const char *);
int	yx_h_fs_upload(struct yx_wctx *, struct yx_http_req *, const char *);
int	yx_h_fs_download(struct yx_wctx *, struct yx_http_req *, const char *);
int	yx_h_viewer_tree(struct yx_wctx *, struct yx_http_req *, const char *);
int	yx_h_viewer_file(struct yx_wctx *, struct yx_http_req *, const char *);
int	yx_h_viewer_download(struct yx_wctx *, struct yx_http_req *, const char *);
/* mcp.c: POST /mcp, the MCP endpoint (mcp_int.h) */
int	yx_h_mcp(struct yx_wctx *, struct yx_http_req *, const char *);

/* exec_stream.c: the result fields of an execute ("exit_code":...,"duration_ms":...
 * and the optional ones), shared by the plain reply and the stream's exit
 * event. YX_OK or the buffer's error. */
struct yx_exec_output;
struct yx_exec_request;
int	yx_exec_fields(const struct yx_exec_output *out, struct yx_buf *b);
/* exec_stream.c: run req and answer with the stream form (docs/api.md);
 * out is caller storage (_fini), filled as the plain form's. */
int	yx_exec_stream(struct yx_wctx *w, struct yx_http_req *r,
    struct yx_exec_request *req, struct yx_exec_output *out);
/* keeper_req.c: after a session's command: YX_OK when it ran; else
 * YX_E_SESSION_BUSY (another one runs) or YX_E_SESSION_NOT_FOUND (its
 * shell had ended), with the message in e. */
int	yx_exec_session_ran(const struct yx_exec_output *out,
    struct yx_errctx *e);

/* ---- keepers (keeper_req.c): a request's view of a thread's keepers -------- */

/* The thread, its directories, masks and the keepers' budget (caller
 * storage; yx_keeper_close gives back what yx_keeper_open took). */
struct yx_keeper_req {
	struct yx_wctx		*w;
	bool			 stalled;	/* a keeper did not answer in time */
	bool			 answered;	/* ... and one did */
	bool			 marked;	/* the sandbox was marked stalled */
	struct yx_thread	 t;
	struct yx_exec_request	 req;
	struct yx_exec_masks	 masks;
	struct yx_proc_ctx	 c;
};
/*
 * The caller's thread (tid, tl bytes), its directories and masks into p,
 * and the keepers' budget: wait_ms more for a long-poll, less for a
 * stalled sandbox or a request without a slot. Sends errors.
 */
int	yx_keeper_open(struct yx_wctx *w, struct yx_http_req *r, const char *tid,
    size_t tl, int wait_ms, struct yx_keeper_req *p);
/* ... with thread_id from the query. */
int	yx_keeper_open_q(struct yx_wctx *w, struct yx_http_req *r, int wait_ms,
     struct yx_keeper_req *p);
void	yx_keeper_close(struct yx_keeper_req *p);
/* The caller's thread for these routes (yx_load_thread, and the control
 * build's procowner switch). Sends errors. */
int	yx_keeper_thread(struct yx_wctx *w, struct yx_http_req *r, const char *id,
    size_t len, struct yx_thread *t);
/* A listing of a thread's keepers' records (GET /api/processes,
 * /api/sessions): how to get them, show one, free them. */
struct yx_keeper_listing {
	const char	*key;		/* the reply's array */
	size_t		 size;		/* of one item */
	int		(*list)(const struct yx_proc_ctx *c, void **v, size_t *n,
	    struct yx_errctx *e);
	struct json_object *(*json)(const void *item, const char *tid);
	void		(*free)(void *v, size_t n);
};
/* The listing's whole route (thread_id in the query): 200 {key: [...]}. */
int	yx_keeper_list(struct yx_wctx *w, struct yx_http_req *r,
    const struct yx_keeper_listing *l);
/* h_common.c: YX_OK when arg can be a session id, else the 404
 * (session_not_found) is sent. */
int	yx_need_session_id(struct yx_http_req *r, const char *arg);

/* h_preview.c: previews (docs/api.md "Previews") */
int	yx_h_preview_create(struct yx_wctx *, struct yx_http_req *, const char *);
int	yx_h_preview_list(struct yx_wctx *, struct yx_http_req *, const char *);
int	yx_h_preview_delete(struct yx_wctx *, struct yx_http_req *, const char *);
int	yx_h_preview_auth(struct yx_wctx *, struct yx_http_req *, const char *);
/* ---- processes ----------------------------------------------------------- */

/* worker.c: serve until SIGTERM; returns the exit status. */
int	yx_worker_main(const struct yx_config *cfg, int listen_fd,
    struct yx_table *table, struct yx_metrics *metrics);
/* reaper.c: reap/reconcile every idle_check_interval until SIGTERM; the
 * disk images are checked after a new privileged helper. */
int	yx_reaper_main(const struct yx_config *cfg, struct yx_table *table);
/* master.c */
int	yx_master_main(const struct yx_config *cfg);

/*
 * instance.c: one master per shared table (the lock of yuxi/tablelock.h,
 * taken first), its pid file beside the FastCGI socket, and the restart in
 * place on SIGUSR2. yx_instance_claim: YX_OK, or the error logged (another
 * live instance owns the table: YX_E_BUSY, naming it). yx_instance_release
 * drops both (keep_pidfile: the pid stays ours across the restart).
 * yx_instance_save_argv: main() keeps what the restart executes.
 * yx_instance_restart_ok: may this master restart in place (why not is
 * logged)? yx_instance_exec: execute it; returns only on failure (logged).
 */
struct yx_instance {
	struct yx_tablelock	lock;
	char			pidfile[PATH_MAX];	/* "" = none written */
};

void	yx_instance_save_argv(int argc, char **argv);
int	yx_instance_claim(struct yx_instance *in, const struct yx_config *cfg);
void	yx_instance_release(struct yx_instance *in, bool keep_pidfile);
bool	yx_instance_restart_ok(const struct yx_config *cfg);
void	yx_instance_exec(void);

/*
 * reload.c: yx_daemon_check_files() checks what the workers load on their
 * own (the skills directory and the agents file): YX_OK, or an error with
 * "YUXI_X: why" in eb. yx_reload_config() fills next (caller storage) from
 * the configuration file and environment the running cur was read from,
 * checks those files, and keeps cur's value of every setting that changes
 * at restart only (logging each): YX_OK, or an error with the loader's
 * message ("FILE:LINE: YUXI_X: why") in eb, next then undefined.
 */
int	yx_daemon_check_files(const struct yx_config *cfg, char *eb, size_t el);
int	yx_reload_config(const struct yx_config *cur, struct yx_config *next,
    char *eb, size_t el);

/*
 * signals.c: child-side signal setup (after fork): TERM/INT/HUP handlers set
 * yx_child_stop, the USR1 handler yx_child_reopen (reopen the audit log);
 * they stay blocked except where the child chooses to wait
 * (ppoll/sigtimedwait with *waitmask); every other signal is reset.
 */
extern volatile sig_atomic_t	yx_child_stop;
extern volatile sig_atomic_t	yx_child_reopen;
void	yx_child_signals(sigset_t *waitmask);
/*
 * True when a stop was asked: yx_child_stop, or a TERM/INT/HUP still
 * pending (blocked), which a wait that returned ready has not delivered.
 */
bool	yx_child_stopping(void);
/* True once per SIGUSR1, delivered or still pending (reopen the audit log). */
bool	yx_child_reopen_due(void);

#endif /* YUXI_DAEMON_INT_H */
