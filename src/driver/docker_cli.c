/* SPDX-License-Identifier: MIT */
/*
 * docker_cli.c - the fallback driver: the same operations through the `docker`
 * command (found on PATH, run without a shell by spawn.c).
 *
 * The client is pointed at cfg->docker_api_socket with DOCKER_HOST so both
 * drivers talk to the same engine. JSON output (`docker inspect`) is parsed
 * with json-c by the parser the API driver uses. Failures are classified from
 * the client's stderr: "No such container/object" -> NOT_FOUND, "No such
 * image" -> IMAGE_MISSING, "Conflict"/"already in use"/"already in progress"
 * -> FILE_EXISTS, and everything else (daemon unreachable included) ->
 * BACKEND_UNAVAILABLE; the stderr text itself goes to the server log only
 * (yx_driver_fail). Each call is bounded: the client is killed at its
 * deadline.
 */
#include "config.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <json-c/json.h>

#include "yuxi/buf.h"
#include "yuxi/clock.h"
#include "yuxi/driver.h"
#include "yuxi/error.h"
#include "driver/driver_int.h"

#define CLI_CALL_MS	30000
#define CLI_OUT_MAX	(8U << 20)
/* docker inspect of every sandbox of a list: about 8 KiB each, 4096 at most */
#define CLI_LIST_MAX	(64U << 20)

struct cli_driver {
	struct yx_driver	 base;
	char			 docker_host[YX_CFG_PATH + 32];	/* DOCKER_HOST=... */
};

/* Run `docker argv...` collecting stdout and stderr. See yx_spawn_run. */
static int
cli_run(struct cli_driver *cd, char *const argv[], struct yx_buf *out,
    struct yx_buf *errb, struct yx_spawn_out *so, struct yx_errctx *err)
{
	const char *env[] = { cd->docker_host, NULL };

	return yx_spawn_run(argv, env, out, NULL, NULL, errb, false,
	    CLI_CALL_MS, so, err);
}

/* Classify a failed client run from its stderr; returns the error. */
static int
cli_fail(const struct yx_spawn_out *so, const struct yx_buf *errb,
    const char *what, struct yx_errctx *err)
{
	const char	*e = errb->data ? errb->data : "";
	char		 how[48];
	int		 code = YX_E_BACKEND_UNAVAILABLE;

	if (so->timed_out)
		return yx_fail(err, code, "%s: docker command timed out", what);
	if (strstr(e, "No such container") || strstr(e, "No such object"))
		code = YX_E_NOT_FOUND;
	else if (strstr(e, "No such image") || strstr(e, "Unable to find image"))
		code = YX_E_IMAGE_MISSING;
	else if (strstr(e, "Conflict") || strstr(e, "already in use") ||
	    strstr(e, "already in progress"))
		code = YX_E_FILE_EXISTS;
	snprintf(how, sizeof(how), "docker exited %d", so->status);
	return yx_driver_fail(err, code, what, how, e, errb->len);
}

/* Run a command that needs no stdout; YX_OK or the classified error. */
static int
cli_simple(struct cli_driver *cd, char *const argv[], struct yx_buf *out,
    const char *what, struct yx_errctx *err)
{
	struct yx_buf		errb;
	struct yx_spawn_out	so;
	int			rc;

	yx_buf_init(&errb, 4096);
	if ((rc = cli_run(cd, argv, out, &errb, &so, err)) == YX_OK &&
	    (so.status != 0 || so.timed_out))
		rc = cli_fail(&so, &errb, what, err);
	yx_buf_fini(&errb);
	return rc;
}

static int
cli_ping(struct yx_driver *d, struct yx_errctx *err)
{
	char *argv[] = { "docker", "version", "--format",
			"{{.Server.APIVersion}}", NULL };
	struct yx_buf out;
	int rc;

	yx_buf_init(&out, 4096);
	rc = cli_simple((struct cli_driver *)d, argv, &out, "ping", err);
	if (rc == YX_E_NOT_FOUND)
		rc = YX_E_BACKEND_UNAVAILABLE;
	yx_buf_fini(&out);
	return rc;
}

/* `docker info`: the engine's "Runtimes" object as text. */
static int
cli_runtimes(struct yx_driver *d, char **out, struct yx_errctx *err)
{
	char *argv[] = { "docker", "info", "--format", "{{json .Runtimes}}", NULL };
	struct yx_buf b;
	int rc;

	*out = NULL;
	yx_buf_init(&b, 1 << 20);
	rc = cli_simple((struct cli_driver *)d, argv, &b, "info", err);
	if (rc == YX_OK && (*out = yx_buf_steal(&b, NULL)) == NULL)
		rc = yx_fail(err, YX_E_IO, "docker info printed nothing");
	yx_buf_fini(&b);
	return rc;
}

static int
cli_image_present(struct yx_driver *d, const char *image,
    struct yx_errctx *err)
{
	char *argv[] = { "docker", "image", "inspect", "--format", "{{.Id}}",
			"--", (char *)image, NULL };
	struct yx_buf out;
	int rc;

	yx_buf_init(&out, 4096);
	rc = cli_simple((struct cli_driver *)d, argv, &out, "image inspect",
	    err);
	if (rc == YX_E_NOT_FOUND || rc == YX_E_IMAGE_MISSING)
		rc = yx_driver_image_missing(err, image);
	yx_buf_fini(&out);
	return rc;
}

/* `docker inspect` output (a JSON array) into info[0..max). */
static int
cli_parse_inspect(const struct yx_buf *out, struct yx_container_info **infos,
    size_t *n, struct yx_errctx *err)
{
	struct json_object		*j = NULL;
	struct yx_container_info	*v = NULL;
	size_t				 i, len;
	int				 rc = YX_OK;

	*infos = NULL;
	*n = 0;
	if (out->len == 0 || (j = json_tokener_parse(out->data)) == NULL ||
	    !json_object_is_type(j, json_type_array)) {
		json_object_put(j);
		return yx_fail(err, YX_E_IO, "docker inspect printed no JSON");
	}
	len = json_object_array_length(j);
	if (len > 0 && (v = calloc(len, sizeof(*v))) == NULL)
		rc = yx_fail(err, YX_E_NOMEM, NULL);
	for (i = 0; rc == YX_OK && i < len; i++)
		rc = yx_driver_info_from_inspect(
		    json_object_array_get_idx(j, i), &v[i], err);
	json_object_put(j);
	if (rc != YX_OK) {
		free(v);
		return rc;
	}
	*infos = v;
	*n = len;
	return YX_OK;
}

static int
cli_inspect(struct yx_driver *d, const char *ref,
    struct yx_container_info *info, struct yx_errctx *err)
{
	char *argv[] = { "docker", "inspect", "--type", "container", "--",
				    (char *)ref, NULL };
	struct yx_container_info	*v = NULL;
	struct yx_buf			 out;
	size_t				 n = 0;
	int				 rc;

	yx_buf_init(&out, CLI_OUT_MAX);
	if ((rc = cli_simple((struct cli_driver *)d, argv, &out,
		 "container inspect", err)) == YX_OK &&
	    (rc = cli_parse_inspect(&out, &v, &n, err)) == YX_OK) {
		if (n == 0)
			rc = yx_fail(err, YX_E_NOT_FOUND, "no such container");
		else
			*info = v[0];
	}
	free(v);
	yx_buf_fini(&out);
	return rc;
}

static int
cli_start(struct yx_driver *d, const char *ref, struct yx_errctx *err)
{
	char *argv[] = { "docker", "start", "--", (char *)ref, NULL };
	struct yx_buf out;
	int rc;

	yx_buf_init(&out, 4096);
	rc = cli_simple((struct cli_driver *)d, argv, &out, "container start",
	    err);
	yx_buf_fini(&out);
	return rc;
}

static int
cli_remove(struct yx_driver *d, const char *ref, struct yx_errctx *err)
{
	char *stop[] = { "docker", "stop", "-t", "2", "--", (char *)ref, NULL };
	char *rm[] = { "docker", "rm", "-f", "-v", "--", (char *)ref, NULL };
	struct cli_driver	*cd = (struct cli_driver *)d;
	struct yx_buf		 out;
	int			 rc;

	yx_buf_init(&out, 4096);
	/* rm -f kills anyway: the stop is only a grace for the init. */
	(void)cli_simple(cd, stop, &out, "container stop", NULL);
	rc = cli_simple(cd, rm, &out, "container remove", err);
	/* FILE_EXISTS: a removal is already in progress; it is going. */
	if (rc == YX_E_NOT_FOUND || rc == YX_E_FILE_EXISTS) {
		yx_errctx_clear(err);
		rc = YX_OK;
	}
	yx_buf_fini(&out);
	return rc;
}

/* Trim trailing white space of a buffer in place. */
static void
cli_rtrim(struct yx_buf *b)
{
	while (b->len > 0 && isspace((unsigned char)b->data[b->len - 1]))
		b->data[--b->len] = '\0';
}

static int
cli_create(struct yx_driver *d, const struct yx_container_spec *spec,
    struct yx_container_info *info, struct yx_errctx *err)
{
	struct cli_driver	 *cd = (struct cli_driver *)d;
	char			**argv = NULL;
	struct yx_buf		  out;
	int			  rc;

	yx_buf_init(&out, 4096);
	if ((rc = yx_spec_run_argv(spec, &argv, err)) != YX_OK)
		goto done;
	rc = cli_simple(cd, argv, &out, "container create", err);
	if (rc == YX_E_IMAGE_MISSING)
		rc = yx_driver_image_missing(err, spec->image);
	if (rc == YX_OK) {
		cli_rtrim(&out);
		if ((rc = cli_inspect(d, out.data, info, err)) ==
		    YX_E_NOT_FOUND)
			rc = yx_fail(err, YX_E_BACKEND_UNAVAILABLE,
			    "new container vanished after start");
	}
	/* Created but not started (or vanished): do not leave it behind. */
	if (rc != YX_OK && rc != YX_E_FILE_EXISTS && rc != YX_E_IMAGE_MISSING &&
	    rc != YX_E_NOMEM) {
		struct yx_errctx e2;

		(void)cli_remove(d, spec->name, &e2);
	}
done:
	yx_spec_argv_free(argv);
	yx_buf_fini(&out);
	return rc;
}

/* Build `docker inspect --type container -- id...` from ps output. */
static int
cli_list_argv(struct yx_buf *ids, char ***argvp)
{
	char	**argv;
	size_t	  n = 0, i = 0;
	char	 *p, *save = NULL, *tok;

	for (p = ids->data; *p != '\0'; p++)
		n += *p == '\n';
	if ((argv = calloc(n + 7, sizeof(*argv))) == NULL)
		return YX_E_NOMEM;
	argv[i++] = "docker";
	argv[i++] = "inspect";
	argv[i++] = "--type";
	argv[i++] = "container";
	argv[i++] = "--";
	for (p = ids->data; (tok = strtok_r(p, "\n", &save)) != NULL; p = NULL)
		if (i < n + 6)
			argv[i++] = tok;
	argv[i] = NULL;
	*argvp = argv;
	return YX_OK;
}

/* The list, of thread_id's containers only unless it is NULL. */
static int
cli_list_of(struct yx_driver *d, const char *thread_id,
    struct yx_container_info **out, size_t *n, struct yx_errctx *err)
{
	char			  namef[5 + YX_DRIVER_NAME_RE_MAX] = "name=";
	char			  tl[6 + sizeof(YX_LABEL_THREAD) + YX_THREAD_ID_SIZE];
	char *ps[12] = { "docker", "ps", "-a", "-q", "--no-trunc", "--filter",
			      "label=" YX_LABEL_SANDBOX "=1" };
	struct cli_driver	 *cd = (struct cli_driver *)d;
	struct yx_buf		  ids, js, errb;
	struct yx_spawn_out	  so;
	char			**argv = NULL;
	size_t			  k = 7;
	int			  rc;

	*out = NULL;
	*n = 0;
	/* this instance's names only; an empty prefix, the orphans' search:
	 * every labelled container */
	yx_driver_name_regex(d->cfg->container_prefix, namef + 5,
	    sizeof(namef) - 5);
	if (d->cfg->container_prefix[0] != '\0') {
		ps[k++] = "--filter";
		ps[k++] = namef;
	}
	/* a thread id fits (YX_THREAD_ID_SIZE) */
	if (thread_id != NULL) {
		snprintf(tl, sizeof(tl), "label=%s=%s", YX_LABEL_THREAD, thread_id);
		ps[k++] = "--filter";
		ps[k++] = tl;
	}
	ps[k] = NULL;
	yx_buf_init(&ids, CLI_OUT_MAX);
	yx_buf_init(&js, CLI_LIST_MAX);
	yx_buf_init(&errb, 4096);
	if ((rc = cli_simple(cd, ps, &ids, "container list", err)) != YX_OK)
		goto done;
	cli_rtrim(&ids);
	if (ids.len == 0)
		goto done;
	if ((rc = yx_buf_puts(&ids, "\n")) != YX_OK ||
	    (rc = cli_list_argv(&ids, &argv)) != YX_OK) {
		rc = yx_fail(err, rc, NULL);
		goto done;
	}
	/* A container removed meanwhile makes inspect exit 1 with the rest. */
	if ((rc = cli_run(cd, argv, &js, &errb, &so, err)) != YX_OK)
		goto done;
	if (so.status != 0 && (js.len == 0 || so.timed_out)) {
		rc = cli_fail(&so, &errb, "container list", err);
		goto done;
	}
	if ((rc = cli_parse_inspect(&js, out, n, err)) == YX_OK)
		*n = yx_driver_list_filter(d->cfg, *out, *n);
done:
	free(argv);
	yx_buf_fini(&ids);
	yx_buf_fini(&js);
	yx_buf_fini(&errb);
	return rc;
}

static int
cli_list(struct yx_driver *d, struct yx_container_info **out, size_t *n,
    struct yx_errctx *err)
{
	return cli_list_of(d, NULL, out, n, err);
}

static int
cli_list_thread(struct yx_driver *d, const char *thread_id,
    struct yx_container_info **out, size_t *n, struct yx_errctx *err)
{
	return cli_list_of(d, thread_id, out, n, err);
}

static void
cli_free(struct yx_driver *d)
{
	free(d);
}

/* Output sink wrapper keeping the first bytes to recognise client errors. */
struct cli_exec_sink {
	yx_output_fn	 fn;
	void		*arg;
	char		 head[160];
	size_t		 hlen;
};

static int
cli_exec_out(void *arg, const char *data, size_t len)
{
	struct cli_exec_sink	*s = arg;
	size_t			 n = sizeof(s->head) - 1 - s->hlen;

	if (n > len)
		n = len;
	memcpy(s->head + s->hlen, data, n);
	s->hlen += n;
	s->head[s->hlen] = '\0';
	return s->fn != NULL ? s->fn(s->arg, data, len) : YX_OK;
}

/* `docker exec [-u U] [-w W] [-e K=V]... -- REF argv...` as a heap argv of
 * borrowed strings (free the array only), or NULL. */
static char **
cli_exec_argv(const char *ref, const struct yx_exec_req *req)
{
	size_t	  n = 0, ne = 0, i = 0, k;
	char	**argv;

	while (req->argv[n] != NULL)
		n++;
	while (req->env != NULL && req->env[ne] != NULL)
		ne++;
	if ((argv = calloc(n + 2 * ne + 10, sizeof(*argv))) == NULL)
		return NULL;
	argv[i++] = "docker";
	argv[i++] = "exec";
	if (req->user != NULL) {
		argv[i++] = "-u";
		argv[i++] = (char *)req->user;
	}
	if (req->workdir != NULL) {
		argv[i++] = "-w";
		argv[i++] = (char *)req->workdir;
	}
	for (k = 0; k < ne; k++) {
		argv[i++] = "-e";
		argv[i++] = (char *)req->env[k];
	}
	argv[i++] = "--";
	argv[i++] = (char *)ref;
	for (k = 0; k < n; k++)
		argv[i++] = (char *)req->argv[k];
	argv[i] = NULL;
	return argv;
}

/*
 * A non-zero exit whose output starts like a client error may be the
 * client's own failure rather than the command's: confirm with an inspect.
 * Returns YX_OK (the command's status stands) or the error.
 */
static int
cli_exec_check(struct yx_driver *d, const char *ref,
    const struct cli_exec_sink *s, struct yx_errctx *err)
{
	struct yx_container_info	info;
	int				rc;

	if (strncmp(s->head, "Error", 5) != 0 &&
	    strncmp(s->head, "OCI runtime", 11) != 0 &&
	    strncmp(s->head, "Cannot connect", 14) != 0)
		return YX_OK;
	if ((rc = cli_inspect(d, ref, &info, err)) != YX_OK)
		return rc;
	if (!info.running)
		return yx_fail(err, YX_E_BACKEND_UNAVAILABLE,
		    "container is not running");
	return YX_OK;
}

/*
 * Run req in ref through `docker exec`, stdout and stderr of the client on
 * one pipe (write order kept). The client is killed at timeout + grace
 * (result: timed_out, exit 124; the in-sandbox runner has normally ended the
 * command by then). Returns YX_OK with res filled, NOT_FOUND,
 * BACKEND_UNAVAILABLE, or the sink's error.
 */
static int
cli_exec(struct yx_driver *d, const char *ref, const struct yx_exec_req *req,
    struct yx_exec_result *res, struct yx_errctx *err)
{
	struct cli_driver	*cd = (struct cli_driver *)d;
	const char		*env[] = { cd->docker_host, NULL };
	struct cli_exec_sink	 sink = { req->on_output, req->arg, "", 0 };
	struct yx_spawn_out	 so;
	int64_t			 t0;
	char			**argv;
	long			 limit;
	int			 rc;

	memset(res, 0, sizeof(*res));
	res->exit_code = -1;
	t0 = yx_mono_ms();
	if ((argv = cli_exec_argv(ref, req)) == NULL)
		return yx_fail(err, YX_E_NOMEM, NULL);
	limit = req->timeout_sec > 0 ? req->timeout_sec : YX_EXEC_MAX_SEC;
	rc = yx_spawn_run(argv, env, NULL, cli_exec_out, &sink, NULL, true,
	    (int)((limit + YX_EXEC_GRACE_SEC) * 1000), &so, err);
	free(argv);
	res->duration_ms = yx_mono_ms() - t0;
	if (rc != YX_OK)
		return rc;
	if (so.timed_out) {
		res->exit_code = 124;
		res->timed_out = true;
		return YX_OK;
	}
	res->exit_code = so.status;
	res->timed_out = so.status == 124 && req->timeout_sec > 0 &&
	    res->duration_ms >= req->timeout_sec * 1000L - 50;
	if (so.status != 0)
		rc = cli_exec_check(d, ref, &sink, err);
	return rc;
}

static const struct yx_driver_ops cli_ops = {
	.name = "cli",
	.ping = cli_ping,
	.image_present = cli_image_present,
	.create = cli_create,
	.inspect = cli_inspect,
	.start = cli_start,
	.remove = cli_remove,
	.list = cli_list,
	.exec = cli_exec,
	.free = cli_free,
	.runtimes = cli_runtimes,
	.list_thread = cli_list_thread,
};

/* Returns a driver (free with yx_driver_free) or NULL with err set. */
struct yx_driver *
yx_driver_cli_new(const struct yx_config *cfg, struct yx_errctx *err)
{
	struct cli_driver *cd;

	if ((cd = calloc(1, sizeof(*cd))) == NULL) {
		yx_fail(err, YX_E_NOMEM, "cannot create the docker CLI driver");
		return NULL;
	}
	cd->base.ops = &cli_ops;
	cd->base.cfg = cfg;
	snprintf(cd->docker_host, sizeof(cd->docker_host),
	    "DOCKER_HOST=unix://%s", cfg->docker_api_socket);
	return &cd->base;
}
