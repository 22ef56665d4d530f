/* SPDX-License-Identifier: MIT */
/*
 * h_fs.c - the agent filesystem endpoints (/api/filesystem/...) and the
 * viewer endpoints (/api/viewer/filesystem/...), docs/api.md.
 *
 * Every request: identity (401), thread id (400 invalid_thread_id before
 * any file access), the caller's thread (404 not_found, the same for
 * unknown and foreign threads), the path through yx_path_resolve() (400
 * invalid_path / 403 path_not_allowed), then one broker call (include/
 * yuxi/broker.h) on the host copy of the thread's files with exactly the
 * thread's visible skills. Nothing here starts or wakes a container.
 * Listings, glob and grep run on the request budget (YUXI_REQUEST_BUDGET_MS,
 * YUXI_WALK_READ_BUDGET) and stop when nginx drops the connection because
 * the client left: a cut answer says "truncated_reason".
 *
 * Downloads answer X-Accel-Redirect: <prefix>/_yuxi_files/<tid>/user-data/<rel>
 * or <prefix>/_yuxi_skills/<rel> (prefix: YUXI_URL_PREFIX), every segment
 * percent-encoded; nginx serves the
 * bytes from its internal locations with disable_symlinks on. A
 * sub-request (a tool call of the MCP endpoint, yuxi/http.h "Capture
 * mode") has nobody to follow that header: it gets the bytes, read
 * through the broker, up to the capture's inline_max.
 */
#include "config.h"

#include <sys/stat.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "daemon_int.h"
#include "yuxi/broker.h"
#include "yuxi/log.h"
#include "yuxi/path.h"
#include "yuxi/text.h"

#define YX_ACCEL_FILES	"/_yuxi_files/"
#define YX_ACCEL_SKILLS	"/_yuxi_skills/"

struct fs_ctx {
	struct yx_thread	t;
	struct yx_skill_set	skills;
	struct yx_broker	b;
	bool			b_open;
	struct yx_vpath		vp;
};

/* The broker's gone check: the client of this request left. */
static bool
fs_gone(void *arg)
{
	return yx_http_client_gone(arg);
}

static void
fs_close(struct fs_ctx *c)
{
	if (c->b_open)
		yx_broker_fini(&c->b);
	c->b_open = false;
}

/* Path flags of fs_open_q and fs_route. */
#define FS_TOP	0x1	/* "/" is the namespace root (YX_ROOT_TOP) */
#define FS_BODY	0x2	/* fs_route: thread_id and path in the JSON body */

/*
 * Resolve `path` (len bytes; NULL: dflt) into c->vp; with FS_TOP "/"
 * means the namespace root. Sends the error. The audit line gets the
 * canonical path, or the path as asked when it does not resolve.
 */
static int
fs_path(struct yx_wctx *w, struct yx_http_req *r, const char *path, size_t len,
    const char *dflt, unsigned flags, struct fs_ctx *c)
{
	int rc;

	if (path == NULL && dflt == NULL) {
		yx_http_send_error(r, YX_E_INVALID_PATH, "path is required");
		return YX_E_INVALID_PATH;
	}
	if (path == NULL) {
		path = dflt;
		len = strlen(dflt);
	}
	if ((flags & FS_TOP) && yx_path_is_top(path, len)) {
		c->vp.root = YX_ROOT_TOP;
		snprintf(c->vp.canon, sizeof(c->vp.canon), "/");
		c->vp.rel = c->vp.canon + 1;
		yx_audit_note_path(&w->note, "/", 1);
		return YX_OK;
	}
	if ((rc = yx_path_resolve(path, len, &c->vp)) != YX_OK) {
		yx_audit_note_path(&w->note, path, len);
		yx_http_send_error(r, rc,
		    rc == YX_E_PATH_NOT_ALLOWED ? "path outside /home/yuxi/user-data and /home/yuxi/skills" : "invalid path");
	} else
		yx_audit_note_path(&w->note, c->vp.canon, strlen(c->vp.canon));
	return rc;
}

/*
 * The caller's thread `tid`, its skills and a broker on its files.
 * YX_OK, or an error already answered.
 */
static int
fs_open(struct yx_wctx *w, struct yx_http_req *r, const char *tid, size_t tidlen,
    struct fs_ctx *c)
{
	const char		*names[YX_SKILLS_MAX];
	struct yx_broker_limits	 lim;
	struct yx_errctx	 e;
	char			 ud[YX_CFG_PATH + 256];
	size_t			 i;
	int			 rc;

	yx_errctx_clear(&e);
	memset(c, 0, sizeof(*c));
	if ((rc = yx_load_thread(w, r, tid, tid != NULL ? tidlen : 0, &c->t)) != YX_OK)
		return rc;
	if ((rc = yx_agents_skills(w->agents, c->t.agent_id, c->t.agent_config_id,
		 &c->skills)) != YX_OK)
		return rc;
	for (i = 0; i < c->skills.n; i++)
		names[i] = c->skills.names[i];
	memset(&lim, 0, sizeof(lim));
	lim.upload_max = w->cfg->upload_limit;
	lim.viewer_max = w->cfg->viewer_file_limit;
	/* 0 in the configuration is "no limit", 0 in the broker "default" */
	lim.walk_bytes = w->cfg->walk_read_budget > 0 ? w->cfg->walk_read_budget :
							UINT64_MAX;
	lim.time_ms = w->cfg->request_budget_ms > 0 ? w->cfg->request_budget_ms : -1;
	lim.gone = fs_gone;
	lim.gone_arg = r;
	if ((rc = yx_thread_path(w->cfg->saves_dir, c->t.thread_id,
		 YX_TP_USER_DATA, ud, sizeof(ud))) != YX_OK)
		return rc;
	/* OWNED: the thread found above, not a successor of the same id;
	 * RO: its profile's workspace is read-only (403 read_only) */
	rc = yx_broker_init(&c->b, ud, w->cfg->skills_dir, names, c->skills.n,
	    (uid_t)c->t.uid, (gid_t)c->t.gid, &lim,
	    (c->t.own_uid ? YX_BROKER_OWNED : 0) |
		(yx_agents_profile(w->agents, c->t.agent_id, c->t.agent_config_id)
				->workspace == YX_WORKSPACE_RO ?
			YX_BROKER_RO :
			0),
	    &e);
	if (rc != YX_OK) {
		log_warnx("thread %s: broker: %s", c->t.thread_id, e.msg);
		return yx_send_errctx(r, rc, &e), rc;
	}
	c->b_open = true;
	return YX_OK;
}

/* fs_open with thread_id from the query and the path resolved. */
static int
fs_open_q(struct yx_wctx *w, struct yx_http_req *r, const char *dflt,
    unsigned flags, struct fs_ctx *c)
{
	const char	*tid, *path;
	size_t		 tl = 0, pl = 0;
	int		 rc;

	tid = yx_query_get(&r->query, "thread_id", &tl);
	path = yx_query_get(&r->query, "path", &pl);
	if (path != NULL && pl == 0)
		path = NULL;
	if ((rc = fs_open(w, r, tid, tl, c)) != YX_OK ||
	    (rc = fs_path(w, r, path, pl, dflt, flags, c)) != YX_OK)
		fs_close(c);
	return rc;
}

/* fs_open with thread_id and path from the JSON body (the router's,
 * YX_R_JSON). Sends errors itself. */
static int
fs_open_body(struct yx_wctx *w, struct yx_http_req *r, struct fs_ctx *c)
{
	struct yx_errctx	 e;
	struct json_object	*v;
	const char		*tid = NULL;
	int			 rc;

	yx_errctx_clear(&e);
	memset(c, 0, sizeof(*c));
	if (yx_json_opt_str(w->body, "thread_id", &tid) != YX_OK)
		tid = NULL;
	if ((rc = fs_open(w, r, tid, tid != NULL ? strlen(tid) : 0, c)) != YX_OK)
		return rc;
	if (!json_object_object_get_ex(w->body, "path", &v) ||
	    !json_object_is_type(v, json_type_string)) {
		yx_http_send_error(r, YX_E_INVALID_PATH, "path is required");
		return YX_E_INVALID_PATH;
	}
	return fs_path(w, r, json_object_get_string(v),
	    (size_t)json_object_get_string_len(v), NULL, 0, c);
}

/* glob and grep: the required non-empty "pattern" (*pat borrows the query's). */
static int
fs_pattern(struct yx_http_req *r, const char **pat, struct yx_errctx *e)
{
	if ((*pat = yx_query_get(&r->query, "pattern", NULL)) == NULL || (*pat)[0] == '\0')
		return yx_fail(e, YX_E_BAD_REQUEST, "pattern is required");
	return YX_OK;
}

/* Non-negative integer query parameter; dflt when absent. */
static int
q_size(struct yx_http_req *r, const char *key, size_t dflt, size_t *out, struct yx_errctx *e)
{
	const char	*s = yx_query_get(&r->query, key, NULL);
	char		*end;
	unsigned long long v;

	*out = dflt;
	if (s == NULL || s[0] == '\0')
		return YX_OK;
	v = strtoull(s, &end, 10);
	if (*end != '\0' || s[0] == '-' || v > (1ULL << 31))
		return yx_fail(e, YX_E_BAD_REQUEST, "%s must be a non-negative integer", key);
	*out = (size_t)v;
	return YX_OK;
}

static struct json_object *
jtime_s(int64_t sec)
{
	char ts[40];

	return json_object_new_string(yx_iso8601_ms(sec * 1000, ts, sizeof(ts)));
}

/*
 * Add key: s (a file name or path from the disk) to o so the JSON stays
 * valid UTF-8 (RFC 8259) and lossless. Valid UTF-8 goes as is. Otherwise
 * `key` gets s with every invalid byte as U+FFFD, and "raw_<key>" the exact
 * bytes percent-encoded ('/' kept): usable verbatim as a query value.
 */
static void
json_add_name(struct json_object *o, const char *key, const char *s)
{
	struct yx_buf	 fix, raw;
	char		 rkey[32];
	bool		 bad = false;
	int		 rc;

	yx_buf_init(&fix, SIZE_MAX);
	yx_buf_init(&raw, SIZE_MAX);
	rc = yx_utf8_clean(&fix, s, strlen(s), YX_FFFD_BYTE, false, &bad);
	if (!bad || rc != YX_OK || yx_buf_append(&fix, "", 1) != YX_OK ||
	    yx_pct_encode_path(&raw, s) != YX_OK || yx_buf_append(&raw, "", 1) != YX_OK)
		json_object_object_add(o, key, json_object_new_string(bad ? "" : s));
	else {
		snprintf(rkey, sizeof(rkey), "raw_%s", key);
		json_object_object_add(o, key, json_object_new_string(fix.data));
		json_object_object_add(o, rkey, json_object_new_string(raw.data));
	}
	yx_buf_fini(&fix);
	yx_buf_fini(&raw);
}

static struct json_object *
entry_json(const struct yx_broker_entry *en, bool with_name)
{
	struct json_object *o;

	if ((o = json_object_new_object()) == NULL)
		return NULL;
	if (with_name)
		json_add_name(o, "name", en->name);
	json_add_name(o, "path", en->path);
	json_object_object_add(o, "is_dir", json_object_new_boolean(en->is_dir));
	json_object_object_add(o, "size", json_object_new_int64((int64_t)en->size));
	json_object_object_add(o, "modified_at", jtime_s(en->modified_at));
	json_object_object_add(o, "type", json_object_new_string(yx_ftype_name(en->type)));
	return o;
}

/* "truncated_reason" beside "truncated" when a limit or budget cut it. */
static void
json_add_cut(struct json_object *o, enum yx_broker_cut cut)
{
	const char *why = yx_broker_cut_name(cut);

	if (why != NULL)
		json_object_object_add(o, "truncated_reason",
		    json_object_new_string(why));
}

/* {"path", key: [entries], "truncated"[, "truncated_reason"]} of a listing. */
static struct json_object *
list_json(const struct yx_broker_list *l, const char *key, bool with_name, bool with_path)
{
	struct json_object	*o, *a;
	size_t			 i;

	if ((o = json_object_new_object()) == NULL)
		return NULL;
	if (with_path)
		json_object_object_add(o, "path", json_object_new_string(l->path));
	a = json_object_new_array();
	for (i = 0; a != NULL && i < l->n; i++)
		json_object_array_add(a, entry_json(&l->v[i], with_name));
	json_object_object_add(o, key, a);
	json_object_object_add(o, "truncated", json_object_new_boolean(l->truncated));
	json_add_cut(o, l->cut);
	return o;
}

/*
 * The namespace root "/": its two entries, user-data and skills (times
 * from the roots themselves; the skills root may be absent).
 */
static struct json_object *
roots_json(const struct fs_ctx *c, bool with_name)
{
	static const char *const names[] = { "user-data", "skills" };
	static const char *const paths[] = { YX_VROOT_USER_DATA, YX_VROOT_SKILLS };
	struct json_object	*o, *a, *en;
	struct stat		 st;
	const int		 fds[] = { c->b.ud_fd, c->b.sk_fd };
	size_t			 i;

	if ((o = json_object_new_object()) == NULL)
		return NULL;
	json_object_object_add(o, "path", json_object_new_string("/"));
	a = json_object_new_array();
	for (i = 0; a != NULL && i < 2; i++) {
		if ((en = json_object_new_object()) == NULL)
			break;
		if (with_name)
			json_object_object_add(en, "name",
			    json_object_new_string(names[i]));
		json_object_object_add(en, "path", json_object_new_string(paths[i]));
		json_object_object_add(en, "is_dir", json_object_new_boolean(1));
		json_object_object_add(en, "size", json_object_new_int(0));
		json_object_object_add(en, "modified_at", fds[i] != -1 && fstat(fds[i], &st) == 0 ? jtime_s(st.st_mtim.tv_sec) : NULL);
		json_object_object_add(en, "type", json_object_new_string("dir"));
		json_object_array_add(a, en);
	}
	json_object_object_add(o, "entries", a);
	json_object_object_add(o, "truncated", json_object_new_boolean(0));
	return o;
}

/*
 * The ops of the routes that answer JSON (fs_route): each works on the
 * opened thread and path (c), with the request r (a write's JSON body:
 * w->body, the router's), and returns YX_OK with the reply in *reply
 * (NULL: out of memory, nothing is sent) or an error with its message
 * in e.
 */
typedef int	fs_op(struct yx_wctx *, struct yx_http_req *, struct fs_ctx *,
    struct json_object **, struct yx_errctx *);

/*
 * A route that answers JSON (all but the downloads): the caller's thread
 * and the path opened (from the JSON body with FS_BODY, else from the
 * query, dflt and FS_TOP as fs_open_q), then op on them; its reply goes
 * out with status, its error as the error. One place closes both.
 */
static int
fs_route(struct yx_wctx *w, struct yx_http_req *r, unsigned flags, const char *dflt,
    fs_op *op, int status)
{
	struct json_object	*reply = NULL;
	struct fs_ctx		 c;
	struct yx_errctx	 e;
	int			 rc;

	yx_errctx_clear(&e);
	if (flags & FS_BODY)
		rc = fs_open_body(w, r, &c);
	else
		rc = fs_open_q(w, r, dflt, flags, &c);
	if (rc != YX_OK)
		;
	else if ((rc = op(w, r, &c, &reply, &e)) != YX_OK)
		yx_send_errctx(r, rc, &e);
	else
		rc = yx_http_send_obj(r, status, reply);
	fs_close(&c);
	return rc;
}

/* ls and the viewer tree: one level; "/" gives the two roots. */
static int
fs_list(struct fs_ctx *c, bool viewer, struct json_object **reply, struct yx_errctx *e)
{
	struct yx_broker_list	*l = NULL;
	int			 rc = YX_OK;

	if (c->vp.root == YX_ROOT_TOP)
		*reply = roots_json(c, viewer);
	else if ((rc = yx_broker_ls(&c->b, c->vp.root, c->vp.rel, &l, e)) == YX_OK)
		*reply = list_json(l, "entries", viewer, true);
	yx_broker_list_free(l);
	return rc;
}

static int
fs_ls_op(struct yx_wctx *w, struct yx_http_req *r, struct fs_ctx *c,
    struct json_object **reply, struct yx_errctx *e)
{
	return fs_list(c, false, reply, e);
}

int
yx_h_fs_ls(struct yx_wctx *w, struct yx_http_req *r, const char *arg)
{
	return fs_route(w, r, FS_TOP, YX_VROOT_WORKSPACE, fs_ls_op, 200);
}

static int
fs_tree_op(struct yx_wctx *w, struct yx_http_req *r, struct fs_ctx *c,
    struct json_object **reply, struct yx_errctx *e)
{
	return fs_list(c, true, reply, e);
}

int
yx_h_viewer_tree(struct yx_wctx *w, struct yx_http_req *r, const char *arg)
{
	return fs_route(w, r, FS_TOP, "/", fs_tree_op, 200);
}

/* "cut_lines": [1-based numbers of the lines cut at the line cap]. */
static struct json_object *
cut_lines_json(const struct yx_broker_text *t)
{
	struct json_object	*a = json_object_new_array();
	size_t			 i;

	for (i = 0; a != NULL && i < t->ncut; i++)
		json_object_array_add(a, json_object_new_int64((int64_t)t->cut[i]));
	return a;
}

static int
fs_cat_op(struct yx_wctx *w, struct yx_http_req *r, struct fs_ctx *c,
    struct json_object **reply, struct yx_errctx *e)
{
	struct yx_broker_text	*t = NULL;
	struct json_object	*o;
	const char		*fmt;
	size_t			 off, lim;
	bool			 raw;
	int			 rc;

	fmt = yx_query_get(&r->query, "format", NULL);
	raw = fmt != NULL && strcmp(fmt, "raw") == 0;
	if (fmt != NULL && fmt[0] != '\0' && !raw && strcmp(fmt, "numbered") != 0)
		return yx_fail(e, YX_E_BAD_REQUEST, "format must be raw or numbered");
	if ((rc = q_size(r, "offset", 0, &off, e)) != YX_OK ||
	    (rc = q_size(r, "limit", YX_BROKER_CAT_LIMIT, &lim, e)) != YX_OK ||
	    (rc = yx_broker_cat(&c->b, c->vp.root, c->vp.rel, off, lim, raw ? YX_CAT_RAW : 0, &t,
		 e)) != YX_OK)
		return rc;
	if ((o = json_object_new_object()) != NULL) {
		json_object_object_add(o, "path", json_object_new_string(t->path));
		json_object_object_add(o, "format",
		    json_object_new_string(raw ? "raw" : "numbered"));
		json_object_object_add(o, "content", yx_json_text(t->content, t->len));
		json_object_object_add(o, "start_line",
		    json_object_new_int64((int64_t)t->start_line));
		json_object_object_add(o, "end_line", json_object_new_int64((int64_t)t->end_line));
		json_object_object_add(o, "total_lines",
		    json_object_new_int64((int64_t)t->total_lines));
		json_object_object_add(o, "next_offset",
		    t->next_offset >= 0 ? json_object_new_int64(t->next_offset) : NULL);
		json_object_object_add(o, "cut_lines", cut_lines_json(t));
		json_object_object_add(o, "size", json_object_new_int64((int64_t)t->size));
	}
	*reply = o;
	yx_broker_text_free(t);
	return YX_OK;
}

int
yx_h_fs_cat(struct yx_wctx *w, struct yx_http_req *r, const char *arg)
{
	return fs_route(w, r, 0, NULL, fs_cat_op, 200);
}

static int
fs_view_op(struct yx_wctx *w, struct yx_http_req *r, struct fs_ctx *c,
    struct json_object **reply, struct yx_errctx *e)
{
	struct yx_broker_blob	*bl = NULL;
	struct json_object	*o;
	int			 rc;

	if ((rc = yx_broker_view(&c->b, c->vp.root, c->vp.rel, &bl, e)) != YX_OK)
		return rc;
	if ((o = json_object_new_object()) != NULL) {
		json_object_object_add(o, "path", json_object_new_string(bl->path));
		json_object_object_add(o, "content", yx_json_text(bl->content, bl->len));
		json_object_object_add(o, "size", json_object_new_int64((int64_t)bl->size));
		json_object_object_add(o, "truncated", json_object_new_boolean(bl->truncated));
	}
	*reply = o;
	yx_broker_blob_free(bl);
	return YX_OK;
}

int
yx_h_viewer_file(struct yx_wctx *w, struct yx_http_req *r, const char *arg)
{
	return fs_route(w, r, 0, NULL, fs_view_op, 200);
}

/* A boolean field (absent: false); YX_E_BAD_REQUEST when not a boolean. */
static int
body_bool(struct json_object *o, const char *key, bool *out)
{
	struct json_object *v;

	*out = false;
	if (!json_object_object_get_ex(o, key, &v) || json_object_is_type(v, json_type_null))
		return YX_OK;
	if (!json_object_is_type(v, json_type_boolean))
		return YX_E_BAD_REQUEST;
	*out = json_object_get_boolean(v);
	return YX_OK;
}

static struct json_object *
path_json(const char *canon)
{
	struct json_object *o;

	if ((o = json_object_new_object()) != NULL)
		json_object_object_add(o, "path", json_object_new_string(canon));
	return o;
}

static int
fs_write_op(struct yx_wctx *w, struct yx_http_req *r, struct fs_ctx *c,
    struct json_object **reply, struct yx_errctx *e)
{
	struct json_object	*body = w->body;
	struct json_object	*v;
	bool			 ow;
	int			 rc;

	if (!json_object_object_get_ex(body, "content", &v) ||
	    !json_object_is_type(v, json_type_string) || body_bool(body, "overwrite", &ow))
		return yx_fail(e, YX_E_BAD_REQUEST, "content must be a string, overwrite a boolean");
	if ((rc = yx_broker_write(&c->b, c->vp.root, c->vp.rel, json_object_get_string(v),
		 (size_t)json_object_get_string_len(v), ow, e)) != YX_OK)
		return rc;
	*reply = path_json(c->vp.canon);
	return YX_OK;
}

int
yx_h_fs_write(struct yx_wctx *w, struct yx_http_req *r, const char *arg)
{
	return fs_route(w, r, FS_BODY, NULL, fs_write_op, 201);
}

static int
fs_delete_op(struct yx_wctx *w, struct yx_http_req *r, struct fs_ctx *c,
    struct json_object **reply, struct yx_errctx *e)
{
	struct json_object	*body = w->body;
	bool	recursive, pending = false;
	int	rc;

	if (body_bool(body, "recursive", &recursive) != YX_OK)
		return yx_fail(e, YX_E_BAD_REQUEST, "recursive must be a boolean");
	if ((rc = yx_broker_delete(&c->b, c->vp.root, c->vp.rel, recursive, &pending,
		 e)) != YX_OK)
		return rc;
	if ((*reply = path_json(c->vp.canon)) != NULL && pending)
		json_object_object_add(*reply, "pending", json_object_new_boolean(1));
	return YX_OK;
}

/*
 * POST /api/filesystem/delete {"thread_id","path","recursive"?}: through
 * the broker only (no container is started), never following a symlink.
 */
int
yx_h_fs_delete(struct yx_wctx *w, struct yx_http_req *r, const char *arg)
{
	return fs_route(w, r, FS_BODY, NULL, fs_delete_op, 200);
}

static int
fs_edit_op(struct yx_wctx *w, struct yx_http_req *r, struct fs_ctx *c,
    struct json_object **reply, struct yx_errctx *e)
{
	struct json_object	*body = w->body;
	const char	*olds = NULL, *news = NULL;
	size_t		 occ = 0;
	bool		 all;
	int		 rc;

	if (yx_json_opt_str(body, "old_string", &olds) != YX_OK || olds == NULL ||
	    yx_json_opt_str(body, "new_string", &news) != YX_OK || news == NULL ||
	    body_bool(body, "replace_all", &all) != YX_OK)
		return yx_fail(e, YX_E_BAD_REQUEST, "old_string and new_string must be strings, "
						    "replace_all a boolean");
	if ((rc = yx_broker_edit(&c->b, c->vp.root, c->vp.rel, olds, news, all, &occ, e)) !=
	    YX_OK)
		return rc;
	if ((*reply = path_json(c->vp.canon)) != NULL)
		json_object_object_add(*reply, "occurrences", json_object_new_int64((int64_t)occ));
	return YX_OK;
}

int
yx_h_fs_edit(struct yx_wctx *w, struct yx_http_req *r, const char *arg)
{
	return fs_route(w, r, FS_BODY, NULL, fs_edit_op, 200);
}

static int
fs_glob_op(struct yx_wctx *w, struct yx_http_req *r, struct fs_ctx *c,
    struct json_object **reply, struct yx_errctx *e)
{
	struct yx_broker_list	*l = NULL;
	const char		*pat;
	int			 rc;

	if ((rc = fs_pattern(r, &pat, e)) != YX_OK ||
	    (rc = yx_broker_glob(&c->b, c->vp.root, c->vp.rel, pat, &l, e)) != YX_OK)
		return rc;
	*reply = list_json(l, "matches", false, true);
	yx_broker_list_free(l);
	return YX_OK;
}

/* glob and grep: beneath the workspace by default. */
int
yx_h_fs_glob(struct yx_wctx *w, struct yx_http_req *r, const char *arg)
{
	return fs_route(w, r, FS_TOP, YX_VROOT_WORKSPACE, fs_glob_op, 200);
}

static struct json_object *
grep_json(const struct yx_broker_grep *g, const char *base)
{
	struct json_object	*o, *a, *m;
	size_t			 i;

	if ((o = json_object_new_object()) == NULL)
		return NULL;
	json_object_object_add(o, "path", json_object_new_string(base));
	a = json_object_new_array();
	for (i = 0; a != NULL && i < g->n; i++) {
		if ((m = json_object_new_object()) == NULL)
			break;
		json_add_name(m, "path", g->v[i].path);
		json_object_object_add(m, "line", json_object_new_int64((int64_t)g->v[i].line));
		json_object_object_add(m, "text", yx_json_text(g->v[i].text, strlen(g->v[i].text)));
		json_object_array_add(a, m);
	}
	json_object_object_add(o, "matches", a);
	json_object_object_add(o, "truncated", json_object_new_boolean(g->truncated));
	json_add_cut(o, g->cut);
	return o;
}

static int
fs_grep_op(struct yx_wctx *w, struct yx_http_req *r, struct fs_ctx *c,
    struct json_object **reply, struct yx_errctx *e)
{
	struct yx_broker_grep	*g = NULL;
	const char		*pat;
	size_t			 maxc;
	int			 rc;

	if ((rc = fs_pattern(r, &pat, e)) != YX_OK ||
	    (rc = q_size(r, "max_count", 0, &maxc, e)) != YX_OK ||
	    (rc = yx_broker_grep(&c->b, c->vp.root, c->vp.rel, pat,
		 yx_query_get(&r->query, "glob", NULL), maxc, &g, e)) != YX_OK)
		return rc;
	*reply = grep_json(g, c->vp.canon);
	yx_broker_grep_free(g);
	return YX_OK;
}

int
yx_h_fs_grep(struct yx_wctx *w, struct yx_http_req *r, const char *arg)
{
	return fs_route(w, r, FS_TOP, YX_VROOT_WORKSPACE, fs_grep_op, 200);
}

static ssize_t
upload_read(void *arg, char *buf, size_t len)
{
	return (ssize_t)yx_http_read_some(arg, buf, len);
}

static int
fs_upload_op(struct yx_wctx *w, struct yx_http_req *r, struct fs_ctx *c,
    struct json_object **reply, struct yx_errctx *e)
{
	uint64_t	size = 0;
	int		rc;

	if (r->content_length > 0 && (uint64_t)r->content_length > w->cfg->upload_limit)
		return yx_fail(e, YX_E_PAYLOAD_TOO_LARGE, "upload larger than the limit");
	if ((rc = yx_broker_upload(&c->b, c->vp.root, c->vp.rel, upload_read, r, true, &size,
		 e)) != YX_OK)
		return rc;
	if ((*reply = path_json(c->vp.canon)) != NULL)
		json_object_object_add(*reply, "size", json_object_new_int64((int64_t)size));
	return YX_OK;
}

int
yx_h_fs_upload(struct yx_wctx *w, struct yx_http_req *r, const char *arg)
{
	return fs_route(w, r, 0, NULL, fs_upload_op, 201);
}

/* A download answered with its bytes (capture mode). */
static int
fs_download_inline(struct yx_http_req *r, struct fs_ctx *c)
{
	struct yx_errctx	 e;
	char			*data = NULL;
	size_t			 len = 0;
	int			 rc;

	yx_errctx_clear(&e);
	if ((rc = yx_broker_fetch(&c->b, c->vp.root, c->vp.rel, r->cap->inline_max, &data,
		 &len, &e)) != YX_OK)
		yx_send_errctx(r, rc, &e);
	else
		rc = yx_http_send_raw(r, 200, "application/octet-stream", data, len);
	free(data);
	return rc;
}

static int
fs_download(struct yx_wctx *w, struct yx_http_req *r)
{
	struct yx_broker_dl	dl;
	struct yx_buf		uri;
	struct fs_ctx		c;
	struct yx_errctx	e;
	int			rc;

	yx_errctx_clear(&e);
	yx_buf_init(&uri, 3 * YX_VPATH_MAX + 512);
	if ((rc = fs_open_q(w, r, NULL, 0, &c)) != YX_OK)
		return rc;
	if (r->cap != NULL) {
		rc = fs_download_inline(r, &c);
		goto done;
	}
	if ((rc = yx_broker_download(&c.b, c.vp.root, c.vp.rel, &dl, &e)) != YX_OK) {
		yx_send_errctx(r, rc, &e);
		goto done;
	}
	if (c.vp.root == YX_ROOT_USER_DATA)
		rc = yx_buf_printf(&uri, "%s" YX_ACCEL_FILES "%s/user-data/",
		    w->cfg->url_prefix, c.t.thread_id);
	else
		rc = yx_buf_printf(&uri, "%s" YX_ACCEL_SKILLS, w->cfg->url_prefix);
	if (rc == YX_OK)
		rc = yx_pct_encode_path(&uri, dl.rel);
	if (rc == YX_OK && (rc = yx_http_send_accel(r, uri.data, dl.name)) == YX_OK &&
	    r->status == 200)
		r->bytes_out = dl.size;	/* nginx sends the file */
done:
	yx_buf_fini(&uri);
	fs_close(&c);
	return rc;
}

int
yx_h_fs_download(struct yx_wctx *w, struct yx_http_req *r, const char *arg)
{
	return fs_download(w, r);
}

int
yx_h_viewer_download(struct yx_wctx *w, struct yx_http_req *r, const char *arg)
{
	return fs_download(w, r);
}
