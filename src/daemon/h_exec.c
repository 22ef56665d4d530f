/* SPDX-License-Identifier: MIT */
/*
 * h_exec.c - POST /api/execute (docs/api.md "Agent view"): run one command in
 * the thread's sandbox through the executor (include/yuxi/executor.h),
 * which acquires the container lazily, enforces the timeout and the output
 * cap, and masks host paths. The output is made valid UTF-8 (U+FFFD for
 * invalid bytes) as it is written into the JSON reply. With "stream": true
 * the answer is streamed instead (h_stream.c).
 *
 * A command holds its worker until it ends (up to 600 s), so one user may
 * run at most YUXI_USER_COMMANDS at once, output long-polls (h_proc.c)
 * counted with them, by default one fewer than the workers: whatever one
 * user runs, the other users' requests find a worker.
 * The slots are OFD locks on the bytes of <saves>/user-commands/<user>;
 * the kernel drops one when its descriptor closes, also when the worker
 * dies, so no slot is ever lost.
 */
#include "config.h"

#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json.h>

#include "daemon_int.h"
#include "yuxi/buf.h"
#include "yuxi/executor.h"
#include "yuxi/log.h"
#include "yuxi/text.h"

#define YX_REPLY_MAX	INT32_MAX	/* yx_http_send_raw's limit */
#define USER_CMDS_DIR	"user-commands"

static int user_cmds_dfd = -1;	/* <saves>/user-commands, this worker's */
static bool user_cmds_warned;	/* the slot file failed: said once */

/* The slot file could not be used: commands and long-polls go uncounted
 * (the cap protects the others; it must not stop everyone). Said once per
 * worker. */
static int
user_slot_unusable(const char *what)
{
	if (!user_cmds_warned)
		log_warn("%s: commands not counted per user", what);
	user_cmds_warned = true;
	return YX_OK;
}

int
yx_user_slot_take(struct yx_wctx *w, const char *user, int *fdp)
{
	char	path[YX_CFG_PATH + 32];
	int	cap, fd;

	*fdp = -1;
	cap = yx_user_slots(w->cfg);
	if (cap == 0)
		return YX_OK;
	if (user_cmds_dfd == -1) {
		snprintf(path, sizeof(path), "%s/" USER_CMDS_DIR, w->cfg->saves_dir);
		if ((mkdir(path, 0700) == -1 && errno != EEXIST) ||
		    (user_cmds_dfd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) == -1)
			return user_slot_unusable(path);
	}
	/* a valid user name is a file name: no '/', no leading '.' */
	if ((fd = openat(user_cmds_dfd, user, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600)) == -1)
		return user_slot_unusable(USER_CMDS_DIR "/<user>");
	if (yx_byte_slot_take(fd, cap) != -1) {
		*fdp = fd;
		return YX_OK;
	}
	close(fd);
	return YX_E_BUSY;
}

int
yx_user_slots(const struct yx_config *cfg)
{
	int cap = cfg->user_commands > 0 ? cfg->user_commands : cfg->workers - 1;

	return cap < 1 || cap >= cfg->workers ? 0 : cap;	/* one worker: nothing to keep */
}

int
yx_user_cmd_take(struct yx_wctx *w, struct yx_http_req *r, int *fdp)
{
	char	msg[160];
	int	cap = yx_user_slots(w->cfg);

	if (yx_user_slot_take(w, r->user, fdp) == YX_OK)
		return YX_OK;
	if (cap == 1)
		snprintf(msg, sizeof(msg), "a command of yours is running, or waiting for a "
					   "process's output: one at a time");
	else
		snprintf(msg, sizeof(msg), "%d commands of yours are running or waiting for "
					   "output, the most one user may have at once",
		    cap);
	yx_http_send_error_hdr(r, YX_E_BUSY, msg, "Retry-After: 1\r\n");
	return YX_E_BUSY;
}

void
yx_user_cmd_give(int fd)
{
	if (fd != -1)
		close(fd);
}

/*
 * The reply body, written directly rather than through json-c: the output
 * can be megabytes, and json-c would copy it and escape it byte by byte
 * (~20% of a worker's time on a 1 MiB reply). Same JSON, same key order.
 */
static int
exec_body(const struct yx_exec_output *out, struct yx_buf *b)
{
	int rc;

	if ((rc = yx_buf_puts(b, "{\"output\":")) != YX_OK ||
	    (rc = yx_json_str_append(b, out->output != NULL ? out->output : "",
		 out->output != NULL ? out->len : 0)) != YX_OK ||
	    (rc = yx_buf_puts(b, ",")) != YX_OK ||
	    (rc = yx_exec_fields(out, b)) != YX_OK)
		return rc;
	return yx_buf_puts(b, "}");
}

/* Parse the body: thread id, command, timeout, stream. Sends errors
 * itself. */
static int
exec_parse(struct yx_http_req *r, struct json_object *body, const char **tid,
    const char **cmd, int *timeout, bool *stream)
{
	struct json_object *v;

	*timeout = 0;
	*stream = false;
	if (json_object_object_get_ex(body, "stream", &v) &&
	    !json_object_is_type(v, json_type_null)) {
		if (!json_object_is_type(v, json_type_boolean)) {
			yx_http_send_error(r, YX_E_BAD_REQUEST,
			    "stream must be true or false");
			return YX_E_BAD_REQUEST;
		}
		*stream = json_object_get_boolean(v);
	}
	/* capped, not refused (docs/api.md): the executor caps at 600 s */
	return yx_parse_command(r, body, tid, cmd, timeout, 600);
}

int
yx_h_execute(struct yx_wctx *w, struct yx_http_req *r, const char *arg)
{
	struct json_object	*body = NULL;
	struct yx_exec_request	 req;
	struct yx_buf		 reply;
	struct yx_exec_output	 out;
	struct yx_skill_set	 skills;
	struct yx_thread	 t;
	struct yx_errctx	 e;
	const char		*tid = NULL, *cmd = NULL;
	bool			 stream;
	int			 timeout, rc, slot = -1;

	yx_errctx_clear(&e);
	memset(&out, 0, sizeof(out));
	yx_buf_init(&reply, YX_REPLY_MAX);
	if ((rc = yx_need_user(r)) != YX_OK)
		return rc;
	if ((rc = yx_http_read_json(r, &body, &e)) != YX_OK) {
		yx_send_errctx(r, rc, &e);
		goto done;
	}
	if ((rc = exec_parse(r, body, &tid, &cmd, &timeout, &stream)) != YX_OK)
		goto done;
	yx_audit_note_command(&w->note, cmd, strlen(cmd));
	if ((rc = yx_load_thread(w, r, tid, strlen(tid), &t)) != YX_OK)
		goto done;
	/* MARK: no executor in this process (engine or provider missing): 503 */
	if (w->exec == NULL) {
		rc = YX_E_BACKEND_UNAVAILABLE;
		yx_http_send_error(r, rc, "sandbox backend unavailable");
		goto done;
	}
	if ((rc = yx_user_cmd_take(w, r, &slot)) != YX_OK)
		goto done;
	if ((rc = yx_agents_skills(w->agents, t.agent_id, t.agent_config_id, &skills)) != YX_OK)
		goto done;
	memset(&req, 0, sizeof(req));
	yx_exec_request_thread(&req, &t);
	req.skills = &skills;
	req.profile = yx_agents_profile(w->agents, t.agent_id, t.agent_config_id);
	req.command = cmd;
	req.timeout_sec = timeout;
	if (stream) {
		rc = yx_exec_stream(w, r, &req);
		goto done;
	}
	if ((rc = yx_executor_run(w->exec, &req, &out, &e)) != YX_OK) {
		yx_send_errctx(r, rc, &e);
		goto done;
	}
	w->note.has_exit = true;
	w->note.exit_code = out.exit_code;
	if ((rc = exec_body(&out, &reply)) != YX_OK) {
		yx_http_send_error(r, rc, NULL);
		goto done;
	}
	rc = yx_http_send_raw(r, 200, YX_CT_JSON, reply.data, reply.len);
done:
	yx_user_cmd_give(slot);
	yx_exec_output_fini(&out);
	yx_buf_fini(&reply);
	json_object_put(body);
	return rc;
}
