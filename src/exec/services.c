/* SPDX-License-Identifier: MIT */
/*
 * services.c - a profile's services as the API shows them
 * (include/yuxi/procs.h, docs/api.md "Services"): each service's state,
 * from the file the in-sandbox agent keeps beside its socket (svc.<name>),
 * and its output, from its keeper, as a background process's. The
 * executor's part (the agent's --services and the file it names) is
 * exec_svc.c; the agent's, src/guest/agent_services.c.
 *
 * What the sandbox says - a state file, a keeper's status - is untrusted
 * like everything from it: read beneath the agent directory's descriptor
 * (no symlink, a regular file of the sandbox uid, bounded, non-blocking),
 * parsed strictly, and it can only misreport its own thread's services.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "yuxi/agents.h"
#include "yuxi/procs.h"
#include "exec/agent_client.h"
#include "exec/exec_int.h"
#include "common/control_int.h"
#include "guest/agent_services.h"

/* One "key=N" word of a state line, strictly. 0 or -1. */
static int
svc_word(const char *w, size_t len, struct yx_svc_state *s)
{
	const char	*eq = memchr(w, '=', len);
	char		 v[24], *end;
	long long	 n;
	size_t		 k;

	if (eq == NULL || (size_t)(w + len - eq - 1) >= sizeof(v))
		return -1;
	k = (size_t)(eq - w);
	memcpy(v, eq + 1, (size_t)(w + len - eq - 1));
	v[w + len - eq - 1] = '\0';
	if (k == 5 && strncmp(w, "state", 5) == 0) {
		if (strcmp(v, "starting") != 0 && strcmp(v, "running") != 0 &&
		    strcmp(v, "ready") != 0 && strcmp(v, "backoff") != 0)
			return -1;
		snprintf(s->state, sizeof(s->state), "%.15s", v);
		return 0;
	}
	errno = 0;
	n = strtoll(v, &end, 10);
	if (errno != 0 || end == v || *end != '\0' || n < -1)
		return -1;
	if (k == 3 && strncmp(w, "pid", 3) == 0 && n < (1 << 22))
		s->pid = (int)n;
	else if (k == 8 && strncmp(w, "restarts", 8) == 0 && n < 1000000000)
		s->restarts = (long)n;
	else if (k == 4 && strncmp(w, "code", 4) == 0 && n <= 255)
		s->exit_code = (int)n;
	else if (k == 5 && strncmp(w, "since", 5) == 0)
		s->since = n;
	return 0;	/* a newer agent's word: ignored */
}

/* A state line "state=S pid=N restarts=N code=N since=MS\n". 0 or -1. */
static int
svc_parse(const char *text, struct yx_svc_state *s)
{
	const char	*p = text, *sp;
	size_t		 len = strlen(text);

	if (len == 0 || text[len - 1] != '\n')
		return -1;
	len--;
	while (p < text + len) {
		sp = memchr(p, ' ', (size_t)(text + len - p));
		if (sp == NULL)
			sp = text + len;
		if (svc_word(p, (size_t)(sp - p), s) == -1)
			return -1;
		p = sp + 1;
	}
	return s->state[0] != '\0' ? 0 : -1;
}

/*
 * Service name's state file into buf: as every file of the agent
 * directory, beneath its descriptor, no symlink, a regular file of the
 * sandbox's uid (yx_agent_read_small). Control build: with
 * YX_CONTROL_OFF=svcstate a plain open that follows symlinks (the leak
 * tests/browser/test_browser_security.py must see). Its length or -1.
 */
static ssize_t
svc_read_state(const struct yx_proc_ctx *c, const char *name, char *buf,
    size_t len)
{
	ssize_t	n = -1;
	int	fd;

	if (!YX_CONTROL_OFF("svcstate"))
		return yx_agent_read_small(c->rundir, name, c->uid, buf, len);
	if ((fd = openat(c->rundir, name, O_RDONLY | O_NONBLOCK | O_CLOEXEC)) != -1) {
		n = read(fd, buf, len - 1);
		close(fd);
	}
	if (n >= 0)
		buf[n] = '\0';
	return n;
}

void
yx_svc_states(const struct yx_proc_ctx *c, const struct yx_profile *p,
    bool running, struct yx_svc_state *out)
{
	char	name[YX_SERVICE_NAME_MAX + 8], text[256];
	size_t	i;

	for (i = 0; i < p->nservices; i++) {
		struct yx_svc_state *s = &out[i];

		memset(s, 0, sizeof(*s));
		s->svc = &p->services[i];
		s->exit_code = -1;
		snprintf(s->process_id, sizeof(s->process_id), YX_SVC_ID_PREFIX "%s",
		    s->svc->name);
		snprintf(name, sizeof(name), YX_SVC_STATE_PREFIX "%s", s->svc->name);
		if (!running || c->rundir == -1 ||
		    svc_read_state(c, name, text, sizeof(text)) <= 0 ||
		    svc_parse(text, s) == -1) {
			s->pid = 0;
			s->restarts = 0;
			s->exit_code = -1;
			s->since = 0;
			snprintf(s->state, sizeof(s->state), "%s",
			    running ? "unknown" : "stopped");
		}
	}
}

const struct yx_service *
yx_svc_find(const struct yx_profile *p, const char *name)
{
	size_t i;

	for (i = 0; i < p->nservices; i++)
		if (strcmp(p->services[i].name, name) == 0)
			return &p->services[i];
	return NULL;
}

int
yx_svc_output(const struct yx_proc_ctx *c, const struct yx_profile *p,
    const char *name, uint64_t offset, int wait_ms, size_t max,
    struct yx_proc_chunk *out, struct yx_errctx *err)
{
	struct exec_kstatus	ks;
	char			id[YX_PROC_ID_SIZE];
	bool			gone = false;
	int			rc;

	memset(out, 0, sizeof(*out));
	yx_buf_init(&out->data, SIZE_MAX);
	out->offset = out->next_offset = offset;
	if (yx_svc_find(p, name) == NULL)
		return yx_fail(err, YX_E_NOT_FOUND, "no such service");
	snprintf(id, sizeof(id), YX_SVC_ID_PREFIX "%.12s", name);
	memcpy(out->proc.id, id, sizeof(id));
	out->proc.exit_code = -1;
	rc = exec_keeper_output(c, id, offset, wait_ms, max, out, &ks, &gone, err);
	if (rc != YX_OK)
		return rc;
	if (gone) {	/* no box, or its keeper is starting again */
		out->proc.state = YX_PROC_LOST;
		return YX_OK;
	}
	out->proc.output_bytes = ks.total;
	out->proc.state = ks.run ? YX_PROC_RUNNING : YX_PROC_EXITED;
	if (!ks.run)
		out->proc.exit_code = ks.code >= 0 && ks.code <= 255 ? (int)ks.code : -1;
	return YX_OK;
}
