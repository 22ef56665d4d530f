/* SPDX-License-Identifier: MIT */
/*
 * daemon_int.h - private interfaces of yuxi-sandboxd (src/daemon).
 *
 * Processes: the master (master.c) owns the listen socket, the shared
 * provider table and the request-metrics segment (metrics.c), forks the
 * workers (worker.c) and the reaper (reaper.c) and respawns them. Workers
 * route each request (router.c) to a handler (h_threads.c, h_ops.c,
 * h_fs.c, h_exec.c). Every handler answers exactly once through the
 * yx_http_send_* functions and returns YX_OK, or an error code that the
 * router turns into the error response when nothing was sent yet.
 */
#ifndef YUXI_DAEMON_INT_H
#define YUXI_DAEMON_INT_H

#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "yuxi/agents.h"
#include "yuxi/config.h"
#include "yuxi/driver.h"
#include "yuxi/http.h"
#include "yuxi/provider.h"
#include "yuxi/shm_table.h"
#include "yuxi/threads.h"

struct yx_executor;

/* ---- metrics.c: per-route counters shared by all workers ---------------- */

#define YX_METRIC_ROUTES	40	/* >= number of routes + 1 (unmatched) */
#define YX_METRIC_STATUSES	16
#define YX_METRIC_BUCKETS	12

struct yx_metrics {
	_Atomic uint64_t	req[YX_METRIC_ROUTES][YX_METRIC_STATUSES];
	_Atomic uint64_t	lat[YX_METRIC_ROUTES][YX_METRIC_BUCKETS + 1];
	_Atomic uint64_t	lat_sum_us[YX_METRIC_ROUTES];
	_Atomic uint64_t	respawns;
	_Atomic uint64_t	child_exits;
	_Atomic int32_t		workers_alive;
	_Atomic int64_t		started_ms;
};

/* Anonymous MAP_SHARED segment made by the master before fork; NULL on failure. */
struct yx_metrics	*yx_metrics_new(void);
void			 yx_metrics_free(struct yx_metrics *m);
void			 yx_metrics_record(struct yx_metrics *m, int route, int status,
		  int64_t usec);
/* Append the Prometheus text exposition to b. */
int			 yx_metrics_render(struct yx_metrics *m, struct yx_table *t,
    struct yx_buf *b);
/* Append the thread disk-image figures (only with a disk quota). */
int			 yx_metrics_render_disk(const struct yx_config *cfg,
    struct yx_thread_store *st, struct yx_buf *b);

/* ---- worker context ------------------------------------------------------ */

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
	int64_t			 engine_at_ms;	/* last ping, for /healthz */
	bool			 engine_ok;
};

typedef int (*yx_handler_fn)(struct yx_wctx *, struct yx_http_req *, const char *arg);

struct yx_route {
	enum yx_method	 method;
	const char	*pattern;	/* "/api/threads/{}": {} is one segment */
	const char	*name;		/* metrics/log label */
	yx_handler_fn	 fn;
};

/* router.c */
extern const struct yx_route	yx_routes[];
extern const size_t		yx_nroutes;
/* Route and answer one request; returns the route index for metrics. */
int	yx_router_dispatch(struct yx_wctx *w, struct yx_http_req *r);
/* Path captured by route matching: YX_OK, YX_E_NOT_FOUND, YX_E_METHOD_NOT_ALLOWED. */
int	yx_router_match(enum yx_method m, const char *path, size_t *idx,
    char *arg, size_t arglen);

/* ---- shared handler helpers (h_common.c) --------------------------------- */

/* 401 unless the request carries an identity. */
int	yx_need_user(struct yx_http_req *r);
/*
 * The caller's thread named by id: YX_OK with *t; otherwise the error
 * response (400 invalid_thread_id, 404 not_found) has been sent and the
 * code is returned.
 */
int	yx_load_thread(struct yx_wctx *w, struct yx_http_req *r, const char *id,
    size_t idlen, struct yx_thread *t);
/* Send an error from an errctx (falls back to the code's text). */
int	yx_send_errctx(struct yx_http_req *r, int rc, const struct yx_errctx *e);
/* Is the engine up? Pings at most every 2 s. */
bool	yx_engine_up(struct yx_wctx *w);
/* "disk" of thread id: {quota_bytes, used_bytes, available_bytes} of its
 * mounted disk image, or NULL (JSON null) when it has none. */
struct json_object *yx_disk_json(struct yx_wctx *w, const char *id);
/* "JSON string or absent" field helper; YX_OK or YX_E_BAD_REQUEST (also
 * for a string holding NUL). */
int	yx_json_opt_str(struct json_object *o, const char *key, const char **out);

/* handlers */
int	yx_h_threads_create(struct yx_wctx *, struct yx_http_req *, const char *);
int	yx_h_threads_list(struct yx_wctx *, struct yx_http_req *, const char *);
int	yx_h_threads_get(struct yx_wctx *, struct yx_http_req *, const char *);
int	yx_h_threads_delete(struct yx_wctx *, struct yx_http_req *, const char *);
int	yx_h_healthz(struct yx_wctx *, struct yx_http_req *, const char *);
int	yx_h_metrics(struct yx_wctx *, struct yx_http_req *, const char *);
int	yx_h_admin_list(struct yx_wctx *, struct yx_http_req *, const char *);
int	yx_h_admin_release(struct yx_wctx *, struct yx_http_req *, const char *);
int	yx_h_admin_destroy(struct yx_wctx *, struct yx_http_req *, const char *);
int	yx_h_execute(struct yx_wctx *, struct yx_http_req *, const char *);
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

/* ---- processes ----------------------------------------------------------- */

/* worker.c: serve until SIGTERM; returns the exit status. */
int	yx_worker_main(const struct yx_config *cfg, int listen_fd,
    struct yx_table *table, struct yx_metrics *metrics);
/* reaper.c: reap/reconcile every idle_check_interval until SIGTERM. */
int	yx_reaper_main(const struct yx_config *cfg, struct yx_table *table);
/* master.c */
int	yx_master_main(const struct yx_config *cfg);

/*
 * signals.c: child-side signal setup (after fork): TERM/INT/HUP handlers set
 * yx_child_stop and stay blocked except where the child chooses to wait
 * (ppoll/sigtimedwait with *waitmask); every other signal is reset.
 */
extern volatile sig_atomic_t	yx_child_stop;
void	yx_child_signals(sigset_t *waitmask);

#endif /* YUXI_DAEMON_INT_H */
