/* SPDX-License-Identifier: MIT */
/*
 * executor.c - run one agent command in a thread's sandbox; see
 * include/yuxi/executor.h for the contract.
 *
 * Order of work: refuse by command path policy (no engine call for a refused
 * command), lay out the thread's user-data on the host through the broker,
 * acquire the sandbox (lazily created by the provider), run
 *   /opt/yuxi/bin/yuxi-run -t T -C /home/yuxi/user-data/workspace -- /bin/sh -c CMD
 * through the driver with a bounded output sink, drop the hold, then mask
 * host paths. The runner puts the command in its own process group and kills
 * the whole group on timeout (exit 124); the driver adds a host-side
 * deadline as a safety net. A container that vanished behind our back is
 * destroyed in the table and acquired anew, once.
 *
 * Fast path (docs/agent.md): the sandbox also gets the agent binary and a
 * per-thread run directory (<saves>/run/<thread_id>, at /opt/yuxi/run);
 * the same runner argv is then sent to the in-sandbox agent over its unix
 * socket (agent_client.c) instead of an engine exec. When the agent does
 * not answer it is started with one engine exec and asked again; when that
 * fails too (old container without the mounts, agent killed and its socket
 * replaced...) the engine path runs the command. Once the agent has
 * acknowledged starting a command nothing falls back: a broken connection
 * then fails the request (YX_E_BACKEND_UNAVAILABLE) rather than run the
 * command twice.
 */
#include "config.h"

#include <sys/stat.h>

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "yuxi/clock.h"
#include "yuxi/broker.h"
#include "yuxi/driver.h"
#include "yuxi/egress.h"
#include "yuxi/executor.h"
#include "yuxi/hash.h"
#include "yuxi/log.h"
#include "yuxi/path.h"
#include "yuxi/priv.h"
#include "yuxi/provider.h"
#include "yuxi/threads.h"
#include "yuxi/tree.h"
#include "guest/agent_proto.h"
#include "exec/exec_int.h"
#include "exec/outcap.h"
#ifdef YX_CONTROL_UNSAFE
#include "common/control_int.h"
#endif

#define YX_RUNNER_TARGET	"/opt/yuxi/bin/yuxi-run"
#define YX_SPILL_CAP		(64ULL << 20)	/* bytes saved of a long output */
#define YX_NOSTART_SLOTS	8	/* containers where the agent won't start */
#define YX_NOSTART_MS		60000	/* ... remembered that long */
#define YX_AGENT_START_SEC	10
#define YX_AGENT_BOOT_MS	2000	/* a new container's agent listens by then */
#define YX_AGENT_BOOT_POLL_MS	2
#define YX_EXEC_ENV_MAX		(4 + YX_PROFILE_ENV_MAX + 4)	/* base, profile, proxy */
#define YX_EXEC_EXTRA_MAX	10	/* exec_extra_mounts */

struct exec_nostart {
	char	container_id[YX_SHM_CONTAINER_ID_MAX];
	int64_t	until_ms;
};

struct yx_executor {
	const struct yx_config	*cfg;
	struct yx_driver	*drv;
	struct yx_provider	 prov;
	enum yx_exec_transport	 transport;
	char			 agent_host[YX_CFG_PATH];	/* "" = none */
	char			 hosts[YX_CFG_PATH + 16];	/* /etc/hosts; "" = none */
	char			 mnt[YX_CFG_PATH + 16];	/* /mnt's links; "" = none */
	struct yx_agent_opts	 aopts;
	struct yx_exec_stats	 stats;
	struct exec_nostart	 nostart[YX_NOSTART_SLOTS];
	unsigned		 nostart_next;
	/* the pool's boxes: the default profile's settings, their spec
	 * string (exec_spec_str) and key; a thread takes a box only when its
	 * own settings give the same string */
	struct yx_config	 pool_eff;
	char			 pool_spec[2048];
	struct yx_pool_key	 pool_key;
};

static void	exec_spec_str(const struct yx_executor *ex,
    const struct yx_config *c, const struct yx_profile *prof, char *spec,
    size_t len);

/* A background process to start instead of a command (yx_executor_spawn). */
struct exec_bg {
	const char	*id;
	size_t		 ring;
};

/* Per-run state shared with the spill callback. */
struct exec_run {
	struct yx_broker	 broker;
	unsigned		 uid, gid;	/* the thread's sandbox user */
	bool			 own_uid;	/* uid is the thread's own (range) */
	unsigned		 repaired;	/* layout folders made again */
	char			 user[32];	/* "uid:gid" */
	/* what its sandbox runs as: uid, or the own uid of the pool box
	 * serving the thread (its agent directory's owner, yx_uid_serves) */
	unsigned		 su;
	char			 suser[32];	/* "su:su" or user */
	const char		*saves, *tid;	/* borrowed: cfg's, the request's */
	char			 etc[2][YX_CFG_PATH + 200]; /* passwd, group; "" */
	char			 spill_name[96];
	bool			 spill_opened;
	char			 user_data[YX_CFG_PATH + 200];
	int			 rundir_fd;	/* -1: no agent this run */
	char			 rundir[YX_CFG_PATH + 200];
	/* a pool box's own user-data and skills directories, passwd and
	 * group files; "": none */
	char			 boxdir[4][YX_CFG_PATH + 200];
	const struct yx_profile	*prof;		/* never NULL */
	struct yx_config	 eff;		/* cfg with the profile's settings */
	const char		*env[YX_EXEC_ENV_MAX + 1];	/* of commands */
	char			 egress[YX_CFG_PATH + 200];	/* "": no network */
	char			 ro_rw[2][YX_CFG_PATH + 240];	/* ro: rw subfolders */
	/* where the output goes: yx_outcap_write(oc), or the stream sink */
	struct yx_outcap	*oc;
	yx_output_fn		 sink;
	int			(*tick)(void *);
	void			*sink_arg;
	const struct exec_bg	*bg;		/* NULL: a command */
};

/* A new container's command when the agent is used. */
static const char *const exec_agent_init_argv[] = { YX_AGENT_TARGET, "--init",
	"--socket", YX_AGENT_SOCK_TARGET, NULL };
/* ... and for a profile with network, with the egress relay. */
static const char *const exec_agent_init_relay_argv[] = { YX_AGENT_TARGET,
	"--init", "--socket", YX_AGENT_SOCK_TARGET, "--relay", YX_RELAY_ARG, NULL };

static const char *const exec_env[] = { "HOME=/home/yuxi",
	"PATH=/home/yuxi/.local/bin:/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin",
	"LANG=C.UTF-8", "USER=yuxi", NULL };
/* A profile with network: every command finds the relay through these. */
static const char *const exec_proxy_env[] = { "HTTP_PROXY=" YX_RELAY_URL,
	"HTTPS_PROXY=" YX_RELAY_URL, "http_proxy=" YX_RELAY_URL,
	"https_proxy=" YX_RELAY_URL, NULL };
/* The folders a read-only workspace keeps writable (mounted over it). */
static const char *const exec_ro_rw[2] = { "outputs", "large_tool_results" };

/*
 * Pick the transport from the configuration (YUXI_EXEC_AGENT) and find the
 * agent binary: YUXI_AGENT_PATH, else yuxi-agent beside the runner.
 */
static void
exec_agent_setup(struct yx_executor *ex)
{
	switch (ex->cfg->exec_agent) {
	case YX_EXEC_AGENT_OFF:
		ex->transport = YX_EXEC_TRANSPORT_ENGINE;
		break;
	case YX_EXEC_AGENT_ONLY:
		ex->transport = YX_EXEC_TRANSPORT_AGENT;
		break;
	default:
		ex->transport = YX_EXEC_TRANSPORT_AUTO;
		break;
	}
	yx_config_agent_path(ex->cfg, ex->agent_host, sizeof(ex->agent_host));
	if (ex->agent_host[0] != '\0' && access(ex->agent_host, X_OK) == -1) {
		log_debug("no agent binary at %s: engine exec only", ex->agent_host);
		ex->agent_host[0] = '\0';
	}
}

struct yx_executor *
yx_executor_new(const struct yx_config *cfg, struct yx_table *table,
    struct yx_driver *drv, struct yx_errctx *err)
{
	struct yx_executor *ex;

	if ((ex = calloc(1, sizeof(*ex))) == NULL) {
		yx_fail(err, YX_E_NOMEM, NULL);
		return NULL;
	}
	ex->cfg = cfg;
	ex->drv = drv;
	exec_agent_setup(ex);
	(void)yx_exec_hosts_setup(cfg->saves_dir, ex->hosts, sizeof(ex->hosts));
	(void)yx_exec_mnt_setup(cfg->saves_dir, ex->mnt, sizeof(ex->mnt));
	/* one pool per image and settings (docs/design.md §2 "Pool"): the
	 * default profile's; threads of another profile take the create path */
	yx_profile_apply(yx_profile_default(), cfg, &ex->pool_eff);
	exec_spec_str(ex, &ex->pool_eff, yx_profile_default(), ex->pool_spec,
	    sizeof(ex->pool_spec));
	snprintf(ex->pool_key.image, sizeof(ex->pool_key.image), "%s",
	    ex->pool_eff.image);
	{
		/* and whether boxes claim uids of their own: a reload that
		 * turns the range on or off retires the boxes made before */
		const char	*uids = cfg->uid_count > 0 ? "|uids" : "|shared";
		const void	*parts[3] = { "pool|", ex->pool_spec, uids };
		size_t		 lens[3] = { 5, strlen(ex->pool_spec), strlen(uids) };

		(void)yx_sha256_hex_parts(parts, lens, 3, ex->pool_key.fp);
	}
	if (yx_provider_init(&ex->prov, cfg, table, drv) != YX_OK) {
		yx_fail(err, YX_E_INTERNAL, "provider init failed");
		free(ex);
		return NULL;
	}
	return ex;
}

void
yx_executor_free(struct yx_executor *ex)
{
	if (ex == NULL)
		return;
	yx_provider_fini(&ex->prov);
	free(ex);
}

struct yx_provider *
yx_executor_provider(struct yx_executor *ex)
{
	return &ex->prov;
}

void
yx_executor_set_transport(struct yx_executor *ex, enum yx_exec_transport t)
{
	ex->transport = t;
}

void
yx_executor_set_agent_opts(struct yx_executor *ex, const struct yx_agent_opts *o)
{
	ex->aopts = *o;
}

void
yx_executor_stats(const struct yx_executor *ex, struct yx_exec_stats *st)
{
	*st = ex->stats;
}

void
yx_exec_output_fini(struct yx_exec_output *out)
{
	if (out == NULL)
		return;
	free(out->output);
	out->output = NULL;
	out->len = 0;
}

static int
exec_spill_open(void *arg)
{
	struct exec_run	*run = arg;
	struct timespec	 ts;
	struct tm	 tm;
	char		 stamp[32];
	int		 fd = -1;

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	strftime(stamp, sizeof(stamp), "%Y%m%dT%H%M%S", &tm);
	snprintf(run->spill_name, sizeof(run->spill_name), "exec-%s-%09ld-%d.txt",
	    stamp, ts.tv_nsec, (int)getpid());
	if (yx_broker_spill_open(&run->broker, run->spill_name, &fd, NULL) != YX_OK)
		return -1;
	run->spill_opened = true;
	return fd;
}

/* Open the broker on the thread's user-data (creating it) and lay it out. */
static int
exec_prepare_host(struct yx_executor *ex, const struct yx_exec_request *req,
    struct exec_run *run, struct yx_errctx *err)
{
	const struct yx_config	*cfg = ex->cfg;
	const char		*names[YX_SKILLS_MAX];
	size_t			 i, n = req->skills ? req->skills->n : 0;
	int			 rc;

	for (i = 0; i < n; i++)
		names[i] = req->skills->names[i];
	/* OWNED: the thread the caller looked up, not a successor of its id */
	rc = yx_broker_init(&run->broker, run->user_data, cfg->skills_dir, names, n,
	    run->uid, run->gid, NULL, YX_BROKER_CREATE | (req->own_uid ? YX_BROKER_OWNED : 0), err);
	if (rc == YX_OK)
		rc = yx_broker_ensure_layout(&run->broker, &run->repaired, err);
	if (rc == YX_E_NOSPACE || rc == YX_E_QUOTA_EXCEEDED) {
		/* a full disk (or quota) must not stop the `rm` that frees it */
		log_info("thread %s: user-data layout not made: no space",
		    req->thread_id);
		yx_errctx_clear(err);
		rc = YX_OK;
	}
	if (rc == YX_OK && run->repaired != 0)
		log_info("thread %s: user-data layout repaired (0x%x)",
		    req->thread_id, run->repaired);
	return rc;
}

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
	const char		*argv[] = { YX_AGENT_TARGET, "--daemon", "--socket",
			  YX_AGENT_SOCK_TARGET, NULL, NULL, NULL };
	struct yx_exec_req	 xr;
	struct yx_exec_result	 res;
	int			 rc;

	if (run->egress[0] != '\0') {	/* and its relay (docs/agent.md) */
		argv[4] = "--relay";
		argv[5] = YX_RELAY_ARG;
	}
	memset(&xr, 0, sizeof(xr));
	xr.argv = argv;
	xr.env = exec_env;
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

/* The agent's part: run the command, or start the background process. */
static int
exec_agent_call(struct yx_executor *ex, const struct exec_run *run,
    const struct yx_exec_req *xr, struct yx_exec_result *res, bool *started,
    struct yx_errctx *err)
{
	struct yx_agent_opts o;

	if (run->bg != NULL) {
		memset(res, 0, sizeof(*res));
		return yx_agent_spawn(run->rundir_fd, run->su, &ex->aopts, xr,
		    run->bg->id, run->bg->ring, started, err);
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

/*
 * One command, for both paths (caller storage). The engine runs the runner,
 *   yuxi-run -t T -C WORKSPACE -- /bin/sh -c CMD
 * the agent gets "/bin/sh -c CMD" with the same workdir, timeout and
 * environment and runs it with the runner's own code (run_core.c).
 */
struct exec_cmd {
	char			 tbuf[16];
	const char		*argv[10];
	struct yx_exec_req	 xr;		/* engine path */
	struct yx_exec_req	 axr;		/* agent path */
};

#define EXEC_SH_ARGV	6	/* argv + 6 = "/bin/sh", "-c", CMD */

static void
exec_cmd_init(struct exec_cmd *c, const struct exec_run *run,
    const char *command, int timeout)
{
	const char *argv[] = { YX_RUNNER_TARGET, "-t", c->tbuf, "-C",
		YX_VROOT_WORKSPACE, "--", "/bin/sh", "-c", command, NULL };

	snprintf(c->tbuf, sizeof(c->tbuf), "%d", timeout);
	memcpy(c->argv, argv, sizeof(argv));
	memset(&c->xr, 0, sizeof(c->xr));
	c->xr.argv = c->argv;
	c->xr.env = run->env;
	c->xr.workdir = YX_VROOT_WORKSPACE;
	c->xr.user = run->suser;
	c->xr.timeout_sec = timeout;
	c->xr.on_output = run->sink;
	c->xr.on_tick = run->tick;
	c->xr.arg = run->sink_arg;
	c->axr = c->xr;
	c->axr.argv = c->argv + EXEC_SH_ARGV;
}

/*
 * A new container starts with an empty agent directory: whatever an
 * earlier sandbox of the thread id left there (a deleted thread's, or one
 * replaced after a settings change) must not reach the new one. Safe here:
 * the old container is gone and nothing of ours has started in the new one.
 */
static void
exec_rundir_reset(const struct exec_run *run)
{
	struct dirent	*de;
	DIR		*d;
	int		 fd;

#ifdef YX_CONTROL_UNSAFE
	if (yx_control_off("rundir"))	/* the leak of finding 1 */
		return;
#endif
	if ((fd = openat(run->rundir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1 ||
	    (d = fdopendir(fd)) == NULL) {
		if (fd != -1)
			close(fd);
		log_warn("agent directory of %s", run->user_data);
		return;
	}
	while ((de = readdir(d)) != NULL)
		if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0 &&
		    yx_tree_remove(dirfd(d), de->d_name) != YX_OK)
			log_warnx("agent directory: %s not removed", de->d_name);
	closedir(d);
}

/* After the agent directory told run->su: the user its commands run as. */
static void
exec_note_su(struct exec_run *run)
{
	if (run->su == run->uid)
		(void)yx_strlcpy(run->suser, run->user, sizeof(run->suser));
	else
		snprintf(run->suser, sizeof(run->suser), "%u:%u", run->su,
		    run->su);
}

/* What the pool_adopt hook needs. */
struct exec_adopt {
	struct yx_executor	*ex;
	struct exec_run		*run;
	const char		*thread_id;
};

/*
 * The provider's pool_adopt hook: the box's agent listens in its own run
 * directory (<saves>/boxrun/<box>, at /opt/yuxi/run inside); swap it with
 * the thread's (RENAME_EXCHANGE: the box keeps its bind, which follows
 * the directory; what was the thread's goes with the box) and open the
 * thread's again. YX_OK or YX_E_IO.
 */
static int
exec_pool_adopt(void *arg, const char *box)
{
	struct exec_adopt	*a = arg;
	struct exec_run		*run = a->run;
	char			 path[YX_CFG_PATH + 32];
	int			 bfd = -1, rfd = -1, rc = YX_E_IO;

	snprintf(path, sizeof(path), "%s/" YX_POOL_RUN_DIR, a->ex->cfg->saves_dir);
	if ((bfd = open(path, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) == -1)
		goto done;
	snprintf(path, sizeof(path), "%s/run", a->ex->cfg->saves_dir);
	if ((rfd = open(path, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) == -1)
		goto done;
	if (renameat2(bfd, box, rfd, a->thread_id, RENAME_EXCHANGE) == -1)
		goto done;
	close(run->rundir_fd);
	run->rundir_fd = -1;
	run->su = run->uid;
	rc = yx_agent_rundir_open(a->ex->cfg->saves_dir, a->thread_id, &run->su,
	    run->gid, run->rundir, sizeof(run->rundir), &run->rundir_fd, NULL);
	exec_note_su(run);
done:
	if (rc != YX_OK)
		log_warn("pool box %s: agent directory", box);
	if (rfd != -1)
		close(rfd);
	if (bfd != -1)
		close(bfd);
	return rc;
}

/* Run the command in the leased container; YX_E_NOT_FOUND when it
 * vanished; *started when the agent had started it. */
static int
exec_in_lease(struct yx_executor *ex, const struct yx_lease *lease,
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
	if (run->bg != NULL)	/* only the agent keeps a process */
		return yx_fail(err, YX_E_AGENT_UNAVAILABLE,
		    "background processes need the in-sandbox agent, "
		    "which is unavailable in this sandbox");
	if (ex->transport == YX_EXEC_TRANSPORT_AGENT)
		return yx_fail(err, YX_E_BACKEND_UNAVAILABLE,
		    "agent transport required but the agent is unavailable");
	ex->stats.engine_runs++;
	return ex->drv->ops->exec(ex->drv, lease->container_id, &cmd->xr, res,
	    err);
}

static bool	exec_container_gone(struct yx_executor *ex,
    const struct yx_lease *lease, int rc);

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
static bool
exec_died(struct yx_executor *ex, const struct yx_lease *lease,
    const struct yx_exec_req *xr, struct yx_exec_result *res)
{
	static const char	note[] = "\n[yuxi: the sandbox stopped during the "
				   "command (out of memory or processes?); "
				   "the next command gets a new one]\n";
	int			i;

	for (i = 0; !exec_container_gone(ex, lease, YX_E_BACKEND_UNAVAILABLE); i++) {
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
 * output masks them as the places they are inside (exec_mask_rules).
 */
static void
exec_note_box(const struct yx_executor *ex, struct exec_run *run,
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
static void
exec_box_rundir(struct exec_run *run, const char *sandbox_id)
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
	exec_note_su(run);
}

/*
 * The fast path: acquire without the provider's engine inspect (the
 * agent's answer proves the container runs) and ask the agent once.
 * YX_OK or an error once the agent started the command or when the
 * acquire failed (*done set); otherwise *done stays false and the caller takes the full path, which
 * verifies the container, (re)starts the agent or falls back.
 */
static int
exec_agent_fast(struct yx_executor *ex, const struct yx_acquire_req *ar,
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
	exec_note_box(ex, run, lease.sandbox_id);
	exec_box_rundir(run, lease.sandbox_id);
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
	    exec_died(ex, &lease, xr, res))
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
static bool
exec_container_gone(struct yx_executor *ex, const struct yx_lease *lease, int rc)
{
	struct yx_container_info info;

	if (rc == YX_E_NOT_FOUND)
		return true;
	if (rc != YX_E_BACKEND_UNAVAILABLE)
		return false;
	rc = ex->drv->ops->inspect(ex->drv, lease->container_id, &info, NULL);
	return rc == YX_E_NOT_FOUND || (rc == YX_OK && !info.running);
}

/*
 * The fingerprint a sandbox is labelled with (io.yuxi.sandbox.skills): the
 * visible skills AND the container settings (image, runtime, limits, user,
 * network, security options, agent mounts, log driver) AND every field of
 * its profile (workspace mode, allowlist, environment, timeouts). When any
 * changes - a new skill selection, a rebuilt image name, a new memory
 * limit, a thread whose agent config moved to another profile - the
 * provider recreates the sandbox on its next acquire instead of reusing a
 * container made under the old settings (user data is kept).
 */
static void
exec_spec_str(const struct yx_executor *ex, const struct yx_config *c,
    const struct yx_profile *prof, char *spec, size_t len)
{
	/* the agent's protocol version too: a container started with an
	 * older agent is recreated rather than left on the engine path; and
	 * the log setting: one made with an engine log is recreated */
	snprintf(spec, len,
	    "%s|%lld|%g|%d|%s|%d|%s|%lld|%s|%s|log=%s|runtime=%s|profile=%s%s",
	    c->image, (long long)c->memory_bytes, c->cpus, c->pids, c->network,
	    c->readonly_rootfs, c->user, (long long)c->tmp_size, c->security_opts,
	    ex->agent_host[0] != '\0' ? YX_AGENT_MAGIC : "-",
	    yx_spec_log_setting(), c->runtime, prof->fp,
	    ex->mnt[0] != '\0' ? "|mnt" : "");
}

/* ... and the label itself: the skills, the settings, the thread instance. */
static void
exec_spec_fp(const struct yx_executor *ex, const struct yx_exec_request *req,
    const struct exec_run *run, char fp[YX_SHA256_HEX])
{
	const char	*sfp = req->skills != NULL ? req->skills->fp : "";
	char		 inst[64], spec[2048];
	const void	*parts[3] = { sfp, spec, inst };
	size_t		 lens[3];

	exec_spec_str(ex, &run->eff, run->prof, spec, sizeof(spec));
	/* the thread instance too: a thread deleted and created again under
	 * the same id never gets the sandbox of its predecessor */
	snprintf(inst, sizeof(inst), "%s|%lld", run->user,
	    (long long)req->instance);
	lens[0] = strlen(sfp);
	lens[1] = strlen(spec);
	lens[2] = strlen(inst);
	(void)yx_sha256_hex_parts(parts, lens, 3, fp);
}

/*
 * The mounts besides user-data and skills, into extra[YX_EXEC_EXTRA_MAX]:
 * the runner, the thread's passwd and group when it has its own uid, the
 * agent binary and its directory when the agent is used, outputs/ and
 * large_tool_results/ read-write over a read-only user-data, the egress
 * socket's directory (read-only) for a profile with network, the
 * sandboxes' /etc/hosts (etc_hosts.c; with it the driver skips the engine's
 * network setup). Returns the count.
 */
static size_t
exec_extra_mounts(const struct yx_executor *ex, const struct exec_run *run,
    struct yx_mount *extra)
{
	size_t n = 1, i;

	if (run->etc[0][0] != '\0') {
		extra[n++] = (struct yx_mount){ run->etc[0], "/etc/passwd", true };
		extra[n++] = (struct yx_mount){ run->etc[1], "/etc/group", true };
	}
	if (run->rundir_fd != -1) {
		extra[n++] = (struct yx_mount){ ex->agent_host, YX_AGENT_TARGET, true };
		extra[n++] = (struct yx_mount){ run->rundir, YX_AGENT_RUN_TARGET,
			false };
	}
	for (i = 0; run->prof->workspace == YX_WORKSPACE_RO && i < 2; i++)
		extra[n++] = (struct yx_mount){ run->ro_rw[i],
			i == 0 ? YX_VROOT_USER_DATA "/outputs" :
				 YX_VROOT_USER_DATA "/large_tool_results",
			false };
	if (run->egress[0] != '\0')
		extra[n++] = (struct yx_mount){ run->egress, YX_EGRESS_TARGET, true };
	if (ex->hosts[0] != '\0')
		extra[n++] = (struct yx_mount){ ex->hosts, YX_SPEC_HOSTS, true };
	if (ex->mnt[0] != '\0')
		extra[n++] = (struct yx_mount){ ex->mnt, YX_MNT_DIR, true };
	return n;
}

/*
 * The provider's last step before it creates a container (any older one
 * of the thread is gone by then): the agent's run directory is emptied
 * (the new container's agent starts in it, yuxi-agent --init); for a
 * read-only workspace, the user-data is laid out again, so outputs/ and
 * large_tool_results/ - the sources of read-write mounts - are real
 * directories and no symlink an earlier, writable sandbox planted there
 * can make the engine mount what it points to. Nothing of the thread runs
 * until the container starts, so nothing can swap them back in between.
 */
static int
exec_before_create(void *arg, struct yx_errctx *err)
{
	struct exec_run	*run = arg;
	unsigned	 rep = 0;
	int		 rc;

	/* the container binds user-data by path: it must still be the
	 * thread the request looked up (not deleted, nor its id taken since
	 * by a new thread, maybe another user's); first, before anything
	 * here touches the thread's agent directory */
	if ((rc = yx_broker_still_at(&run->broker, run->user_data, err)) != YX_OK)
		return rc;
	/* a pool box served the thread and is gone now (removed here, or
	 * not adopted after a restart: its claim may outlive it until the
	 * reaper's sweep): the new sandbox runs as the thread's uid, and so
	 * does its agent, in a directory of the thread's uid */
	if (run->rundir_fd != -1 && run->su != run->uid) {
		close(run->rundir_fd);
		run->rundir_fd = -1;
		run->su = run->uid;
		exec_note_su(run);
		rc = yx_agent_rundir_own(run->saves, run->tid, run->uid, run->gid,
		    run->rundir, sizeof(run->rundir), &run->rundir_fd, err);
		if (rc != YX_OK)
			return rc;
	}
	if (run->rundir_fd != -1)
		exec_rundir_reset(run);
	if (run->prof->workspace != YX_WORKSPACE_RO)
		return YX_OK;
#ifdef YX_CONTROL_UNSAFE
	if (yx_control_off("rolayout"))
		return YX_OK;
#endif
	rc = yx_broker_ensure_layout(&run->broker, &rep, err);
	run->repaired |= rep;
	return rc;
}

/* The provider's last step before a pool box gets the thread's user-data
 * (by path): the same check as before a create. */
static int
exec_before_bind(void *arg, struct yx_errctx *err)
{
	struct exec_run *run = arg;

	return yx_broker_still_at(&run->broker, run->user_data, err);
}

/*
 * May this run take a pool box? Only with a pool, without mounts a box
 * does not have (a read-only workspace, the egress socket) and with
 * exactly the settings the pool's boxes were made with (the default
 * profile's: image, runtime, limits and every profile field,
 * exec_spec_str). A thread of its own uid takes a box of its own uid (the
 * provider sees to it), whose agent directory tells the box's uid: so
 * only with the agent.
 */
static bool
exec_pool_fits(const struct yx_executor *ex, const struct exec_run *run)
{
	char spec[sizeof(ex->pool_spec)];

	if (ex->cfg->pool_size <= 0 || run->egress[0] != '\0' ||
	    run->prof->workspace != YX_WORKSPACE_RW ||
	    ((run->uid != ex->cfg->uid || ex->cfg->uid_count > 0) &&
		run->rundir_fd == -1))
		return false;
	exec_spec_str(ex, &run->eff, run->prof, spec, sizeof(spec));
	return strcmp(spec, ex->pool_spec) == 0;
}

/* Acquire, run, unhold; retry once on a vanished container. */
static int
exec_acquire_run(struct yx_executor *ex, const struct yx_exec_request *req,
    struct exec_run *run, int timeout, struct yx_exec_result *res,
    struct yx_errctx *err)
{
	struct yx_skill_mount	 sk[YX_SKILLS_MAX];
	char			 skpath[YX_SKILLS_MAX][YX_CFG_PATH + YX_SKILL_NAME_MAX + 2];
	struct yx_mount		 extra[YX_EXEC_EXTRA_MAX] = {
		      { ex->cfg->runner_path, YX_RUNNER_TARGET, true },
	};
	struct yx_acquire_req	 ar;
	struct yx_lease		 lease;
	struct exec_cmd		 cmd;
	struct exec_adopt	 adopt = { ex, run, req->thread_id };
	char			 spec_fp[YX_SHA256_HEX];
	size_t			 i, n = req->skills ? req->skills->n : 0;
	int			 attempt, rc = YX_E_INTERNAL;
	bool			 done = false, started;

	for (i = 0; i < n; i++) {
		snprintf(skpath[i], sizeof(skpath[i]), "%s/%s", ex->cfg->skills_dir,
		    req->skills->names[i]);
		sk[i].name = req->skills->names[i];
		sk[i].host_path = skpath[i];
	}
	memset(&ar, 0, sizeof(ar));
	ar.thread_id = req->thread_id;
	ar.owner_user = req->owner;
	ar.agent_id = req->agent_id;
	ar.skills = sk;
	ar.nskills = n;
	exec_spec_fp(ex, req, run, spec_fp);
	ar.skills_fp = spec_fp;
	ar.user_data_host = run->user_data;
	ar.uid = run->uid;
	ar.gid = run->gid;
	ar.idle_timeout = req->idle_timeout;
	ar.extra = extra;
	ar.nextra = exec_extra_mounts(ex, run, extra);
	ar.settings = &run->eff;
	if (run->rundir_fd != -1)	/* the agent starts with the container */
		ar.cmd = run->egress[0] != '\0' ? exec_agent_init_relay_argv :
						  exec_agent_init_argv;
	ar.before_create = exec_before_create;
	ar.before_bind = exec_before_bind;
	ar.before_create_arg = run;
	if (run->prof->workspace == YX_WORKSPACE_RO)
		ar.user_data_ro = true;
#ifdef YX_CONTROL_UNSAFE
	if (yx_control_off("readonly"))	/* the whole user-data writable */
		ar.user_data_ro = false;
#endif
	if (exec_pool_fits(ex, run)) {
		ar.pool_key = &ex->pool_key;
		if (run->rundir_fd != -1) {
			ar.pool_adopt = exec_pool_adopt;
			ar.pool_arg = &adopt;
		}
	}
	exec_cmd_init(&cmd, run, req->command, timeout);
	if (run->rundir_fd != -1) {
		rc = exec_agent_fast(ex, &ar, run, &cmd.axr, res, &done, err);
		if (done)
			return rc;
	}
	for (attempt = 0; attempt < 2; attempt++) {
		if ((rc = yx_provider_acquire(&ex->prov, &ar, &lease, err)) != YX_OK)
			return rc;
		exec_note_box(ex, run, lease.sandbox_id);
		exec_box_rundir(run, lease.sandbox_id);
		rc = exec_in_lease(ex, &lease, run, &cmd, res, &started, err);
		yx_provider_unhold(&ex->prov, &lease);
		if (rc == YX_E_BACKEND_UNAVAILABLE && started) {	/* never twice */
			if (run->bg == NULL && exec_died(ex, &lease, &cmd.axr, res))
				return YX_OK;
			return rc;
		}
		if (rc == YX_OK || run->oc->total > 0 ||
		    !exec_container_gone(ex, &lease, rc))
			return rc;
		/* the container vanished or stopped between acquire and exec
		 * (killed behind our back, engine restarted): forget it */
		log_info("sandbox %s vanished or stopped; recreating", lease.sandbox_id);
		yx_provider_destroy(&ex->prov, lease.sandbox_id, NULL, NULL);
	}
	return rc;
}

/*
 * Open the thread's agent run directory unless the engine path is forced
 * or there is no agent binary. YX_OK (run->rundir_fd may stay -1 in auto
 * mode: the engine path is then used) or, in agent-only mode, the error.
 */
static int
exec_prepare_agent(struct yx_executor *ex, const struct yx_exec_request *req,
    struct exec_run *run, struct yx_errctx *err)
{
	struct yx_errctx	e;
	int			rc;

	if (ex->transport == YX_EXEC_TRANSPORT_ENGINE)
		return YX_OK;
	if (ex->agent_host[0] == '\0')
		rc = yx_fail(&e, YX_E_BACKEND_UNAVAILABLE, "no agent binary");
	else
		rc = yx_agent_rundir_open(ex->cfg->saves_dir, req->thread_id,
		    &run->su, run->gid, run->rundir, sizeof(run->rundir),
		    &run->rundir_fd, &e);
	if (rc == YX_OK) {
		exec_note_su(run);
		return YX_OK;
	}
	/* e.msg may name host paths: the log gets it, the client does not */
	log_warnx("agent disabled for this command: %s", e.msg);
	if (ex->transport == YX_EXEC_TRANSPORT_AGENT)
		return yx_fail(err, YX_E_BACKEND_UNAVAILABLE,
		    "the in-sandbox agent cannot be used (details in the server log)");
	return YX_OK;
}

/*
 * Mask host roots in the output (DESIGN §4), replacing out->output: the
 * source of every bind mount (exec_acquire_run, provider_mounts.c) becomes
 * its path in the sandbox. The thread's user-data, the skills root (each
 * skill's host directory lies beneath it), the agent run directory, the
 * runner and the agent binary, the thread's passwd and group files; `cat
 * /proc/self/mountinfo` prints each of them (and the sandboxes' /etc/hosts
 * and /mnt). Masking reduces leaks, it is
 * no boundary (mask.c).
 */
#define EXEC_MASK_RULES	YX_EXEC_MASKS

/* The masking rules of this run (see exec_mask) into rules; their count. */
static size_t
exec_mask_rules(const struct yx_executor *ex, const struct exec_run *run,
    struct yx_mask_rule rules[EXEC_MASK_RULES])
{
	size_t n = 0, i;

#ifdef YX_CONTROL_UNSAFE
	if (yx_control_off("mask"))
		return 0;
#endif
	rules[n].from = run->user_data;
	rules[n++].to = YX_VROOT_USER_DATA;
	if (ex->cfg->skills_dir[0] != '\0') {
		rules[n].from = ex->cfg->skills_dir;
		rules[n++].to = YX_VROOT_SKILLS;
	}
	if (run->rundir[0] != '\0') {
		rules[n].from = run->rundir;
		rules[n++].to = YX_AGENT_RUN_TARGET;
	}
	rules[n].from = ex->cfg->runner_path;
	rules[n++].to = YX_RUNNER_TARGET;
	if (ex->agent_host[0] != '\0') {
		rules[n].from = ex->agent_host;
		rules[n++].to = YX_AGENT_TARGET;
	}
	if (run->egress[0] != '\0') {
		rules[n].from = run->egress;
		rules[n++].to = YX_EGRESS_TARGET;
	}
	for (i = 0; i < 2 && run->etc[i][0] != '\0'; i++) {
		rules[n].from = run->etc[i];
		rules[n++].to = i == 0 ? "/etc/passwd" : "/etc/group";
	}
	if (ex->hosts[0] != '\0') {
		rules[n].from = ex->hosts;
		rules[n++].to = YX_SPEC_HOSTS;
	}
	if (ex->mnt[0] != '\0') {
		rules[n].from = ex->mnt;
		rules[n++].to = YX_MNT_DIR;
	}
	for (i = 0; i < 4 && run->boxdir[i][0] != '\0'; i++) {
		static const char *const to[4] = { YX_VROOT_USER_DATA,
			YX_VROOT_SKILLS, "/etc/passwd", "/etc/group" };

		rules[n].from = run->boxdir[i];
		rules[n++].to = to[i];
	}
	return n;
}

static int
exec_mask(struct yx_executor *ex, const struct exec_run *run,
    struct yx_exec_output *out)
{
	struct yx_mask_rule	 rules[EXEC_MASK_RULES];
	size_t			 n, len;
	char			*masked;
	int			 rc;

	if ((n = exec_mask_rules(ex, run, rules)) == 0)
		return YX_OK;
	if (yx_mask_hits(out->output, out->len, rules, n) == 0)
		return YX_OK;	/* the usual case: no copy */
	if ((rc = yx_mask_output(out->output, out->len, rules, n, &masked, &len)) != YX_OK)
		return rc;
	free(out->output);
	out->output = masked;
	out->len = len;
	return YX_OK;
}

/* The answer to a command the path policy refused (token: the refused
 * path as the command spelled it, never a host path). */
static int
exec_refused(struct yx_exec_output *out, const char *token,
    struct yx_errctx *err)
{
	int n;

	n = asprintf(&out->output, "command refers to a path outside the "
				   "sandbox: %s",
	    token);
	if (n < 0) {
		out->output = NULL;
		return yx_fail(err, YX_E_NOMEM, NULL);
	}
	out->len = (size_t)n;
	out->exit_code = 126;
	out->refused = yx_err_api_code(YX_E_PATH_NOT_ALLOWED);
	return YX_OK;
}

void
yx_exec_request_thread(struct yx_exec_request *req, const struct yx_thread *t)
{
	req->thread_id = t->thread_id;
	req->owner = t->owner;
	req->agent_id = t->agent_id;
	req->uid = t->uid;
	req->gid = t->gid;
	req->own_uid = t->own_uid;
	req->instance = t->created_ms;
	req->idle_timeout = t->idle_timeout;
}

/* Does "NAME=..." a name the same variable as b? */
static bool
exec_env_same(const char *a, const char *b)
{
	size_t n = strcspn(a, "=");

	return strncmp(a, b, n) == 0 && b[n] == '=';
}

/*
 * The environment of the profile's commands: the base (HOME, PATH, LANG,
 * USER) where the profile does not set the same name, the profile's
 * variables, and the proxy variables when it has network.
 */
static void
exec_env_build(struct exec_run *run)
{
	const struct yx_profile	*p = run->prof;
	size_t			 n = 0, i, j;

	for (i = 0; exec_env[i] != NULL; i++) {
		for (j = 0; j < p->nenv && !exec_env_same(exec_env[i], p->env[j]); j++)
			;
		if (j == p->nenv)
			run->env[n++] = exec_env[i];
	}
	for (j = 0; j < p->nenv; j++)
		run->env[n++] = p->env[j];
	for (i = 0; p->net.nallow > 0 && exec_proxy_env[i] != NULL; i++)
		run->env[n++] = exec_proxy_env[i];
	run->env[n] = NULL;
}

/*
 * The sandbox user and the host paths of this run: the thread's own uid
 * (with its passwd and group files), else the configured shared one; its
 * user-data; its agent directory (named even when the agent is not used:
 * an older container may still mount it).
 */
static int
exec_run_init(struct yx_executor *ex, const struct yx_exec_request *req,
    struct exec_run *run, struct yx_errctx *err)
{
	const char	*saves = ex->cfg->saves_dir, *tid = req->thread_id;
	size_t		 i;

	run->prof = req->profile != NULL ? req->profile : yx_profile_default();
	yx_profile_apply(run->prof, ex->cfg, &run->eff);
	exec_env_build(run);
	run->uid = req->uid != 0 ? req->uid : ex->cfg->uid;
	run->own_uid = req->own_uid;
	run->gid = req->uid != 0 ? req->gid : ex->cfg->gid;
	snprintf(run->user, sizeof(run->user), "%u:%u", run->uid, run->gid);
	run->su = run->uid;
	exec_note_su(run);
	run->saves = saves;
	run->tid = tid;
	if (yx_thread_path(saves, tid, YX_TP_USER_DATA, run->user_data,
		sizeof(run->user_data)) != YX_OK ||
	    yx_thread_path(saves, tid, YX_TP_RUN, run->rundir,
		sizeof(run->rundir)) != YX_OK ||
	    (req->own_uid &&
		(yx_thread_path(saves, tid, YX_TP_PASSWD, run->etc[0],
		     sizeof(run->etc[0])) != YX_OK ||
		    yx_thread_path(saves, tid,
			YX_TP_GROUP, run->etc[1], sizeof(run->etc[1])) != YX_OK)))
		return yx_fail(err, YX_E_BAD_REQUEST, "thread path too long");
	for (i = 0; i < 2; i++)
		snprintf(run->ro_rw[i], sizeof(run->ro_rw[i]), "%s/%s", run->user_data,
		    exec_ro_rw[i]);
	return YX_OK;
}

/*
 * A profile with network: the proxy serves this thread's socket with the
 * profile's allowlist (registered again on every command: cheap, and a
 * restarted proxy learns it back), and the relay needs the agent.
 */
static int
exec_prepare_egress(struct yx_executor *ex, const struct yx_exec_request *req,
    struct exec_run *run, struct yx_errctx *err)
{
	if (run->prof->net.nallow == 0)
		return YX_OK;
	if (run->rundir_fd == -1)
		return yx_fail(err, YX_E_BACKEND_UNAVAILABLE, "the network of "
							      "this profile needs the in-sandbox agent, which "
							      "is unavailable (details in the server log)");
	return yx_egress_ensure(ex->cfg, req->thread_id, run->uid, run->gid,
	    &run->prof->net, run->egress, sizeof(run->egress), err);
}

/* The outcome of a finished run into *out (kept bytes, masked, unless the
 * stream form has sent them already). */
static int
exec_result(struct yx_executor *ex, const struct yx_exec_request *req,
    struct exec_run *run, const struct yx_exec_result *res,
    struct yx_exec_output *out, struct yx_errctx *err)
{
	struct yx_outcap *oc = run->oc;

	out->exit_code = res->exit_code;
	out->timed_out = res->timed_out;
	out->duration_ms = res->duration_ms;
	out->truncated = oc->truncated;
	out->layout_repaired = run->repaired;
	if (oc->truncated && run->spill_opened)
		snprintf(out->full_output_path, sizeof(out->full_output_path),
		    "%s/large_tool_results/%s", YX_VROOT_USER_DATA, run->spill_name);
	if (req->on_stream != NULL)
		return YX_OK;
	if ((out->output = yx_outcap_take(oc, &out->len)) == NULL)
		return yx_fail(err, YX_E_NOMEM, NULL);
	return exec_mask(ex, run, out);
}

/* Set up run (the sandbox user and profile, the host layout, the agent
 * directory, the egress socket). */
static int
exec_setup(struct yx_executor *ex, const struct yx_exec_request *req,
    struct exec_run *run, struct yx_errctx *err)
{
	int rc;

	if ((rc = exec_run_init(ex, req, run, err)) != YX_OK ||
	    (rc = exec_prepare_host(ex, req, run, err)) != YX_OK ||
	    (rc = exec_prepare_agent(ex, req, run, err)) != YX_OK)
		return rc;
	return exec_prepare_egress(ex, req, run, err);
}

int
yx_executor_run(struct yx_executor *ex, const struct yx_exec_request *req,
    struct yx_exec_output *out, struct yx_errctx *err)
{
	struct exec_run		 run;
	struct yx_outstream	 st;
	struct yx_mask_rule	 rules[EXEC_MASK_RULES];
	struct yx_outcap	 oc;
	struct yx_exec_result	 res;
	char			 bad[128];
	int			 rc;

	memset(out, 0, sizeof(*out));
	memset(&run, 0, sizeof(run));
	memset(&res, 0, sizeof(res));
	run.broker.ud_fd = run.broker.sk_fd = -1;
	run.rundir_fd = -1;
	yx_outcap_init(&oc, ex->cfg->output_limit, YX_SPILL_CAP, exec_spill_open, &run);
	yx_outstream_init(&st, &oc, rules, 0, req->on_stream, req->on_tick,
	    req->stream_arg);
	run.oc = &oc;
	run.sink = yx_outcap_write;
	run.sink_arg = &oc;
	if (req->on_stream != NULL) {
		run.sink = yx_outstream_write;
		run.tick = yx_outstream_tick;
		run.sink_arg = &st;
	}
	if (req->command == NULL || req->command[0] == '\0') {
		rc = yx_fail(err, YX_E_BAD_REQUEST, "command is empty");
		goto done;
	}
	if (yx_cmd_check(req->command, ex->cfg->cmd_policy, bad, sizeof(bad)) != YX_OK) {
		/* an ordinary result, as a shell that cannot run it: 126 */
		rc = exec_refused(out, bad, err);
		goto done;
	}
	if ((rc = exec_setup(ex, req, &run, err)) != YX_OK)
		goto done;
	st.ms.nrules = exec_mask_rules(ex, &run, rules);
	rc = exec_acquire_run(ex, req, &run,
	    yx_profile_timeout(run.prof, ex->cfg, req->timeout_sec), &res, err);
	/* the stream form: what masking held back */
	if (rc == YX_OK && req->on_stream != NULL)
		rc = yx_outstream_flush(&st);
	if (rc == YX_OK)
		rc = exec_result(ex, req, &run, &res, out, err);
done:
	yx_outstream_fini(&st);
	yx_outcap_fini(&oc);
	yx_broker_fini(&run.broker);
	if (run.rundir_fd != -1)
		close(run.rundir_fd);
	if (rc != YX_OK)
		yx_exec_output_fini(out);
	return rc;
}

int
yx_executor_spawn(struct yx_executor *ex, const struct yx_exec_request *req,
    const char *id, size_t ring, struct yx_errctx *err)
{
	struct exec_run		 run;
	struct exec_bg		 bg = { id, ring };
	struct yx_outcap	 oc;
	struct yx_exec_result	 res;
	char			 bad[128];
	int			 rc;

	memset(&run, 0, sizeof(run));
	run.broker.ud_fd = run.broker.sk_fd = -1;
	run.rundir_fd = -1;
	yx_outcap_init(&oc, 0, 0, NULL, NULL);
	run.oc = &oc;
	run.bg = &bg;
	if (req->command == NULL || req->command[0] == '\0') {
		rc = yx_fail(err, YX_E_BAD_REQUEST, "command is empty");
		goto done;
	}
	if (yx_cmd_check(req->command, ex->cfg->cmd_policy, bad, sizeof(bad)) != YX_OK) {
		rc = yx_fail(err, YX_E_PATH_NOT_ALLOWED,
		    "command refers to a path outside the sandbox: %s", bad);
		goto done;
	}
	if (ex->transport == YX_EXEC_TRANSPORT_ENGINE || ex->agent_host[0] == '\0') {
		rc = yx_fail(err, YX_E_AGENT_UNAVAILABLE,
		    "background processes need the in-sandbox agent, which this "
		    "service does not use (YUXI_EXEC_AGENT=off or no agent binary)");
		goto done;
	}
	if ((rc = exec_setup(ex, req, &run, err)) != YX_OK)
		goto done;
	if (run.rundir_fd == -1) {
		rc = yx_fail(err, YX_E_AGENT_UNAVAILABLE,
		    "the in-sandbox agent cannot be used (details in the server log)");
		goto done;
	}
	/* the lifetime is the keeper's, not an execute's 600 s */
	rc = exec_acquire_run(ex, req, &run, req->timeout_sec, &res, err);
done:
	yx_outcap_fini(&oc);
	yx_broker_fini(&run.broker);
	if (run.rundir_fd != -1)
		close(run.rundir_fd);
	return rc;
}

int
yx_executor_rundir(struct yx_executor *ex, const struct yx_exec_request *req,
    int *fdp, unsigned *uidp, struct yx_errctx *err)
{
	struct exec_run	run;
	int		rc;

	*fdp = -1;
	memset(&run, 0, sizeof(run));
	if ((rc = exec_run_init(ex, req, &run, err)) != YX_OK)
		return rc;
	*uidp = run.uid;
	return yx_agent_rundir_open(ex->cfg->saves_dir, req->thread_id, uidp,
	    run.gid, run.rundir, sizeof(run.rundir), fdp, err);
}

int
yx_executor_mask_rules(struct yx_executor *ex, const struct yx_exec_request *req,
    struct yx_exec_masks *m)
{
	struct exec_run		run;
	struct yx_shm_slot	slot;
	size_t			i;
	int			rc;

	memset(m, 0, sizeof(*m));
	memset(&run, 0, sizeof(run));
	if ((rc = exec_run_init(ex, req, &run, NULL)) != YX_OK)
		return rc;
	/* the egress socket's directory, as a command of the profile mounts it */
	if (run.prof->net.nallow > 0 &&
	    yx_egress_dir(ex->cfg, req->thread_id, run.egress, sizeof(run.egress)) != YX_OK)
		run.egress[0] = '\0';
	/* the thread's sandbox, when it is a pool box */
	if (yx_provider_slot(ex->prov.table, req->thread_id, YX_SLOT_BY_THREAD,
		&slot, NULL) == YX_OK)
		exec_note_box(ex, &run, slot.sandbox_id);
	m->n = exec_mask_rules(ex, &run, m->rules);
	for (i = 0; i < m->n; i++) {
		snprintf(m->from[i], sizeof(m->from[i]), "%s", m->rules[i].from);
		m->rules[i].from = m->from[i];
	}
	return YX_OK;
}

int
yx_executor_pool_fill(struct yx_executor *ex, unsigned *nmade,
    struct yx_errctx *err)
{
	struct yx_pool_spec	ps;
	struct yx_mount		extra[4] = {
		    { ex->cfg->runner_path, YX_RUNNER_TARGET, true },
	};
	bool			agent = ex->agent_host[0] != '\0' &&
	    ex->transport != YX_EXEC_TRANSPORT_ENGINE;

	memset(&ps, 0, sizeof(ps));
	ps.key = ex->pool_key;
	ps.settings = &ex->pool_eff;
	ps.extra = extra;
	ps.nextra = 1;
	if (agent) {
		extra[ps.nextra++] = (struct yx_mount){ ex->agent_host,
			YX_AGENT_TARGET, true };
		ps.cmd = exec_agent_init_argv;
		ps.run_target = YX_AGENT_RUN_TARGET;
	}
	if (ex->hosts[0] != '\0')
		extra[ps.nextra++] = (struct yx_mount){ ex->hosts, YX_SPEC_HOSTS,
			true };
	if (ex->mnt[0] != '\0')
		extra[ps.nextra++] = (struct yx_mount){ ex->mnt, YX_MNT_DIR, true };
	return yx_provider_pool_fill(&ex->prov, &ps, nmade, err);
}
