/* SPDX-License-Identifier: MIT */
/*
 * api_exec.c - exec through the Engine API: create, start (stream), inspect.
 *
 * Engine API v1.41 "Exec": POST /containers/{id}/exec creates the exec,
 * POST /exec/{id}/start with {"Detach":false,"Tty":false} answers with the
 * multiplexed stdout/stderr stream (see demux.c) until the process exits, and
 * GET /exec/{id}/json then reports ExitCode. The API can neither time out nor
 * kill an exec, so the in-sandbox runner enforces the timeout; as a safety
 * net, a stream still open YX_EXEC_GRACE_SEC after the timeout gets the
 * exec's host Pid (from the inspect) killed, and the result is timed_out
 * with exit code 124.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>
#include <json-c/json.h>

#include "yuxi/clock.h"
#include "yuxi/buf.h"
#include "yuxi/driver.h"
#include "yuxi/error.h"
#include "yuxi/log.h"
#include "driver/api_int.h"
#include "driver/driver_int.h"

struct exec_stream {
	CURL		*curl;
	const struct yx_exec_req *req;
	struct yx_demux	 dm;
	struct yx_buf	 errbody;	/* reply body of a non-200 start */
	int		 rc;		/* sink or demux error */
};

/* Progress of exec start: the request's tick (yx_exec_req.on_tick). */
static int
exec_progress(void *arg)
{
	struct exec_stream *es = arg;

	if (es->req->on_tick == NULL || es->rc != YX_OK)
		return 0;
	return (es->rc = es->req->on_tick(es->req->arg)) != YX_OK;
}

/* libcurl write callback of exec start: demux 200 bodies, keep others. */
static size_t
exec_write(char *p, size_t sz, size_t n, void *arg)
{
	struct exec_stream	*es = arg;
	long			 status = 0;

	curl_easy_getinfo(es->curl, CURLINFO_RESPONSE_CODE, &status);
	if (status != 200) {
		(void)yx_buf_append(&es->errbody, p, sz * n);	/* cut */
		return sz * n;
	}
	if ((es->rc = yx_demux_feed(&es->dm, p, sz * n)) != YX_OK)
		return 0;
	return sz * n;
}

/* Add a NULL-terminated string list as a JSON array; YX_OK or NOMEM. */
static int
exec_strv(struct json_object *o, const char *key, const char *const *v)
{
	struct json_object *a = json_object_new_array();

	if (a == NULL || json_object_object_add(o, key, a) != 0) {
		json_object_put(a);
		return YX_E_NOMEM;
	}
	for (; v != NULL && *v != NULL; v++)
		if (json_object_array_add(a, json_object_new_string(*v)) != 0)
			return YX_E_NOMEM;
	return YX_OK;
}

/* The exec create body for req; NULL on allocation failure. */
static struct json_object *
exec_body(const struct yx_exec_req *req)
{
	struct json_object *b = json_object_new_object();

	if (b == NULL)
		return NULL;
	if (json_object_object_add(b, "AttachStdin",
		json_object_new_boolean(0)) != 0 ||
	    json_object_object_add(b, "AttachStdout",
		json_object_new_boolean(1)) != 0 ||
	    json_object_object_add(b, "AttachStderr",
		json_object_new_boolean(1)) != 0 ||
	    json_object_object_add(b, "Tty", json_object_new_boolean(0)) != 0 ||
	    exec_strv(b, "Cmd", req->argv) != YX_OK ||
	    (req->env != NULL && exec_strv(b, "Env", req->env) != YX_OK) ||
	    (req->workdir != NULL && json_object_object_add(b, "WorkingDir", json_object_new_string(req->workdir)) != 0) ||
	    (req->user != NULL && json_object_object_add(b, "User", json_object_new_string(req->user)) != 0)) {
		json_object_put(b);
		return NULL;
	}
	return b;
}

/* POST /containers/{ref}/exec; fills id. 404 NOT_FOUND, 409 not running. */
static int
exec_create(struct api_driver *ad, const char *ref,
    const struct yx_exec_req *req, char *id, size_t idlen,
    struct yx_errctx *err)
{
	struct yx_buf		 path;
	struct json_object	*body = NULL;
	int			 rc;

	yx_buf_init(&path, 4096);
	if ((body = exec_body(req)) == NULL ||
	    api_path(ad, &path, "/containers/", ref, "/exec") != YX_OK)
		rc = yx_fail(err, YX_E_NOMEM, NULL);
	else if ((rc = api_post_id(ad, path.data, body, "exec create", id,
		      idlen, err)) == YX_E_FILE_EXISTS)
		/* 409: "container is not running" / "is paused" / restarting */
		rc = yx_fail(err, YX_E_BACKEND_UNAVAILABLE,
		    "exec create: container is not running");
	json_object_put(body);
	yx_buf_fini(&path);
	return rc;
}

/* GET /exec/{id}/json: running flag, exit code, host pid. */
static int
exec_inspect(struct api_driver *ad, const char *id, bool *running,
    int *code, pid_t *pid, char *cid, size_t cidlen, struct yx_errctx *err)
{
	struct api_call		 call;
	struct yx_buf		 path, resp;
	struct json_object	*j = NULL, *v;
	int			 rc;

	yx_buf_init(&path, 4096);
	yx_buf_init(&resp, API_BODY_MAX);
	memset(&call, 0, sizeof(call));
	if (api_path(ad, &path, "/exec/", id, "/json") != YX_OK) {
		rc = yx_fail(err, YX_E_NOMEM, NULL);
		goto done;
	}
	call.method = "GET";
	call.path = path.data;
	call.timeout_ms = API_CALL_MS;
	call.resp = &resp;
	if ((rc = api_request(ad, &call, err)) != YX_OK)
		goto done;
	if (call.status != 200) {
		rc = api_status_fail(err, call.status, &resp, "exec inspect");
		goto done;
	}
	if ((j = json_tokener_parse(resp.data ? resp.data : "")) == NULL) {
		rc = yx_fail(err, YX_E_IO, "engine sent an unexpected reply");
		goto done;
	}
	*running = json_object_object_get_ex(j, "Running", &v) &&
	    json_object_get_boolean(v);
	*code = json_object_object_get_ex(j, "ExitCode", &v) &&
		!json_object_is_type(v, json_type_null) ?
	    json_object_get_int(v) :
	    -1;
	*pid = json_object_object_get_ex(j, "Pid", &v) ?
	    (pid_t)json_object_get_int(v) :
	    0;
	if (cid != NULL && json_object_object_get_ex(j, "ContainerID", &v) &&
	    json_object_is_type(v, json_type_string) &&
	    strlen(json_object_get_string(v)) < cidlen)
		memcpy(cid, json_object_get_string(v),
		    strlen(json_object_get_string(v)) + 1);
done:
	json_object_put(j);
	yx_buf_fini(&path);
	yx_buf_fini(&resp);
	return rc;
}

/*
 * Kill the exec's process tree through its host pid (best effort). The
 * inspect is retried: a busy engine may fail it (3 tries, as many engine
 * timeouts at most), an exec whose stream we dropped may never notice on
 * its own (the engine can keep draining its output), and an exec stopped
 * moments after it started can be reported running with no pid yet (Pid
 * 0): the kill waits for the pid, 2 s at most.
 */
static void
exec_kill(struct api_driver *ad, const char *id)
{
	bool	running = false;
	int	code, fails = 0, waits = 0;
	pid_t	pid = 0;
	char	cid[YX_CONTAINER_ID_MAX] = "";

	while (fails < 3 && waits < 40) {
		if (exec_inspect(ad, id, &running, &code, &pid, cid,
			sizeof(cid), NULL) != YX_OK)
			fails++;
		else if (!running)
			return;
		else if (pid > 1) {
			yx_driver_kill_host_pid(pid, cid);
			return;
		} else
			waits++;
		usleep(50 * 1000);
	}
	log_warnx("exec %.12s: %s", id, fails == 3 ? "cannot inspect it to stop it" : "no pid to stop it by after 2 s");
}

/* POST /exec/{id}/start, streaming into the sink. See api_exec. */
static int
exec_start(struct api_driver *ad, const char *id,
    const struct yx_exec_req *req, long timeout_ms, bool *timed_out,
    struct yx_errctx *err)
{
	struct exec_stream	 es;
	struct api_call		 call;
	struct yx_buf		 path;
	int			 rc;

	*timed_out = false;
	memset(&es, 0, sizeof(es));
	es.curl = ad->curl;
	es.req = req;
	yx_demux_init(&es.dm, req->on_output, req->arg);
	yx_buf_init(&es.errbody, 4096);
	yx_buf_init(&path, 4096);
	memset(&call, 0, sizeof(call));
	if (api_path(ad, &path, "/exec/", id, "/start") != YX_OK) {
		rc = yx_fail(err, YX_E_NOMEM, NULL);
		goto done;
	}
	call.method = "POST";
	call.path = path.data;
	call.body = "{\"Detach\":false,\"Tty\":false}";
	call.timeout_ms = timeout_ms;
	call.write_fn = exec_write;
	call.write_arg = &es;
	if (req->on_tick != NULL) {
		call.progress = exec_progress;
		call.progress_arg = &es;
	}
	rc = api_request(ad, &call, err);
	if (rc == YX_E_BACKEND_UNAVAILABLE &&
	    call.curl_rc == CURLE_OPERATION_TIMEDOUT) {
		yx_errctx_clear(err);
		*timed_out = true;
		exec_kill(ad, id);
		rc = YX_OK;
	} else if (rc != YX_OK)
		exec_kill(ad, id);
	else if (es.rc != YX_OK) {
		exec_kill(ad, id);
		rc = es.rc == YX_E_IO ? yx_fail(err, YX_E_IO,
					    "corrupt exec output stream") :
					es.rc;
	} else if (call.status != 200)
		rc = api_status_fail(err, call.status, &es.errbody,
		    "exec start");
	else if (!yx_demux_idle(&es.dm))
		rc = yx_fail(err, YX_E_IO, "exec output stream cut short");
done:
	yx_buf_fini(&es.errbody);
	yx_buf_fini(&path);
	return rc;
}

/*
 * Run req in container ref. Returns YX_OK with res filled (exit code,
 * timed_out, duration); NOT_FOUND for an unknown container;
 * BACKEND_UNAVAILABLE when the engine fails or the container is not running;
 * YX_E_IO for a corrupt stream; or the sink's error (the exec is killed).
 */
int
api_exec(struct yx_driver *d, const char *ref, const struct yx_exec_req *req,
    struct yx_exec_result *res, struct yx_errctx *err)
{
	struct api_driver	*ad = (struct api_driver *)d;
	char			 id[128];
	int64_t			 t0 = yx_mono_ms();
	long			 limit;
	bool			 running = true, timed_out;
	pid_t			 pid;
	int			 rc, i, code = -1;

	memset(res, 0, sizeof(*res));
	res->exit_code = -1;
	limit = req->timeout_sec > 0 ? req->timeout_sec : YX_EXEC_MAX_SEC;
	if ((rc = exec_create(ad, ref, req, id, sizeof(id), err)) != YX_OK ||
	    (rc = exec_start(ad, id, req, (limit + YX_EXEC_GRACE_SEC) * 1000L,
		 &timed_out, err)) != YX_OK)
		goto done;
	if (timed_out) {
		res->exit_code = 124;
		res->timed_out = true;
		goto done;
	}
	/* The stream ends at exit; the engine may record it a moment later. */
	for (i = 0; i < 100 && running; i++) {
		if ((rc = exec_inspect(ad, id, &running, &code, &pid, NULL, 0,
			 err)) != YX_OK)
			goto done;
		if (running)
			usleep(20 * 1000);
	}
	res->exit_code = code;
	res->timed_out = code == 124 && req->timeout_sec > 0 &&
	    yx_mono_ms() - t0 >= req->timeout_sec * 1000L - 50;
done:
	res->duration_ms = yx_mono_ms() - t0;
	return rc;
}
