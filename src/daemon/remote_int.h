/* SPDX-License-Identifier: MIT */
/*
 * remote_int.h - the two remote roles of yuxi-sandboxd (docs/scaling.md).
 *
 * YUXI_MODE=front: the public API, unchanged for clients. Identity, the
 * thread's owner, the path model and the checks of the request are done
 * here, then the operation goes to the thread's sandbox host over HTTPS
 * (include/yuxi/remote.h): h_front.c (the forwarder, threads, /healthz,
 * downloads by X-Accel-Redirect through nginx) and h_front_admin.c (the
 * admin endpoints over every host, draining).
 *
 * YUXI_MODE=provisioner: a sandbox host. Every route but /healthz and
 * /metrics needs the front's credential, and only with it is the acting
 * user the front names believed; it also serves the lifecycle API the
 * front uses (h_prov.c).
 *
 * remote_route.c picks each request's handler for the mode, hides the
 * routes of the other modes, and opens a worker's side of either role.
 */
#ifndef YUXI_REMOTE_INT_H
#define YUXI_REMOTE_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "daemon_int.h"
#include "yuxi/hostlist.h"
#include "yuxi/remote.h"

#define YX_FRONT_HEALTH_MS	2000	/* /healthz of a front asks each host at most this often */
#define YX_HOST_STATE_MAX	12	/* "ok", "degraded", "down" */

/* A worker's side of its role; heap, NULL in standalone mode. */
struct yx_remote_ctx {
	struct yx_remote	*rm;			/* front: the hosts' client */
	char			 expect[300];		/* provisioner: "Bearer <secret>" */
	size_t			 expect_len;
	int64_t			 health_at_ms[YX_HOSTS_MAX];	/* front: last /healthz asked */
	char			 health[YX_HOSTS_MAX][YX_HOST_STATE_MAX];
};

/* ---- remote_route.c ------------------------------------------------------ */

/* After the worker opened its store: the client (front) or the expected
 * credential (provisioner). YX_OK (also standalone: nothing) or an error,
 * logged. */
int	yx_remote_worker_open(struct yx_wctx *w);
void	yx_remote_worker_close(struct yx_wctx *w);
/* The modes (YX_R_STANDALONE, ...) whose routes this worker serves. */
unsigned yx_route_modes(const struct yx_wctx *w);
/* A refusal of every request for route rt whatever its needs (a
 * provisioner's request without the front's credential: 401), or NULL. */
yx_handler_fn yx_route_refusal(struct yx_wctx *w, struct yx_http_req *r,
    const struct yx_route *rt);
/* The handler of route rt for this worker's mode: a front's own, the
 * front's forwarding of a YX_R_FWD route, or the route's. */
yx_handler_fn yx_route_handler(struct yx_wctx *w, const struct yx_route *rt);

/* ---- h_front.c ----------------------------------------------------------- */

/* The front's handlers of routes (the route table's `front`), and the
 * forwarding of every other YX_R_FWD route to the thread's host. */
int	yx_h_front_healthz(struct yx_wctx *, struct yx_http_req *, const char *);
int	yx_h_front_readyz(struct yx_wctx *, struct yx_http_req *, const char *);
int	yx_h_front_threads_create(struct yx_wctx *, struct yx_http_req *, const char *);
int	yx_h_front_threads_get(struct yx_wctx *, struct yx_http_req *, const char *);
int	yx_h_front_threads_delete(struct yx_wctx *, struct yx_http_req *, const char *);
int	yx_h_front_threads_patch(struct yx_wctx *, struct yx_http_req *, const char *);
int	yx_h_front_forward(struct yx_wctx *, struct yx_http_req *, const char *);
/* The front's naive proxy of the control build (YX_CONTROL_OFF=provroutes). */
int	yx_front_proxy_any(struct yx_wctx *w, struct yx_http_req *r, const char *path);
/* ---- front_hosts.c: a front's side of its hosts -------------------------- */

#define YX_FRONT_RETRY_HDR	"Retry-After: " YX_REMOTE_RETRY_AFTER "\r\n"
/* A host's answer body as a JSON object (caller puts), or NULL. */
struct json_object *yx_front_parse(const struct yx_remote_resp *p);
/* error.code and error.message of a JSON error answer (borrowed from o). */
bool	yx_front_json_error(struct json_object *o, const char **code,
    const char **msg);
/*
 * Answer with what host i said (status, Content-Type, Retry-After, body);
 * rc is yx_remote_call's: not YX_OK answers the error (503
 * backend_unavailable with Retry-After when the host did not answer).
 */
int	yx_front_relay(struct yx_http_req *r, int rc, const struct yx_errctx *e,
    const struct yx_remote_resp *p);
/* The host of thread t (its index), or the 503 answered. */
int	yx_front_host(struct yx_wctx *w, struct yx_http_req *r, const struct yx_thread *t,
    size_t *host);
/* A host's /healthz state ("ok", "degraded", "down"), asked at most every
 * YX_FRONT_HEALTH_MS unless fresh. */
const char *yx_front_health(struct yx_wctx *w, size_t i, bool fresh);
/* Is host `name` draining (<saves>/hosts/<name>.draining exists)? */
bool	yx_front_draining(const struct yx_wctx *w, const char *name);

/* ---- h_front_preview.c ---------------------------------------------------- */

int	yx_h_front_preview_create(struct yx_wctx *, struct yx_http_req *, const char *);
int	yx_h_front_preview_pass(struct yx_wctx *, struct yx_http_req *, const char *);
int	yx_h_front_preview_auth(struct yx_wctx *, struct yx_http_req *, const char *);

/* ---- h_front_admin.c ----------------------------------------------------- */

int	yx_h_front_admin_list(struct yx_wctx *, struct yx_http_req *, const char *);
int	yx_h_front_admin_release(struct yx_wctx *, struct yx_http_req *, const char *);
int	yx_h_front_admin_destroy(struct yx_wctx *, struct yx_http_req *, const char *);
int	yx_h_front_hosts(struct yx_wctx *, struct yx_http_req *, const char *);
int	yx_h_front_drain(struct yx_wctx *, struct yx_http_req *, const char *);
int	yx_h_front_undrain(struct yx_wctx *, struct yx_http_req *, const char *);

/* ---- h_prov.c ------------------------------------------------------------ */

/* Does r carry the front's credential (YUXI_FRONT_AUTH)? Constant time. */
bool	yx_prov_authorized(const struct yx_wctx *w, struct yx_http_req *r);
/* 401 for a request without the credential (its claimed user dropped). */
int	yx_h_prov_refuse(struct yx_wctx *, struct yx_http_req *, const char *);
int	yx_h_prov_create(struct yx_wctx *, struct yx_http_req *, const char *);
int	yx_h_prov_list(struct yx_wctx *, struct yx_http_req *, const char *);
int	yx_h_prov_get(struct yx_wctx *, struct yx_http_req *, const char *);
int	yx_h_prov_destroy(struct yx_wctx *, struct yx_http_req *, const char *);
int	yx_h_prov_release(struct yx_wctx *, struct yx_http_req *, const char *);

/* ---- what the remote roles take from the other handlers ------------------ */

/* h_ops.c: the admin view of a slot (caller puts). */
struct json_object *yx_slot_json(const struct yx_shm_slot *s);
/* h_ops.c: the table's sandboxes (disk: with each thread's disk figures). */
int	yx_send_sandbox_list(struct yx_wctx *w, struct yx_http_req *r, bool disk);
/* h_ops.c: YX_OK when id is a sandbox id, else the 400 is sent. */
int	yx_need_sandbox_id(struct yx_http_req *r, const char *id);
/* h_ops.c: release or destroy sandbox id (checked here), logged as who's. */
int	yx_sandbox_act(struct yx_wctx *w, struct yx_http_req *r, const char *id, bool destroy,
    const char *who);
/* h_ops.c: is s a sandbox id (8-64 lowercase hex digits)? */
bool	yx_sandbox_id_valid(const char *s);

#endif /* YUXI_REMOTE_INT_H */
