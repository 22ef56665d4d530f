/* SPDX-License-Identifier: MIT */
/*
 * fake_driver.c - in-test container driver with a shared-memory "engine";
 * see fake_driver.h.
 */
#include "config.h"

#include <sys/mman.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fake_driver.h"

struct fake_driver {
	struct yx_driver	 base;
	struct fake_engine	*e;
};

static void
fake_lock(struct fake_engine *e)
{
	if (pthread_mutex_lock(&e->lock) == EOWNERDEAD)
		pthread_mutex_consistent(&e->lock);
}

static void
fake_unlock(struct fake_engine *e)
{
	pthread_mutex_unlock(&e->lock);
}

struct fake_engine *
fake_engine_new(void)
{
	struct fake_engine	*e;
	pthread_mutexattr_t	 a;

	e = mmap(NULL, sizeof(*e), PROT_READ | PROT_WRITE,
	    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (e == MAP_FAILED)
		return NULL;
	memset(e, 0, sizeof(*e));
	pthread_mutexattr_init(&a);
	pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
	pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
	pthread_mutex_init(&e->lock, &a);
	pthread_mutexattr_destroy(&a);
	return e;
}

void
fake_engine_free(struct fake_engine *e)
{
	if (e != NULL)
		munmap(e, sizeof(*e));
}

/* Locked: index of the container with id or name ref, or -1. */
static int
fake_find(struct fake_engine *e, const char *ref)
{
	int i;

	if (ref == NULL || ref[0] == '\0')
		return -1;
	for (i = 0; i < FAKE_MAX; i++)
		if (e->c[i].used && (strcmp(e->c[i].info.id, ref) == 0 || strcmp(e->c[i].info.name, ref) == 0))
			return i;
	return -1;
}

/* Locked: add a container. Index, or -1 when full. */
static int
fake_insert(struct fake_engine *e, const char *name, const char *thread,
    const char *sid, const char *fp, bool running)
{
	struct yx_container_info	*ci;
	int				 i;

	for (i = 0; i < FAKE_MAX; i++)
		if (!e->c[i].used)
			break;
	if (i == FAKE_MAX)
		return -1;
	ci = &e->c[i].info;
	memset(ci, 0, sizeof(*ci));
	snprintf(ci->id, sizeof(ci->id), "%016x%048x", ++e->seq, 0xabcu);
	snprintf(ci->name, sizeof(ci->name), "%s", name);
	snprintf(ci->thread_id, sizeof(ci->thread_id), "%s", thread);
	snprintf(ci->sandbox_id, sizeof(ci->sandbox_id), "%s", sid);
	snprintf(ci->skills_fp, sizeof(ci->skills_fp), "%s", fp ? fp : "");
	ci->running = running;
	ci->created = time(NULL);
	e->c[i].used = true;
	return i;
}

static int
fake_ping(struct yx_driver *d, struct yx_errctx *err)
{
	return YX_OK;
}

static int
fake_image_present(struct yx_driver *d, const char *image,
    struct yx_errctx *err)
{
	return YX_OK;
}

static void
fake_sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };

	while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
		;
}

static int
fake_create(struct yx_driver *d, const struct yx_container_spec *spec,
    struct yx_container_info *info, struct yx_errctx *err)
{
	struct fake_engine	*e = ((struct fake_driver *)d)->e;
	int			 i, delay, fail;

	fake_lock(e);
	e->create_calls++;
	e->last_host_port = spec->host_port;
	e->last_nmounts = (int)spec->nmounts;
	for (i = 0; i < (int)spec->nmounts && i < 8; i++) {
		snprintf(e->last_mount_host[i], 256, "%s", spec->mounts[i].host);
		snprintf(e->last_mount_target[i], 256, "%s",
		    spec->mounts[i].target);
	}
	delay = e->create_delay_ms;
	fail = e->fail_create;
	fake_unlock(e);
	if (delay > 0)
		fake_sleep_ms(delay);
	if (fail != 0)
		return yx_fail(err, fail, "fake engine refuses create");
	fake_lock(e);
	if (fake_find(e, spec->name) >= 0) {
		fake_unlock(e);
		return yx_fail(err, YX_E_FILE_EXISTS, "name in use");
	}
	i = fake_insert(e, spec->name, spec->thread_id, spec->sandbox_id,
	    spec->skills_fp, true);
	if (i >= 0)
		*info = e->c[i].info;
	fake_unlock(e);
	return i >= 0 ? YX_OK : yx_fail(err, YX_E_BACKEND_UNAVAILABLE, "full");
}

static int
fake_inspect(struct yx_driver *d, const char *ref,
    struct yx_container_info *info, struct yx_errctx *err)
{
	struct fake_engine	*e = ((struct fake_driver *)d)->e;
	int			 i, rc = YX_OK;

	fake_lock(e);
	e->inspect_calls++;
	if (e->fail_inspect != 0)
		rc = e->fail_inspect;
	else if ((i = fake_find(e, ref)) < 0)
		rc = YX_E_NOT_FOUND;
	else
		*info = e->c[i].info;
	fake_unlock(e);
	return rc == YX_OK ? rc : yx_fail(err, rc, "fake inspect");
}

static int
fake_start(struct yx_driver *d, const char *ref, struct yx_errctx *err)
{
	struct fake_engine	*e = ((struct fake_driver *)d)->e;
	int			 i;

	fake_lock(e);
	e->start_calls++;
	if ((i = fake_find(e, ref)) >= 0)
		e->c[i].info.running = true;
	fake_unlock(e);
	return i >= 0 ? YX_OK : yx_fail(err, YX_E_NOT_FOUND, "fake start");
}

static int
fake_remove(struct yx_driver *d, const char *ref, struct yx_errctx *err)
{
	struct fake_engine	*e = ((struct fake_driver *)d)->e;
	int			 i;

	fake_lock(e);
	e->remove_calls++;
	if ((i = fake_find(e, ref)) >= 0)
		e->c[i].used = false;
	fake_unlock(e);
	return YX_OK;
}

static int
fake_list(struct yx_driver *d, struct yx_container_info **out, size_t *n,
    struct yx_errctx *err)
{
	struct fake_engine	*e = ((struct fake_driver *)d)->e;
	struct yx_container_info *v;
	int			 i;

	*out = NULL;
	*n = 0;
	if ((v = calloc(FAKE_MAX, sizeof(*v))) == NULL)
		return YX_E_NOMEM;
	fake_lock(e);
	if (e->fail_list != 0) {
		fake_unlock(e);
		free(v);
		return yx_fail(err, e->fail_list, "fake list");
	}
	/* the driver contract: our label and our instance's name prefix */
	for (i = 0; i < FAKE_MAX; i++)
		if (e->c[i].used && strncmp(e->c[i].info.name, d->cfg->container_prefix, strlen(d->cfg->container_prefix)) == 0)
			v[(*n)++] = e->c[i].info;
	fake_unlock(e);
	*out = v;
	return YX_OK;
}

static int
fake_exec(struct yx_driver *d, const char *ref, const struct yx_exec_req *r,
    struct yx_exec_result *res, struct yx_errctx *err)
{
	return yx_fail(err, YX_E_INTERNAL, "fake driver does not exec");
}

static void
fake_free(struct yx_driver *d)
{
	free(d);
}

static const struct yx_driver_ops fake_ops = {
	.name = "fake",
	.ping = fake_ping,
	.image_present = fake_image_present,
	.create = fake_create,
	.inspect = fake_inspect,
	.start = fake_start,
	.remove = fake_remove,
	.list = fake_list,
	.exec = fake_exec,
	.free = fake_free,
};

struct yx_driver *
fake_driver_new(struct fake_engine *e, const struct yx_config *cfg)
{
	struct fake_driver *fd;

	if ((fd = calloc(1, sizeof(*fd))) == NULL)
		return NULL;
	fd->base.ops = &fake_ops;
	fd->base.cfg = cfg;
	fd->e = e;
	return &fd->base;
}

int
fake_add(struct fake_engine *e, const char *name, const char *thread,
    const char *sid, const char *fp, bool running)
{
	int i;

	fake_lock(e);
	i = fake_insert(e, name, thread, sid, fp, running);
	fake_unlock(e);
	return i;
}

int
fake_count(struct fake_engine *e)
{
	int i, n = 0;

	fake_lock(e);
	for (i = 0; i < FAKE_MAX; i++)
		n += e->c[i].used;
	fake_unlock(e);
	return n;
}

bool
fake_vanish(struct fake_engine *e, const char *name)
{
	int i;

	fake_lock(e);
	if ((i = fake_find(e, name)) >= 0)
		e->c[i].used = false;
	fake_unlock(e);
	return i >= 0;
}

bool
fake_stop(struct fake_engine *e, const char *name)
{
	int i;

	fake_lock(e);
	if ((i = fake_find(e, name)) >= 0)
		e->c[i].info.running = false;
	fake_unlock(e);
	return i >= 0;
}

bool
fake_get(struct fake_engine *e, const char *name,
    struct yx_container_info *out)
{
	int i;

	fake_lock(e);
	if ((i = fake_find(e, name)) >= 0)
		*out = e->c[i].info;
	fake_unlock(e);
	return i >= 0;
}
