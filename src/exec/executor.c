/* SPDX-License-Identifier: MIT */
/*
 * executor.c - run one agent command in a thread's sandbox; see
 * include/yuxi/executor.h for the contract and exec_int.h for the files
 * that do each step.
 *
 * Order of work: refuse by command path policy (no engine call for a refused
 * command); prepare the run (exec_prepare.c: the sandbox user and profile,
 * the thread's user-data laid out on the host through the broker, the agent
 * directory, the egress socket); acquire the sandbox, lazily created by the
 * provider, and run the command in it with a bounded output sink
 * (exec_acquire.c, exec_lease.c); drop the hold; mask host paths in what
 * was kept.
 *
 * The command normally goes to the in-sandbox agent over its unix socket
 * (docs/agent.md); the engine exec of the runner,
 *   /opt/yuxi/bin/yuxi-run -t T -C /home/yuxi/user-data/workspace -- /bin/sh -c CMD
 * is the fallback for a sandbox whose agent cannot be started. Both put the
 * command in its own process group and kill the whole group on timeout
 * (exit 124).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
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
#include "exec/outcap.h"

#define YX_SPILL_CAP		(64ULL << 20)	/* bytes saved of a long output */

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
	exec_acquire_spec_str(ex, &ex->pool_eff, yx_profile_default(), ex->pool_spec,
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
	free(out->tx_json);
	out->tx_json = NULL;
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
static int
exec_mask(struct yx_executor *ex, const struct exec_run *run,
    struct yx_exec_output *out)
{
	struct yx_mask_rule	 rules[EXEC_MASK_RULES];
	size_t			 n, len;
	char			*masked;
	int			 rc;

	if ((n = exec_prepare_mask_rules(ex, run, rules)) == 0)
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

	struct yx_exec_session	*sess = out->session;

	memset(out, 0, sizeof(*out));
	out->session = sess;
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
	if (req->session_id != NULL) {
		if (out->session == NULL) {
			rc = yx_fail(err, YX_E_INTERNAL, "session outcome");
			goto done;
		}
		out->session->busy = out->session->ended = out->session->ran = false;
		run.sess = req->session_id;
		run.sres = out->session;
	}
	if ((rc = exec_prepare_run(ex, req, &run, err)) != YX_OK)
		goto done;
	if (run.sess != NULL && run.rundir_fd == -1) {
		rc = yx_fail(err, YX_E_AGENT_UNAVAILABLE,
		    "the in-sandbox agent cannot be used (details in the server log)");
		goto done;
	}
	st.ms.nrules = exec_prepare_mask_rules(ex, &run, rules);
	if (req->tx != YX_TX_NONE)
		rc = exec_tx_run(ex, req, &run,
		    yx_profile_timeout(run.prof, ex->cfg, req->timeout_sec), &res, out, err);
	else
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
    struct yx_spawn *sp, struct yx_errctx *err)
{
	struct exec_run		 run;
	struct yx_outcap	 oc;
	struct yx_exec_result	 res;
	char			 bad[128];
	int			 rc;

	memset(&run, 0, sizeof(run));
	run.broker.ud_fd = run.broker.sk_fd = -1;
	run.rundir_fd = -1;
	yx_outcap_init(&oc, 0, 0, NULL, NULL);
	run.oc = &oc;
	run.bg = sp;
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
	if ((rc = exec_prepare_run(ex, req, &run, err)) != YX_OK)
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
	if ((rc = exec_prepare_init(ex, req, &run, err)) != YX_OK)
		return rc;
	*uidp = run.uid;
	return yx_agent_rundir_open(ex->cfg->saves_dir, req->thread_id, uidp,
	    run.gid, run.rundir, sizeof(run.rundir), fdp, err);
}

int
yx_executor_agent_dial(int rundir_fd, unsigned uid, int *sockp,
    struct yx_errctx *err)
{
	return yx_agent_connect(rundir_fd, uid, sockp, err);
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
	if ((rc = exec_prepare_init(ex, req, &run, NULL)) != YX_OK)
		return rc;
	/* the egress socket's directory, as a command of the profile mounts it */
	if (run.prof->net.nallow > 0 &&
	    yx_egress_dir(ex->cfg, req->thread_id, run.egress, sizeof(run.egress)) != YX_OK)
		run.egress[0] = '\0';
	/* the thread's sandbox, when it is a pool box */
	if (yx_provider_slot(ex->prov.table, req->thread_id, YX_SLOT_BY_THREAD,
		&slot, NULL) == YX_OK)
		exec_lease_note_box(ex, &run, slot.sandbox_id);
	m->n = exec_prepare_mask_rules(ex, &run, m->rules);
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
		ps.cmd = exec_acquire_init_argv;
		ps.run_target = YX_AGENT_RUN_TARGET;
	}
	if (ex->hosts[0] != '\0')
		extra[ps.nextra++] = (struct yx_mount){ ex->hosts, YX_SPEC_HOSTS,
			true };
	if (ex->mnt[0] != '\0')
		extra[ps.nextra++] = (struct yx_mount){ ex->mnt, YX_MNT_DIR, true };
	return yx_provider_pool_fill(&ex->prov, &ps, nmade, err);
}
