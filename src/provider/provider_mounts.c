/* SPDX-License-Identifier: MIT */
/*
 * provider_mounts.c - the bind mounts of a sandbox container (docs/design.md §3
 * "Container contract"): the thread's user-data at /home/yuxi/user-data
 * (read-write, or read-only for a profile's read-only workspace), each visible skill read-only at
 * /home/yuxi/skills/<name>, and the caller's extra mounts; host paths are
 * translated for the engine with YUXI_HOST_PROJECT_DIR (rule in
 * include/yuxi/provider.h); and the driver's create of a container with
 * them, for a sandbox (provider.c) and a transaction's (provider_tx.c).
 */
#include "config.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "yuxi/log.h"
#include "provider/provider_int.h"

/*
 * Host path as the engine sees it (YUXI_HOST_PROJECT_DIR, see provider.h).
 * Returns a heap string (caller frees) or NULL on allocation failure.
 */
static char *
mounts_host_path(const struct yx_provider *p, const char *path)
{
	const char	*local = p->local_project_dir;
	size_t		 n = strlen(local);
	char		*out = NULL;

	while (n > 1 && local[n - 1] == '/')
		n--;
	if (p->cfg->host_project_dir[0] != '\0' && n > 1 &&
	    strncmp(path, local, n) == 0 &&
	    (path[n] == '/' || path[n] == '\0')) {
		if (asprintf(&out, "%s%s", p->cfg->host_project_dir,
			path + n) == -1)
			out = NULL;
		return out;
	}
	return strdup(path);
}

static void
mounts_fini(struct yx_prov_mounts *ms)
{
	size_t i;

	for (i = 0; ms->m != NULL && i < ms->n; i++) {
		free((char *)ms->m[i].host);
		free((char *)ms->m[i].target);
	}
	free(ms->m);
	ms->m = NULL;
	ms->n = 0;
}

/* Append a mount (strings copied, host translated). YX_OK or YX_E_NOMEM. */
static int
mounts_add(const struct yx_provider *p, struct yx_prov_mounts *ms,
    const char *host, const char *target, bool ro)
{
	struct yx_mount *m = &ms->m[ms->n];

	m->host = mounts_host_path(p, host);
	m->target = strdup(target);
	m->readonly = ro;
	ms->n++;
	return (m->host == NULL || m->target == NULL) ? YX_E_NOMEM : YX_OK;
}

/* The mounts of DESIGN §3 for req. YX_OK or YX_E_NOMEM (ms freed). */
static int
mounts_build(const struct yx_provider *p,
    const struct yx_acquire_req *req, struct yx_prov_mounts *ms)
{
	char	 target[PATH_MAX];
	size_t	 i, total;
	int	 rc = YX_E_NOMEM;

	ms->n = 0;
	total = 1 + req->nskills + req->nextra;
	if (total < req->nskills || (ms->m = calloc(total, sizeof(*ms->m))) == NULL)
		goto fail;
	if ((rc = mounts_add(p, ms, req->user_data_host,
		 YX_USER_DATA_TARGET, req->user_data_ro)) != YX_OK)
		goto fail;
	for (i = 0; i < req->nskills; i++) {
		snprintf(target, sizeof(target), "%s/%s", YX_SKILLS_TARGET,
		    req->skills[i].name);
		if ((rc = mounts_add(p, ms, req->skills[i].host_path,
			 target, true)) != YX_OK)
			goto fail;
	}
	for (i = 0; i < req->nextra; i++)
		if ((rc = mounts_add(p, ms, req->extra[i].host,
			 req->extra[i].target, req->extra[i].readonly)) != YX_OK)
			goto fail;
	return YX_OK;
fail:
	mounts_fini(ms);
	return rc;
}

int
yx_prov_create(struct yx_provider *p, const struct yx_acquire_req *req,
    const char *name, const char *sid, const char *fp, int port, bool grouped,
    struct yx_container_info *info, struct yx_errctx *err)
{
	struct yx_container_spec	 spec;
	struct yx_prov_mounts		 ms = { NULL, 0 };
	const struct yx_config		*settings = req->settings != NULL ? req->settings :
								    p->cfg;
	int				 rc;

	if ((rc = mounts_build(p, req, &ms)) != YX_OK)
		return yx_fail(err, rc, NULL);
	memset(&spec, 0, sizeof(spec));
	spec.name = name;
	spec.image = settings->image;
	spec.thread_id = req->thread_id;
	spec.sandbox_id = sid;
	spec.skills_fp = fp;
	spec.mounts = ms.m;
	spec.nmounts = ms.n;
	spec.host_port = port;
	spec.uid = req->uid;
	spec.gid = req->gid;
	spec.cmd = req->cmd;
	spec.cfg = settings;
	spec.own_shim = !grouped;
	rc = p->driver->ops->create(p->driver, &spec, info, err);
	/*
	 * A container of a group can meet the group's shim on its way out
	 * (its last sandbox just deleted, its socket not yet gone): the
	 * engine's start then fails and the container is removed (the
	 * drivers' create). One more try finds no shim, or a new one.
	 */
	if (rc != YX_OK && rc != YX_E_FILE_EXISTS && rc != YX_E_NOMEM &&
	    grouped && yx_spec_grouped(&spec)) {
		log_warnx("container %s did not start (%s); trying once more",
		    name, err->msg);
		yx_errctx_clear(err);
		rc = p->driver->ops->create(p->driver, &spec, info, err);
	}
	mounts_fini(&ms);
	return rc;
}
