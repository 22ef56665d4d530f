/* SPDX-License-Identifier: MIT */
/*
 * thread_req.c - what the thread routes of every mode share (docs/api.md
 * "Threads"): the API view of a record, and the bodies of a create and of
 * a PATCH checked into a record and a change (the standalone handlers in
 * h_threads.c, a front's in h_front.c, a provisioner's registration in
 * h_prov.c), and a fork's source (its "from_snapshot"); a create up to
 * the record, for a caller or a front's registration; fresh random ids
 * (a thread's, an MCP session's). Each parser answers its 400 itself.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>
#include <openssl/rand.h>

#include "daemon_int.h"

static struct json_object *
jstr_or_null(const char *s)
{
	return s[0] != '\0' ? json_object_new_string(s) : NULL;
}

struct json_object *
yx_thread_json(const struct yx_thread *t)
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

/* A fresh id: see daemon_int.h. */
void
yx_rand_hex(char *buf, size_t len, size_t nbytes)
{
	unsigned char	rnd[32];
	size_t		i;

	if (nbytes > sizeof(rnd))
		nbytes = sizeof(rnd);
	if (RAND_bytes(rnd, (int)nbytes) != 1)
		for (i = 0; i < nbytes; i++)
			rnd[i] = (unsigned char)(random() & 0xff);
	if (len > 0)
		buf[0] = '\0';
	for (i = 0; i < nbytes && 2 * i + 2 < len; i++)
		snprintf(buf + 2 * i, len - 2 * i, "%02x", rnd[i]);
}

/* A new thread's id when the create names none: "t-" and 16 hex digits. */
static void
thread_new_id(char *buf, size_t len)
{
	snprintf(buf, len, "t-");
	yx_rand_hex(buf + 2, len - 2, 8);
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
	struct json_object	*body = w->body;	/* the router's (YX_R_JSON) */
	struct yx_errctx	 e;
	const char		*id = NULL, *agent = NULL, *conf = NULL;
	int			 rc = YX_OK;

	yx_errctx_clear(&e);
	memset(want, 0, sizeof(*want));
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
	return rc;
}

int
yx_parse_thread_patch(struct yx_wctx *w, struct yx_thread_patch *p,
    struct yx_errctx *e)
{
	struct json_object	*body = w->body, *v;
	int			 rc;

	memset(p, 0, sizeof(*p));
	json_object_object_foreach(body, key, val)
	{
		(void)val;
		if (strcmp(key, "metadata") != 0 && strcmp(key, "idle_timeout") != 0)
			return yx_fail(e, YX_E_BAD_REQUEST,
			    "only metadata and idle_timeout can be changed");
	}
	if (json_object_object_get_ex(body, "metadata", &v) &&
	    !json_object_is_type(v, json_type_null)) {
		if (!json_object_is_type(v, json_type_object))
			return yx_fail(e, YX_E_INVALID_METADATA,
			    "metadata must be an object (a merge patch: null removes a key)");
		p->meta = v;
	}
	rc = thread_idle_field(w->cfg, body, &p->set_idle, &p->idle_timeout, e);
	return rc;
}

/* A fork's source (docs/api.md "Snapshots"): see daemon_int.h. */
int
yx_snap_fork_source(struct yx_wctx *w, struct yx_http_req *r, struct yx_thread *src,
    char *sid, size_t slen)
{
	struct yx_thread_snap	 s;
	struct json_object	*fs, *v;
	struct yx_errctx	 e;
	const char		*tid = NULL, *id = NULL;
	int			 rc;

	yx_errctx_clear(&e);
	sid[0] = '\0';
	if (!json_object_object_get_ex(w->body, "from_snapshot", &fs) ||
	    json_object_is_type(fs, json_type_null))
		return YX_OK;
	if (!json_object_is_type(fs, json_type_object) ||
	    !json_object_object_get_ex(fs, "thread_id", &v) ||
	    !json_object_is_type(v, json_type_string) ||
	    (tid = json_object_get_string(v)) == NULL ||
	    !json_object_object_get_ex(fs, "snapshot_id", &v) ||
	    !json_object_is_type(v, json_type_string) || (id = json_object_get_string(v)) == NULL)
		return yx_http_send_error(r, YX_E_BAD_REQUEST,
			   "from_snapshot must be {\"thread_id\": ..., \"snapshot_id\": ...}"),
		       YX_E_BAD_REQUEST;
	/* another user's thread or snapshot: 404, as a missing one */
	if ((rc = yx_load_thread(w, r, tid, strlen(tid), src)) != YX_OK)
		return rc;
	if ((rc = yx_thread_snap_get(&w->store, src, id, &s, &e)) != YX_OK)
		return yx_send_errctx(r, rc, &e), rc;
	snprintf(sid, slen, "%s", id);
	return YX_OK;
}

/* A create up to the record: see daemon_int.h. */
int
yx_thread_req_create(struct yx_wctx *w, struct yx_http_req *r, bool front, struct yx_thread *t,
    bool *created)
{
	struct yx_thread	want, src;
	struct yx_errctx	e;
	char			sid[64];
	int			rc;

	yx_errctx_clear(&e);
	*created = false;
	if ((rc = yx_parse_thread_create(w, r, front, &want)) != YX_OK)
		return rc;
	/* a fork (docs/api.md "Snapshots"): the source first, as the caller's */
	if ((rc = yx_snap_fork_source(w, r, &src, sid, sizeof(sid))) != YX_OK)
		return rc;
	snprintf(r->thread_id, sizeof(r->thread_id), "%s", want.thread_id);
	if (front)	/* the front counts a user's threads */
		rc = yx_thread_create(&w->store, &want, t, created, &e);
	else
		rc = yx_thread_create_limited(&w->store, &want,
		    (unsigned)w->cfg->max_threads_per_user, t, created, &e);
	if (rc != YX_OK)
		return yx_send_errctx(r, rc, &e), rc;
	if (sid[0] == '\0' || (front && !*created))
		return YX_OK;	/* a front's registration again: copied before */
	if (!*created)
		return yx_http_send_error(r, YX_E_THREAD_EXISTS,
			   "a fork makes a new thread: this one exists"),
		       YX_E_THREAD_EXISTS;
	if ((rc = yx_thread_snap_copy(&w->store, &src, sid, t, &e)) != YX_OK) {
		(void)yx_thread_remove(&w->store, t->thread_id, t->owner, NULL);
		return yx_send_errctx(r, rc, &e), rc;
	}
	return YX_OK;
}
