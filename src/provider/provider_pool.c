/* SPDX-License-Identifier: MIT */
/*
 * provider_pool.c - pre-started sandboxes (YUXI_POOL_SIZE; docs/design.md
 * §2 "Pool"): the reaper's refill and sweep, and what acquire needs to
 * know about boxes. Assignment itself is a step of acquire (provider.c).
 *
 * A box's life in the table: a free slot is claimed CREATING for it (no
 * thread; sandbox id and container name are the box's name) before its
 * directories exist, so a box directory always has a slot until the box
 * is gone; the container is made with its user-data and skills
 * directories bound rslave, then the slot is published POOLED. Only this
 * file makes a slot POOLED, and only for a container it has just made:
 * a box that served a thread never goes back. A claim that dies is voided
 * by the table repair; its container then has no slot and no thread label
 * and reconcile removes it; its directory has no slot and the sweep clears
 * it (the helper unmounts whatever is below it first).
 */
#include "config.h"

#include <sys/random.h>
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "yuxi/log.h"
#include "yuxi/priv.h"
#include "yuxi/threads.h"
#include "yuxi/tree.h"
#include "provider/provider_int.h"

/* A fresh box name into name[YX_SHM_SANDBOX_ID_MAX]. */
static int
pool_name(char *name)
{
	unsigned char	r[YX_PRIV_BOX_HEX / 2];
	size_t		i, n;

	if (getrandom(r, sizeof(r), 0) != (ssize_t)sizeof(r))
		return YX_E_IO;
	n = (size_t)snprintf(name, YX_SHM_SANDBOX_ID_MAX, "%s",
	    YX_PRIV_BOX_PREFIX);
	for (i = 0; i < sizeof(r); i++)
		n += (size_t)snprintf(name + n, YX_SHM_SANDBOX_ID_MAX - n,
		    "%02x", r[i]);
	return YX_OK;
}

/*
 * Locked: how many boxes of key are ready or being made, and claim a free
 * slot CREATING for one more when below the size and the limit. Returns
 * the slot index, or -1 (enough, or no room).
 */
static int
pool_claim(struct yx_provider *p, const struct yx_pool_spec *ps,
    const struct yx_shm_pid *me, const char *box, uint64_t *gen)
{
	struct yx_table		*t = p->table;
	struct yx_shm_slot	*s;
	uint32_t		 i, have = 0, used = 0;
	int			 f = -1;

	for (i = 0; i < t->hdr->capacity; i++) {
		s = &t->slots[i];
		if (s->state == YX_SLOT_FREE) {
			if (f < 0)
				f = (int)i;
			continue;
		}
		used++;
		if ((s->state == YX_SLOT_POOLED ||
			(s->state == YX_SLOT_CREATING &&
			    s->thread_id[0] == '\0')) &&
		    yx_provider_is_box(s->sandbox_id) &&
		    strcmp(s->skills_fp, ps->key.fp) == 0)
			have++;
	}
	if (have >= (uint32_t)p->cfg->pool_size || used >= yx_prov_limit(p) ||
	    f < 0)
		return -1;
	s = &t->slots[f];
	yx_table_slot_clear(t, s);
	s->generation = ++t->hdr->generation;
	*gen = s->generation;
	(void)yx_strlcpy(s->sandbox_id, box, sizeof(s->sandbox_id));
	snprintf(s->container_name, sizeof(s->container_name), "%s%s",
	    p->cfg->container_prefix, box);
	(void)yx_strlcpy(s->skills_fp, ps->key.fp, sizeof(s->skills_fp));
	yx_prov_claim(p, s, me, YX_SLOT_CREATING);
	return f;
}

/*
 * The box's directories: pool/<box>/{user-data,skills} (ours, 0755) and
 * boxrun/<box> (the sandbox user's, 0700). With a uid range the box claims
 * a uid of its own (*own_uid, and *uid, *gid become it; 0 when there is no
 * range) and gets pool/<box>/uid (read by the helper and by the box's
 * removal, which frees the uid) and its passwd and group files. YX_OK,
 * YX_E_CAPACITY (no uid left) or YX_E_IO.
 */
static int
pool_mkdirs(struct yx_provider *p, const struct yx_pool_spec *ps,
    const char *box, unsigned *uid, unsigned *gid, unsigned *own_uid)
{
	int pfd = -1, bfd = -1, rfd = -1, rc = YX_E_IO;

	/* the directory first: a box that dies after its claim is found by
	 * its directory, and its claim by name (yx_prov_box_clear) */
	if ((pfd = yx_prov_pool_dir(p, YX_PRIV_POOL_DIR)) == -1 ||
	    mkdirat(pfd, box, 0755) == -1 ||
	    (bfd = openat(pfd, box, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) == -1)
		goto done;
	if ((rc = yx_uid_claim_box(p->cfg, box, own_uid)) == YX_OK)
		*uid = *gid = *own_uid;
	else if (rc != YX_E_NOT_FOUND)	/* a range, but no uid of it */
		goto done;
	rc = YX_E_IO;
	if ((*own_uid != 0 && yx_priv_uid_write(bfd, *own_uid) != YX_OK) ||
	    mkdirat(bfd, "user-data", 0755) == -1 ||
	    mkdirat(bfd, "skills", 0755) == -1 ||
	    (*own_uid != 0 && yx_thread_etc_write(bfd, *uid, *gid) != YX_OK))
		goto done;
	if (ps->run_target != NULL &&
	    ((rfd = yx_prov_pool_dir(p, YX_POOL_RUN_DIR)) == -1 ||
		mkdirat(rfd, box, 0700) == -1 ||
		fchownat(rfd, box, *uid, *gid, AT_SYMLINK_NOFOLLOW) == -1))
		goto done;
	rc = YX_OK;
done:
	if (rc != YX_OK)
		log_warn("pool box %s: directories", box);
	if (rfd != -1)
		close(rfd);
	if (bfd != -1)
		close(bfd);
	if (pfd != -1)
		close(pfd);
	return rc;
}

/*
 * Unlocked, slot claimed: make box's directories and container. With a
 * uid range the box claims a uid of its own (*own_uid; 0 when it runs as
 * the shared user), freed when the box is removed (yx_prov_box_clear).
 */
static int
pool_make(struct yx_provider *p, const struct yx_pool_spec *ps,
    const char *box, const char *name, struct yx_container_info *info,
    unsigned *own_uid, struct yx_errctx *err)
{
	struct yx_container_spec	 spec;
	struct yx_mount			 slave[2], *m = NULL;
	char				 ud[YX_CFG_PATH + 128], sk[YX_CFG_PATH + 128];
	char				 run[YX_CFG_PATH + 128];
	char				 etc[2][YX_CFG_PATH + 128];
	unsigned			 uid = ps->uid, gid = ps->gid;
	size_t				 n = ps->nextra, i;
	int				 rc;

	*own_uid = 0;
	if (uid == 0) {
		uid = p->cfg->uid;
		gid = p->cfg->gid;
	}
	/* on failure the caller removes the box, which frees its uid */
	if ((rc = pool_mkdirs(p, ps, box, &uid, &gid, own_uid)) != YX_OK)
		return yx_fail(err, rc, "cannot make the pool box's directories");
	snprintf(ud, sizeof(ud), "%s/%s/%s/user-data", p->cfg->saves_dir,
	    YX_PRIV_POOL_DIR, box);
	snprintf(sk, sizeof(sk), "%s/%s/%s/skills", p->cfg->saves_dir,
	    YX_PRIV_POOL_DIR, box);
	snprintf(run, sizeof(run), "%s/%s/%s", p->cfg->saves_dir,
	    YX_POOL_RUN_DIR, box);
	slave[0] = (struct yx_mount){ ud, YX_USER_DATA_TARGET, false };
	slave[1] = (struct yx_mount){ sk, YX_SKILLS_TARGET, true };
	if ((m = calloc(ps->nextra + 3, sizeof(*m))) == NULL)
		return yx_fail(err, YX_E_NOMEM, NULL);
	if (ps->nextra > 0)
		memcpy(m, ps->extra, ps->nextra * sizeof(*m));
	if (ps->run_target != NULL)
		m[n++] = (struct yx_mount){ run, ps->run_target, false };
	for (i = 0; *own_uid != 0 && i < 2; i++) {
		snprintf(etc[i], sizeof(etc[i]), "%s/%s/%s/%s", p->cfg->saves_dir,
		    YX_PRIV_POOL_DIR, box, i == 0 ? "passwd" : "group");
		m[n++] = (struct yx_mount){ etc[i],
			i == 0 ? "/etc/passwd" : "/etc/group", true };
	}
	memset(&spec, 0, sizeof(spec));
	spec.name = name;
	spec.image = ps->key.image;
	spec.thread_id = "";
	spec.sandbox_id = box;
	spec.skills_fp = ps->key.fp;
	spec.mounts = m;
	spec.nmounts = n;
	spec.slave = slave;
	spec.nslave = 2;
	spec.uid = uid;
	spec.gid = gid;
	spec.cmd = ps->cmd;
	spec.cfg = ps->settings != NULL ? ps->settings : p->cfg;
	rc = p->driver->ops->create(p->driver, &spec, info, err);
	free(m);
	return rc;
}

/* One more box when the pool is short. YX_OK (*made: one was started,
 * else none was needed or possible) or an error. */
static int
pool_one(struct yx_provider *p, const struct yx_pool_spec *ps,
    const struct yx_shm_pid *me, bool *made, struct yx_errctx *err)
{
	struct yx_container_info	 info;
	struct yx_shm_slot		*s;
	char				 box[YX_SHM_SANDBOX_ID_MAX];
	char				 name[YX_SHM_CONTAINER_NAME_MAX];
	uint64_t			 gen = 0;
	unsigned			 uid = 0;
	int				 idx, rc, lrc;

	*made = false;
	if ((rc = pool_name(box)) != YX_OK)
		return yx_fail(err, rc, "no random box name");
	if ((rc = yx_table_lock(p->table, err)) != YX_OK)
		return rc;
	idx = pool_claim(p, ps, me, box, &gen);
	if (idx >= 0)
		(void)yx_strlcpy(name, p->table->slots[idx].container_name,
		    sizeof(name));
	yx_table_unlock(p->table);
	if (idx < 0)
		return YX_OK;
	s = &p->table->slots[idx];
	memset(&info, 0, sizeof(info));
	rc = pool_make(p, ps, box, name, &info, &uid, err);
	if (rc != YX_OK)
		YX_PROV_METRIC(p, engine_errors);
	if ((lrc = yx_prov_lock_hard(p)) != YX_OK)
		return rc != YX_OK ? rc : lrc;	/* the repair voids it */
	if (rc == YX_OK && yx_prov_owned(s, gen, me, YX_SLOT_CREATING)) {
		(void)yx_strlcpy(s->container_id, info.id,
		    sizeof(s->container_id));
		memset(&s->owner, 0, sizeof(s->owner));
		s->uid = uid;
		s->created_at = s->last_used_at = yx_now_ms();
		yx_table_set_state(p->table, s, YX_SLOT_POOLED);
		yx_table_unlock(p->table);
		YX_PROV_METRIC(p, pool_made);
		*made = true;
		return YX_OK;
	}
	if (yx_prov_owned(s, gen, me, YX_SLOT_CREATING)) {
		yx_prov_claim(p, s, me, YX_SLOT_DESTROYING);
		yx_table_unlock(p->table);
		(void)yx_prov_destroy_claimed(p, (uint32_t)idx, gen, me, name,
		    NULL);
	} else
		yx_table_unlock(p->table);	/* lost: reconcile and sweep */
	return rc != YX_OK ? rc :
			     yx_fail(err, YX_E_INTERNAL, "pool claim lost");
}

/*
 * Remove one box of another key (made before a reload changed the
 * settings): it would never be taken. YX_OK (*done: one was removed) or
 * an error.
 */
static int
pool_retire(struct yx_provider *p, const struct yx_pool_spec *ps,
    const struct yx_shm_pid *me, bool *done, struct yx_errctx *err)
{
	struct yx_table		*t = p->table;
	struct yx_shm_slot	*s;
	char			 ref[YX_SHM_CONTAINER_NAME_MAX];
	uint64_t		 gen = 0;
	uint32_t		 i;
	int			 idx = -1, rc;

	if ((rc = yx_table_lock(t, err)) != YX_OK)
		return rc;
	for (i = 0; i < t->hdr->capacity && idx < 0; i++) {
		s = &t->slots[i];
		if (s->state == YX_SLOT_POOLED &&
		    strcmp(s->skills_fp, ps->key.fp) != 0) {
			(void)yx_strlcpy(ref, yx_prov_ref(s), sizeof(ref));
			yx_prov_claim(p, s, me, YX_SLOT_DESTROYING);
			gen = s->generation;
			idx = (int)i;
		}
	}
	yx_table_unlock(t);
	*done = false;
	if (idx < 0)
		return YX_OK;
	log_info("pool box %s: settings changed; removing",
	    t->slots[idx].sandbox_id);
	rc = yx_prov_destroy_claimed(p, (uint32_t)idx, gen, me, ref, err);
	*done = rc == YX_OK;
	return rc;
}

int
yx_provider_pool_fill(struct yx_provider *p, const struct yx_pool_spec *ps,
    unsigned *nmade, struct yx_errctx *err)
{
	struct yx_shm_pid	me;
	unsigned		n = 0;
	bool			done = true;
	int			i, rc = YX_OK;

	if (nmade != NULL)
		*nmade = 0;
	if (p->cfg->pool_size <= 0)
		return YX_OK;
	yx_proc_self(&me);
	for (i = 0; i < 64 && rc == YX_OK && done; i++)
		rc = pool_retire(p, ps, &me, &done, err);
	if (rc != YX_OK)
		return rc;
	done = true;
	for (i = 0; i < p->cfg->pool_size && rc == YX_OK && done; i++)
		if ((rc = pool_one(p, ps, &me, &done, err)) == YX_OK && done)
			n++;
	if (nmade != NULL)
		*nmade = n;
	return rc;
}

/* Locked: does a slot name box? */
static bool
pool_known(struct yx_table *t, const char *box)
{
	return yx_table_find_sandbox(t, box) >= 0;
}

/* Names of the box directories of <saves>/<sub> that no slot names. */
static size_t
pool_orphans(struct yx_provider *p, const char *sub,
    char (*out)[YX_SHM_SANDBOX_ID_MAX], size_t max)
{
	struct dirent	*de;
	DIR		*d;
	size_t		 n = 0;
	int		 fd;

	if ((fd = yx_prov_pool_dir(p, sub)) == -1)
		return 0;
	if ((d = fdopendir(fd)) == NULL) {
		close(fd);
		return 0;
	}
	if (yx_table_lock(p->table, NULL) == YX_OK) {
		while (n < max && (de = readdir(d)) != NULL)
			if (yx_provider_is_box(de->d_name) &&
			    !pool_known(p->table, de->d_name))
				(void)yx_strlcpy(out[n++], de->d_name,
				    YX_SHM_SANDBOX_ID_MAX);
		yx_table_unlock(p->table);
	}
	closedir(d);
	return n;
}

int
yx_provider_pool_sweep(struct yx_provider *p, unsigned *ncleared,
    struct yx_errctx *err)
{
	char(*names)[YX_SHM_SANDBOX_ID_MAX];
	char	ref[YX_SHM_CONTAINER_NAME_MAX];
	size_t	n, i, max = 256;
	int	rc, first = YX_OK;

	if (ncleared != NULL)
		*ncleared = 0;
	if ((names = calloc(max, sizeof(*names))) == NULL)
		return yx_fail(err, YX_E_NOMEM, NULL);
	n = pool_orphans(p, YX_PRIV_POOL_DIR, names, max);
	n += pool_orphans(p, YX_POOL_RUN_DIR, names + n, max - n);
	for (i = 0; i < n; i++) {
		log_info("pool box %s: no slot names it; clearing", names[i]);
		/* its container first (reconcile may not have seen it yet):
		 * the box's uid is free only once nothing runs as it */
		snprintf(ref, sizeof(ref), "%s%s", p->cfg->container_prefix,
		    names[i]);
		if ((rc = yx_prov_remove(p, ref, err)) == YX_OK)
			rc = yx_prov_box_clear(p, names[i], err);
		if (rc != YX_OK &&
		    first == YX_OK)
			first = rc;
		else if (rc == YX_OK && ncleared != NULL)
			(*ncleared)++;
	}
	free(names);
	return first;
}
