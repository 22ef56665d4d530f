/* SPDX-License-Identifier: MIT */
/*
 * h_common.c - what every handler shares: identity (401), the caller's
 * thread with the one 404 for unknown and foreign threads alike, error
 * replies from an errctx, optional JSON string fields, the cached engine
 * ping (the readiness checks' cache, yuxi/ready.h) and a thread's disk
 * figures.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include <json-c/json.h>

#include "daemon_int.h"
#include "yuxi/path.h"
#include "yuxi/procs.h"
#include "yuxi/sessions.h"
#include "yuxi/text.h"

int
yx_need_user(struct yx_http_req *r)
{
	if (r->user[0] != '\0')
		return YX_OK;
	yx_http_send_error(r, YX_E_UNAUTHENTICATED,
	    r->bad_identity ? "invalid identity" : "no identity");
	return YX_E_UNAUTHENTICATED;
}

int
yx_need_admin(struct yx_http_req *r)
{
	int rc;

	if ((rc = yx_need_user(r)) != YX_OK)
		return rc;
	if (r->admin)
		return YX_OK;
	yx_http_send_error(r, YX_E_FORBIDDEN, "admin only");
	return YX_E_FORBIDDEN;
}

/*
 * Retry-After for the refusals that pass (docs/api.md "Responses"): a
 * busy table or a full one frees up within seconds; a user's running
 * sandboxes are free again when their commands end; a thread limit only
 * when the user deletes threads, so asking again soon is pointless.
 */
static const char *
retry_after(int rc)
{
	switch (rc) {
	case YX_E_BUSY:
	case YX_E_CAPACITY:
	case YX_E_SANDBOX_LIMIT:
		return "Retry-After: 5\r\n";
	case YX_E_THREAD_LIMIT:
		return "Retry-After: 60\r\n";
	default:
		return NULL;
	}
}

int
yx_send_errctx(struct yx_http_req *r, int rc, const struct yx_errctx *e)
{
	const char *msg = NULL, *hdr;

	if (e != NULL && e->code == rc && e->msg[0] != '\0')
		msg = e->msg;
	if ((hdr = retry_after(rc)) != NULL)
		return yx_http_send_error_hdr(r, rc, msg, hdr);
	return yx_http_send_error(r, rc, msg);
}

int
yx_load_thread(struct yx_wctx *w, struct yx_http_req *r, const char *id, size_t idlen,
    struct yx_thread *t)
{
	struct yx_errctx	e;
	int			rc;

	yx_errctx_clear(&e);
	if (id == NULL || !yx_thread_id_valid(id, idlen) || strlen(id) != idlen) {
		yx_http_send_error(r, YX_E_INVALID_THREAD_ID,
		    YX_THREAD_ID_RULE);
		return YX_E_INVALID_THREAD_ID;
	}
	snprintf(r->thread_id, sizeof(r->thread_id), "%s", id);
	if ((rc = yx_thread_get(&w->store, id, r->user, t, &e)) != YX_OK)
		yx_send_errctx(r, rc, &e);
	else
		yx_audit_note_meta(&w->note, &t->meta);
	return rc;
}

int
yx_json_opt_str(struct json_object *o, const char *key, const char **out)
{
	struct json_object *v;

	*out = NULL;
	if (!json_object_object_get_ex(o, key, &v) || json_object_is_type(v, json_type_null))
		return YX_OK;
	if (!json_object_is_type(v, json_type_string))
		return YX_E_BAD_REQUEST;
	/* "\u0000" inside: the C string would silently name something else */
	if (strlen(json_object_get_string(v)) != (size_t)json_object_get_string_len(v))
		return YX_E_BAD_REQUEST;
	*out = json_object_get_string(v);
	return YX_OK;
}

bool
yx_engine_up(struct yx_wctx *w)
{
	return yx_ready_engine_up(&w->ready);
}

struct json_object *
yx_disk_json(struct yx_wctx *w, const char *id)
{
	struct yx_thread_disk	 u;
	struct json_object	*o;

	if (yx_thread_disk_usage(&w->store, id, &u) != YX_OK ||
	    (o = json_object_new_object()) == NULL)
		return NULL;
	json_object_object_add(o, "quota_bytes", json_object_new_int64((int64_t)u.quota));
	json_object_object_add(o, "used_bytes", json_object_new_int64((int64_t)u.used));
	json_object_object_add(o, "available_bytes",
	    json_object_new_int64((int64_t)u.avail));
	return o;
}

int
yx_parse_command(struct yx_http_req *r, struct json_object *body, const char **tid,
    const char **cmd, int *timeout, int cap)
{
	struct json_object *v;

	*timeout = 0;
	if (yx_json_opt_str(body, "thread_id", tid) != YX_OK || *tid == NULL ||
	    !yx_thread_id_valid(*tid, strlen(*tid))) {
		yx_http_send_error(r, YX_E_INVALID_THREAD_ID, YX_THREAD_ID_RULE);
		return YX_E_INVALID_THREAD_ID;
	}
	if (yx_json_opt_str(body, "command", cmd) != YX_OK || *cmd == NULL ||
	    (*cmd)[0] == '\0') {
		yx_http_send_error(r, YX_E_BAD_REQUEST, "command must be a non-empty string");
		return YX_E_BAD_REQUEST;
	}
	if (json_object_object_get_ex(body, "timeout", &v) &&
	    !json_object_is_type(v, json_type_null)) {
		if (!json_object_is_type(v, json_type_int) || json_object_get_int64(v) <= 0) {
			yx_http_send_error(r, YX_E_BAD_REQUEST,
			    "timeout must be a positive integer number of seconds");
			return YX_E_BAD_REQUEST;
		}
		*timeout = json_object_get_int64(v) > cap ? cap : (int)json_object_get_int64(v);
	}
	return YX_OK;
}

struct json_object *
yx_json_list(const char *key, struct json_object **a)
{
	struct json_object *o;

	if ((o = json_object_new_object()) == NULL)
		return NULL;
	if ((*a = json_object_new_array()) == NULL) {
		json_object_put(o);
		return NULL;
	}
	json_object_object_add(o, key, *a);
	return o;
}

/* The process id of the route; 404 for one that cannot exist. */
int
yx_need_proc_id(struct yx_http_req *r, const char *arg)
{
	if (arg[0] == 'p' && strlen(arg) == YX_PROC_ID_SIZE - 1 &&
	    strspn(arg + 1, "0123456789abcdef") == YX_PROC_ID_SIZE - 2)
		return YX_OK;
	yx_http_send_error(r, YX_E_NOT_FOUND, "no such process");
	return YX_E_NOT_FOUND;
}

int
yx_need_session_id(struct yx_http_req *r, const char *arg)
{
	if (yx_session_id_valid(arg))
		return YX_OK;
	yx_http_send_error(r, YX_E_SESSION_NOT_FOUND, "no such session");
	return YX_E_SESSION_NOT_FOUND;
}

/* The names the relay sets for a profile with network: not the caller's. */
static bool
env_proxy_name(const char *s)
{
	return strcmp(s, "HTTP_PROXY") == 0 || strcmp(s, "HTTPS_PROXY") == 0 ||
	    strcmp(s, "http_proxy") == 0 || strcmp(s, "https_proxy") == 0;
}

static int
opts_bad(struct yx_http_req *r, int rc, const char *msg)
{
	yx_http_send_error(r, rc, msg);
	return rc;
}

int
yx_exec_opts_parse(struct yx_http_req *r, struct json_object *body,
    const struct yx_profile *prof, struct yx_exec_opts *o)
{
	struct yx_vpath		 vp;
	struct json_object	*v;
	const char		*s;
	size_t			 used = 0, off = 0, nl, vl;
	char			 msg[200];
	int			 rc;

	o->has_cwd = false;
	o->nenv = 0;
	if (json_object_object_get_ex(body, "cwd", &v) && !json_object_is_type(v, json_type_null)) {
		if (!json_object_is_type(v, json_type_string) ||
		    strlen(json_object_get_string(v)) != (size_t)json_object_get_string_len(v))
			return opts_bad(r, YX_E_INVALID_PATH, "cwd must be a path");
		s = json_object_get_string(v);
		if ((rc = yx_path_resolve(s, strlen(s), &vp)) != YX_OK)
			return opts_bad(r, YX_E_INVALID_PATH, rc == YX_E_PATH_NOT_ALLOWED ? "cwd must be a directory beneath /home/yuxi/user-data or /home/yuxi/skills" : "cwd: invalid path");
		snprintf(o->cwd, sizeof(o->cwd), "%s", vp.canon);
		o->has_cwd = true;
	}
	if (!json_object_object_get_ex(body, "env", &v) || json_object_is_type(v, json_type_null))
		return YX_OK;
	if (!json_object_is_type(v, json_type_object))
		return opts_bad(r, YX_E_INVALID_ENV, "env must be an object of strings");
	json_object_object_foreach(v, key, val)
	{
		if (!yx_env_name_ok(key)) {
			snprintf(msg, sizeof(msg), "env names must match [A-Za-z_][A-Za-z0-9_]*");
			return opts_bad(r, YX_E_INVALID_ENV, msg);
		}
		if (!json_object_is_type(val, json_type_string) ||
		    strlen(json_object_get_string(val)) != (size_t)json_object_get_string_len(val))
			return opts_bad(r, YX_E_INVALID_ENV, "env values must be strings without NUL");
		if (prof != NULL && prof->net.nallow > 0 && env_proxy_name(key))
			return opts_bad(r, YX_E_INVALID_ENV,
			    "the proxy variables of a profile with network are the sandbox's own");
		nl = strlen(key);
		vl = strlen(json_object_get_string(val));
		if (o->nenv == YX_EXEC_USER_ENV_MAX)
			return opts_bad(r, YX_E_INVALID_ENV, "at most 64 env entries");
		if (used + nl + vl > YX_EXEC_USER_ENV_BYTES)
			return opts_bad(r, YX_E_INVALID_ENV, "env: at most 32 KiB in all");
		/* "NAME=value\0": used counts names and values, off the bytes */
		memcpy(o->store + off, key, nl);
		o->store[off + nl] = '=';
		memcpy(o->store + off + nl + 1, json_object_get_string(val), vl);
		o->store[off + nl + 1 + vl] = '\0';
		o->env[o->nenv++] = o->store + off;
		off += nl + vl + 2;
		used += nl + vl;
	}
	return YX_OK;
}

void
yx_exec_opts_apply(const struct yx_exec_opts *o, struct yx_exec_request *req)
{
	req->cwd = o->has_cwd ? o->cwd : NULL;
	req->env = o->nenv > 0 ? o->env : NULL;
	req->nenv = o->nenv;
}
