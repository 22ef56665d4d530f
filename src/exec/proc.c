/* SPDX-License-Identifier: MIT */
/*
 * proc.c - a thread's background processes on the host side; see
 * include/yuxi/procs.h for the contract and docs/agent.md "Background
 * processes" for the keeper inside the sandbox.
 *
 * The records are the host's memory of what it started: one JSON file per
 * process in <thread>/procs/ (written through a temporary name and a
 * rename), read and refreshed on every request. The sandbox reaches
 * neither them nor the thread's directory. What a keeper says (its 'Z'
 * status, its exit file) is untrusted like everything from the sandbox:
 * bounded, parsed strictly, and it can only misreport its own thread's
 * processes. Starting takes an exclusive flock on the records' directory,
 * so two workers never both see room for one more process.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <json-c/json.h>

#include "yuxi/clock.h"
#include "yuxi/executor.h"
#include "yuxi/log.h"
#include "yuxi/procs.h"
#include "yuxi/replace.h"
#include "yuxi/text.h"
#include "yuxi/threads.h"
#include "exec/agent_client.h"
#include "exec/exec_int.h"
#include "guest/agent_proto.h"

#define PROC_DIR		"procs"
#define PROC_STDIN_CHUNK	YX_AGENT_OUT_MAX

void
yx_proc_fini(struct yx_proc *p)
{
	if (p == NULL)
		return;
	free(p->command);
	p->command = NULL;
}

void
yx_proc_list_free(struct yx_proc *v, size_t n)
{
	size_t i;

	for (i = 0; v != NULL && i < n; i++)
		yx_proc_fini(&v[i]);
	free(v);
}

const char *
yx_proc_state_name(int state)
{
	switch (state) {
	case YX_PROC_RUNNING: return "running";
	case YX_PROC_EXITED: return "exited";
	default: return "lost";
	}
}

static int
proc_state_of(const char *s)
{
	if (strcmp(s, "running") == 0)
		return YX_PROC_RUNNING;
	return strcmp(s, "exited") == 0 ? YX_PROC_EXITED : YX_PROC_LOST;
}

/*
 * Write p's record (keeper_rec.c): a new one with `create`, else over the
 * current one only. YX_OK, YX_E_NOT_FOUND (update of a gone record),
 * YX_E_IO.
 */
static int
proc_record_write(int dfd, const struct yx_proc *p, bool create)
{
	struct json_object	*o = json_object_new_object();
	int			 rc;

	if (o == NULL)
		return YX_E_NOMEM;
	json_object_object_add(o, "process_id", json_object_new_string(p->id));
	json_object_object_add(o, "command", json_object_new_string(p->command));
	json_object_object_add(o, "state",
	    json_object_new_string(yx_proc_state_name(p->state)));
	json_object_object_add(o, "exit_code", json_object_new_int(p->exit_code));
	json_object_object_add(o, "timed_out", json_object_new_boolean(p->timed_out));
	json_object_object_add(o, "timeout", json_object_new_int(p->timeout));
	json_object_object_add(o, "started_at", json_object_new_int64(p->started_at));
	json_object_object_add(o, "ended_at", json_object_new_int64(p->ended_at));
	json_object_object_add(o, "output_bytes",
	    json_object_new_int64((int64_t)p->output_bytes));
	if (p->cols > 0) {
		json_object_object_add(o, "cols", json_object_new_int(p->cols));
		json_object_object_add(o, "rows", json_object_new_int(p->rows));
	}
	if (p->starting)
		json_object_object_add(o, "starting", json_object_new_boolean(1));
	rc = exec_rec_put(dfd, p->id, o, create ? EXEC_REC_CREATE : EXEC_REC_UPDATE);
	json_object_put(o);
	return rc;
}

/* Read the record of id. YX_OK; YX_E_NOT_FOUND; YX_E_IO; YX_E_NOMEM. */
static int
proc_record_read(int dfd, const char *id, struct yx_proc *p,
    struct yx_errctx *err)
{
	struct json_object	*o;
	struct json_object	*v;
	const char		*cmd, *state;
	int			 rc;

	memset(p, 0, sizeof(*p));
	if (!exec_rec_id_valid(id, 'p') ||
	    (rc = exec_rec_get(dfd, id, &o)) == YX_E_NOT_FOUND)
		return yx_fail(err, YX_E_NOT_FOUND, "no such process");
	if (rc == YX_OK && ((cmd = exec_rec_str(o, "command")) == NULL || (state = exec_rec_str(o, "state")) == NULL))
		rc = YX_E_IO;
	if (rc == YX_OK) {
		snprintf(p->id, sizeof(p->id), "%s", id);
		p->state = proc_state_of(state);
		if ((p->command = strdup(cmd)) == NULL)
			rc = YX_E_NOMEM;
		p->exit_code = (int)exec_rec_int(o, "exit_code", -1);
		p->timed_out = json_object_object_get_ex(o, "timed_out", &v) &&
		    json_object_get_boolean(v);
		p->timeout = (int)exec_rec_int(o, "timeout", 0);
		p->started_at = exec_rec_int(o, "started_at", 0);
		p->ended_at = exec_rec_int(o, "ended_at", 0);
		p->output_bytes = (uint64_t)exec_rec_int(o, "output_bytes", 0);
		p->cols = (int)exec_rec_int(o, "cols", 0);
		p->rows = (int)exec_rec_int(o, "rows", 0);
		p->starting = json_object_object_get_ex(o, "starting", &v) &&
		    json_object_get_boolean(v);
	}
	json_object_put(o);
	if (rc != YX_OK)
		return yx_fail(err, rc, "process record %s unreadable", id);
	return YX_OK;
}

/* What the keeper said, into p. True when it changed the record. */
static bool
proc_apply(struct yx_proc *p, const struct exec_kstatus *ks)
{
	struct yx_proc	old = *p;

	p->output_bytes = ks->total;
	if (!ks->run) {
		p->state = YX_PROC_EXITED;
		p->exit_code = ks->code >= 0 && ks->code <= 255 ? (int)ks->code : -1;
		p->timed_out = ks->timedout;
		p->ended_at = ks->ended;
	}
	return old.state != p->state || old.output_bytes != p->output_bytes;
}

/*
 * The keeper of a process the record says runs is gone: the exit file it
 * left says how it ended, else it is lost. True when p changed.
 */
static bool
proc_gone(const struct yx_proc_ctx *c, struct yx_proc *p)
{
	struct exec_kstatus ks;

	if (p->state != YX_PROC_RUNNING)
		return false;
	/* a start still under way (another request's): no keeper yet */
	if (p->starting && yx_now_ms() - p->started_at < YX_PROC_START_MAX_MS)
		return false;
	if (exec_keeper_exit(c, p->id, &ks) == 0) {
		ks.total = p->output_bytes;
		return proc_apply(p, &ks);
	}
	p->state = YX_PROC_LOST;
	return true;
}

/* Ask the keeper of a running process how it is; true when p changed. */
static bool
proc_refresh(const struct yx_proc_ctx *c, struct yx_proc *p)
{
	struct exec_kstatus	ks;
	char			st[YX_AGENT_STATUS_MAX + 1];
	int			rc;

	if (p->state != YX_PROC_RUNNING)
		return false;
	if (c->until > 0 && yx_mono_ms() >= c->until)
		return false;	/* no time left: as it was */
	rc = exec_keeper_op(c, p->id, YX_AGENT_T_STATUS, NULL, 0, 0, NULL, NULL,
	    st, NULL);
	if (rc == YX_E_NOT_FOUND)
		return proc_gone(c, p);
	if (rc != YX_OK || exec_kstatus_parse(st, &ks) == -1)
		return false;	/* unsure: as it was */
	return proc_apply(p, &ks);
}

/* Read and refresh one record, writing it back when it changed. */
static int
proc_load(const struct yx_proc_ctx *c, int dfd, const char *id,
    struct yx_proc *p, struct yx_errctx *err)
{
	int rc;

	if ((rc = proc_record_read(dfd, id, p, err)) != YX_OK)
		return rc;
	if (proc_refresh(c, p))
		(void)proc_record_write(dfd, p, false);
	return YX_OK;
}

static int
proc_kload(const struct yx_proc_ctx *c, int dfd, const char *id, void *rec)
{
	return proc_load(c, dfd, id, rec, NULL);
}

static int64_t
proc_kkey(const void *rec)
{
	return ((const struct yx_proc *)rec)->started_at;
}

static const char *
proc_kid(const void *rec)
{
	return ((const struct yx_proc *)rec)->id;
}

static bool
proc_klive(const void *rec)
{
	return ((const struct yx_proc *)rec)->state == YX_PROC_RUNNING;
}

static void
proc_kfini(void *rec)
{
	yx_proc_fini(rec);
}

static const struct exec_rec_kind proc_kind = {
	"process", 'p', sizeof(struct yx_proc), YX_PROC_RECORDS, YX_E_PROCESS_LIMIT,
	proc_kload, proc_kkey, proc_kid, proc_klive, proc_kfini
};

int
yx_proc_list(const struct yx_proc_ctx *c, struct yx_proc **out, size_t *n,
    struct yx_errctx *err)
{
	int dfd, rc;

	*out = NULL;
	*n = 0;
	if ((dfd = exec_rec_dir(c->tdir, PROC_DIR, false)) == -1)
		return errno == ENOENT ? YX_OK :
					 yx_fail(err, YX_E_IO, "process records unreadable");
	rc = exec_rec_all(c, &proc_kind, dfd, (void **)out, n, err);
	close(dfd);
	return rc;
}

int
yx_proc_get(const struct yx_proc_ctx *c, const char *id, struct yx_proc *out,
    struct yx_errctx *err)
{
	int dfd, rc;

	memset(out, 0, sizeof(*out));
	if ((dfd = exec_rec_dir(c->tdir, PROC_DIR, false)) == -1)
		return yx_fail(err, YX_E_NOT_FOUND, "no such process");
	rc = proc_load(c, dfd, id, out, err);
	close(dfd);
	return rc;
}

/* Before a start (records locked): YX_E_PROCESS_LIMIT when cfg->proc_max
 * run; the oldest ended records go while there are too many. */
static int
proc_room(const struct yx_proc_ctx *c, int dfd, struct yx_errctx *err)
{
	size_t	running;
	int	rc;

	if ((rc = exec_rec_room(c, &proc_kind, dfd, &running, err)) != YX_OK)
		return rc;
	if (running >= (size_t)c->cfg->proc_max)
		return yx_fail(err, YX_E_PROCESS_LIMIT,
		    "%d background processes run in this thread already "
		    "(YUXI_PROCESS_MAX)",
		    c->cfg->proc_max);
	return YX_OK;
}

int
yx_proc_start(struct yx_executor *ex, const struct yx_proc_ctx *c,
    const struct yx_exec_request *req, const struct yx_proc_opts *o,
    struct yx_proc *out, struct yx_errctx *err)
{
	struct yx_exec_request	r = *req;
	struct yx_spawn		sp;
	char			mode[32];
	int			dfd, rc, timeout = o->timeout;

	memset(out, 0, sizeof(*out));
	if ((dfd = exec_rec_dir(c->tdir, PROC_DIR, true)) == -1)
		return yx_fail(err, YX_E_IO, "process records: %s", strerror(errno));
	if (flock(dfd, LOCK_EX) == -1) {
		rc = yx_fail(err, YX_E_IO, "process records: %s", strerror(errno));
		goto done;
	}
	if ((rc = proc_room(c, dfd, err)) != YX_OK)
		goto done;
	if (exec_rec_new_id('p', out->id) != YX_OK ||
	    (out->command = strdup(req->command)) == NULL) {
		rc = yx_fail(err, YX_E_NOMEM, NULL);
		goto done;
	}
	out->state = YX_PROC_RUNNING;
	out->exit_code = -1;
	out->timeout = timeout <= 0 || timeout > c->cfg->proc_lifetime ?
	    c->cfg->proc_lifetime :
	    timeout;
	out->started_at = yx_now_ms();
	out->cols = o->cols > 0 ? o->cols : 0;
	out->rows = o->cols > 0 ? o->rows : 0;
	out->starting = true;
	/* the record first: a crash from here on leaves it, never an
	 * unknown process */
	if ((rc = proc_record_write(dfd, out, true)) != YX_OK) {
		rc = yx_fail(err, rc, "cannot record the process");
		goto done;
	}
	r.timeout_sec = out->timeout;
	memset(&sp, 0, sizeof(sp));
	sp.id = out->id;
	sp.ring = c->cfg->proc_output_keep;
	if (out->cols > 0) {
		snprintf(mode, sizeof(mode), "pty %d %d", out->cols, out->rows);
		sp.mode = mode;
	}
	rc = yx_executor_spawn(ex, &r, &sp, err);
	if (rc != YX_OK)
		(void)unlinkat(dfd, out->id, 0);
	else {
		out->starting = false;	/* from now on, no keeper is a loss */
		(void)proc_record_write(dfd, out, false);
		log_info("thread %s: background process %s started", req->thread_id,
		    out->id);
	}
done:
	close(dfd);	/* drops the lock */
	if (rc != YX_OK)
		yx_proc_fini(out);
	return rc;
}

/* A yx_output_fn collecting a keeper's 'D' frames (more than asked for
 * is a broken keeper). */
static int
proc_collect(void *arg, const char *data, size_t len)
{
	int rc = yx_buf_append(arg, data, len);

	return rc == YX_E_PAYLOAD_TOO_LARGE ? YX_E_BACKEND_UNAVAILABLE : rc;
}

/*
 * Mask what was read (raw, starting at ks->from) into out->data. Unless
 * it is the end of the output, a possible host path or a character cut by
 * the end is held back. Returns the raw bytes used.
 */
static size_t
proc_mask(const struct yx_proc_ctx *c, const struct yx_buf *raw,
    const struct exec_kstatus *ks, struct yx_proc_chunk *out)
{
	bool	final = !ks->run && ks->to == ks->total;
	size_t	used = 0, k;

	yx_buf_reset(&out->data);
	if (yx_mask_prefix(raw->data, raw->len, c->rules, c->nrules, final,
		&out->data, &used) != YX_OK)
		return 0;
	if (!final) {
		k = yx_utf8_tail(out->data.data, out->data.len);
		out->data.len -= k;	/* raw bytes copied as they were */
		used -= k;
	}
	return used;
}

/* One 'R' of the keeper: output from offset past `have`. */
static int
proc_read_once(const struct yx_proc_ctx *c, const char *id, uint64_t offset,
    uint64_t have, int wait_ms, size_t max, struct yx_buf *raw,
    struct exec_kstatus *ks, struct yx_errctx *err)
{
	char	q[96], st[YX_AGENT_STATUS_MAX + 1];
	int	n, rc;

	yx_buf_reset(raw);
	n = snprintf(q, sizeof(q), "%llu %llu %d %zu", (unsigned long long)offset,
	    (unsigned long long)have, wait_ms, max);
	rc = exec_keeper_op(c, id, YX_AGENT_T_READ, q, (size_t)n, wait_ms,
	    proc_collect, raw, st, err);
	if (rc == YX_OK && (exec_kstatus_parse(st, ks) == -1 || raw->len != ks->to - ks->from))
		rc = yx_fail(err, YX_E_BACKEND_UNAVAILABLE,
		    "process keeper: broken status");
	return rc;
}

int
exec_keeper_output(const struct yx_proc_ctx *c, const char *id,
    uint64_t offset, int wait_ms, size_t max, struct yx_proc_chunk *out,
    struct exec_kstatus *ks, bool *gone, struct yx_errctx *err)
{
	struct yx_buf	raw;
	int64_t		deadline = yx_mono_ms() + wait_ms;
	uint64_t	have = offset;
	size_t		used;
	int		rc, left;

	*gone = false;
	yx_buf_init(&raw, (size_t)max + YX_AGENT_OUT_MAX);
	for (;;) {
		left = (int)(deadline - yx_mono_ms());
		rc = proc_read_once(c, id, offset, have, left > 0 ? left : 0, max,
		    &raw, ks, err);
		if (rc == YX_E_NOT_FOUND) {
			rc = YX_OK;
			*gone = true;
			break;
		}
		if (rc != YX_OK)
			break;
		used = proc_mask(c, &raw, ks, out);
		out->offset = ks->from;
		out->next_offset = ks->from + used;
		out->dropped = ks->from > offset ? ks->from - offset : 0;
		if (used > 0 || raw.len == 0 || !ks->run || yx_mono_ms() >= deadline)
			break;
		have = ks->to;	/* only a held-back tail: wait for more */
	}
	yx_buf_fini(&raw);
	return rc;
}

int
yx_proc_output(const struct yx_proc_ctx *c, const char *id, uint64_t offset,
    int wait_ms, size_t max, struct yx_proc_chunk *out, struct yx_errctx *err)
{
	struct exec_kstatus	ks;
	bool			gone;
	int			dfd, rc;

	memset(out, 0, sizeof(*out));
	yx_buf_init(&out->data, SIZE_MAX);
	out->offset = out->next_offset = offset;
	if ((dfd = exec_rec_dir(c->tdir, PROC_DIR, false)) == -1)
		return yx_fail(err, YX_E_NOT_FOUND, "no such process");
	/* an ended process's keeper stays a while with the output */
	if ((rc = proc_record_read(dfd, id, &out->proc, err)) != YX_OK ||
	    out->proc.state == YX_PROC_LOST)
		goto done;
	rc = exec_keeper_output(c, id, offset, wait_ms, max, out, &ks, &gone, err);
	if (rc == YX_OK && (gone ? proc_gone(c, &out->proc) : proc_apply(&out->proc, &ks)))
		(void)proc_record_write(dfd, &out->proc, false);
done:
	yx_proc_fini(&out->proc);
	close(dfd);
	return rc;
}

void
yx_proc_chunk_fini(struct yx_proc_chunk *out)
{
	yx_buf_fini(&out->data);
	yx_proc_fini(&out->proc);
}

/* One 'W' of up to PROC_STDIN_CHUNK bytes (0: close stdin). */
static int
proc_write_once(const struct yx_proc_ctx *c, const char *id, const char *p,
    size_t n, struct exec_kstatus *ks, struct yx_errctx *err)
{
	char	st[YX_AGENT_STATUS_MAX + 1];
	int	rc;

	rc = exec_keeper_op(c, id, YX_AGENT_T_STDIN, p, n, 0, NULL, NULL, st, err);
	if (rc == YX_OK && (exec_kstatus_parse(st, ks) == -1 || ks->written > n))
		rc = yx_fail(err, YX_E_BACKEND_UNAVAILABLE,
		    "process keeper: broken status");
	return rc;
}

int
yx_proc_stdin(const struct yx_proc_ctx *c, const char *id, const char *data,
    size_t len, bool eof, size_t *written, bool *open, struct yx_errctx *err)
{
	struct exec_kstatus	ks;
	struct yx_proc		p;
	size_t			n, off = 0;
	int			rc;

	*written = 0;
	*open = false;
	if ((rc = yx_proc_get(c, id, &p, err)) != YX_OK)
		return rc;
	rc = p.state == YX_PROC_RUNNING ? YX_OK : YX_E_NOT_RUNNING;
	memset(&ks, 0, sizeof(ks));
	ks.in_open = 1;
	while (rc == YX_OK && ks.in_open && (off < len || (off == len && eof))) {
		/* the whole write within the budget: the rest is sent again */
		if (off > 0 && c->until > 0 && yx_mono_ms() >= c->until)
			break;
		n = len - off > PROC_STDIN_CHUNK ? PROC_STDIN_CHUNK : len - off;
		rc = proc_write_once(c, id, data + off, n, &ks, err);
		if (rc == YX_E_NOT_FOUND)
			rc = YX_E_NOT_RUNNING;
		if (rc != YX_OK)
			break;
		off += ks.written;
		if (n == 0 || ks.written < n)
			break;	/* closed, or not taken in time */
	}
	yx_proc_fini(&p);
	*written = off;
	*open = rc == YX_OK && ks.in_open;
	if (rc == YX_E_NOT_RUNNING || (rc == YX_OK && off == 0 && len > 0 && !ks.in_open))
		return yx_fail(err, YX_E_NOT_RUNNING,
		    "the process has ended or closed its standard input");
	return rc;
}

int
yx_proc_kill(const struct yx_proc_ctx *c, const char *id, struct yx_proc *out,
    struct yx_errctx *err)
{
	struct exec_kstatus	ks;
	char			st[YX_AGENT_STATUS_MAX + 1];
	int			dfd, rc;

	memset(out, 0, sizeof(*out));
	if ((dfd = exec_rec_dir(c->tdir, PROC_DIR, false)) == -1)
		return yx_fail(err, YX_E_NOT_FOUND, "no such process");
	if ((rc = proc_record_read(dfd, id, out, err)) != YX_OK)
		goto done;
	/* an ended process's keeper lingers with the output: it goes too */
	if (out->state != YX_PROC_LOST) {
		rc = exec_keeper_op(c, id, YX_AGENT_T_KILL, NULL, 0, 0, NULL, NULL, st,
		    err);
		if (rc == YX_OK && exec_kstatus_parse(st, &ks) == 0)
			(void)proc_apply(out, &ks);
		else if (rc == YX_E_NOT_FOUND)
			(void)proc_gone(c, out);
		else if (rc != YX_OK && out->state == YX_PROC_RUNNING)
			goto done;	/* unsure whether it died: keep the record */
		rc = YX_OK;
	}
	exec_keeper_forget_exit(c, id);
	rc = unlinkat(dfd, id, 0) == 0 || errno == ENOENT ? YX_OK :
							    yx_fail(err, YX_E_IO, "process record: %s", strerror(errno));
	log_info("background process %s killed and forgotten", id);
done:
	close(dfd);
	return rc;
}

int
yx_proc_resize(const struct yx_proc_ctx *c, const char *id, int cols,
    int rows, struct yx_errctx *err)
{
	char		q[32], st[YX_AGENT_STATUS_MAX + 1];
	struct yx_proc	p;
	int		n, rc;

	if ((rc = yx_proc_get(c, id, &p, err)) != YX_OK)
		return rc;
	if (p.cols == 0)
		rc = yx_fail(err, YX_E_BAD_REQUEST,
		    "the process does not run on a terminal (start it with \"pty\")");
	else if (p.state != YX_PROC_RUNNING)
		rc = yx_fail(err, YX_E_NOT_RUNNING, "the process has ended");
	yx_proc_fini(&p);
	if (rc != YX_OK)
		return rc;
	n = snprintf(q, sizeof(q), "%d %d", cols, rows);
	rc = exec_keeper_op(c, id, YX_AGENT_T_RESIZE, q, (size_t)n, 0, NULL, NULL,
	    st, err);
	if (rc == YX_E_NOT_FOUND)
		return yx_fail(err, YX_E_NOT_RUNNING, "the process has ended");
	return rc;
}

bool
yx_proc_keeps_alive(const struct yx_config *cfg, struct yx_thread_store *st,
    const char *thread_id, int64_t now_ms)
{
	struct yx_proc_ctx	 c;
	struct yx_thread	 t;
	struct yx_proc		*v = NULL;
	char			 path[YX_CFG_PATH + 200];
	size_t			 n = 0, i;
	bool			 keep = false;

	if (cfg->proc_keepalive == 0 || yx_thread_find(st, thread_id, &t, NULL) != YX_OK)
		return false;
	memset(&c, 0, sizeof(c));
	c.cfg = cfg;
	c.uid = t.uid != 0 ? t.uid : cfg->uid;
	c.rundir = -1;
	c.until = yx_mono_ms() + 1000;	/* a stalled box costs the reaper 1 s */
	if ((c.tdir = yx_thread_dirfd(st, thread_id)) == -1)
		return false;
	if (yx_agent_rundir_open(cfg->saves_dir, thread_id, &c.uid,
		t.uid != 0 ? t.gid : cfg->gid, path, sizeof(path), &c.rundir,
		NULL) == YX_OK &&
	    yx_proc_list(&c, &v, &n, NULL) == YX_OK)
		for (i = 0; i < n && !keep; i++)
			keep = v[i].state == YX_PROC_RUNNING &&
			    now_ms - v[i].started_at < cfg->proc_keepalive * 1000LL;
	yx_proc_list_free(v, n);
	if (c.rundir != -1)
		close(c.rundir);
	close(c.tdir);
	return keep;
}
