/* SPDX-License-Identifier: MIT */
/*
 * yuxi/preview.h - preview URLs: a browser reaches a server listening on
 * 127.0.0.1:<port> inside a thread's sandbox, which keeps --network none
 * (docs/api.md "Previews", docs/security.md "Previews").
 *
 * nginx carries the bytes, a worker decides. A preview is a capability:
 * https://<token>.<YUXI_PREVIEW_DOMAIN>/, the token 32 characters of
 * [a-z2-7] (160 random bits). For every request nginx asks a worker first
 * (auth_request): the worker finds the preview by its token, wakes the
 * sandbox, makes sure the ingress serves it and names the socket; nginx
 * then proxies the request there itself (HTTP/1.1, WebSocket, streaming),
 * holding no worker.
 *
 * The pieces, each its own file of src/preview:
 *   - preview.c: the records. <saves>/threads/<id>/previews/<port> holds
 *     the token and its SHA-256, the creation and expiry (0600, in the
 *     thread's directory: no sandbox sees it; the owner may list the URL
 *     again); <saves>/preview/idx/<sha256 of the token> names the
 *     thread and port. A lookup hashes the presented token, reads the
 *     index entry, then the thread's record, and compares the two hashes
 *     in constant time: a revoked or replaced preview (the thread's record
 *     gone or holding another hash) and a deleted thread are not found,
 *     whatever index entries are left. The token is logged nowhere
 *     (its first YX_PREVIEW_PREFIX_LEN characters are, as the preview's
 *     "prefix").
 *   - ingress.c, ingress_link.c: the ingress, a process forked by the
 *     master (like the egress proxy). For each preview it listens on
 *     <saves>/preview/s/<name>.sock, a socket it makes in a directory
 *     only the service writes and no sandbox sees, with the FastCGI
 *     socket's group and mode: nginx connects there and nowhere else.
 *     Each connection it accepts it hands, as a descriptor (SCM_RIGHTS),
 *     to the in-box agent of that preview's sandbox over a connection it
 *     opened to agent.sock (checked as the executor checks it); the
 *     agent's relay (src/guest/agent_ingress.c) connects it to
 *     127.0.0.1:<port> inside the box and copies bytes. The ingress keeps
 *     its own copy of each connection to close it at once on a revoke, an
 *     expiry or the thread's deletion (shutdown acts on the connection,
 *     not on one descriptor). Nothing the sandbox sends selects a
 *     destination: the ingress only passes descriptors in.
 *   - client.c: the workers' and reaper's calls to the ingress's control
 *     socket <saves>/preview/ctl.sock (0600).
 */
#ifndef YUXI_PREVIEW_H
#define YUXI_PREVIEW_H

#include <sys/types.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "yuxi/buf.h"
#include "yuxi/config.h"
#include "yuxi/error.h"
#include "yuxi/hash.h"

struct yx_thread_store;

#define YX_PREVIEW_TOKEN_LEN	32	/* [a-z2-7]: 160 bits */
#define YX_PREVIEW_PREFIX_LEN	6	/* what logs show of it */
#define YX_PREVIEW_NAME_MAX	40	/* "<16 hex>-<port>.sock" + NUL */
#define YX_PREVIEW_URL_MAX	(YX_PREVIEW_TOKEN_LEN + YX_PREVIEW_DOMAIN_MAX + 16)
#define YX_PREVIEW_DIR		"preview"	/* <saves>/preview */
#define YX_PREVIEW_SOCK_DIR	"s"		/* <saves>/preview/s */

/* One preview as the records keep it. */
struct yx_preview {
	int	port;
	int64_t	created_ms;			/* unix ms */
	int64_t	expires_ms;			/* unix ms */
	char	token[YX_PREVIEW_TOKEN_LEN + 1];
	char	prefix[YX_PREVIEW_PREFIX_LEN + 1];	/* what logs show */
	char	hash[YX_SHA256_HEX];		/* of the token */
};

/* ---- preview.c: tokens and records ----------------------------------- */

/*
 * Make a preview of thread tid's port (checked by the caller against
 * YUXI_PREVIEW_PORTS) for ttl seconds: a new token into token
 * (YX_PREVIEW_TOKEN_LEN + 1 bytes), the record into *out. A preview of
 * the same port is replaced (its token stops working). YX_OK;
 * YX_E_PREVIEW_LIMIT when the thread has YUXI_PREVIEW_MAX others that
 * have not expired; YX_E_NOT_FOUND (the thread's directory is gone);
 * YX_E_IO.
 */
int	yx_preview_create(struct yx_thread_store *st, const struct yx_config *cfg,
    const char *tid, int port, int ttl, char *token, struct yx_preview *out,
    struct yx_errctx *err);
/* The thread's previews that have not expired, by port (expired records
 * are removed). *out is a heap array (free()). YX_OK, YX_E_NOMEM. */
int	yx_preview_list(struct yx_thread_store *st, const struct yx_config *cfg,
    const char *tid, struct yx_preview **out, size_t *n);
/* Revoke the preview of port. YX_OK with *old its record (may be NULL);
 * YX_E_NOT_FOUND (none, or it had expired). */
int	yx_preview_delete(struct yx_thread_store *st, const struct yx_config *cfg,
    const char *tid, int port, struct yx_preview *old);
/*
 * The preview a request's host names ("<token>.<domain>", nginx's $host:
 * lower case, no port): tid (YX_THREAD_ID_SIZE bytes) and *out. YX_OK;
 * YX_E_NOT_FOUND for anything else: not under the domain, not a token, no
 * such preview, expired (then removed), revoked, its thread gone.
 */
int	yx_preview_lookup(struct yx_thread_store *st, const struct yx_config *cfg,
    const char *host, char *tid, struct yx_preview *out);
/*
 * A front (docs/scaling.md): the index entry alone, for a preview its
 * sandbox host made (the host keeps the record and checks the token);
 * and the thread a request's host names by that entry, not expired.
 * YX_OK; YX_E_NOT_FOUND; YX_E_BAD_REQUEST (not a token); YX_E_IO.
 */
int	yx_preview_index_put(const struct yx_config *cfg, const char *token,
    const char *tid, int port, int64_t expires_ms);
int	yx_preview_route(const struct yx_config *cfg, const char *host, char *tid);
/* "https://<token>.<YUXI_PREVIEW_DOMAIN>/" into url (len bytes). */
void	yx_preview_url(const struct yx_config *cfg, const char *token, char *url,
    size_t len);
/* The ingress socket's name of (tid, port): "<16 hex of SHA-256(tid)>-
 * <port>.sock" into name (YX_PREVIEW_NAME_MAX bytes). */
void	yx_preview_sock_name(const char *tid, int port, char *name);
/* Is s a token (YX_PREVIEW_TOKEN_LEN characters of [a-z2-7])? */
bool	yx_preview_token_valid(const char *s, size_t len);
/* Remove the index entries whose preview is gone (expired, revoked,
 * replaced, its thread deleted); the reaper's. An entry without its
 * record written in the last minute (wall clock now_ms) is a create under
 * way and stays. The count removed. */
unsigned yx_preview_sweep(struct yx_thread_store *st, const struct yx_config *cfg,
    int64_t now_ms, int budget_ms);

/* ---- ingress.c: the process --------------------------------------------- */

/*
 * Master: fork the ingress (a supervisor that restarts it with a backoff;
 * both die with their parent). Nothing when previews are off
 * (YUXI_PREVIEW_DOMAIN empty): *pidp -1. YX_OK or an error (logged).
 */
int	yx_preview_ingress_start(const struct yx_config *cfg, pid_t *pidp);
/* Master, after its workers stopped: SIGTERM, reap, SIGKILL after a
 * bounded wait. Nothing for pid <= 0. */
void	yx_preview_ingress_stop(pid_t pid);

/* ---- client.c: the ingress's control socket ----------------------------- */

/* What an ensure learned. */
struct yx_ingress_state {
	char	name[YX_PREVIEW_NAME_MAX];	/* the socket nginx connects to */
	bool	linked;		/* the sandbox's agent took the connection:
				 * connections can be served now */
};

/*
 * Make the ingress serve (tid, port) until expires_ms (unix ms): its
 * socket, and a connection to the agent of the sandbox whose run
 * directory is rundir (an O_PATH fd, passed; agent.sock owned by uid).
 * YX_OK with *st; YX_E_BACKEND_UNAVAILABLE when the ingress does not
 * answer or refuses (logged).
 */
int	yx_preview_ensure(const struct yx_config *cfg, const char *tid, int port,
    unsigned uid, int rundir, int64_t expires_ms, struct yx_ingress_state *st,
    struct yx_errctx *err);
/* Close (tid, port)'s socket and every connection open through it; with
 * port 0, all of tid's and its agent connection. YX_OK or
 * YX_E_BACKEND_UNAVAILABLE (the ingress holds nothing of tid anyway
 * after a restart). */
int	yx_preview_revoke(const struct yx_config *cfg, const char *tid, int port);
/* Connections open through the ingress into tid's sandbox (the reaper's
 * question: such a sandbox is not idle). 0 when it does not answer. */
int	yx_preview_open_conns(const struct yx_config *cfg, const char *tid);

/* The ingress's counters (GET /metrics). */
struct yx_ingress_stats {
	uint64_t	sockets;	/* previews served (listening) */
	uint64_t	sandboxes;	/* agent connections */
	uint64_t	open;		/* connections open */
	uint64_t	accepted;	/* connections handed to a sandbox */
	uint64_t	refused;	/* ... refused (limit, no agent) */
	uint64_t	closed;		/* ... closed by a revoke or expiry */
	uint64_t	bytes_in;	/* bytes to the sandboxes (their report) */
	uint64_t	bytes_out;	/* bytes from them (their report) */
};
/* YX_OK with *s; YX_E_BACKEND_UNAVAILABLE. */
int	yx_preview_stats(const struct yx_config *cfg, struct yx_ingress_stats *s);
/* The same as GET /metrics lines (Prometheus text) appended to b; nothing
 * when previews are off, on a front or when the ingress does not answer.
 * YX_OK or the buffer's error. */
int	yx_preview_metrics(const struct yx_config *cfg, struct yx_buf *b);

#endif /* YUXI_PREVIEW_H */
