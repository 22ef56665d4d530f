/* SPDX-License-Identifier: MIT */
/*
 * exec_svc.c - a profile's services, the executor's part (exec_int.h,
 * docs/agent.md "Services"): the agent's command line with --services, and
 * services.conf, what the in-sandbox agent's supervisor runs, written into
 * the thread's agent directory right after it was emptied, before the
 * container starts (nothing of the thread runs then). The sandbox may
 * change or remove the file afterwards, which only changes what its own
 * agent runs. The API's part (states, output) is services.c.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "yuxi/buf.h"
#include "yuxi/egress.h"
#include "yuxi/log.h"
#include "yuxi/path.h"
#include "yuxi/replace.h"
#include "exec/exec_int.h"
#include "guest/agent_proto.h"
#include "guest/agent_services.h"

#define SVC_CONF_TARGET	YX_AGENT_RUN_TARGET "/" YX_SVC_CONF_NAME

void
exec_svc_agent_argv(const struct exec_run *run, const char *mode,
    const char **argv)
{
	size_t n = 0;

	argv[n++] = YX_AGENT_TARGET;
	argv[n++] = mode;
	argv[n++] = "--socket";
	argv[n++] = YX_AGENT_SOCK_TARGET;
	if (run->egress[0] != '\0') {
		argv[n++] = "--relay";
		argv[n++] = YX_RELAY_ARG;
	}
	if (run->prof->nservices > 0) {
		argv[n++] = "--services";
		argv[n++] = SVC_CONF_TARGET;
	}
	argv[n] = NULL;
}

/* One NUL-terminated "key=value" entry. */
static int
svc_put(struct yx_buf *b, const char *key, const char *value)
{
	int rc;

	if ((rc = yx_buf_printf(b, "%s=%s", key, value)) != YX_OK)
		return rc;
	return yx_buf_append(b, "", 1);
}

int
exec_svc_write_conf(const struct exec_run *run)
{
	const struct yx_profile	*p = run->prof;
	const char		*env[YX_EXEC_ENV_MAX + 1];
	struct yx_replace	 r;
	struct yx_buf		 b;
	char			 num[32];
	size_t			 n, i;
	int			 rc;

	yx_buf_init(&b, YX_SVC_CONF_MAX);
	n = exec_prepare_env_profile(p, env);
	snprintf(num, sizeof(num), "%zu", run->eff.proc_output_keep);
	rc = svc_put(&b, "yuxi-services", "1");
	if (rc == YX_OK)
		rc = svc_put(&b, "ring", num);
	if (rc == YX_OK)
		rc = svc_put(&b, "cwd", YX_VROOT_WORKSPACE);
	for (i = 0; rc == YX_OK && i < n; i++)
		rc = svc_put(&b, "env", env[i]);
	for (i = 0; rc == YX_OK && i < p->nservices; i++) {
		snprintf(num, sizeof(num), "%d", p->services[i].ready_port);
		if ((rc = svc_put(&b, "service", p->services[i].name)) == YX_OK &&
		    (rc = svc_put(&b, "ready", num)) == YX_OK)
			rc = svc_put(&b, "command", p->services[i].command);
	}
	if (rc == YX_OK) {
		memset(&r, 0, sizeof(r));
		r.data = b.data;
		r.len = b.len;
		r.mode = 0644;	/* the agent reads it; only the host writes it */
		r.flags = YX_REPLACE_HINT;	/* written again with each container */
		if ((rc = yx_replace_at(run->rundir_fd, YX_SVC_CONF_NAME, &r)) != YX_OK)
			log_warn("thread %s: %s", run->tid, YX_SVC_CONF_NAME);
	}
	yx_buf_fini(&b);
	return rc;
}
