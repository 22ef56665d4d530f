/* SPDX-License-Identifier: MIT */
/*
 * audit.c - the audit log: one JSON line per API request
 * (docs/operations.md "Audit log"), to YUXI_AUDIT_LOG.
 *
 * Each worker opens the file itself with O_APPEND and writes each line
 * with one write(2): on a regular file every such write lands at the end
 * whole, so lines of concurrent workers never interleave; a line is
 * bounded (the command is kept up to YX_AUDIT_CMD_MAX bytes, a path up to
 * YX_AUDIT_PATH_MAX) so it stays one short write. The file is reopened on
 * SIGUSR1 (the master forwards it; logrotate's postrotate sends it). A
 * line that cannot be written is counted (yuxi_audit_write_errors_total)
 * and never fails the request.
 *
 * The line is written by hand with yx_json_str_append(): every string is
 * escaped (quotes, backslash, control bytes) and ill-formed UTF-8 becomes
 * U+FFFD, so the file is valid JSON lines whatever a command holds.
 */
#include "config.h"

#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "daemon_int.h"
#include "yuxi/clock.h"
#include "yuxi/log.h"
#include "yuxi/text.h"

#define YX_AUDIT_LINE_MAX	(64 << 10)	/* a line is far below this */

/* Open a->path; on ENOENT make its directory (one level, 0750) first. */
static void
audit_open(struct yx_audit *a)
{
	char	dir[YX_CFG_PATH], *slash;
	int	fd;

	if (a->path[0] == '\0')
		return;
	fd = open(a->path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOCTTY, 0640);
	if (fd == -1 && errno == ENOENT &&
	    snprintf(dir, sizeof(dir), "%s", a->path) < (int)sizeof(dir) &&
	    (slash = strrchr(dir, '/')) != NULL && slash != dir) {
		*slash = '\0';
		if (mkdir(dir, 0750) == 0 || errno == EEXIST)
			fd = open(a->path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOCTTY,
			    0640);
	}
	if (fd == -1)
		log_warn("audit log %s", a->path);
	a->fd = fd;
}

void
yx_audit_init(struct yx_audit *a, const struct yx_config *cfg, struct yx_metrics *m)
{
	a->path = cfg->audit_log;
	a->fd = -1;
	a->failing = false;
	a->metrics = m;
	audit_open(a);
}

void
yx_audit_reopen(struct yx_audit *a)
{
	if (a->fd != -1)
		close(a->fd);
	a->fd = -1;
	audit_open(a);
}

void
yx_audit_fini(struct yx_audit *a)
{
	if (a->fd != -1)
		close(a->fd);
	a->fd = -1;
}

void
yx_audit_note_command(struct yx_audit_note *n, const char *cmd, size_t len)
{
	n->has_command = true;
	n->command_bytes = len;
	n->command_len = yx_utf8_cut(cmd, len, YX_AUDIT_CMD_MAX);
	memcpy(n->command, cmd, n->command_len);
	n->command[n->command_len] = '\0';
}

void
yx_audit_note_path(struct yx_audit_note *n, const char *path, size_t len)
{
	n->has_path = true;
	n->path_len = yx_utf8_cut(path, len, YX_AUDIT_PATH_MAX);
	memcpy(n->path, path, n->path_len);
	n->path[n->path_len] = '\0';
}

void
yx_audit_note_meta(struct yx_audit_note *n, const struct yx_thread_meta *m)
{
	n->has_meta = true;
	n->meta = *m;
}

/* ,"metadata":{...} of the thread, or ,"metadata":null. */
static int
audit_meta(struct yx_buf *b, const struct yx_audit_note *n)
{
	unsigned	i;
	int		rc;

	if (!n->has_meta)
		return yx_buf_puts(b, ",\"metadata\":null");
	if ((rc = yx_buf_puts(b, ",\"metadata\":{")) != YX_OK)
		return rc;
	for (i = 0; i < n->meta.n && rc == YX_OK; i++) {
		if ((i > 0 && (rc = yx_buf_puts(b, ",")) != YX_OK) ||
		    (rc = yx_json_str_append(b, n->meta.key[i],
			 strlen(n->meta.key[i]))) != YX_OK ||
		    (rc = yx_buf_puts(b, ":")) != YX_OK)
			break;
		rc = yx_json_str_append(b, n->meta.value[i], strlen(n->meta.value[i]));
	}
	return rc != YX_OK ? rc : yx_buf_puts(b, "}");
}

/* ,"key":"s" (escaped), or ,"key":null when s is NULL or empty. */
static int
audit_str(struct yx_buf *b, const char *key, const char *s, size_t len)
{
	int rc;

	if ((rc = yx_buf_printf(b, ",\"%s\":", key)) != YX_OK)
		return rc;
	if (s == NULL || len == 0)
		return yx_buf_puts(b, "null");
	return yx_json_str_append(b, s, len);
}

/*
 * ,"via":"mcp","mcp_session":... for a tool call of the MCP endpoint (a
 * sub-request, src/daemon/mcp_call.c); nothing for a request of nginx's.
 */
static int
audit_via(struct yx_buf *b, const struct yx_http_req *r)
{
	int rc;

	if (r->via == NULL)
		return YX_OK;
	if ((rc = audit_str(b, "via", r->via, strlen(r->via))) != YX_OK)
		return rc;
	return audit_str(b, "mcp_session", r->via_session,
	    r->via_session != NULL ? strlen(r->via_session) : 0);
}

int
yx_audit_format(struct yx_buf *b, const struct yx_http_req *r,
    const struct yx_audit_note *n, const char *op, int64_t now_ms, int64_t dur_us)
{
	const char	*role = NULL;
	char		 ts[40];
	int		 rc;

	if (r->user[0] != '\0')
		role = r->admin ? "admin" : "user";
	if ((rc = yx_buf_printf(b, "{\"time\":\"%s\"",
		 yx_iso8601_ms(now_ms, ts, sizeof(ts)))) != YX_OK ||
	    (rc = audit_str(b, "request_id", r->request_id, strlen(r->request_id))) ||
	    (rc = audit_str(b, "user", r->user, strlen(r->user))) ||
	    (rc = audit_str(b, "role", role, role != NULL ? strlen(role) : 0)) ||
	    (rc = audit_str(b, "client", r->client, strlen(r->client))) ||
	    (rc = audit_str(b, "thread", r->thread_id, strlen(r->thread_id))) ||
	    (rc = audit_str(b, "op", op, strlen(op))) ||
	    (rc = audit_via(b, r)) ||
	    (rc = audit_str(b, "method", r->method_str, strlen(r->method_str))) ||
	    (rc = yx_buf_printf(b, ",\"status\":%d", r->status)) ||
	    (rc = audit_str(b, "error", r->err != YX_OK ? yx_err_api_code(r->err) : NULL,
		 r->err != YX_OK ? strlen(yx_err_api_code(r->err)) : 0)) ||
	    (rc = audit_str(b, "command", n->has_command ? n->command : NULL,
		 n->has_command ? n->command_len : 0)))
		return rc;
	if (n->has_command &&
	    (rc = yx_buf_printf(b, ",\"command_bytes\":%llu,\"command_truncated\":%s",
		 (unsigned long long)n->command_bytes,
		 n->command_len < n->command_bytes ? "true" : "false")) != YX_OK)
		return rc;
	if ((rc = audit_str(b, "path", n->has_path ? n->path : NULL,
		 n->has_path ? n->path_len : 0)) != YX_OK ||
	    (rc = audit_meta(b, n)) != YX_OK)
		return rc;
	/* a preview: its port and the token's first characters, never all */
	if (n->has_preview &&
	    (rc = yx_buf_printf(b, ",\"preview\":{\"port\":%d,\"prefix\":\"%s\"}",
		 n->preview_port, n->preview_prefix)) != YX_OK)
		return rc;
	if (n->has_exit)
		rc = yx_buf_printf(b, ",\"exit_code\":%d", n->exit_code);
	else
		rc = yx_buf_puts(b, ",\"exit_code\":null");
	if (rc != YX_OK)
		return rc;
	return yx_buf_printf(b, ",\"bytes_in\":%llu,\"bytes_out\":%llu,"
				"\"duration_ms\":%.3f}\n",
	    (unsigned long long)r->bytes_in, (unsigned long long)r->bytes_out,
	    (double)dur_us / 1000.0);
}

void
yx_audit_write(struct yx_audit *a, const struct yx_http_req *r,
    const struct yx_audit_note *n, const char *op, int64_t dur_us)
{
	struct yx_buf	b;
	ssize_t		w;
	bool		ok = false;

	if (a->path == NULL || a->path[0] == '\0')
		return;
	yx_buf_init(&b, YX_AUDIT_LINE_MAX);
	if (a->fd != -1 &&
	    yx_audit_format(&b, r, n, op, yx_now_ms(), dur_us) == YX_OK) {
		do
			w = write(a->fd, b.data, b.len);
		while (w == -1 && errno == EINTR);
		ok = w == (ssize_t)b.len;
		if (!ok && !a->failing)
			log_warn("audit log %s: line of request %s not written "
				 "(further losses are only counted)",
			    a->path, r->request_id);
		a->failing = !ok;
	}
	if (a->metrics != NULL)
		atomic_fetch_add(ok ? &a->metrics->audit_lines : &a->metrics->audit_errors, 1);
	yx_buf_fini(&b);
}
