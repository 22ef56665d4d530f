/* SPDX-License-Identifier: MIT */
/*
 * h_threads.c - POST/GET/PATCH/DELETE /api/threads (docs/api.md "Threads"):
 * records with the caller's metadata and idle timeout, listings filtered
 * by metadata.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include <json-c/json.h>
#include <openssl/rand.h>

#include "daemon_int.h"
#include "remote_int.h"
#include "yuxi/log.h"
#include "yuxi/path.h"

static struct json_object *
jstr_or_null(const char *s)
{
	return s[0] != '\0' ? json_object_new_string(s) : NULL;
}

/* The API view of a record (caller puts). */
static struct json_object *
thread_json(const struct yx_thread *t)
{
	struct json_object	*o;
	char			 ts[40];

	if ((o = json_object_new_object()) == NULL)
		return NULL;
	json_object_object_add(o, "thread_id", json_object_new_string(t->thread_id));
	json_object_object_add(o, "owner", json_object_new_string(t->owner));
	json_object_object_add(o, "agent_id", jstr_or_null(t->agent_id));
	json_object_object_add(o, "agent_config_id", jstr_or_null(t->agent_config_id));
	json_object_object_add(o, "created_at",
	    json_object_new_string(yx_iso8601_ms(t->created_ms, ts, sizeof(ts))));
	if (t->host[0] != '\0')	/* a front's placement (docs/scaling.md) */
		json_object_object_add(o, "host", json_object_new_string(t->host));
	json_object_object_add(o, "metadata", yx_thread_meta_json(&t->meta));
	json_object_object_add(o, "idle_timeout",
	    t->idle_timeout > 0 ? json_object_new_int(t->idle_timeout) : NULL);
	return o;
}

static void
thread_new_id(char *buf, size_t len)
{
	unsigned char	rnd[8];
	size_t		i;

	if (RAND_bytes(rnd, sizeof(rnd)) != 1)
		for (i = 0; i < sizeof(rnd); i++)
			rnd[i] = (unsigned char)(random() & 0xff);
	snprintf(buf, len, "t-");
	for (i = 0; i < sizeof(rnd); i++)
		snprintf(buf + 2 + 2 * i, len - 2 - 2 * i, "%02x", rnd[i]);
}

/*
 * "idle_timeout" of a create or a PATCH: absent (*set false), null (0: the
 * service's) or 1..YUXI_SANDBOX_IDLE_TIMEOUT_MAX seconds. YX_OK or
 * YX_E_BAD_REQUEST with the message in e.
 */
static int
thread_idle_field(const struct yx_config *cfg, struct json_object *body,
    bool *set, int *secs, struct yx_errctx *e)
{
	struct json_object	*v;
	int64_t			 n;

	*set = false;
	*secs = 0;
	if (body == NULL || !json_object_object_get_ex(body, "idle_timeout", &v))
		return YX_OK;
	*set = true;
	if (json_object_is_type(v, json_type_null))
		return YX_OK;
	if (!json_object_is_type(v, json_type_int) ||
	    (n = json_object_get_int64(v)) < 1 || n > cfg->idle_timeout_max)
		return yx_fail(e, YX_E_BAD_REQUEST,
		    "idle_timeout must be an integer number of seconds from 1 to %d (YUXI_SANDBOX_IDLE_TIMEOUT_MAX), or null",
		    cfg->idle_timeout_max);
	*secs = (int)n;
	return YX_OK;
}

/* "metadata" of a create: absent, null or an object (yx_thread_meta_parse). */
static int
thread_meta_field(struct json_object *body, struct yx_thread_meta *m,
    struct yx_errctx *e)
{
	struct json_object *v;

	memset(m, 0, sizeof(*m));
	if (body == NULL || !json_object_object_get_ex(body, "metadata", &v) ||
	    json_object_is_type(v, json_type_null))
		return YX_OK;
	return yx_thread_meta_parse(v, m, e);
}

int
yx_parse_thread_create(struct yx_wctx *w, struct yx_http_req *r, bool id_required,
    struct yx_thread *want)
{
	bool			 idle_set;
	struct json_object	*body = NULL;
	struct yx_errctx	 e;
	const char		*id = NULL, *agent = NULL, *conf = NULL;
	int			 rc = YX_OK;

	yx_errctx_clear(&e);
	memset(want, 0, sizeof(*want));
	/* every field may be optional: no body (no Content-Length) or an empty one is {} */
	if ((id_required || r->content_length > 0) &&
	    (rc = yx_http_read_json(r, &body, &e)) != YX_OK)
		return yx_send_errctx(r, rc, &e), rc;
	if (body != NULL && (yx_json_opt_str(body, "thread_id", &id) != YX_OK || yx_json_opt_str(body, "agent_id", &agent) != YX_OK || yx_json_opt_str(body, "agent_config_id", &conf) != YX_OK)) {
		rc = YX_E_BAD_REQUEST;
		yx_http_send_error(r, rc, "thread_id, agent_id and agent_config_id must be strings");
	} else if (id == NULL ? id_required : !yx_thread_id_valid(id, strlen(id))) {
		rc = YX_E_INVALID_THREAD_ID;
		yx_http_send_error(r, rc, YX_THREAD_ID_RULE);
	} else if ((rc = yx_agents_check(w->agents, agent != NULL ? agent : "",
			conf != NULL ? conf : "", &e)) != YX_OK ||
	    (rc = thread_meta_field(body, &want->meta, &e)) != YX_OK ||
	    (rc = thread_idle_field(w->cfg, body, &idle_set, &want->idle_timeout,
		 &e)) != YX_OK)
		yx_send_errctx(r, rc, &e);
	if (rc == YX_OK) {
		if (id != NULL)
			snprintf(want->thread_id, sizeof(want->thread_id), "%s", id);
		else
			thread_new_id(want->thread_id, sizeof(want->thread_id));
		snprintf(want->owner, sizeof(want->owner), "%s", r->user);
		snprintf(want->agent_id, sizeof(want->agent_id), "%s", agent ? agent : "");
		snprintf(want->agent_config_id, sizeof(want->agent_config_id), "%s",
		    conf ? conf : "");
	}
	json_object_put(body);
	return rc;
}

int
yx_h_threads_create(struct yx_wctx *w, struct yx_http_req *r, const char *arg)
{
	struct yx_thread	 want, t;
	struct yx_errctx	 e;
	bool			 created = false;
	int			 rc;

	yx_errctx_clear(&e);
	if ((rc = yx_need_user(r)) != YX_OK ||
	    (rc = yx_parse_thread_create(w, r, false, &want)) != YX_OK)
		return rc;
	snprintf(r->thread_id, sizeof(r->thread_id), "%s", want.thread_id);
	if ((rc = yx_thread_create_limited(&w->store, &want,
		 (unsigned)w->cfg->max_threads_per_user, &t, &created, &e)) !=
	    YX_OK)
		return yx_send_errctx(r, rc, &e), rc;
	yx_audit_note_meta(&w->note, &t.meta);
	return yx_http_send_obj(r, created ? 201 : 200, thread_json(&t));
}

#define THREAD_FILTER	"metadata."

/*
 * The listing's filters: every query key "metadata.KEY" (repeatable; each
 * must match). Any other key is refused, so a misspelt filter never
 * silently lists everything. YX_OK or the 400 sent.
 */
static int
thread_filter_check(struct yx_http_req *r)
{
	const struct yx_query_kv	*kv;
	size_t				 i;

	for (i = 0; i < r->query.n; i++) {
		kv = &r->query.kv[i];
		if (strncmp(kv->key, THREAD_FILTER, strlen(THREAD_FILTER)) != 0 ||
		    kv->key[strlen(THREAD_FILTER)] == '\0') {
			yx_http_send_error(r, YX_E_BAD_REQUEST,
			    "the only query parameters are metadata.KEY=VALUE filters");
			return YX_E_BAD_REQUEST;
		}
		if (strlen(kv->val) != kv->vlen) {
			yx_http_send_error(r, YX_E_BAD_REQUEST, "a filter value holds NUL");
			return YX_E_BAD_REQUEST;
		}
	}
	return YX_OK;
}

/* Does t match every metadata.KEY=VALUE filter of r? */
static bool
thread_filter_match(const struct yx_http_req *r, const struct yx_thread *t)
{
	size_t i;

	for (i = 0; i < r->query.n; i++)
		if (!yx_thread_meta_has(&t->meta, r->query.kv[i].key + strlen(THREAD_FILTER),
			r->query.kv[i].val))
			return false;
	return true;
}

int
yx_h_threads_list(struct yx_wctx *w, struct yx_http_req *r, const char *arg)
{
	struct yx_thread	*v = NULL;
	struct json_object	*o = NULL, *a;
	struct yx_errctx	 e;
	size_t			 i, n = 0;
	int			 rc;

	yx_errctx_clear(&e);
	if ((rc = yx_need_user(r)) != YX_OK || (rc = thread_filter_check(r)) != YX_OK)
		return rc;
	if ((rc = yx_thread_list(&w->store, r->user, &v, &n, &e)) != YX_OK)
		return yx_send_errctx(r, rc, &e), rc;
	if ((o = yx_json_list("threads", &a)) == NULL) {
		rc = YX_E_NOMEM;
		goto done;
	}
	for (i = 0; i < n; i++)
		if (thread_filter_match(r, &v[i]))
			json_object_array_add(a, thread_json(&v[i]));
	rc = yx_http_send_json(r, 200, o);
done:
	json_object_put(o);
	free(v);
	return rc;
}

/* "sandbox": {...} of a thread from the provider table. */
static struct json_object *
thread_sandbox_json(struct yx_wctx *w, const char *id)
{
	struct json_object	*s;
	struct yx_shm_slot	 slot;
	char			 ts[40];
	int			 i = -1;

	memset(&slot, 0, sizeof(slot));
	if (yx_provider_slot(w->table, id, YX_SLOT_BY_THREAD, &slot, NULL) ==
	    YX_OK)
		i = 0;
	if ((s = json_object_new_object()) == NULL)
		return NULL;
	if (i < 0) {
		json_object_object_add(s, "sandbox_id", NULL);
		json_object_object_add(s, "state", json_object_new_string("none"));
		json_object_object_add(s, "container", NULL);
		json_object_object_add(s, "last_used_at", NULL);
		return s;
	}
	json_object_object_add(s, "sandbox_id", json_object_new_string(slot.sandbox_id));
	json_object_object_add(s, "state",
	    json_object_new_string(yx_slot_state_name((int)slot.state)));
	json_object_object_add(s, "container", jstr_or_null(slot.container_name));
	json_object_object_add(s, "last_used_at",
	    slot.last_used_at > 0 ? json_object_new_string(yx_iso8601_ms(slot.last_used_at,
					ts, sizeof(ts))) :
				    NULL);
	return s;
}

int
yx_h_threads_get(struct yx_wctx *w, struct yx_http_req *r, const char *arg)
{
	struct yx_thread	 t;
	struct json_object	*o;
	int			 rc;

	if ((rc = yx_need_user(r)) != YX_OK ||
	    (rc = yx_load_thread(w, r, arg, strlen(arg), &t)) != YX_OK)
		return rc;
	if ((o = thread_json(&t)) == NULL)
		return YX_E_NOMEM;
	json_object_object_add(o, "sandbox", thread_sandbox_json(w, t.thread_id));
	json_object_object_add(o, "disk", yx_disk_json(w, t.thread_id));
	return yx_http_send_obj(r, 200, o);
}

/*
 * PATCH: {"metadata"?: merge patch, "idle_timeout"?: seconds or null}.
 * The new idle timeout reaches the thread's sandbox at once (its slot),
 * not only at its next command.
 */
int
yx_h_threads_patch(struct yx_wctx *w, struct yx_http_req *r, const char *arg)
{
	struct yx_thread_patch	 p;
	struct json_object	*body = NULL, *v;
	struct yx_thread	 t;
	struct yx_errctx	 e;
	int			 rc;

	yx_errctx_clear(&e);
	memset(&p, 0, sizeof(p));
	if ((rc = yx_need_user(r)) != YX_OK ||
	    (rc = yx_load_thread(w, r, arg, strlen(arg), &t)) != YX_OK)
		return rc;
	if ((rc = yx_http_read_json(r, &body, &e)) != YX_OK)
		goto fail;
	json_object_object_foreach(body, key, val)
	{
		(void)val;
		if (strcmp(key, "metadata") != 0 && strcmp(key, "idle_timeout") != 0) {
			rc = yx_fail(&e, YX_E_BAD_REQUEST,
			    "only metadata and idle_timeout can be changed");
			goto fail;
		}
	}
	if (json_object_object_get_ex(body, "metadata", &v) &&
	    !json_object_is_type(v, json_type_null)) {
		if (!json_object_is_type(v, json_type_object)) {
			rc = yx_fail(&e, YX_E_INVALID_METADATA,
			    "metadata must be an object (a merge patch: null removes a key)");
			goto fail;
		}
		p.meta = v;
	}
	if ((rc = thread_idle_field(w->cfg, body, &p.set_idle, &p.idle_timeout,
		 &e)) != YX_OK ||
	    (rc = yx_thread_update(&w->store, t.thread_id, r->user, &p, &t,
		 &e)) != YX_OK)
		goto fail;
	yx_audit_note_meta(&w->note, &t.meta);
	if (p.set_idle)
		(void)yx_provider_set_idle(w->table, t.thread_id, t.idle_timeout);
	json_object_put(body);
	return yx_http_send_obj(r, 200, thread_json(&t));
fail:
	json_object_put(body);
	return yx_send_errctx(r, rc, &e), rc;
}

/*
 * DELETE: the sandbox first (it must not keep writing into removed data),
 * then the id is retired (renamed away: from here on the thread is not
 * found), then the sandbox again (an execute that looked the thread up
 * before the rename may have made one meanwhile), and only then the data,
 * the agent directory and the uid go: a thread of the same id created
 * later, by anyone, starts from nothing.
 */
int
yx_h_threads_delete(struct yx_wctx *w, struct yx_http_req *r, const char *arg)
{
	struct yx_thread	t;
	struct yx_errctx	e;
	char			tomb[64];
	int			rc;

	yx_errctx_clear(&e);
	if ((rc = yx_need_user(r)) != YX_OK ||
	    (rc = yx_load_thread(w, r, arg, strlen(arg), &t)) != YX_OK)
		return rc;
	if (w->prov_ok) {
		rc = yx_provider_destroy(&w->prov, NULL, t.thread_id, &e);
		if (rc != YX_OK && rc != YX_E_NOT_FOUND)
			return yx_send_errctx(r, rc, &e), rc;
	}
	yx_errctx_clear(&e);
	if ((rc = yx_thread_retire(&w->store, t.thread_id, r->user, &t, tomb,
		 sizeof(tomb), &e)) != YX_OK)
		return yx_send_errctx(r, rc, &e), rc;
	if (w->prov_ok)
		(void)yx_provider_destroy(&w->prov, NULL, t.thread_id, NULL);
	if ((rc = yx_thread_purge(&w->store, &t, tomb, &e)) != YX_OK)
		return yx_send_errctx(r, rc, &e), rc;
	return yx_http_send_empty(r, 204);
}

/* For the front (remote_int.h): the record's view and the create body. */
struct json_object *
yx_thread_json(const struct yx_thread *t)
{
	return thread_json(t);
}
