/* SPDX-License-Identifier: MIT */
/*
 * h_front_admin.c - a front's admin endpoints over its sandbox hosts
 * (docs/api.md "Admin endpoints", docs/scaling.md): every host's
 * sandboxes with the host's name, release and destroy on the host that
 * has the sandbox, and the hosts themselves: their state and draining.
 *
 * Draining is a file, <saves>/hosts/<name>.draining, so every worker of
 * the front sees it at once and it outlives restarts. A draining host
 * takes no new thread; its threads keep working.
 */
#include "config.h"

#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json.h>

#include "remote_int.h"
#include "yuxi/log.h"

#define ADMIN_TIMEOUT_MS	60000	/* a host removing a container */

/* GET /api/admin/sandboxes: each host's GET /api/sandboxes, with "host". */
int
yx_h_front_admin_list(struct yx_wctx *w, struct yx_http_req *r, const char *arg)
{
	const struct yx_hostlist	*hl = yx_remote_hosts(w->remote->rm);
	struct yx_remote_req		 q;
	struct yx_remote_resp		 p;
	struct json_object		*o, *all, *down, *got, *a, *v, *s;
	int64_t				 cap = 0, maxr = 0;
	size_t				 i, k;

	memset(&q, 0, sizeof(q));
	q.method = "GET";
	q.path = "/api/sandboxes";
	q.request_id = r->request_id;
	q.timeout_ms = ADMIN_TIMEOUT_MS;
	o = json_object_new_object();
	all = json_object_new_array();
	down = json_object_new_array();
	if (o == NULL || all == NULL || down == NULL) {
		json_object_put(o);
		json_object_put(all);
		json_object_put(down);
		return YX_E_NOMEM;
	}
	json_object_object_add(o, "sandboxes", all);
	yx_remote_resp_init(&p);
	for (i = 0; i < hl->n; i++) {
		got = NULL;
		if (yx_remote_call(w->remote->rm, i, &q, &p, NULL) != YX_OK || p.status != 200 ||
		    yx_json_parse_object(p.body.data, p.body.len, &got, NULL) != YX_OK ||
		    !json_object_object_get_ex(got, "sandboxes", &a) ||
		    !json_object_is_type(a, json_type_array)) {
			json_object_array_add(down, json_object_new_string(hl->v[i].name));
			json_object_put(got);
			continue;
		}
		for (k = 0; k < json_object_array_length(a); k++) {
			s = json_object_array_get_idx(a, k);
			if (!json_object_is_type(s, json_type_object))
				continue;
			json_object_object_add(s, "host", json_object_new_string(hl->v[i].name));
			json_object_array_add(all, json_object_get(s));
		}
		if (json_object_object_get_ex(got, "capacity", &v))
			cap += json_object_get_int64(v);
		if (json_object_object_get_ex(got, "max_replicas", &v))
			maxr += json_object_get_int64(v);
		json_object_put(got);
	}
	yx_remote_resp_fini(&p);
	json_object_object_add(o, "capacity", json_object_new_int64(cap));
	json_object_object_add(o, "max_replicas", json_object_new_int64(maxr));
	json_object_object_add(o, "unavailable_hosts", down);
	return yx_http_send_obj(r, 200, o);
}

/*
 * Release or destroy sandbox id on whichever host has it: the first host
 * that does not answer 404 decides; 404 when none has it, 503 when none
 * has it but some did not answer.
 */
static int
front_admin_act(struct yx_wctx *w, struct yx_http_req *r, const char *id, bool destroy)
{
	const struct yx_hostlist	*hl;
	struct yx_remote_req		 q;
	struct yx_remote_resp		 p;
	struct yx_errctx		 e;
	char				 path[128];
	bool				 missed = false;
	size_t				 i;
	int				 rc;

	yx_errctx_clear(&e);
	if (!yx_sandbox_id_valid(id)) {
		yx_http_send_error(r, YX_E_BAD_REQUEST, "sandbox_id must be 8-64 hex digits");
		return YX_E_BAD_REQUEST;
	}
	hl = yx_remote_hosts(w->remote->rm);
	snprintf(path, sizeof(path), "/api/sandboxes/%s%s", id, destroy ? "" : "/release");
	memset(&q, 0, sizeof(q));
	q.method = destroy ? "DELETE" : "POST";
	q.path = path;
	q.request_id = r->request_id;
	q.timeout_ms = ADMIN_TIMEOUT_MS;
	yx_remote_resp_init(&p);
	for (i = 0; i < hl->n; i++) {
		if ((rc = yx_remote_call(w->remote->rm, i, &q, &p, &e)) != YX_OK) {
			missed = true;
			continue;
		}
		if (p.status == 404)
			continue;
		if (p.status < 300)
			log_info("admin %s: sandbox %s %s on host %s", r->user, id,
			    destroy ? "destroyed" : "released", hl->v[i].name);
		rc = yx_front_relay(r, YX_OK, NULL, &p);
		goto done;
	}
	if (missed)
		rc = yx_front_relay(r, YX_E_BACKEND_UNAVAILABLE, &e, &p);
	else {
		yx_http_send_error(r, YX_E_NOT_FOUND, "no such sandbox");
		rc = YX_E_NOT_FOUND;
	}
done:
	yx_remote_resp_fini(&p);
	return rc;
}

int
yx_h_front_admin_release(struct yx_wctx *w, struct yx_http_req *r, const char *arg)
{
	return front_admin_act(w, r, arg, false);
}

int
yx_h_front_admin_destroy(struct yx_wctx *w, struct yx_http_req *r, const char *arg)
{
	return front_admin_act(w, r, arg, true);
}

static struct json_object *
host_json(struct yx_wctx *w, size_t i, bool fresh)
{
	const struct yx_host	*h = &yx_remote_hosts(w->remote->rm)->v[i];
	struct json_object	*o;

	if ((o = json_object_new_object()) == NULL)
		return NULL;
	json_object_object_add(o, "name", json_object_new_string(h->name));
	json_object_object_add(o, "url", json_object_new_string(h->url));
	json_object_object_add(o, "state", json_object_new_string(yx_front_health(w, i, fresh)));
	json_object_object_add(o, "draining", json_object_new_boolean(yx_front_draining(w, h->name)));
	return o;
}

/* GET /api/admin/hosts: each host asked now. */
int
yx_h_front_hosts(struct yx_wctx *w, struct yx_http_req *r, const char *arg)
{
	const struct yx_hostlist	*hl;
	struct json_object		*o, *a;
	size_t				 i;

	if (w->remote == NULL || w->remote->rm == NULL)
		return YX_E_NOT_FOUND;
	hl = yx_remote_hosts(w->remote->rm);
	if ((o = yx_json_list("hosts", &a)) == NULL)
		return YX_E_NOMEM;
	for (i = 0; i < hl->n; i++)
		json_object_array_add(a, host_json(w, i, true));
	return yx_http_send_obj(r, 200, o);
}

/* Make or remove <saves>/hosts/<name>.draining. YX_OK or an errno's code. */
static int
front_set_draining(struct yx_wctx *w, const char *name, bool on)
{
	char	dir[YX_CFG_PATH + 16], p[YX_CFG_PATH + 64];
	int	fd;

	snprintf(dir, sizeof(dir), "%s/hosts", w->cfg->saves_dir);
	snprintf(p, sizeof(p), "%s/%s.draining", dir, name);
	if (!on)
		return unlink(p) == 0 || errno == ENOENT ? YX_OK : yx_err_from_errno(errno);
	if (mkdir(dir, 0755) == -1 && errno != EEXIST)
		return yx_err_from_errno(errno);
	if ((fd = open(p, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644)) == -1)
		return yx_err_from_errno(errno);
	close(fd);
	return YX_OK;
}

/* POST / DELETE /api/admin/hosts/{name}/drain. */
static int
front_drain(struct yx_wctx *w, struct yx_http_req *r, const char *name, bool on)
{
	int i, rc;

	if (w->remote == NULL || w->remote->rm == NULL)
		return YX_E_NOT_FOUND;
	if ((i = yx_hostlist_find(yx_remote_hosts(w->remote->rm), name)) < 0)
		return yx_http_send_error(r, YX_E_NOT_FOUND, "no such host"), YX_E_NOT_FOUND;
	if ((rc = front_set_draining(w, name, on)) != YX_OK)
		return rc;
	log_info("admin %s: host %s %s", r->user, name, on ? "draining" : "taking new threads");
	return yx_http_send_obj(r, 200, host_json(w, (size_t)i, false));
}

int
yx_h_front_drain(struct yx_wctx *w, struct yx_http_req *r, const char *arg)
{
	return front_drain(w, r, arg, true);
}

int
yx_h_front_undrain(struct yx_wctx *w, struct yx_http_req *r, const char *arg)
{
	return front_drain(w, r, arg, false);
}
