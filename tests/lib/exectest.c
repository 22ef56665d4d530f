/* SPDX-License-Identifier: MIT */
/*
 * exectest.c - the executor fixture of the real-engine tests (exectest.h).
 */
#include "config.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "yuxi/provider.h"
#include "exectest.h"
#include "tutil.h"

struct exectest xt;

void
exectest_config(const char *tag, const char *image)
{
	char		eb[256];
	static int	seq;

	cr_assert_eq(yx_config_load(&xt.cfg, eb, sizeof(eb)), YX_OK, "%s", eb);
	snprintf(xt.cfg.image, sizeof(xt.cfg.image), "%s", image);
	/* YUXI_TEST_RUNTIME=runsc: the same tests under gVisor */
	if (getenv("YUXI_TEST_RUNTIME") != NULL && getenv("YUXI_TEST_RUNTIME")[0] != '\0')
		snprintf(xt.cfg.runtime, sizeof(xt.cfg.runtime), "%s",
		    getenv("YUXI_TEST_RUNTIME"));
	snprintf(xt.cfg.container_prefix, sizeof(xt.cfg.container_prefix),
	    "%s%d-%d-", tag, (int)getpid(), seq);
	snprintf(xt.cfg.shm_name, sizeof(xt.cfg.shm_name), "/%s-%d-%d", tag,
	    (int)getpid(), seq++);
	snprintf(xt.saves, sizeof(xt.saves), "/tmp/%s-%d-XXXXXX", tag,
	    (int)getpid());
	cr_assert_not_null(mkdtemp(xt.saves));
	snprintf(xt.cfg.saves_dir, sizeof(xt.cfg.saves_dir), "%s", xt.saves);
	xt.cfg.max_replicas = 8;
}

void
exectest_open(enum yx_exec_transport t)
{
	struct yx_errctx	e;

	yx_errctx_clear(&e);
	cr_assert_eq(yx_table_open(&xt.table, xt.cfg.shm_name, 8,
			 YX_TABLE_CREATE, &e),
	    YX_OK, "%s", e.msg);
	cr_assert_not_null(xt.drv = yx_driver_new(&xt.cfg, &e), "%s", e.msg);
	cr_assert_not_null(xt.ex = yx_executor_new(&xt.cfg, xt.table, xt.drv,
			       &e),
	    "%s", e.msg);
	yx_executor_set_transport(xt.ex, t);
	cr_assert_eq(yx_thread_store_init(&xt.store, &xt.cfg, &e), YX_OK,
	    "%s", e.msg);
}

/* Remove every container named with our prefix. */
static void
remove_our_containers(void)
{
	struct yx_container_info	*list = NULL;
	size_t				 n = 0, i;
	size_t				 plen = strlen(xt.cfg.container_prefix);

	if (xt.drv == NULL ||
	    xt.drv->ops->list(xt.drv, &list, &n, NULL) != YX_OK)
		return;
	for (i = 0; i < n; i++)
		if (strncmp(list[i].name, xt.cfg.container_prefix, plen) == 0)
			xt.drv->ops->remove(xt.drv, list[i].id, NULL);
	free(list);
}

void
exectest_close(void)
{
	remove_our_containers();
	yx_executor_free(xt.ex);
	yx_thread_store_fini(&xt.store);
	yx_driver_free(xt.drv);
	yx_table_close(xt.table);
	yx_table_unlink(xt.cfg.shm_name);
	if (xt.saves[0] != '\0')
		tutil_rmtree(xt.saves);
	xt.ex = NULL;
	xt.drv = NULL;
	xt.table = NULL;
	xt.saves[0] = '\0';
}

void
exectest_thread(const char *tid, struct yx_thread *t)
{
	struct yx_thread	want = { 0 };
	struct yx_errctx	e;
	bool			created;

	snprintf(want.thread_id, sizeof(want.thread_id), "%s", tid);
	snprintf(want.owner, sizeof(want.owner), "tester");
	yx_errctx_clear(&e);
	cr_assert_eq(yx_thread_create(&xt.store, &want, t, &created, &e),
	    YX_OK, "%s", e.msg);
}

int
exectest_try_run(const char *tid, const char *cmd, int timeout,
    struct yx_exec_output *out, struct yx_errctx *e)
{
	struct yx_exec_request	req = { 0 };
	struct yx_thread	t;

	exectest_thread(tid, &t);
	yx_exec_request_thread(&req, &t);
	req.command = cmd;
	req.timeout_sec = timeout;
	yx_errctx_clear(e);
	return yx_executor_run(xt.ex, &req, out, e);
}

void
exectest_run(const char *tid, const char *cmd, int timeout,
    struct yx_exec_output *out)
{
	struct yx_errctx	e;
	int			rc = exectest_try_run(tid, cmd, timeout, out, &e);

	cr_assert_eq(rc, YX_OK, "exec '%s': %s (%s)", cmd, yx_strerror(rc),
	    e.msg);
}

void
exectest_expect(const char *tid, const char *cmd, const char *want)
{
	struct yx_exec_output out;

	exectest_run(tid, cmd, 0, &out);
	if (want != NULL)
		cr_assert_str_eq(out.output, want, "exec '%s'", cmd);
	yx_exec_output_fini(&out);
}

void
exectest_container_of(const char *tid, char *id, size_t idlen)
{
	struct yx_provider_snapshot	snap;
	size_t				i;

	id[0] = '\0';
	cr_assert_eq(yx_provider_list(yx_executor_provider(xt.ex), &snap,
			 NULL),
	    YX_OK);
	for (i = 0; i < snap.nslots; i++)
		if (strcmp(snap.slots[i].thread_id, tid) == 0)
			snprintf(id, idlen, "%s", snap.slots[i].container_id);
	yx_provider_snapshot_fini(&snap);
	cr_assert(id[0] != '\0', "no sandbox for %s", tid);
}
