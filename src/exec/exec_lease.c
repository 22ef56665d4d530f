/* SPDX-License-Identifier: MIT */
/*
 * exec_lease.c - running one command in a leased sandbox (exec_int.h;
 * docs/agent.md "Life of a command").
 *
 * The command goes to the in-sandbox agent over its unix socket
 * (agent_client.c). When the agent does not answer it is started with one
 * engine exec and asked again; when that fails too (an old container
 * without the mounts, the agent killed and its socket replaced...) the
 * engine exec of the runner runs the command, unless the transport is
 * agent-only or it is a background process (only the agent keeps one).
 * The fast path asks the agent before the provider's engine inspect: its
 * answer proves the container runs. Once the agent has acknowledged
 * starting a command nothing falls back: a broken connection then fails the
 * request (YX_E_BACKEND_UNAVAILABLE) rather than run the command twice,
 * unless the whole sandbox stopped under it (exec_lease_died: the
 * command's failure, exit 137). On the engine path the driver adds a
 * host-side deadline as a safety net.
 */
#include "config.h"

#include <sys/stat.h>

#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "yuxi/clock.h"
#include "yuxi/driver.h"
#include "yuxi/egress.h"
#include "yuxi/executor.h"
#include "yuxi/log.h"
#include "yuxi/path.h"
#include "yuxi/priv.h"
#include "yuxi/provider.h"
#include "guest/agent_proto.h"
#include "exec/exec_int.h"

#define YX_NOSTART_MS		60000	/* agent won't start: remembered that long */
#define YX_AGENT_START_SEC	10
#define YX_AGENT_BOOT_MS	2000	/* a new container's agent listens by then */
#define YX_AGENT_BOOT_POLL_MS	2

/* True while the agent is known not to start in this container. */
static bool
exec_nostart_has(struct yx_executor *ex, const char *cid)
{
	int64_t	now = yx_mono_ms();
	size_t	i;

	for (i = 0; i < YX_NOSTART_SLOTS; i++)
		if (ex->nostart[i].until_ms > now &&
		    strcmp(ex->nostart[i].container_id, cid) == 0)
			return true;
	return false;
}

static void
exec_nostart_add(struct yx_executor *ex, const char *cid)
{
	struct exec_nostart *n = &ex->nostart[ex->nostart_next++ %
	    YX_NOSTART_SLOTS];

	snprintf(n->container_id, sizeof(n->container_id), "%s", cid);
	n->until_ms = yx_mono_ms() + YX_NOSTART_MS;
}

/* Sink for the agent start exec: keep nothing. */
static int
exec_discard(void *arg, const char *data, size_t len)
{
	(void)arg;
	(void)data;
	(void)len;
	return YX_OK;
}

/*
 * Start the agent with one engine exec (it daemonises and returns once it
 * listens). YX_OK; YX_E_NOT_FOUND when the container vanished; another
 * error when it could not be started.
 */
static int
exec_agent_start(struct yx_executor *ex, const struct yx_lease *lease,
    const struct exec_run *run, struct yx_errctx *err)
{
	const char		*argv[EXEC_SVC_ARGV];
	struct yx_exec_req	 xr;
	struct yx_exec_result	 res;
	int			 rc;

	/* with its relay and the profile's services (docs/agent.md) */
	exec_svc_agent_argv(run, "--daemon", argv);
	memset(&xr, 0, sizeof(xr));
	xr.argv = argv;
	xr.env = exec_prepare_env;
	xr.workdir = "/";
	xr.user = run->suser;
	xr.timeout_sec = YX_AGENT_START_SEC;
	xr.on_output = exec_discard;
	rc = ex->drv->ops->exec(ex->drv, lease->container_id, &xr, &res, err);
	if (rc == YX_OK && res.exit_code != 0)
		rc = yx_fail(err, YX_E_BACKEND_UNAVAILABLE,
		    "agent start exited %d", res.exit_code);
	if (rc == YX_OK)
		ex->stats.agent_starts++;
	return rc;
}

/*
 * A session's command: its shell's keeper runs it. Never retried nor
 * taken by another path (*started: a keeper that is gone means the
 * session is, not the agent). The outcome also into run->sres.
 */
static int
exec_session_call(const struct exec_run *run, const struct yx_exec_req *xr,
    struct yx_exec_result *res, bool *started, struct yx_errctx *err)
{
	struct yx_agent_sess_res	r;
	int64_t				t0 = yx_mono_ms();
	int				rc;

	*started = true;
	memset(res, 0, sizeof(*res));
	rc = yx_agent_session_run(run->rundir_fd, run->su, run->sess,
	    xr->argv[2], xr->timeout_sec, xr, &r, err);
	res->duration_ms = yx_mono_ms() - t0;
	if (rc == YX_E_NOT_FOUND)	/* its keeper is gone: so is it */
		return yx_fail(err, YX_E_SESSION_NOT_FOUND, "the session has ended");
	if (rc != YX_OK)
		return rc;
	*run->sres = r.s;
	res->exit_code = r.code;
	res->timed_out = r.timed_out;
	return YX_OK;
}

/* The agent's part: run the command, or start the background process. */
static int
exec_agent_call(struct yx_executor *ex, const struct exec_run *run,
    const struct yx_exec_req *xr, struct yx_exec_result *res, bool *started,
    struct yx_errctx *err)
{
	struct yx_agent_opts o;

	if (run->sess != NULL)
		return exec_session_call(run, xr, res, started, err);
	if (run->bg != NULL) {
		memset(res, 0, sizeof(*res));
		return yx_agent_spawn(run->rundir_fd, run->su, &ex->aopts, xr,
		    run->bg, started, err);
	}
	o = ex->aopts;
	o.own_uid = run->own_uid || run->su != run->uid;
	return yx_agent_run(run->rundir_fd, run->su, &o, xr, res, started, err);
}

/*
 * Try the agent: ask it, (re)start it when it does not answer, ask again.
 * Sets *fallback when nothing ran and the engine path may be used; else
 * returns the outcome (YX_E_NOT_FOUND when the container vanished).
 */
static int
exec_via_agent(struct yx_executor *ex, const struct yx_lease *lease,
    const struct exec_run *run, const struct yx_exec_req *xr,
    struct yx_exec_result *res, bool *fallback, bool *startedp,
    struct yx_errctx *err)
{
	struct yx_errctx	e;
	bool			started = false, tried = false;
	int			rc, attempt;

	*fallback = false;
	*startedp = false;
	yx_errctx_clear(&e);
	for (attempt = 0; attempt < 2; attempt++) {
		rc = exec_agent_call(ex, run, xr, res, &started, &e);
		if (rc == YX_OK || started)
			break;
		if (attempt > 0 || exec_nostart_has(ex, lease->container_id)) {
			rc = YX_E_BACKEND_UNAVAILABLE;
			break;
		}
		log_debug("agent in %s: %s; starting it", lease->sandbox_id, e.msg);
		tried = true;
		if ((rc = exec_agent_start(ex, lease, run, &e)) == YX_E_NOT_FOUND)
			break;
		if (rc != YX_OK) {
			rc = YX_E_BACKEND_UNAVAILABLE;
			break;
		}
	}
	if (rc == YX_OK)
		ex->stats.agent_runs++;
	else if (!started && rc != YX_E_NOT_FOUND) {
		if (tried) {
			log_info("agent unavailable in %s (%s): engine exec",
			    lease->sandbox_id, e.msg);
			exec_nostart_add(ex, lease->container_id);
		}
		ex->stats.agent_refused++;
		*fallback = true;
	}
	if (rc != YX_OK && !*fallback && err != NULL)
		*err = e;
	*startedp = started;
	return rc;
}

void
exec_lease_cmd_init(struct exec_cmd *c, const struct exec_run *run,
    const char *command, int timeout)
{
	const char *argv[] = { YX_RUNNER_TARGET, "-t", c->tbuf, "-C",
		run->workdir, "--", "/bin/sh", "-c", command, NULL };

	snprintf(c->tbuf, sizeof(c->tbuf), "%d", timeout);
	memcpy(c->argv, argv, sizeof(argv));
	memset(&c->xr, 0, sizeof(c->xr));
	c->xr.argv = c->argv;
	c->xr.env = run->env;
	c->xr.workdir = run->workdir;
	c->xr.user = run->suser;
	c->xr.timeout_sec = timeout;
	c->xr.on_output = run->sink;
	c->xr.on_tick = run->tick;
	c->xr.arg = run->sink_arg;
	c->axr = c->xr;
	c->axr.argv = c->argv + EXEC_SH_ARGV;
}

/* Run the command in the leased container; YX_E_NOT_FOUND when it
 * vanished; *started when the agent had started it. */
int
exec_lease_run(struct yx_executor *ex, const struct yx_lease *lease,
    const struct exec_run *run, const struct exec_cmd *cmd,
    struct yx_exec_result *res, bool *started, struct yx_errctx *err)
{
	bool	fallback = true;
	int	rc;

	*started = false;
	if (run->rundir_fd != -1) {
		rc = exec_via_agent(ex, lease, run, &cmd->axr, res, &fallback,
		    started, err);
		if (!fallback)
			return rc;
	}
	if (run->bg != NULL || run->sess != NULL)	/* only the agent keeps one */
		return yx_fail(err, YX_E_AGENT_UNAVAILABLE,
		    "background processes and sessions need the in-sandbox "
		    "agent, which is unavailable in this sandbox");
	if (ex->transport == YX_EXEC_TRANSPORT_AGENT)
		return yx_fail(err, YX_E_BACKEND_UNAVAILABLE,
		    "agent transport required but the agent is unavailable");
	ex->stats.engine_runs++;
	return ex->drv->ops->exec(ex->drv, lease->container_id, &cmd->xr, res,
	    err);
}

/*
 * The agent's connection broke after it had started the command: did the
 * whole sandbox stop under it? That happens under gVisor, where a memory or
 * fork bomb gets the sandbox (not one process) killed by the host's cgroup.
 * It is the command's failure, not the service's: exit 137 with a note in
 * the output, and the sandbox is forgotten (the next command makes a new
 * one; files are kept). Asked for a second at most: the engine may still
 * call it running for a moment. True when it stopped (*res and the sink
 * filled; the lease must already be unheld).
 */
bool
exec_lease_died(struct yx_executor *ex, const struct yx_lease *lease,
    const struct yx_exec_req *xr, struct yx_exec_result *res)
{
	static const char	note[] = "\n[yuxi: the sandbox stopped during the "
				   "command (out of memory or processes?); "
				   "the next command gets a new one]\n";
	int			i;

	for (i = 0; !exec_lease_gone(ex, lease, YX_E_BACKEND_UNAVAILABLE); i++) {
		if (i == 9)
			return false;
		(void)nanosleep(&(struct timespec){ 0, 100000000L }, NULL);
	}
	log_info("sandbox %s stopped during a command; making a new one next",
	    lease->sandbox_id);
	(void)yx_provider_destroy(&ex->prov, lease->sandbox_id, NULL, NULL);
	(void)xr->on_output(xr->arg, note, sizeof(note) - 1);
	res->exit_code = 137;
	res->timed_out = false;
	return true;
}

/*
 * A pool box's own directories (the sources of its slave mounts, made
 * before its thread was known) show in its mount table, unlike a created
 * sandbox's, whose mounts come from the thread's paths: note them, so the
 * output masks them as the places they are inside (exec_prepare_mask_rules).
 */
void
exec_lease_note_box(const struct yx_executor *ex, struct exec_run *run,
    const char *sandbox_id)
{
	static const char *const sub[4] = { "user-data", "skills", "passwd",
		"group" };
	bool			 box = yx_provider_is_box(sandbox_id);
	size_t			 i;

	for (i = 0; i < 4; i++)
		if (!box)
			run->boxdir[i][0] = '\0';
		else
			snprintf(run->boxdir[i], sizeof(run->boxdir[i]),
			    "%s/" YX_PRIV_POOL_DIR "/%s/%s", ex->cfg->saves_dir,
			    sandbox_id, sub[i]);
}

/*
 * After a pool box was leased: is run->rundir_fd still the thread's agent
 * directory? A request that opened it just before another one assigned the
 * box (which swapped the directories) holds the thread's old one: open it
 * again, learning the box's uid.
 */
void
exec_lease_box_rundir(struct exec_run *run, const char *sandbox_id)
{
	struct stat a, b;

	if (run->rundir_fd == -1 || !yx_provider_is_box(sandbox_id) ||
	    (fstat(run->rundir_fd, &a) == 0 && lstat(run->rundir, &b) == 0 &&
		a.st_ino == b.st_ino && a.st_dev == b.st_dev))
		return;
	close(run->rundir_fd);
	run->rundir_fd = -1;
	run->su = run->uid;
	if (yx_agent_rundir_open(run->saves, run->tid, &run->su, run->gid,
		run->rundir, sizeof(run->rundir), &run->rundir_fd, NULL) != YX_OK)
		log_warnx("pool box %s: agent directory", sandbox_id);
	exec_prepare_note_su(run);
}

/*
 * The fast path: acquire without the provider's engine inspect (the
 * agent's answer proves the container runs) and ask the agent once.
 * YX_OK or an error once the agent started the command or when the
 * acquire failed (*done set); otherwise *done stays false and the caller takes the full path, which
 * verifies the container, (re)starts the agent or falls back.
 */
int
exec_lease_agent_fast(struct yx_executor *ex, const struct yx_acquire_req *ar,
    struct exec_run *run, const struct yx_exec_req *xr,
    struct yx_exec_result *res, bool *done, struct yx_errctx *err)
{
	struct timespec	ts = { 0, YX_AGENT_BOOT_POLL_MS * 1000000L };
	struct yx_lease	lease;
	bool		started = false;
	int64_t		deadline;
	int		rc;

	*done = false;
	ex->prov.verify = false;
	rc = yx_provider_acquire(&ex->prov, ar, &lease, err);
	ex->prov.verify = true;
	if (rc != YX_OK) {
		*done = true;	/* the full path would fail the same way */
		return rc;
	}
	exec_lease_note_box(ex, run, lease.sandbox_id);
	exec_lease_box_rundir(run, lease.sandbox_id);
	rc = exec_agent_call(ex, run, xr, res, &started, err);
	/* a new container's agent starts with it: give it a moment to listen
	 * before the full path starts one with an engine exec */
	deadline = yx_mono_ms() + YX_AGENT_BOOT_MS;
	while (rc != YX_OK && !started &&
	    (lease.outcome == YX_ACQUIRE_CREATED ||
		lease.outcome == YX_ACQUIRE_POOLED) &&
	    yx_mono_ms() < deadline) {
		nanosleep(&ts, NULL);
		rc = exec_agent_call(ex, run, xr, res, &started, err);
	}
	yx_provider_unhold(&ex->prov, &lease);
	if (rc == YX_E_BACKEND_UNAVAILABLE && started && run->bg == NULL &&
	    run->sess == NULL && exec_lease_died(ex, &lease, xr, res))
		rc = YX_OK;
	if (rc == YX_OK)
		ex->stats.agent_runs++;
	*done = rc == YX_OK || started;
	return rc;
}

/*
 * After a failed exec with no output: is the leased container gone (removed,
 * or no longer running)? Then the command never ran and may be retried in a
 * new container. An engine that cannot answer is not "gone".
 */
bool
exec_lease_gone(struct yx_executor *ex, const struct yx_lease *lease, int rc)
{
	struct yx_container_info info;

	if (rc == YX_E_NOT_FOUND)
		return true;
	if (rc != YX_E_BACKEND_UNAVAILABLE)
		return false;
	rc = ex->drv->ops->inspect(ex->drv, lease->container_id, &info, NULL);
	return rc == YX_E_NOT_FOUND || (rc == YX_OK && !info.running);
}
