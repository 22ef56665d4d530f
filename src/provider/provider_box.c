/* SPDX-License-Identifier: MIT */
/*
 * provider_box.c - what acquire, destroy and the reaper share about pool
 * boxes (docs/design.md §2 "Pool"): their names, whether a request may take
 * one, and removing a box's mounts and directories. A leaf: it calls
 * nothing else of src/provider.
 */
#include "config.h"

#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "yuxi/priv.h"
#include "yuxi/threads.h"
#include "yuxi/tree.h"
#include "provider/provider_int.h"

bool
yx_provider_is_box(const char *sid)
{
	return sid != NULL && yx_priv_box_name(sid, strlen(sid));
}

bool
yx_prov_pool_fits(const struct yx_provider *p, const struct yx_acquire_req *req)
{
	char	want[YX_CFG_PATH * 2];
	size_t	i;

	if (req->pool_key == NULL || p->cfg->pool_size <= 0)
		return false;
	/* the helper reaches the thread and the skills by name only */
	snprintf(want, sizeof(want), "%s/threads/%s/user-data",
	    p->cfg->saves_dir, req->thread_id);
	if (strcmp(want, req->user_data_host) != 0)
		return false;
	for (i = 0; i < req->nskills; i++) {
		snprintf(want, sizeof(want), "%s/%s", p->cfg->skills_dir,
		    req->skills[i].name);
		if (strcmp(want, req->skills[i].host_path) != 0)
			return false;
	}
	return true;
}

int
yx_prov_pool_dir(const struct yx_provider *p, const char *sub)
{
	char	path[YX_CFG_PATH + 32];
	int	fd;

	snprintf(path, sizeof(path), "%s/%s", p->cfg->saves_dir, sub);
	if (mkdir(path, 0711) == -1 && errno != EEXIST)
		return -1;
	fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	return fd;
}

/* The box's own uid from pool/<box>/uid; 0 when it has none. */
static unsigned
box_uid(const struct yx_provider *p, const char *box)
{
	char		path[YX_CFG_PATH + 64];
	unsigned	uid = 0;
	int		fd;

	snprintf(path, sizeof(path), "%s/%s/%s/%s", p->cfg->saves_dir,
	    YX_PRIV_POOL_DIR, box, YX_PRIV_BOX_UID);
	if ((fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK)) == -1)
		return 0;
	(void)yx_priv_uid_read(fd, &uid);
	close(fd);
	return uid;
}

int
yx_prov_box_clear(struct yx_provider *p, const char *box,
    struct yx_errctx *err)
{
	unsigned	uid = box_uid(p, box);
	int		fd, rc;

	if ((rc = yx_priv_pool_clear(box, err)) != YX_OK)
		return rc;
	/* its container is gone: the uid may serve another box or thread
	 * (uid 0, no file: a box that died before it wrote one may have
	 * claimed one all the same; a box of the shared user claimed none,
	 * and without a range there is nothing to scan) */
	yx_uid_release_box(p->cfg, uid, box);
	if ((fd = yx_prov_pool_dir(p, YX_POOL_RUN_DIR)) == -1)
		return yx_fail(err, YX_E_IO, "pool run directory: %s",
		    strerror(errno));
	rc = yx_tree_remove(fd, box);
	close(fd);
	if (rc != YX_OK)
		return yx_fail(err, rc, "pool box run directory not removed");
	return YX_OK;
}
