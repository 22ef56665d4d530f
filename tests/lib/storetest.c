/* SPDX-License-Identifier: MIT */
/*
 * storetest.c - the thread store fixture (storetest.h).
 */
#include "config.h"

#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "yuxi/priv.h"
#include "yuxi/tree.h"
#include "priv/priv_int.h"
#include "storetest.h"
#include "tutil.h"

void
storetest_open(const char *name, char *base, size_t basesz,
    struct yx_config *cfg, struct yx_thread_store *st)
{
	snprintf(base, basesz, "/tmp/%s-XXXXXX", name);
	cr_assert_not_null(mkdtemp(base));
	yx_config_defaults(cfg);
	snprintf(cfg->saves_dir, sizeof(cfg->saves_dir), "%s/saves", base);
	cr_assert_eq(yx_thread_store_init(st, cfg, NULL), YX_OK);
}

void
storetest_priv_open(const char *name, char *base, size_t basesz,
    struct yx_config *cfg, struct yx_thread_store *st, long long quota,
    int fs)
{
	struct yx_errctx e;

	storetest_open(name, base, basesz, cfg, st);
	cfg->thread_disk_quota = quota;
	cfg->disk_fs = (enum yx_disk_fs)fs;
	st->disk_quota = quota;
	st->disk_fs = fs;
	yx_errctx_clear(&e);
	cr_assert_eq(priv_start(cfg, false, &e), YX_OK, "%s", e.msg);
}

void
storetest_close(const char *base, struct yx_thread_store *st)
{
	int fd;

	yx_thread_store_fini(st);
	fd = open("/tmp", O_RDONLY | O_DIRECTORY);
	yx_tree_remove(fd, base + strlen("/tmp/"));
	close(fd);
}

void
storetest_priv_close(const char *base, struct yx_thread_store *st)
{
	yx_priv_stop();
	tutil_unmount_below(base);
	storetest_close(base, st);
}

struct yx_thread
storetest_thread(const char *id, const char *owner, const char *agent_id)
{
	struct yx_thread t;

	memset(&t, 0, sizeof(t));
	snprintf(t.thread_id, sizeof(t.thread_id), "%s", id);
	snprintf(t.owner, sizeof(t.owner), "%s", owner);
	snprintf(t.agent_id, sizeof(t.agent_id), "%s", agent_id);
	return t;
}
