/* SPDX-License-Identifier: MIT */
/*
 * exec_stream.c - POST /api/execute with "stream": true (docs/api.md): the
 * command's output as newline-delimited JSON events while it runs; and the
 * result fields both forms answer (yx_exec_fields, used by h_exec.c).
 *
 *   {"type":"output","data":"..."}      as output arrives
 *   {"type":"exit","exit_code":N,...}   last: the plain reply's fields
 *   {"type":"error","error":{...}}      last, instead, when the run failed
 *                                       after the stream had started
 *
 * The stream starts (200, application/x-ndjson, X-Accel-Buffering: no)
 * when the command has started; an error before that is the plain form's
 * error with the same status. Each event is written and flushed at once.
 * The executor hands over output already capped and masked
 * (include/yuxi/executor.h "on_stream"); here it is made valid UTF-8, a
 * character cut at a chunk's end being held back for the next event. A
 * client that goes away is noticed when an event cannot be written or, while
 * the command is quiet, on the executor's tick (yx_http_client_gone, every
 * YX_EXEC_TICK_MS): the run then stops and the agent kills the command's
 * process group.
 */
#include "config.h"

#include <stdbool.h>
#include <string.h>

#include "daemon_int.h"
#include "yuxi/broker.h"
#include "yuxi/buf.h"
#include "yuxi/executor.h"
#include "yuxi/log.h"
#include "yuxi/text.h"

#define YX_CT_NDJSON	"application/x-ndjson"

struct stream_ctx {
	struct yx_http_req	*r;
	bool			 started;
	char			 carry[4];	/* a character cut by a chunk's end */
	size_t			 ncarry;
	struct yx_buf		 text;		/* carry + chunk */
	struct yx_buf		 ev;		/* one event */
};

/*
 * ,"layout_repaired":["/home/yuxi/user-data/<folder>",...]: folders of the
 * layout that were something else (e.g. a symlink the sandbox made) and
 * have been moved aside and made again before the command ran.
 */
static int
stream_repaired(const struct yx_exec_output *out, struct yx_buf *b)
{
	size_t	i;
	int	rc, n = 0;

	if ((rc = yx_buf_puts(b, ",\"layout_repaired\":[")) != YX_OK)
		return rc;
	for (i = 0; i < YX_BROKER_LAYOUT_N; i++)
		if ((out->layout_repaired & (1u << i)) != 0 &&
		    (rc = yx_buf_printf(b, "%s\"%s/%s\"", n++ ? "," : "",
			 YX_VROOT_USER_DATA, yx_broker_layout[i])) != YX_OK)
			return rc;
	return yx_buf_puts(b, "]");
}

int
yx_exec_fields(const struct yx_exec_output *out, struct yx_buf *b)
{
	int rc;

	if ((rc = yx_buf_printf(b, "\"exit_code\":%d,\"truncated\":%s,"
				   "\"timed_out\":%s,\"duration_ms\":%lld",
		 out->exit_code,
		 out->truncated ? "true" : "false", out->timed_out ? "true" : "false",
		 (long long)out->duration_ms)) != YX_OK)
		return rc;
	if (out->truncated && out->full_output_path[0] != '\0' &&
	    ((rc = yx_buf_puts(b, ",\"full_output_path\":")) != YX_OK ||
		(rc = yx_json_str_append(b, out->full_output_path,
		     strlen(out->full_output_path))) != YX_OK))
		return rc;
	if (out->layout_repaired != 0 && (rc = stream_repaired(out, b)) != YX_OK)
		return rc;
	if (out->refused != NULL &&
	    (rc = yx_buf_printf(b, ",\"refused\":\"%s\"",
		 out->refused)) != YX_OK)
		return rc;
	/* a transaction's outcome (docs/api.md "Transactions") */
	if (out->tx_json != NULL &&
	    ((rc = yx_buf_puts(b, ",")) != YX_OK || (rc = yx_buf_puts(b, out->tx_json)) != YX_OK))
		return rc;
	/* a session's command: where its shell is now, and whether it ended */
	if (out->session != NULL &&
	    ((rc = yx_buf_puts(b, ",\"cwd\":")) != YX_OK ||
		(rc = yx_json_str_append(b, out->session->cwd,
		     strlen(out->session->cwd))) != YX_OK ||
		(rc = yx_buf_printf(b, ",\"session_ended\":%s",
		     out->session->ended ? "true" : "false")) != YX_OK))
		return rc;
	return YX_OK;
}

/* The headers, once. YX_OK or YX_E_CLIENT_GONE. */
static int
stream_start(struct stream_ctx *s)
{
	if (s->started)
		return YX_OK;
	s->started = true;
	return yx_http_send_stream(s->r, 200, YX_CT_NDJSON) == YX_OK ?
	    YX_OK :
	    YX_E_CLIENT_GONE;
}

/* Write the event in s->ev. YX_OK or YX_E_CLIENT_GONE. */
static int
stream_send(struct stream_ctx *s)
{
	return yx_http_write(s->r, s->ev.data, s->ev.len) == YX_OK ?
	    YX_OK :
	    YX_E_CLIENT_GONE;
}

/* An output event of the carry and p (all of it with `final`). */
static int
stream_output(struct stream_ctx *s, const char *p, size_t n, bool final)
{
	size_t	k;
	int	rc;

	yx_buf_reset(&s->text);
	if ((rc = yx_buf_append(&s->text, s->carry, s->ncarry)) != YX_OK ||
	    (rc = yx_buf_append(&s->text, p, n)) != YX_OK)
		return rc;
	k = final ? 0 : yx_utf8_tail(s->text.data, s->text.len);
	memcpy(s->carry, s->text.data + s->text.len - k, k);
	s->ncarry = k;
	if (s->text.len == k)
		return YX_OK;
	yx_buf_reset(&s->ev);
	if ((rc = yx_buf_puts(&s->ev, "{\"type\":\"output\",\"data\":")) != YX_OK ||
	    (rc = yx_json_str_append(&s->ev, s->text.data, s->text.len - k)) != YX_OK ||
	    (rc = yx_buf_puts(&s->ev, "}\n")) != YX_OK)
		return rc;
	return stream_send(s);
}

/* yx_exec_request.on_stream */
static int
stream_on_output(void *arg, const char *p, size_t n)
{
	struct stream_ctx	*s = arg;
	int			 rc;

	if ((rc = stream_start(s)) != YX_OK)
		return rc;
	return stream_output(s, p, n, false);
}

/* yx_exec_request.on_tick: start the stream, notice a client gone. */
static int
stream_on_tick(void *arg)
{
	struct stream_ctx	*s = arg;
	int			 rc;

	if ((rc = stream_start(s)) != YX_OK)
		return rc;
	return yx_http_client_gone(s->r) ? YX_E_CLIENT_GONE : YX_OK;
}

/* The last event: what the command left held back, then exit. */
static int
stream_exit(struct stream_ctx *s, const struct yx_exec_output *out)
{
	int rc;

	if ((rc = stream_start(s)) != YX_OK)
		return rc;
	/* a refusal's reason is the output of a command that never ran */
	if (out->refused != NULL && out->output != NULL &&
	    (rc = stream_output(s, out->output, out->len, false)) != YX_OK)
		return rc;
	if (s->ncarry > 0 && (rc = stream_output(s, NULL, 0, true)) != YX_OK)
		return rc;
	yx_buf_reset(&s->ev);
	if ((rc = yx_buf_puts(&s->ev, "{\"type\":\"exit\",")) != YX_OK ||
	    (rc = yx_exec_fields(out, &s->ev)) != YX_OK ||
	    (rc = yx_buf_puts(&s->ev, "}\n")) != YX_OK)
		return rc;
	return stream_send(s);
}

/* A failure after the stream started: the error event ends it. */
static void
stream_error(struct stream_ctx *s, int code, const struct yx_errctx *e)
{
	const char *msg = e->code == code && e->msg[0] != '\0' ? e->msg :
								 yx_strerror(code);

	yx_buf_reset(&s->ev);
	if (yx_buf_printf(&s->ev, "{\"type\":\"error\",\"error\":{\"code\":\"%s\","
				  "\"message\":",
		yx_err_api_code(code)) == YX_OK &&
	    yx_json_str_append(&s->ev, msg, strlen(msg)) == YX_OK &&
	    yx_buf_puts(&s->ev, ",\"request_id\":") == YX_OK &&
	    yx_json_str_append(&s->ev, s->r->request_id,
		strlen(s->r->request_id)) == YX_OK &&
	    yx_buf_puts(&s->ev, "}}\n") == YX_OK)
		(void)stream_send(s);
	s->r->err = code;
}

/* A stream of request r for run req: its output and ticks come to s. */
static void
stream_ctx_init(struct stream_ctx *s, struct yx_http_req *r, struct yx_exec_request *req)
{
	memset(s, 0, sizeof(*s));
	s->r = r;
	yx_buf_init(&s->text, SIZE_MAX);
	yx_buf_init(&s->ev, SIZE_MAX);
	req->on_stream = stream_on_output;
	req->on_tick = stream_on_tick;
	req->stream_arg = s;
}

static void
stream_ctx_fini(struct stream_ctx *s)
{
	yx_buf_fini(&s->text);
	yx_buf_fini(&s->ev);
}

int
yx_exec_stream(struct yx_wctx *w, struct yx_http_req *r,
    struct yx_exec_request *req, struct yx_exec_output *out)
{
	struct stream_ctx	s;
	struct yx_errctx	e;
	int			rc;

	stream_ctx_init(&s, r, req);
	yx_errctx_clear(&e);
	rc = yx_executor_run(w->exec, req, out, &e);
	if (rc == YX_OK)
		rc = yx_exec_session_ran(out, &e);	/* busy, ended: an error */
	if (rc == YX_OK) {
		w->note.has_exit = true;	/* the audit line's, as the plain form's */
		w->note.exit_code = out->exit_code;
		rc = stream_exit(&s, out);
	}
	if (rc == YX_E_CLIENT_GONE)
		log_info("execute stream of thread %s: the client went away; "
			 "command stopped",
		    req->thread_id);
	else if (rc != YX_OK && !s.started)
		yx_send_errctx(r, rc, &e);	/* before the stream: plain */
	else if (rc != YX_OK)
		stream_error(&s, rc, &e);
	if (rc == YX_E_CLIENT_GONE) {
		r->err = rc;	/* the audit line's "error" */
		if (r->status == 0)
			r->status = 499;	/* nginx's word for it; nothing is sent */
	}
	stream_ctx_fini(&s);
	return s.started || rc == YX_E_CLIENT_GONE ? YX_OK : rc;
}
