/* SPDX-License-Identifier: MIT */
/*
 * test_slots.c - a sandbox host's share of a front's workers
 * (src/daemon/slots.c, YUXI_HOST_CALLS, docs/scaling.md "Failure"): how
 * many calls one host may hold at once, and the slots themselves as the
 * workers take them (each call opens the host's file anew, so two calls
 * of one process conflict as two workers' would).
 */
#include "config.h"

#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "daemon/daemon_int.h"
#include "yuxi/config.h"
#include "yuxi/error.h"
#include "yuxi/tree.h"

/* workers, YUXI_HOST_CALLS, hosts -> the cap (0: none) */
static const int caps[][4] = {
	{ 4, 0, 2, 2 },		/* default: half the workers */
	{ 16, 0, 5, 8 },
	{ 3, 0, 2, 1 },		/* at least one */
	{ 1, 0, 2, 0 },		/* one worker: nothing to keep */
	{ 16, 3, 5, 3 },	/* as set */
	{ 4, 4, 2, 0 },		/* the workers or more: no cap */
	{ 3, 256, 2, 0 },
	{ 16, 3, 1, 0 },	/* one host: no other host to keep workers for */
};

Test(slots, host_cap)
{
	struct yx_config	cfg;
	size_t			i;

	for (i = 0; i < sizeof(caps) / sizeof(caps[0]); i++) {
		yx_config_defaults(&cfg);
		cfg.workers = caps[i][0];
		cfg.host_calls = caps[i][1];
		cr_expect_eq(yx_slots_per_host(&cfg, (size_t)caps[i][2]), caps[i][3],
		    "workers %d, YUXI_HOST_CALLS %d, %d hosts: %d", caps[i][0], caps[i][1],
		    caps[i][2], yx_slots_per_host(&cfg, (size_t)caps[i][2]));
	}
}

Test(slots, host_slots_taken_and_given)
{
	struct yx_config	cfg;
	char			dir[] = "/tmp/yx-slots-XXXXXX";
	int			a = -1, b = -1, c = -1, d = -1;

	cr_assert_not_null(mkdtemp(dir));
	yx_config_defaults(&cfg);
	snprintf(cfg.saves_dir, sizeof(cfg.saves_dir), "%s", dir);
	cfg.workers = 4;	/* two calls per host */
	cr_assert_eq(yx_slot_host_take(&cfg, 2, "p1", &a), YX_OK);
	cr_assert_eq(yx_slot_host_take(&cfg, 2, "p1", &b), YX_OK);
	cr_assert(a != -1 && b != -1);
	cr_assert_eq(yx_slot_host_take(&cfg, 2, "p1", &c), YX_E_BUSY);
	cr_assert_eq(c, -1);
	/* another host's calls are not this one's */
	cr_assert_eq(yx_slot_host_take(&cfg, 2, "p2", &d), YX_OK);
	yx_slot_host_give(d);
	yx_slot_host_give(a);
	cr_assert_eq(yx_slot_host_take(&cfg, 2, "p1", &c), YX_OK);
	yx_slot_host_give(b);
	yx_slot_host_give(c);
	yx_slot_host_give(-1);
	/* one host: nothing counted */
	cr_assert_eq(yx_slot_host_take(&cfg, 1, "p1", &a), YX_OK);
	cr_assert_eq(a, -1);
	cr_assert_eq(yx_tree_remove(AT_FDCWD, dir), YX_OK);
}
