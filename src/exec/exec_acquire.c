/* SPDX-License-Identifier: MIT */
/*
 * exec_acquire.c - acquiring a thread's sandbox for one run of the
 * executor (exec_int.h): the acquire request the provider gets (the
 * visible skills, the extra mounts, the container settings and the
 * fingerprint they are labelled with, the agent as a new container's
 * command), whether the run may take a pool box and how a box adopts the
 * thread's agent directory, the checks the provider runs right before it
 * creates a container or binds a box; then acquire, run in the lease
 * (exec_lease.c) and unhold. A container that vanished or stopped behind
 * our back before the command wrote anything is destroyed in the table
 * and acquired anew, once.
 */
#include "config.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "yuxi/broker.h"
#include "yuxi/driver.h"
#include "yuxi/egress.h"
#include "yuxi/executor.h"
#include "yuxi/hash.h"
#include "yuxi/log.h"
#include "yuxi/path.h"
#include "yuxi/provider.h"
#include "guest/agent_proto.h"
#include "exec/exec_int.h"
#include "common/control_int.h"

#define YX_EXEC_EXTRA_MAX	10	/* exec_extra_mounts */

/* A new container's command when the agent is used (a profile with
 * network or services: exec_svc_agent_argv). */
const char *const exec_acquire_init_argv[] = { YX_AGENT_TARGET, "--init",
	"--socket", YX_AGENT_SOCK_TARGET, NULL };

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
	exec_prepare_note_su(run);
done:
	if (rc != YX_OK)
		log_warn("pool box %s: agent directory", box);
	if (rfd != -1)
		close(rfd);
	if (bfd != -1)
		close(bfd);
	return rc;
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
void
exec_acquire_spec_str(const struct yx_executor *ex, const struct yx_config *c,
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

	exec_acquire_spec_str(ex, &run->eff, run->prof, spec, sizeof(spec));
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
size_t
exec_acquire_extra(const struct yx_executor *ex, const struct exec_run *run,
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
		exec_prepare_note_su(run);
		rc = yx_agent_rundir_own(run->saves, run->tid, run->uid, run->gid,
		    run->rundir, sizeof(run->rundir), &run->rundir_fd, err);
		if (rc != YX_OK)
			return rc;
	}
	if (run->rundir_fd != -1)
		exec_prepare_rundir_reset(run);
	if (run->rundir_fd != -1 && run->prof->nservices > 0 &&
	    (rc = exec_svc_write_conf(run)) != YX_OK)
		return yx_fail(err, rc, "cannot write the services' configuration");
	if (run->prof->workspace != YX_WORKSPACE_RO)
		return YX_OK;
	if (YX_CONTROL_OFF("rolayout"))
		return YX_OK;
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
 * exec_acquire_spec_str). A thread of its own uid takes a box of its own uid (the
 * provider sees to it), whose agent directory tells the box's uid: so
 * only with the agent.
 */
static bool
exec_pool_fits(const struct yx_executor *ex, const struct exec_run *run)
{
	char spec[sizeof(ex->pool_spec)];

	if (ex->cfg->pool_size <= 0 || run->egress[0] != '\0' ||
	    run->prof->nservices > 0 ||
	    run->prof->workspace != YX_WORKSPACE_RW ||
	    ((run->uid != ex->cfg->uid || ex->cfg->uid_count > 0) &&
		run->rundir_fd == -1))
		return false;
	exec_acquire_spec_str(ex, &run->eff, run->prof, spec, sizeof(spec));
	return strcmp(spec, ex->pool_spec) == 0;
}

/* Acquire, run, unhold; retry once on a vanished container. */
int
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
	ar.nextra = exec_acquire_extra(ex, run, extra);
	ar.settings = &run->eff;
	if (run->rundir_fd != -1) {	/* the agent starts with the container */
		exec_svc_agent_argv(run, "--init", run->agent_argv);
		ar.cmd = run->agent_argv;
	}
	ar.before_create = exec_before_create;
	ar.before_bind = exec_before_bind;
	ar.before_create_arg = run;
	if (run->prof->workspace == YX_WORKSPACE_RO)
		ar.user_data_ro = true;
	if (YX_CONTROL_OFF("readonly"))	/* the whole user-data writable */
		ar.user_data_ro = false;
	if (exec_pool_fits(ex, run)) {
		ar.pool_key = &ex->pool_key;
		if (run->rundir_fd != -1) {
			ar.pool_adopt = exec_pool_adopt;
			ar.pool_arg = &adopt;
		}
	}
	exec_lease_cmd_init(&cmd, run, req->command, timeout);
	if (run->rundir_fd != -1) {
		rc = exec_lease_agent_fast(ex, &ar, run, &cmd.axr, res, &done, err);
		if (done)
			return rc;
	}
	for (attempt = 0; attempt < 2; attempt++) {
		if ((rc = yx_provider_acquire(&ex->prov, &ar, &lease, err)) != YX_OK)
			return rc;
		exec_lease_note_box(ex, run, lease.sandbox_id);
		exec_lease_box_rundir(run, lease.sandbox_id);
		rc = exec_lease_run(ex, &lease, run, &cmd, res, &started, err);
		yx_provider_unhold(&ex->prov, &lease);
		if (rc == YX_E_BACKEND_UNAVAILABLE && started) {	/* never twice */
			if (run->bg == NULL && run->sess == NULL &&
			    exec_lease_died(ex, &lease, &cmd.axr, res))
				return YX_OK;
			return rc;
		}
		if (rc == YX_OK || run->oc->total > 0 ||
		    !exec_lease_gone(ex, &lease, rc))
			return rc;
		/* the container vanished or stopped between acquire and exec
		 * (killed behind our back, engine restarted): forget it */
		log_info("sandbox %s vanished or stopped; recreating", lease.sandbox_id);
		yx_provider_destroy(&ex->prov, lease.sandbox_id, NULL, NULL);
	}
	return rc;
}
