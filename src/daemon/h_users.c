/* SPDX-License-Identifier: MIT */
/*
 * h_users.c - what each user holds (docs/api.md "GET /api/admin/users"):
 * threads (the owner index, as YUXI_MAX_THREADS_PER_USER counts them) and
 * running sandboxes (the shared table, as YUXI_MAX_SANDBOXES_PER_USER and
 * fair eviction count them), for admins; and the bounded per-user series of
 * GET /metrics: distributions over users and maxima, never one series per
 * user (user names are unbounded label values).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "daemon_int.h"

/* Upper bounds of the users-by-count gauges ("+Inf" follows). */
static const unsigned users_sandbox_le[] = { 1, 2, 4, 8, 16, 32, 64, 256, 1024 };
static const unsigned users_thread_le[] = { 1, 10, 100, 1000, 10000, 100000 };

/* What both views need, read once. */
struct users_view {
	struct yx_owner_threads		*th;	/* by name */
	size_t				 nth;
	bool				 truncated;
	struct yx_user_sandboxes	*sb;	/* by name; "" first when present */
	size_t				 nsb;
	uint32_t			 capacity;
};

static void
users_view_fini(struct users_view *v)
{
	free(v->th);
	free(v->sb);
	memset(v, 0, sizeof(*v));
}

/*
 * Fill v. YX_OK, or the first error (with e); with `partial`, a part that
 * cannot be read stays empty and YX_OK is returned (metrics).
 */
static int
users_view_load(struct yx_wctx *w, struct users_view *v, bool partial,
    struct yx_errctx *e)
{
	int rc;

	memset(v, 0, sizeof(*v));
	rc = yx_thread_owner_counts(&w->store, &v->th, &v->nth, &v->truncated,
	    e);
	if (rc == YX_OK || partial)
		rc = yx_provider_users(w->table, &v->sb, &v->nsb, &v->capacity,
		    e);
	if (partial)
		return YX_OK;
	if (rc != YX_OK)
		users_view_fini(v);
	return rc;
}

/* Slots allowed in use: min(YUXI_SANDBOX_MAX_REPLICAS, capacity). */
static uint32_t
users_limit(const struct yx_wctx *w, uint32_t capacity)
{
	uint32_t m = (uint32_t)w->cfg->max_replicas;

	return capacity > 0 && capacity < m ? capacity : m;
}

/* Owners of running sandboxes, the unknown owner ("") left out. */
static size_t
users_running(const struct users_view *v)
{
	return v->nsb > 0 && v->sb[0].user[0] == '\0' ? v->nsb - 1 : v->nsb;
}

/* users[name] (made when absent); NULL on allocation failure. */
static struct json_object *
users_entry(struct json_object *users, const char *name)
{
	struct json_object *o;

	if (json_object_object_get_ex(users, name, &o))
		return o;
	if ((o = json_object_new_object()) == NULL)
		return NULL;
	json_object_object_add(o, "threads", json_object_new_int64(0));
	json_object_object_add(o, "sandboxes", json_object_new_int64(0));
	json_object_object_add(o, "active", json_object_new_int64(0));
	json_object_object_add(o, "warm", json_object_new_int64(0));
	json_object_object_add(o, "creating", json_object_new_int64(0));
	json_object_object_add(users, name, o);
	return o;
}

static void
users_set(struct json_object *o, const char *key, uint64_t n)
{
	json_object_object_add(o, key, json_object_new_int64((int64_t)n));
}

/* The "users" object: {name: {threads, sandboxes, active, warm, creating}}. */
static struct json_object *
users_json(const struct users_view *v, uint32_t *unowned)
{
	struct json_object		*users, *o;
	const struct yx_user_sandboxes	*s;
	size_t				 i;

	*unowned = 0;
	if ((users = json_object_new_object()) == NULL)
		return NULL;
	for (i = 0; i < v->nth; i++)
		if ((o = users_entry(users, v->th[i].owner)) != NULL)
			users_set(o, "threads", v->th[i].threads);
	for (i = 0; i < v->nsb; i++) {
		s = &v->sb[i];
		if (s->user[0] == '\0') {
			*unowned = s->running;
			continue;
		}
		if ((o = users_entry(users, s->user)) == NULL)
			continue;
		users_set(o, "sandboxes", s->running);
		users_set(o, "active", s->nstate[YX_SLOT_ACTIVE]);
		users_set(o, "warm", s->nstate[YX_SLOT_WARM]);
		users_set(o, "creating", s->nstate[YX_SLOT_CREATING]);
	}
	return users;
}

int
yx_h_admin_users(struct yx_wctx *w, struct yx_http_req *r, const char *arg)
{
	struct users_view	 v;
	struct json_object	*o = NULL, *users;
	struct yx_errctx	 e;
	uint32_t		 unowned, limit;
	int			 rc;

	yx_errctx_clear(&e);
	if ((rc = users_view_load(w, &v, false, &e)) != YX_OK)
		return yx_send_errctx(r, rc, &e), rc;
	limit = users_limit(w, v.capacity);
	if ((o = json_object_new_object()) == NULL ||
	    (users = users_json(&v, &unowned)) == NULL) {
		rc = YX_E_NOMEM;
		goto done;
	}
	json_object_object_add(o, "users", users);
	users_set(o, "unowned_sandboxes", unowned);
	json_object_object_add(o, "truncated", json_object_new_boolean(v.truncated));
	users_set(o, "max_threads_per_user", (uint64_t)w->cfg->max_threads_per_user);
	users_set(o, "max_sandboxes_per_user",
	    (uint64_t)w->cfg->max_sandboxes_per_user);
	users_set(o, "max_replicas", limit);
	users_set(o, "fair_share",
	    yx_provider_fair_share(limit, (uint32_t)users_running(&v)));
	rc = yx_http_send_json(r, 200, o);
done:
	json_object_put(o);
	users_view_fini(&v);
	return rc;
}

/* One users-by-count gauge: how many users hold at most `le` of a thing. */
static int
users_histogram(struct yx_buf *b, const char *name, const char *help,
    const unsigned *le, size_t nle, const unsigned *counts, size_t n)
{
	size_t		i, k, below;
	int		rc;

	rc = yx_buf_printf(b, "# HELP %s %s\n# TYPE %s gauge\n", name, help,
	    name);
	for (k = 0; k < nle && rc == YX_OK; k++) {
		for (below = 0, i = 0; i < n; i++)
			below += counts[i] <= le[k];
		rc = yx_buf_printf(b, "%s{le=\"%u\"} %zu\n", name, le[k], below);
	}
	if (rc == YX_OK)
		rc = yx_buf_printf(b, "%s{le=\"+Inf\"} %zu\n", name, n);
	return rc;
}

/* The largest of counts[0..n), 0 when empty. */
static unsigned
users_max(const unsigned *counts, size_t n)
{
	unsigned	m = 0;
	size_t		i;

	for (i = 0; i < n; i++)
		m = counts[i] > m ? counts[i] : m;
	return m;
}

/* The gauges of users_metrics, from counts already taken. */
static int
users_metrics_print(struct yx_wctx *w, struct yx_buf *b,
    const struct users_view *v, const unsigned *sc, size_t ns,
    const unsigned *tc, size_t nt)
{
	uint32_t	limit = users_limit(w, v->capacity);
	int		rc;

	rc = yx_buf_printf(b,
	    "# HELP yuxi_user_limit Per-user limits (0 = none).\n"
	    "# TYPE yuxi_user_limit gauge\n"
	    "yuxi_user_limit{kind=\"threads\"} %d\n"
	    "yuxi_user_limit{kind=\"sandboxes\"} %d\n"
	    "# HELP yuxi_sandbox_fair_share Sandboxes per user before its own are evicted first at a full table.\n"
	    "# TYPE yuxi_sandbox_fair_share gauge\n"
	    "yuxi_sandbox_fair_share %u\n"
	    "# HELP yuxi_users Users holding threads or running sandboxes.\n"
	    "# TYPE yuxi_users gauge\n"
	    "yuxi_users{with=\"threads\"} %zu\n"
	    "yuxi_users{with=\"sandboxes\"} %zu\n"
	    "# HELP yuxi_user_max The most one user holds.\n"
	    "# TYPE yuxi_user_max gauge\n"
	    "yuxi_user_max{of=\"threads\"} %u\n"
	    "yuxi_user_max{of=\"sandboxes\"} %u\n",
	    w->cfg->max_threads_per_user, w->cfg->max_sandboxes_per_user,
	    yx_provider_fair_share(limit, (uint32_t)ns), nt, ns,
	    users_max(tc, nt), users_max(sc, ns));
	if (rc == YX_OK)
		rc = users_histogram(b, "yuxi_users_by_sandboxes",
		    "Users by running sandboxes: users with at most le.",
		    users_sandbox_le,
		    sizeof(users_sandbox_le) / sizeof(users_sandbox_le[0]), sc,
		    ns);
	if (rc == YX_OK)
		rc = users_histogram(b, "yuxi_users_by_threads",
		    "Users by threads: users with at most le.", users_thread_le,
		    sizeof(users_thread_le) / sizeof(users_thread_le[0]), tc,
		    nt);
	return rc;
}

int
yx_users_metrics(struct yx_wctx *w, struct yx_buf *b)
{
	struct users_view	 v;
	unsigned		*sc = NULL, *tc = NULL;
	size_t			 i, ns = 0;
	int			 rc;

	(void)users_view_load(w, &v, true, NULL);	/* what is missing counts 0 */
	if ((sc = calloc(v.nsb + 1, sizeof(*sc))) == NULL ||
	    (tc = calloc(v.nth + 1, sizeof(*tc))) == NULL) {
		rc = YX_E_NOMEM;
		goto done;
	}
	for (i = 0; i < v.nsb; i++)
		if (v.sb[i].user[0] != '\0')
			sc[ns++] = v.sb[i].running;
	for (i = 0; i < v.nth; i++)
		tc[i] = v.th[i].threads;
	rc = users_metrics_print(w, b, &v, sc, ns, tc, v.nth);
done:
	free(sc);
	free(tc);
	users_view_fini(&v);
	return rc;
}
