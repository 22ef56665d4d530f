/* SPDX-License-Identifier: MIT */
/*
 * api.c - the Docker Engine API driver (v1.41) over the unix socket.
 *
 * Every call is a short HTTP/1.1 request through libcurl with
 * CURLOPT_UNIX_SOCKET_PATH, a 2 s connect bound and a 30 s total bound
 * (exec start has its own, see api_exec.c). Bodies are built and parsed with
 * json-c. Status mapping follows the Engine API reference: 404 "no such
 * container/image", 409 "conflict", 5xx "server error" (reported as
 * BACKEND_UNAVAILABLE), 400 "bad parameter" (our own request was refused,
 * e.g. a bind source that does not exist: BACKEND_UNAVAILABLE too, as for
 * the CLI driver). The engine's "message" goes to the server log only,
 * escaped; callers get our own words (yx_driver_fail).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <curl/curl.h>
#include <json-c/json.h>

#include "yuxi/buf.h"
#include "yuxi/driver.h"
#include "yuxi/error.h"
#include "yuxi/log.h"
#include "driver/api_int.h"
#include "driver/driver_int.h"

static size_t
api_collect(char *p, size_t sz, size_t n, void *arg)
{
	struct yx_buf *b = arg;

	if (yx_buf_append(b, p, sz * n) != YX_OK)
		return 0;	/* CURLE_WRITE_ERROR */
	return sz * n;
}

/* Set the options of one call on the reset handle; CURLE_OK or an error. */
/* CURLOPT_XFERINFOFUNCTION: the call's own progress callback. */
static int
api_progress(void *arg, curl_off_t dt, curl_off_t dn, curl_off_t ut,
    curl_off_t un)
{
	struct api_call *call = arg;

	(void)dt;
	(void)dn;
	(void)ut;
	(void)un;
	return call->progress(call->progress_arg) != 0;
}

static CURLcode
api_setopts(struct api_driver *ad, struct api_call *call, const char *url,
    struct curl_slist *hdrs)
{
	const struct yx_config	*cfg = ad->base.cfg;
	CURL			*c = ad->curl;
	CURLcode		 rc;

	if ((rc = curl_easy_setopt(c, CURLOPT_URL, url)) ||
	    (rc = curl_easy_setopt(c, CURLOPT_UNIX_SOCKET_PATH,
		 cfg->docker_api_socket)) ||
	    (rc = curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L)) ||
	    (rc = curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS,
		 (long)API_CONNECT_MS)) ||
	    (rc = curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, call->timeout_ms)) ||
	    (rc = curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs)) ||
	    (rc = curl_easy_setopt(c, CURLOPT_WRITEFUNCTION,
		 call->write_fn ? call->write_fn : api_collect)) ||
	    (rc = curl_easy_setopt(c, CURLOPT_WRITEDATA,
		 call->write_fn ? call->write_arg : (void *)call->resp)))
		return rc;
	if (call->progress != NULL &&
	    ((rc = curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L)) ||
		(rc = curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, api_progress)) ||
		(rc = curl_easy_setopt(c, CURLOPT_XFERINFODATA, call))))
		return rc;
	if (strcmp(call->method, "POST") == 0) {
		const char *b = call->body ? call->body : "";

		if ((rc = curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE,
			 (long)strlen(b))) ||
		    (rc = curl_easy_setopt(c, CURLOPT_COPYPOSTFIELDS, b)))
			return rc;
	} else if (strcmp(call->method, "GET") != 0)
		rc = curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, call->method);
	return rc;
}

int
api_request(struct api_driver *ad, struct api_call *call,
    struct yx_errctx *err)
{
	struct curl_slist	*hdrs = NULL, *h;
	struct yx_buf		 url;
	CURLcode		 cc;
	int			 rc = YX_E_NOMEM;

	yx_buf_init(&url, 8192);
	call->status = 0;
	call->curl_rc = CURLE_OK;
	if (call->resp != NULL)
		yx_buf_reset(call->resp);
	if (yx_buf_printf(&url, "%s%s", ad->base.cfg->docker_api_base,
		call->path) != YX_OK)
		goto fail;
	if ((h = curl_slist_append(hdrs, "Expect:")) == NULL)
		goto fail;
	hdrs = h;
	if ((h = curl_slist_append(hdrs,
		 "Content-Type: application/json")) == NULL)
		goto fail;
	hdrs = h;
	curl_easy_reset(ad->curl);
	if ((cc = api_setopts(ad, call, url.data, hdrs)) == CURLE_OK)
		cc = curl_easy_perform(ad->curl);
	call->curl_rc = cc;
	if (cc == CURLE_OK || (cc == CURLE_WRITE_ERROR && call->write_fn) ||
	    (cc == CURLE_ABORTED_BY_CALLBACK && call->progress != NULL)) {
		curl_easy_getinfo(ad->curl, CURLINFO_RESPONSE_CODE,
		    &call->status);
		rc = YX_OK;
	} else if (cc == CURLE_OUT_OF_MEMORY)
		rc = yx_fail(err, YX_E_NOMEM, NULL);
	else if (cc == CURLE_WRITE_ERROR)
		rc = yx_fail(err, YX_E_BACKEND_UNAVAILABLE,
		    "docker engine reply too large");
	else {
		log_warnx("docker engine %s %s: %s", call->method,
		    ad->base.cfg->docker_api_socket, curl_easy_strerror(cc));
		rc = yx_fail(err, YX_E_BACKEND_UNAVAILABLE,
		    "docker engine unavailable: %s (is dockerd running?)",
		    curl_easy_strerror(cc));
	}
fail:
	if (rc == YX_E_NOMEM)
		yx_fail(err, rc, NULL);
	curl_slist_free_all(hdrs);
	yx_buf_fini(&url);
	return rc;
}

int
api_status_fail(struct yx_errctx *err, long status, const struct yx_buf *resp,
    const char *what)
{
	struct json_object	*j = NULL, *m;
	const char		*msg = "";
	size_t			 mlen = 0;
	char			 how[48];
	int			 code;

	if (resp != NULL && resp->len > 0) {
		msg = resp->data;
		mlen = resp->len;
		if ((j = json_tokener_parse(resp->data)) != NULL &&
		    json_object_is_type(j, json_type_object) &&
		    json_object_object_get_ex(j, "message", &m) &&
		    json_object_is_type(m, json_type_string)) {
			msg = json_object_get_string(m);
			mlen = strlen(msg);
		}
	}
	if (status >= 500 || status == 400)
		code = YX_E_BACKEND_UNAVAILABLE;
	else if (status == 404)
		code = YX_E_NOT_FOUND;
	else if (status == 409)
		code = YX_E_FILE_EXISTS;
	else
		code = YX_E_INTERNAL;
	snprintf(how, sizeof(how), "engine answered %ld", status);
	(void)yx_driver_fail(err, code, what, how, msg, mlen);
	json_object_put(j);
	return code;
}

int
api_path(struct api_driver *ad, struct yx_buf *dst, const char *prefix,
    const char *ref, const char *suffix)
{
	char	*e;
	int	 rc;

	if ((e = curl_easy_escape(ad->curl, ref, 0)) == NULL)
		return YX_E_NOMEM;
	yx_buf_reset(dst);
	rc = yx_buf_printf(dst, "%s%s%s", prefix, e, suffix);
	curl_free(e);
	return rc;
}

/* Simple call with a collected reply; see api_request for the result. */
static int
api_simple(struct api_driver *ad, const char *method, const char *path,
    const char *body, struct yx_buf *resp, struct yx_errctx *err)
{
	struct api_call call;
	int rc;

	memset(&call, 0, sizeof(call));
	call.method = method;
	call.path = path;
	call.body = body;
	call.timeout_ms = API_CALL_MS;
	call.resp = resp;
	rc = api_request(ad, &call, err);
	return rc == YX_OK ? (int)call.status : -rc;
}

/* Run `method path` and map the status; ok1/ok2 are accepted statuses. */
static int
api_expect(struct api_driver *ad, const char *method, const char *path,
    const char *body, struct yx_buf *resp, long ok1, long ok2,
    const char *what, struct yx_errctx *err)
{
	int st = api_simple(ad, method, path, body, resp, err);

	if (st < 0)
		return -st;
	if (st == ok1 || st == ok2)
		return YX_OK;
	return api_status_fail(err, st, resp, what);
}

static int
api_ping(struct yx_driver *d, struct yx_errctx *err)
{
	struct yx_buf	resp;
	int		rc;

	yx_buf_init(&resp, 4096);
	rc = api_expect((struct api_driver *)d, "GET", "/_ping", NULL, &resp,
	    200, 200, "ping", err);
	yx_buf_fini(&resp);
	return rc;
}

static int
api_image_present(struct yx_driver *d, const char *image,
    struct yx_errctx *err)
{
	struct api_driver	*ad = (struct api_driver *)d;
	struct yx_buf		 path, resp;
	int			 rc;

	yx_buf_init(&path, 4096);
	yx_buf_init(&resp, API_BODY_MAX);
	if ((rc = api_path(ad, &path, "/images/", image, "/json")) != YX_OK) {
		yx_fail(err, rc, NULL);
		goto done;
	}
	rc = api_expect(ad, "GET", path.data, NULL, &resp, 200, 200,
	    "image inspect", err);
	if (rc == YX_E_NOT_FOUND)
		rc = yx_driver_image_missing(err, image);
done:
	yx_buf_fini(&path);
	yx_buf_fini(&resp);
	return rc;
}

/* Parse a JSON reply; NULL (IO in err) when it is not JSON of type `t`. */
static struct json_object *
api_parse(const struct yx_buf *resp, enum json_type t, struct yx_errctx *err)
{
	struct json_object *j = NULL;

	if (resp->len > 0)
		j = json_tokener_parse(resp->data);
	if (j == NULL || !json_object_is_type(j, t)) {
		json_object_put(j);
		yx_fail(err, YX_E_IO, "docker engine sent an unexpected reply");
		return NULL;
	}
	return j;
}

/* GET /info: its "Runtimes" object as text. */
static int
api_runtimes(struct yx_driver *d, char **out, struct yx_errctx *err)
{
	struct json_object	*j = NULL, *rt;
	struct yx_buf		 resp;
	int			 rc;

	*out = NULL;
	yx_buf_init(&resp, API_BODY_MAX);
	if ((rc = api_expect((struct api_driver *)d, "GET", "/info", NULL, &resp,
		 200, 200, "info", err)) != YX_OK)
		goto done;
	if ((j = api_parse(&resp, json_type_object, err)) == NULL) {
		rc = YX_E_IO;
		goto done;
	}
	if (!json_object_object_get_ex(j, "Runtimes", &rt) ||
	    (*out = strdup(json_object_to_json_string_ext(rt,
		 JSON_C_TO_STRING_PLAIN))) == NULL)
		rc = yx_fail(err, YX_E_IO, "docker engine sent no runtimes");
done:
	json_object_put(j);
	yx_buf_fini(&resp);
	return rc;
}

static int
api_inspect(struct yx_driver *d, const char *ref,
    struct yx_container_info *info, struct yx_errctx *err)
{
	struct api_driver	*ad = (struct api_driver *)d;
	struct yx_buf		 path, resp;
	struct json_object	*j = NULL;
	int			 rc;

	yx_buf_init(&path, 4096);
	yx_buf_init(&resp, API_BODY_MAX);
	if ((rc = api_path(ad, &path, "/containers/", ref, "/json")) != YX_OK) {
		yx_fail(err, rc, NULL);
		goto done;
	}
	if ((rc = api_expect(ad, "GET", path.data, NULL, &resp, 200, 200,
		 "container inspect", err)) != YX_OK)
		goto done;
	if ((j = api_parse(&resp, json_type_object, err)) == NULL) {
		rc = YX_E_IO;
		goto done;
	}
	rc = yx_driver_info_from_inspect(j, info, err);
done:
	json_object_put(j);
	yx_buf_fini(&path);
	yx_buf_fini(&resp);
	return rc;
}

static int
api_start(struct yx_driver *d, const char *ref, struct yx_errctx *err)
{
	struct api_driver	*ad = (struct api_driver *)d;
	struct yx_buf		 path, resp;
	int			 rc;

	yx_buf_init(&path, 4096);
	yx_buf_init(&resp, API_BODY_MAX);
	if ((rc = api_path(ad, &path, "/containers/", ref, "/start")) == YX_OK)
		rc = api_expect(ad, "POST", path.data, NULL, &resp, 204, 304,
		    "container start", err);
	else
		yx_fail(err, rc, NULL);
	yx_buf_fini(&path);
	yx_buf_fini(&resp);
	return rc;
}

/* Stop with a 2 s grace, then force-remove with volumes. 404 is success. */
static int
api_remove(struct yx_driver *d, const char *ref, struct yx_errctx *err)
{
	struct api_driver	*ad = (struct api_driver *)d;
	struct yx_buf		 path, resp;
	int			 rc;

	yx_buf_init(&path, 4096);
	yx_buf_init(&resp, API_BODY_MAX);
	if ((rc = api_path(ad, &path, "/containers/", ref, "/stop?t=2")) !=
	    YX_OK)
		goto nomem;
	rc = api_expect(ad, "POST", path.data, NULL, &resp, 204, 304,
	    "container stop", err);
	if (rc == YX_E_BACKEND_UNAVAILABLE)
		goto done;
	if ((rc = api_path(ad, &path, "/containers/", ref,
		 "?force=1&v=1")) != YX_OK)
		goto nomem;
	rc = api_expect(ad, "DELETE", path.data, NULL, &resp, 204, 200,
	    "container remove", err);
	/* 409: a removal is already in progress; the container is going. */
	if (rc == YX_E_NOT_FOUND || rc == YX_E_FILE_EXISTS) {
		yx_errctx_clear(err);
		rc = YX_OK;
	}
	goto done;
nomem:
	yx_fail(err, rc, NULL);
done:
	yx_buf_fini(&path);
	yx_buf_fini(&resp);
	return rc;
}

/* POST /containers/create?name=; fills id. Maps 404 to IMAGE_MISSING. */
static int
api_create_only(struct api_driver *ad, const struct yx_container_spec *spec,
    char *id, size_t idlen, struct yx_errctx *err)
{
	struct yx_buf		 path;
	struct json_object	*body = NULL;
	int			 rc;

	yx_buf_init(&path, 4096);
	if ((body = yx_spec_create_body(spec, err)) == NULL) {
		rc = err ? err->code : YX_E_NOMEM;
		goto done;
	}
	if ((rc = api_path(ad, &path, "/containers/create?name=", spec->name,
		 "")) != YX_OK) {
		yx_fail(err, rc, NULL);
		goto done;
	}
	rc = api_post_id(ad, path.data, body, "container create", id, idlen,
	    err);
	if (rc == YX_E_NOT_FOUND)
		rc = yx_driver_image_missing(err, spec->image);
done:
	json_object_put(body);
	yx_buf_fini(&path);
	return rc;
}

/*
 * Create and start; info is what the spec and the create's answer say (an
 * inspect would only repeat them: one engine round trip less on a new
 * sandbox's path). A container that fails to start is removed.
 */
static int
api_create(struct yx_driver *d, const struct yx_container_spec *spec,
    struct yx_container_info *info, struct yx_errctx *err)
{
	struct api_driver	*ad = (struct api_driver *)d;
	char			 id[YX_CONTAINER_ID_MAX];
	int			 rc;

	if ((rc = api_create_only(ad, spec, id, sizeof(id), err)) != YX_OK)
		return rc;
	if ((rc = api_start(d, id, err)) == YX_OK) {
		memset(info, 0, sizeof(*info));
		(void)yx_strlcpy(info->id, id, sizeof(info->id));
		(void)yx_strlcpy(info->name, spec->name, sizeof(info->name));
		(void)yx_strlcpy(info->thread_id,
		    spec->thread_id != NULL ? spec->thread_id : "",
		    sizeof(info->thread_id));
		(void)yx_strlcpy(info->sandbox_id,
		    spec->sandbox_id != NULL ? spec->sandbox_id : "",
		    sizeof(info->sandbox_id));
		(void)yx_strlcpy(info->skills_fp,
		    spec->skills_fp != NULL ? spec->skills_fp : "",
		    sizeof(info->skills_fp));
		info->running = true;
		info->created = (int64_t)time(NULL);
	} else {
		struct yx_errctx	 e2;

		(void)api_remove(d, id, &e2);
		/* Not a name conflict: the new container itself failed. */
		if (rc == YX_E_FILE_EXISTS || rc == YX_E_NOT_FOUND)
			rc = yx_fail(err, YX_E_BACKEND_UNAVAILABLE,
			    "new container did not start (%s)",
			    yx_strerror(rc));
	}
	return rc;
}

/* See api_int.h. */
int
api_post_id(struct api_driver *ad, const char *path, struct json_object *body,
    const char *what, char *id, size_t idlen, struct yx_errctx *err)
{
	struct json_object	*j = NULL;
	struct yx_buf		 resp;
	int			 rc;

	yx_buf_init(&resp, API_BODY_MAX);
	rc = api_expect(ad, "POST", path, json_object_to_json_string_ext(body, JSON_C_TO_STRING_PLAIN), &resp, 201, 201, what, err);
	if (rc == YX_OK &&
	    ((j = api_parse(&resp, json_type_object, err)) == NULL ||
		api_json_id(j, id, idlen) != YX_OK))
		rc = yx_fail(err, YX_E_IO, "%s: the engine sent no id", what);
	json_object_put(j);
	yx_buf_fini(&resp);
	return rc;
}

/* See api_int.h. */
int
api_json_id(struct json_object *o, char *id, size_t idlen)
{
	struct json_object	*v;
	const char		*s;

	if (!json_object_object_get_ex(o, "Id", &v) ||
	    (s = json_object_get_string(v)) == NULL || *s == '\0' ||
	    strlen(s) >= idlen)
		return YX_E_IO;
	memcpy(id, s, strlen(s) + 1);
	return YX_OK;
}

/* One entry of GET /containers/json into info. YX_OK or YX_E_IO. */
static int
api_list_entry(struct json_object *o, struct yx_container_info *info,
    struct yx_errctx *err)
{
	struct json_object	*v, *labels = NULL;
	const char		*s;

	memset(info, 0, sizeof(*info));
	if (api_json_id(o, info->id, sizeof(info->id)) != YX_OK)
		return yx_fail(err, YX_E_IO, "engine sent a container without Id");
	if (json_object_object_get_ex(o, "Names", &v) &&
	    json_object_is_type(v, json_type_array) &&
	    json_object_array_length(v) > 0 &&
	    (s = json_object_get_string(json_object_array_get_idx(v, 0))) !=
		NULL) {
		s += *s == '/';
		if (strlen(s) < sizeof(info->name))
			memcpy(info->name, s, strlen(s) + 1);
	}
	json_object_object_get_ex(o, "Labels", &labels);
	yx_driver_info_labels(labels, info);
	if (json_object_object_get_ex(o, "State", &v) &&
	    (s = json_object_get_string(v)) != NULL)
		info->running = strcmp(s, "running") == 0;
	if (json_object_object_get_ex(o, "Created", &v))
		info->created = json_object_get_int64(v);
	return YX_OK;
}

/* Fill *out (heap, caller frees) from a JSON array of summaries. */
static int
api_list_parse(struct json_object *arr, struct yx_container_info **out,
    size_t *n, struct yx_errctx *err)
{
	struct yx_container_info	*v = NULL;
	size_t				 i, len = json_object_array_length(arr);
	int				 rc = YX_OK;

	if (len > 0 && (v = calloc(len, sizeof(*v))) == NULL)
		return yx_fail(err, YX_E_NOMEM, NULL);
	for (i = 0; rc == YX_OK && i < len; i++)
		rc = api_list_entry(json_object_array_get_idx(arr, i), &v[i],
		    err);
	if (rc != YX_OK) {
		free(v);
		return rc;
	}
	*out = v;
	*n = len;
	return YX_OK;
}

/* The list's name filter, ["^/<prefix>"]: NULL when out of memory. */
static struct json_object *
api_name_filter(const char *prefix)
{
	struct json_object	*a;
	char			 re[YX_DRIVER_NAME_RE_MAX];

	yx_driver_name_regex(prefix, re, sizeof(re));
	if ((a = json_object_new_array()) == NULL)
		return NULL;
	if (json_object_array_add(a, json_object_new_string(re)) != 0) {
		json_object_put(a);
		return NULL;
	}
	return a;
}

/* The list, of thread_id's containers only unless it is NULL. */
static int
api_list_of(struct yx_driver *d, const char *thread_id,
    struct yx_container_info **out, size_t *n, struct yx_errctx *err)
{
	struct api_driver	*ad = (struct api_driver *)d;
	struct json_object	*f = NULL, *a = NULL, *j = NULL;
	struct yx_buf		 path, resp;
	char			 tl[sizeof(YX_LABEL_THREAD) + YX_THREAD_ID_SIZE];
	int			 rc = YX_E_NOMEM;

	*out = NULL;
	*n = 0;
	yx_buf_init(&path, 4096);
	yx_buf_init(&resp, API_LIST_MAX);
	/* a thread id fits (YX_THREAD_ID_SIZE) */
	if (thread_id != NULL)
		snprintf(tl, sizeof(tl), "%s=%s", YX_LABEL_THREAD, thread_id);
	if ((f = json_object_new_object()) == NULL ||
	    (a = json_object_new_array()) == NULL ||
	    json_object_array_add(a, json_object_new_string(YX_LABEL_SANDBOX "=1")) != 0 ||
	    (thread_id != NULL && json_object_array_add(a, json_object_new_string(tl)) != 0) ||
	    json_object_object_add(f, "label", a) != 0) {
		json_object_put(a);
		goto nomem;
	}
	/* an empty prefix: every labelled container (the orphans' search) */
	a = NULL;
	if (d->cfg->container_prefix[0] != '\0' &&
	    ((a = api_name_filter(d->cfg->container_prefix)) == NULL ||
		json_object_object_add(f, "name", a) != 0)) {
		json_object_put(a);
		goto nomem;
	}
	if (api_path(ad, &path, "/containers/json?all=1&filters=",
		json_object_to_json_string_ext(f, JSON_C_TO_STRING_PLAIN), "") !=
	    YX_OK)
		goto nomem;
	if ((rc = api_expect(ad, "GET", path.data, NULL, &resp, 200, 200,
		 "container list", err)) != YX_OK)
		goto done;
	if ((j = api_parse(&resp, json_type_array, err)) == NULL) {
		rc = YX_E_IO;
		goto done;
	}
	if ((rc = api_list_parse(j, out, n, err)) == YX_OK)
		*n = yx_driver_list_filter(d->cfg, *out, *n);
	goto done;
nomem:
	rc = yx_fail(err, YX_E_NOMEM, NULL);
done:
	json_object_put(f);
	json_object_put(j);
	yx_buf_fini(&path);
	yx_buf_fini(&resp);
	return rc;
}

static int
api_list(struct yx_driver *d, struct yx_container_info **out, size_t *n,
    struct yx_errctx *err)
{
	return api_list_of(d, NULL, out, n, err);
}

static int
api_list_thread(struct yx_driver *d, const char *thread_id,
    struct yx_container_info **out, size_t *n, struct yx_errctx *err)
{
	return api_list_of(d, thread_id, out, n, err);
}

static void
api_free(struct yx_driver *d)
{
	struct api_driver *ad = (struct api_driver *)d;

	curl_easy_cleanup(ad->curl);
	free(ad);
	curl_global_cleanup();
}

static const struct yx_driver_ops api_ops = {
	.name = "api",
	.ping = api_ping,
	.image_present = api_image_present,
	.create = api_create,
	.inspect = api_inspect,
	.start = api_start,
	.remove = api_remove,
	.list = api_list,
	.exec = api_exec,
	.free = api_free,
	.runtimes = api_runtimes,
	.list_thread = api_list_thread,
};

/* Returns a driver (free with yx_driver_free) or NULL with err set. */
struct yx_driver *
yx_driver_api_new(const struct yx_config *cfg, struct yx_errctx *err)
{
	struct api_driver *ad;

	if ((ad = calloc(1, sizeof(*ad))) == NULL)
		goto fail;
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		free(ad);
		goto fail;
	}
	if ((ad->curl = curl_easy_init()) == NULL) {
		free(ad);
		curl_global_cleanup();
		goto fail;
	}
	ad->base.ops = &api_ops;
	ad->base.cfg = cfg;
	return &ad->base;
fail:
	yx_fail(err, YX_E_NOMEM, "cannot create the engine API driver");
	return NULL;
}
