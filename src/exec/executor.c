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
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "yuxi/broker.h"
#include "yuxi/driver.h"
#include "yuxi/executor.h"
#include "yuxi/log.h"
#include "yuxi/path.h"
#include "yuxi/provider.h"
#include "exec/outcap.h"

#define YX_RUNNER_TARGET	"/opt/yuxi/bin/yuxi-run"
#define YX_EXEC_TIMEOUT_MAX	600
#define YX_SPILL_CAP		(64ULL << 20)	/* bytes saved of a long output */

struct yx_executor {
	const struct yx_config	*cfg;
	struct yx_driver	*drv;
	struct yx_provider	 prov;
};

/* Per-run state shared with the spill callback. */
struct exec_run {
	struct yx_broker	 broker;
	char			 spill_name[96];
	bool			 spill_opened;
	char			 user_data[YX_CFG_PATH + 200];
};

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

/* Clamp the requested timeout into [1, 600], default from the config. */
static int
exec_timeout(const struct yx_config *cfg, int asked)
{
	if (asked <= 0)
		return cfg->exec_timeout;
	return asked > YX_EXEC_TIMEOUT_MAX ? YX_EXEC_TIMEOUT_MAX : asked;
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

	snprintf(run->user_data, sizeof(run->user_data), "%s/threads/%s/user-data",
	    cfg->saves_dir, req->thread_id);
	for (i = 0; i < n; i++)
		names[i] = req->skills->names[i];
	rc = yx_broker_init(&run->broker, run->user_data, cfg->skills_dir, names, n,
	    cfg->uid, cfg->gid, NULL, YX_BROKER_CREATE, err);
	if (rc == YX_OK)
		rc = yx_broker_ensure_layout(&run->broker, err);
	return rc;
}

/* Run argv in the leased container; YX_E_NOT_FOUND when it vanished. */
static int
exec_in_lease(struct yx_executor *ex, const struct yx_lease *lease,
    const char *command, int timeout, struct yx_outcap *oc,
    struct yx_exec_result *res, struct yx_errctx *err)
{
	char			 tbuf[16];
	const char		*argv[] = { YX_RUNNER_TARGET, "-t", tbuf, "-C",
				    YX_VROOT_WORKSPACE, "--", "/bin/sh", "-c",
				    command, NULL };
	static const char *const env[] = { "HOME=/home/yuxi",
		"PATH=/home/yuxi/.local/bin:/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin",
		"LANG=C.UTF-8", "USER=yuxi", NULL };
	struct yx_exec_req	 xr;

	snprintf(tbuf, sizeof(tbuf), "%d", timeout);
	memset(&xr, 0, sizeof(xr));
	xr.argv = argv;
	xr.env = env;
	xr.workdir = YX_VROOT_WORKSPACE;
	xr.user = ex->cfg->user;
	xr.timeout_sec = timeout;
	xr.on_output = yx_outcap_write;
	xr.arg = oc;
	return ex->drv->ops->exec(ex->drv, lease->container_id, &xr, res, err);
}

/* Acquire, run, unhold; retry once on a vanished container. */
static int
exec_acquire_run(struct yx_executor *ex, const struct yx_exec_request *req,
    struct exec_run *run, int timeout, struct yx_outcap *oc,
    struct yx_exec_result *res, struct yx_errctx *err)
{
	struct yx_skill_mount	 sk[YX_SKILLS_MAX];
	char			 skpath[YX_SKILLS_MAX][YX_CFG_PATH + YX_SKILL_NAME_MAX + 2];
	struct yx_mount		 runner = { ex->cfg->runner_path, YX_RUNNER_TARGET, true };
	struct yx_acquire_req	 ar;
	struct yx_lease		 lease;
	size_t			 i, n = req->skills ? req->skills->n : 0;
	int			 attempt, rc = YX_E_INTERNAL;

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
	ar.skills_fp = req->skills ? req->skills->fp : "";
	ar.user_data_host = run->user_data;
	ar.extra = &runner;
	ar.nextra = 1;
	for (attempt = 0; attempt < 2; attempt++) {
		if ((rc = yx_provider_acquire(&ex->prov, &ar, &lease, err)) != YX_OK)
			return rc;
		rc = exec_in_lease(ex, &lease, req->command, timeout, oc, res, err);
		yx_provider_unhold(&ex->prov, &lease);
		if (rc != YX_E_NOT_FOUND || oc->total > 0)
			return rc;
		/* the container vanished between acquire and exec: forget it */
		log_info("sandbox %s vanished; recreating", lease.sandbox_id);
		yx_provider_destroy(&ex->prov, lease.sandbox_id, NULL, NULL);
	}
	return rc;
}

/* Mask host roots in the output (DESIGN §4), replacing out->output. */
static int
exec_mask(struct yx_executor *ex, const struct exec_run *run,
    struct yx_exec_output *out)
{
	struct yx_mask_rule	 rules[2];
	size_t			 n = 0, len;
	char			*masked;
	int			 rc;

	rules[n].from = run->user_data;
	rules[n++].to = YX_VROOT_USER_DATA;
	if (ex->cfg->skills_dir[0] != '\0') {
		rules[n].from = ex->cfg->skills_dir;
		rules[n++].to = YX_VROOT_SKILLS;
	}
	if ((rc = yx_mask_output(out->output, out->len, rules, n, &masked, &len)) != YX_OK)
		return rc;
	free(out->output);
	out->output = masked;
	out->len = len;
	return YX_OK;
}

int
yx_executor_run(struct yx_executor *ex, const struct yx_exec_request *req,
    struct yx_exec_output *out, struct yx_errctx *err)
{
	struct exec_run		 run;
	struct yx_outcap	 oc;
	struct yx_exec_result	 res;
	char			 bad[128];
	int			 timeout, rc;

	memset(out, 0, sizeof(*out));
	memset(&run, 0, sizeof(run));
	memset(&res, 0, sizeof(res));
	run.broker.ud_fd = run.broker.sk_fd = -1;
	yx_outcap_init(&oc, ex->cfg->output_limit, YX_SPILL_CAP, exec_spill_open, &run);
	if (req->command == NULL || req->command[0] == '\0') {
		rc = yx_fail(err, YX_E_BAD_REQUEST, "command is empty");
		goto done;
	}
	if (yx_cmd_check(req->command, ex->cfg->cmd_policy, bad, sizeof(bad)) != YX_OK) {
		rc = yx_fail(err, YX_E_PATH_NOT_ALLOWED,
		    "command refers to a path outside the sandbox: %s", bad);
		goto done;
	}
	timeout = exec_timeout(ex->cfg, req->timeout_sec);
	if ((rc = exec_prepare_host(ex, req, &run, err)) != YX_OK)
		goto done;
	rc = exec_acquire_run(ex, req, &run, timeout, &oc, &res, err);
	if (rc != YX_OK)
		goto done;
	out->exit_code = res.exit_code;
	out->timed_out = res.timed_out;
	out->duration_ms = res.duration_ms;
	out->truncated = oc.truncated;
	if (oc.truncated && run.spill_opened)
		snprintf(out->full_output_path, sizeof(out->full_output_path),
		    "%s/large_tool_results/%s", YX_VROOT_USER_DATA, run.spill_name);
	if ((out->output = yx_outcap_take(&oc, &out->len)) == NULL) {
		rc = yx_fail(err, YX_E_NOMEM, NULL);
		goto done;
	}
	rc = exec_mask(ex, &run, out);
done:
	yx_outcap_fini(&oc);
	yx_broker_fini(&run.broker);
	if (rc != YX_OK)
		yx_exec_output_fini(out);
	return rc;
}
