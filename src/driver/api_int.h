/* SPDX-License-Identifier: MIT */
/*
 * api_int.h - private interface between the Engine API driver's files.
 *
 * api.c owns the libcurl plumbing (one easy handle per driver, reset before
 * each call, talking HTTP/1.1 over cfg->docker_api_socket) and the lifecycle
 * operations; api_exec.c implements exec on top of api_request().
 */
#ifndef YUXI_API_INT_H
#define YUXI_API_INT_H

#include <stddef.h>

#include "yuxi/buf.h"
#include "yuxi/driver.h"

#define API_CONNECT_MS	2000	/* connect to the unix socket */
#define API_CALL_MS	30000	/* any call but exec start */
#define API_BODY_MAX	(8U << 20)	/* largest JSON reply we accept */
/* ... of a container list: a summary of one of our sandboxes is about
 * 3 KiB (its mounts and labels), YUXI_SANDBOX_MAX_REPLICAS at most 4096 */
#define API_LIST_MAX	(32U << 20)

struct api_driver {
	struct yx_driver	 base;
	void			*curl;	/* CURL * */
};

/* Sink for a response body: returns the number of bytes consumed. */
typedef size_t (*api_write_fn)(char *, size_t, size_t, void *);

struct api_call {
	const char	*method;	/* "GET", "POST", "DELETE" */
	const char	*path;		/* after the base, escaped, "/x/y?z" */
	const char	*body;		/* JSON or NULL */
	long		 timeout_ms;
	api_write_fn	 write_fn;	/* NULL: collect into resp */
	void		*write_arg;
	/* optional: libcurl's progress callback (CURLOPT_XFERINFOFUNCTION);
	 * non-zero aborts the call, which then ends as a write error does */
	int		(*progress)(void *arg);
	void		*progress_arg;
	struct yx_buf	*resp;		/* capped at API_BODY_MAX */
	long		 status;	/* out: HTTP status */
	int		 curl_rc;	/* out: CURLcode */
};

/*
 * Perform one call. Returns YX_OK when an HTTP status arrived (any status,
 * see call->status); YX_E_BACKEND_UNAVAILABLE when the engine cannot be
 * reached or the call timed out (call->curl_rc says which); YX_E_NOMEM.
 */
int	api_request(struct api_driver *ad, struct api_call *call,
    struct yx_errctx *err);
/*
 * Turn a non-2xx status into an error: 5xx and 400 (our request refused,
 * e.g. a bind source that does not exist) -> BACKEND_UNAVAILABLE, 404 ->
 * NOT_FOUND, 409 -> FILE_EXISTS, else INTERNAL. The engine's message goes
 * to the server log only; the error text is ours (yx_driver_fail). Returns
 * the error.
 */
int	api_status_fail(struct yx_errctx *err, long status,
    const struct yx_buf *resp, const char *what);
/* "/<prefix><escaped ref><suffix>" into dst; YX_OK or YX_E_NOMEM. */
int	api_path(struct api_driver *ad, struct yx_buf *dst, const char *prefix,
    const char *ref, const char *suffix);

int	api_exec(struct yx_driver *, const char *ref,
    const struct yx_exec_req *, struct yx_exec_result *,
    struct yx_errctx *);

/* POST body to path expecting 201 {"Id": ...}: the id into id (size
 * idlen). YX_OK; the status mapped as api_status_fail() does (404
 * YX_E_NOT_FOUND, 409 YX_E_FILE_EXISTS, ...); YX_E_IO without an id. */
int	api_post_id(struct api_driver *ad, const char *path,
    struct json_object *body, const char *what, char *id, size_t idlen,
    struct yx_errctx *err);
/* The engine's "Id" of o (a container or an exec; a non-empty string that
 * fits) into id (size idlen). YX_OK or YX_E_IO. */
int	api_json_id(struct json_object *o, char *id, size_t idlen);

#endif /* YUXI_API_INT_H */
