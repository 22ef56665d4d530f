/* SPDX-License-Identifier: MIT */
/*
 * test_priv_snap.c - snapshots and transaction layers of the privileged
 * helper (src/priv/priv_snap.c) with the real thing: btrfs images on loop
 * devices, read-only snapshots, a restore that swaps the mount on
 * user-data, overlay layers. Needs root and mkfs.btrfs (skipped
 * otherwise).
 */
#include "config.h"

#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/vfs.h>

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "yuxi/priv.h"
#include "yuxi/threads.h"
#include "priv/priv_int.h"
#include "../lib/storetest.h"

#define QUOTA		(128LL << 20)
#define SID1		"s0123456789abcdef"
#define SID2		"s00000000000000aa"

static char			base[256];
static struct yx_config		cfg;
static struct yx_thread_store	st;
static bool			started;

static bool
possible(void)
{
	return geteuid() == 0 && access("/dev/loop-control", R_OK | W_OK) == 0 &&
	    access("/sbin/mkfs.btrfs", X_OK) == 0;
}

static void
setup(void)
{
	if (!possible())
		return;
	storetest_priv_open("yx-snap", base, sizeof(base), &cfg, &st, QUOTA,
	    YX_DISK_FS_BTRFS);
	started = true;
}

static void
teardown(void)
{
	if (started)
		storetest_priv_close(base, &st);
}

TestSuite(snap, .init = setup, .fini = teardown, .timeout = 120);

#define NEED()                                                                 \
	do {                                                                   \
		if (!possible())                                               \
			cr_skip_test("needs root, loop devices and mkfs.btrfs"); \
	} while (0)

static struct yx_thread
mk(const char *id)
{
	struct yx_thread	w = storetest_thread(id, "alice", ""), t;
	struct yx_errctx	e;
	bool			created;

	yx_errctx_clear(&e);
	cr_assert_eq(yx_thread_create(&st, &w, &t, &created, &e), YX_OK, "%s", e.msg);
	return t;
}

static const char *
ud(char *buf, size_t len, const char *id, const char *leaf)
{
	snprintf(buf, len, "%s/saves/threads/%s/user-data/%s", base, id, leaf);
	return buf;
}

static void
put(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	cr_assert_not_null(f, "%s: %s", path, strerror(errno));
	fputs(text, f);
	cr_assert_eq(fclose(f), 0);
}

static char *
get(const char *path, char *buf, size_t len)
{
	FILE	*f = fopen(path, "r");
	size_t	 n;

	if (f == NULL)
		return NULL;
	n = fread(buf, 1, len - 1, f);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

Test(snap, create_change_restore_and_delete)
{
	struct yx_priv_snap	sn;
	struct yx_errctx	e;
	char			p[512], b[64], list[256];

	NEED();
	mk("t1");
	put(ud(p, sizeof(p), "t1", "a"), "A1");
	put(ud(p, sizeof(p), "t1", "b"), "B1");
	yx_errctx_clear(&e);
	cr_assert_eq(yx_priv_snap_create("t1", SID1, &sn, &e), YX_OK, "%s", e.msg);
	cr_expect_gt(sn.otime, 0);
	cr_expect_lt(sn.excl, 1 << 20, "a new snapshot holds next to nothing: %llu",
	    (unsigned long long)sn.excl);
	cr_expect_eq(yx_priv_snap_create("t1", SID1, &sn, &e), YX_E_FILE_EXISTS);
	put(ud(p, sizeof(p), "t1", "a"), "A2");
	cr_assert_eq(unlink(ud(p, sizeof(p), "t1", "b")), 0);
	put(ud(p, sizeof(p), "t1", "c"), "C");
	cr_assert_eq(yx_priv_snap_list("t1", list, sizeof(list), &e), YX_OK, "%s", e.msg);
	cr_expect_str_eq(list, SID1 "\n");
	cr_assert_eq(yx_priv_snap_restore("t1", SID1, &e), YX_OK, "%s", e.msg);
	cr_expect_str_eq(get(ud(p, sizeof(p), "t1", "a"), b, sizeof(b)), "A1");
	cr_expect_str_eq(get(ud(p, sizeof(p), "t1", "b"), b, sizeof(b)), "B1");
	cr_expect_null(get(ud(p, sizeof(p), "t1", "c"), b, sizeof(b)));
	/* the restored files are writable, the snapshot is not touched */
	put(ud(p, sizeof(p), "t1", "a"), "A3");
	cr_assert_eq(yx_priv_snap_restore("t1", SID1, &e), YX_OK, "%s", e.msg);
	cr_expect_str_eq(get(ud(p, sizeof(p), "t1", "a"), b, sizeof(b)), "A1");
	cr_expect_eq(yx_priv_snap_delete("t1", SID1, &e), YX_OK, "%s", e.msg);
	cr_expect_eq(yx_priv_snap_info("t1", SID1, &sn, &e), YX_E_NOT_FOUND);
	cr_expect_eq(yx_priv_snap_restore("t1", SID1, &e), YX_E_NOT_FOUND);
	/* unmounted and mounted again (a restart): the restored live */
	cr_assert_eq(yx_priv_unmount("t1", &e), YX_OK, "%s", e.msg);
	cr_expect_null(get(ud(p, sizeof(p), "t1", "a"), b, sizeof(b)));
	cr_assert_eq(yx_priv_mount("t1", &e), YX_OK, "%s", e.msg);
	cr_expect_str_eq(get(ud(p, sizeof(p), "t1", "a"), b, sizeof(b)), "A1");
}

Test(snap, ids_and_names_are_checked)
{
	struct yx_priv_snap	sn;
	struct yx_errctx	e;
	struct priv_req		rq;
	struct priv_rep		rep;
	static const char *const bad[] = { "", "s", "../live", "live", "S0123456789abcdef",
		"s0123456789abcdeg", "s0123456789abcdef0", "s0123456789abcde/" };
	size_t			i;

	NEED();
	mk("t2");
	yx_errctx_clear(&e);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memset(&rq, 0, sizeof(rq));
		rq.op = PRIV_SNAP_CREATE;
		snprintf(rq.name, sizeof(rq.name), "t2");
		snprintf(rq.arg, sizeof(rq.arg), "%s", bad[i]);
		cr_expect_eq(priv_call(&rq, &rep, &e), YX_E_BAD_REQUEST, "%s", bad[i]);
	}
	/* a thread directory that is no thread's, or a path */
	cr_expect_eq(yx_priv_snap_create("../t2", SID1, &sn, &e), YX_E_BAD_REQUEST);
	cr_expect_eq(yx_priv_snap_create("nope", SID1, &sn, &e), YX_E_NOT_FOUND);
}

Test(snap, a_plain_thread_has_no_snapshots_but_a_layer)
{
	struct yx_priv_snap	sn;
	struct yx_errctx	e;
	enum yx_priv_kind	kind = 0;
	char			p[512], b[64];
	struct statfs		sf;

	NEED();
	st.disk_quota = 0;
	mk("t3");
	yx_errctx_clear(&e);
	cr_expect_eq(yx_priv_snap_create("t3", SID1, &sn, &e), YX_E_UNSUPPORTED);
	put(ud(p, sizeof(p), "t3", "a"), "A1");
	cr_assert_eq(yx_priv_tx_begin("t3", &kind, &e), YX_OK, "%s", e.msg);
	cr_expect_eq(kind, YX_PRIV_PLAIN);
	cr_expect_eq(yx_priv_tx_begin("t3", &kind, &e), YX_E_BUSY);
	snprintf(p, sizeof(p), "%s/saves/threads/t3/" YX_PRIV_TXM "/a", base);
	cr_assert_eq(statfs(p, &sf), 0);
	cr_expect_eq(sf.f_type, 0x794c7630, "an overlay");
	put(p, "A2");
	cr_expect_str_eq(get(ud(p, sizeof(p), "t3", "a"), b, sizeof(b)), "A1",
	    "the live file is untouched");
	snprintf(p, sizeof(p), "%s/saves/threads/t3/" YX_PRIV_TXDIR "/upper/a", base);
	cr_expect_str_eq(get(p, b, sizeof(b)), "A2", "the change is in the upper");
	cr_assert_eq(yx_priv_tx_clean("t3", &e), YX_OK, "%s", e.msg);
	cr_expect_null(get(p, b, sizeof(b)));
}

Test(snap, a_btrfs_layer_sits_on_a_base_snapshot)
{
	struct yx_errctx	e;
	enum yx_priv_kind	kind = 0;
	char			p[512], b[64];

	NEED();
	mk("t4");
	put(ud(p, sizeof(p), "t4", "a"), "A1");
	yx_errctx_clear(&e);
	cr_assert_eq(yx_priv_tx_begin("t4", &kind, &e), YX_OK, "%s", e.msg);
	cr_expect_eq(kind, YX_PRIV_BTRFS);
	/* a live change after the start is not seen by the layer */
	put(ud(p, sizeof(p), "t4", "a"), "LIVE");
	snprintf(p, sizeof(p), "%s/saves/threads/t4/" YX_PRIV_TXM "/a", base);
	cr_expect_str_eq(get(p, b, sizeof(b)), "A1");
	put(p, "TX");
	cr_assert_eq(yx_priv_tx_unmount("t4", &e), YX_OK, "%s", e.msg);
	snprintf(p, sizeof(p), "%s/saves/threads/t4/" YX_PRIV_VOL "/" YX_PRIV_TXDIR "/upper/a",
	    base);
	cr_expect_str_eq(get(p, b, sizeof(b)), "TX");
	cr_assert_eq(yx_priv_tx_clean("t4", &e), YX_OK, "%s", e.msg);
	cr_expect_str_eq(get(ud(p, sizeof(p), "t4", "a"), b, sizeof(b)), "LIVE");
	/* and the thread goes with its snapshots */
	cr_assert_eq(yx_priv_snap_create("t4", SID2, NULL, &e), YX_OK, "%s", e.msg);
	cr_assert_eq(yx_thread_remove(&st, "t4", "alice", &e), YX_OK, "%s", e.msg);
}
