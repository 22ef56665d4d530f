/* SPDX-License-Identifier: MIT */
/*
 * yuxi/remote.h - a front's client of its sandbox hosts (docs/scaling.md).
 *
 * A front (YUXI_MODE=front) places each thread on one provisioner (a
 * yuxi-sandboxd with YUXI_MODE=provisioner behind its own nginx) and
 * forwards the thread's operations to it over HTTPS: the host's
 * certificate is verified against YUXI_PROVISIONER_CA (else the system's
 * CAs), every request carries the front's credential
 * (`Authorization: Bearer <YUXI_PROVISIONER_TOKEN_FILE>`) and the acting
 * user as data (`X-Yuxi-User`, `X-Yuxi-Role`), which the provisioner
 * believes only with the credential. The secret is never logged.
 *
 * Connections: one libcurl handle per host, made on first use and kept,
 * so a worker reuses its TLS connection to a host (keep-alive) from one
 * request to the next. A process makes its own client after fork()
 * (libcurl handles are not fork-safe).
 *
 * Health, per process: a host that did not answer (connect or TLS error,
 * timeout, or its nginx's own 5xx page: the daemon behind it is down)
 * is marked down for YX_REMOTE_DOWN_MS. Placement passes over hosts
 * marked down; a thread's own requests still go to its host, so they
 * work again as soon as it answers.
 *
 * Bounds of one call: YX_REMOTE_CONNECT_MS to connect (TCP and TLS), the
 * request's timeout_ms in all, and YX_REMOTE_ACK_MS of silence of the
 * peer's TCP (nothing acknowledged, no keepalive probe answered: a host
 * that drops packets or is cut off). A request is sent at most once: a
 * kept connection that dies after the request went out fails the call;
 * it is not sent again on a new one (the host may have acted on it).
 *
 * Ownership: yx_remote_new() returns a heap client (yx_remote_free, NULL a
 * no-op) that borrows cfg. Request strings are borrowed for the call;
 * struct yx_remote_resp is caller storage (_init/_fini).
 */
#ifndef YUXI_REMOTE_H
#define YUXI_REMOTE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "yuxi/buf.h"
#include "yuxi/config.h"
#include "yuxi/error.h"
#include "yuxi/hostlist.h"

#define YX_REMOTE_CONNECT_MS	3000		/* connect + TLS handshake */
#define YX_REMOTE_ACK_MS	5000		/* a host that acknowledges nothing is gone */
#define YX_REMOTE_DOWN_MS	5000		/* no placement on a host that failed */
#define YX_REMOTE_BODY_MAX	(1u << 30)	/* bytes of one answer kept */
#define YX_REMOTE_RETRY_AFTER	"5"		/* Retry-After of a host that is down */

struct yx_remote;

/* Streams a request body: bytes read into buf (0 at the end, -1 on error). */
typedef ssize_t (*yx_remote_read_fn)(void *arg, char *buf, size_t len);

struct yx_remote_resp;
/*
 * Takes a 2xx answer's body as it comes (status and Content-Type known in
 * resp), instead of resp->body: YX_OK to go on; anything else stops the
 * call (the host sees its client go) and is what yx_remote_call returns.
 */
typedef int (*yx_remote_sink_fn)(void *arg, const struct yx_remote_resp *resp,
    const char *data, size_t len);

struct yx_remote_req {
	const char		*method;	/* "GET", "POST", "DELETE" */
	const char		*path;		/* appended to the host's URL: "/api/execute" */
	const char		*query;		/* raw, without '?'; NULL or "": none */
	const char		*user;		/* X-Yuxi-User; NULL: none */
	bool			 admin;		/* X-Yuxi-Role: admin */
	const char		*request_id;	/* X-Request-Id; NULL: none */
	const char		*body;		/* POST body (copied by libcurl), or */
	size_t			 body_len;
	yx_remote_read_fn	 read;		/* ... a streamed one of read_len bytes */
	void			*read_arg;
	int64_t			 read_len;
	const char		*content_type;	/* of the body; NULL: JSON */
	long			 timeout_ms;	/* the whole call; <= 0: 60 s */
	yx_remote_sink_fn	 sink;		/* a 2xx body as it comes; NULL: in resp */
	void			*sink_arg;
};

struct yx_remote_resp {
	long		status;		/* 0 until an answer */
	char		content_type[128];
	char		retry_after[16];	/* "" when absent */
	struct yx_buf	body;
	bool		streamed;	/* the body went to the request's sink */
};

void	yx_remote_resp_init(struct yx_remote_resp *r);
void	yx_remote_resp_fini(struct yx_remote_resp *r);
/* Does the answer carry a JSON body? */
bool	yx_remote_resp_json(const struct yx_remote_resp *r);

/*
 * A client for cfg's hosts (YUXI_SANDBOX_PROVISIONER_URL) with cfg's
 * credential. NULL with err set (the token file unreadable, no memory).
 */
struct yx_remote	*yx_remote_new(const struct yx_config *cfg, struct yx_errctx *err);
void			 yx_remote_free(struct yx_remote *rm);
/* The hosts (borrowed from rm). */
const struct yx_hostlist *yx_remote_hosts(const struct yx_remote *rm);
/* Was host i marked down less than YX_REMOTE_DOWN_MS ago? */
bool	yx_remote_down(const struct yx_remote *rm, size_t i);

/*
 * One request to host i. YX_OK when the host's service answered, whatever
 * the status (its JSON errors included: resp holds them). Otherwise the
 * host is marked down and YX_E_BACKEND_UNAVAILABLE says "sandbox host
 * <name> unavailable" (the cause goes to the server log): no connection,
 * TLS or certificate failure, timeout, an answer of the host's nginx
 * rather than its daemon (a 5xx that is not JSON), or 401 (the host does
 * not take our credential). YX_E_PAYLOAD_TOO_LARGE over
 * YX_REMOTE_BODY_MAX, YX_E_NOMEM; the sink's error when it stopped the call.
 */
int	yx_remote_call(struct yx_remote *rm, size_t i, const struct yx_remote_req *q,
    struct yx_remote_resp *resp, struct yx_errctx *err);

#endif /* YUXI_REMOTE_H */
