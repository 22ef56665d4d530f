/* SPDX-License-Identifier: MIT */
/*
 * exec_prepare.c - preparing one run of the executor (exec_int.h): the
 * sandbox user, the profile's settings and the environment of its
 * commands, the thread's host paths, its user-data laid out through the
 * broker, its agent run directory opened (and emptied before a new
 * container starts in it), the egress socket of a profile with network,
 * and the output masking rules (each bind mount's host source to its path
 * inside). No engine call.
 */
#include "config.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "yuxi/broker.h"
#include "yuxi/driver.h"
#include "yuxi/egress.h"
#include "yuxi/executor.h"
#include "yuxi/log.h"
#include "yuxi/path.h"
#include "yuxi/threads.h"
#include "yuxi/tree.h"
#include "guest/agent_proto.h"
#include "exec/exec_int.h"
#include "common/control_int.h"

const char *const exec_prepare_env[] = { "HOME=/home/yuxi",
	"PATH=/home/yuxi/.local/bin:/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin",
	"LANG=C.UTF-8", "USER=yuxi", NULL };
/* A profile with network: every command finds the relay through these. */
static const char *const exec_proxy_env[] = { "HTTP_PROXY=" YX_RELAY_URL,
	"HTTPS_PROXY=" YX_RELAY_URL, "http_proxy=" YX_RELAY_URL,
	"https_proxy=" YX_RELAY_URL, NULL };
/* The folders a read-only workspace keeps writable (mounted over it). */
static const char *const exec_ro_rw[2] = { "outputs", "large_tool_results" };

/*
 * The request's working directory must be a directory of the thread's
 * namespace, as the broker sees it (no symlink on the way: the sandbox
 * could make one point anywhere of its own, but the answer must not tell
 * the host's side of it). YX_OK or YX_E_CWD_NOT_FOUND with the reason.
 */
static int
exec_prepare_cwd(struct exec_run *run, const char *cwd, struct yx_errctx *err)
{
	struct yx_vpath	vp;
	struct yx_errctx e;
	int		rc;

	if ((rc = yx_path_resolve(cwd, strlen(cwd), &vp)) != YX_OK)
		return yx_fail(err, rc, "cwd: %s", yx_strerror(rc));
	if (yx_broker_dir_exists(&run->broker, vp.root, vp.rel, &e) == YX_OK)
		return YX_OK;
	return yx_fail(err, YX_E_CWD_NOT_FOUND, "cwd %s is not a directory of the thread (%s)",
	    vp.canon, yx_strerror(e.code));
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
	if (rc == YX_OK && req->cwd != NULL)
		rc = exec_prepare_cwd(run, req->cwd, err);
	return rc;
}

/*
 * A new container starts with an empty agent directory: whatever an
 * earlier sandbox of the thread id left there (a deleted thread's, or one
 * replaced after a settings change) must not reach the new one. Safe here:
 * the old container is gone and nothing of ours has started in the new one.
 */
void
exec_prepare_rundir_reset(const struct exec_run *run)
{
	struct dirent	*de;
	DIR		*d;
	int		 fd;

	if (YX_CONTROL_OFF("rundir"))	/* the leak of finding 1 */
		return;
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
void
exec_prepare_note_su(struct exec_run *run)
{
	if (run->su == run->uid)
		(void)yx_strlcpy(run->suser, run->user, sizeof(run->suser));
	else
		snprintf(run->suser, sizeof(run->suser), "%u:%u", run->su,
		    run->su);
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
		exec_prepare_note_su(run);
		return YX_OK;
	}
	/* e.msg may name host paths: the log gets it, the client does not */
	log_warnx("agent disabled for this command: %s", e.msg);
	if (ex->transport == YX_EXEC_TRANSPORT_AGENT)
		return yx_fail(err, YX_E_BACKEND_UNAVAILABLE,
		    "the in-sandbox agent cannot be used (details in the server log)");
	return YX_OK;
}

/* The masking rules of this run (executor.c's exec_mask) into rules; their count. */
size_t
exec_prepare_mask_rules(const struct yx_executor *ex, const struct exec_run *run,
    struct yx_mask_rule rules[EXEC_MASK_RULES])
{
	size_t n = 0, i;

	if (YX_CONTROL_OFF("mask"))
		return 0;
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

/* Does "NAME=..." a name the same variable as b? */
static bool
exec_env_same(const char *a, const char *b)
{
	size_t n = strcspn(a, "=");

	return strncmp(a, b, n) == 0 && b[n] == '=';
}

size_t
exec_prepare_env_profile(const struct yx_profile *p, const char **env)
{
	size_t n = 0, i, j;

	for (i = 0; exec_prepare_env[i] != NULL; i++) {
		for (j = 0; j < p->nenv && !exec_env_same(exec_prepare_env[i], p->env[j]); j++)
			;
		if (j == p->nenv)
			env[n++] = exec_prepare_env[i];
	}
	for (j = 0; j < p->nenv; j++)
		env[n++] = p->env[j];
	for (i = 0; p->net.nallow > 0 && exec_proxy_env[i] != NULL; i++)
		env[n++] = exec_proxy_env[i];
	return n;
}

/*
 * The environment of the profile's commands (exec_prepare_env_profile),
 * then the request's own, each replacing a variable of the same name (the
 * caller refused the proxy variables of a profile with network).
 */
static void
exec_env_build(struct exec_run *run, const struct yx_exec_request *req)
{
	size_t n, i, j;

	n = exec_prepare_env_profile(run->prof, run->env);
	for (i = 0; i < req->nenv && i < YX_EXEC_USER_ENV_MAX; i++) {
		for (j = 0; j < n && !exec_env_same(req->env[i], run->env[j]); j++)
			;
		run->env[j] = req->env[i];
		if (j == n)
			n++;
	}
	run->env[n] = NULL;
}

/*
 * The sandbox user and the host paths of this run: the thread's own uid
 * (with its passwd and group files), else the configured shared one; its
 * user-data; its agent directory (named even when the agent is not used:
 * an older container may still mount it).
 */
int
exec_prepare_init(struct yx_executor *ex, const struct yx_exec_request *req,
    struct exec_run *run, struct yx_errctx *err)
{
	const char	*saves = ex->cfg->saves_dir, *tid = req->thread_id;
	size_t		 i;

	run->prof = req->profile != NULL ? req->profile : yx_profile_default();
	yx_profile_apply(run->prof, ex->cfg, &run->eff);
	exec_env_build(run, req);
	run->workdir = req->cwd != NULL ? req->cwd : YX_VROOT_WORKSPACE;
	run->uid = req->uid != 0 ? req->uid : ex->cfg->uid;
	run->own_uid = req->own_uid;
	run->gid = req->uid != 0 ? req->gid : ex->cfg->gid;
	snprintf(run->user, sizeof(run->user), "%u:%u", run->uid, run->gid);
	run->su = run->uid;
	exec_prepare_note_su(run);
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

/* Set up run (the sandbox user and profile, the host layout, the agent
 * directory, the egress socket). */
int
exec_prepare_run(struct yx_executor *ex, const struct yx_exec_request *req,
    struct exec_run *run, struct yx_errctx *err)
{
	int rc;

	if ((rc = exec_prepare_init(ex, req, run, err)) != YX_OK ||
	    (rc = exec_prepare_host(ex, req, run, err)) != YX_OK ||
	    (rc = exec_prepare_agent(ex, req, run, err)) != YX_OK)
		return rc;
	if (run->prof->nservices > 0 && run->rundir_fd == -1)
		return yx_fail(err, YX_E_BACKEND_UNAVAILABLE, "the services of "
							      "this profile need the in-sandbox agent, which "
							      "is unavailable (details in the server log)");
	return exec_prepare_egress(ex, req, run, err);
}
