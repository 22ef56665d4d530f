/* SPDX-License-Identifier: MIT */
/*
 * helpers.h - fixtures for the broker tests: a throw-away tree under /tmp
 * holding a thread's user-data root, a skills root and an "outside" area
 * with a distinctive secret that must never come back through the broker.
 *
 * With YX_TEST_DISK_QUOTA set (a size, e.g. 64m; as root) the user-data
 * root is a thread disk image made and mounted by the real privileged
 * helper (src/priv), as with YUXI_THREAD_DISK_QUOTA: every broker test then
 * runs beneath a mount of its own (fx.quota).
 */
#ifndef YUXI_TEST_BROKER_HELPERS_H
#define YUXI_TEST_BROKER_HELPERS_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

#include "yuxi/broker.h"

#define FX_SECRET	"OUTSIDE-SECRET-7f3a9c1e"
#define FX_UID		1000
#define FX_GID		1000

struct fx {
	char		top[64];		/* the temp tree */
	char		ud[128];		/* user-data root */
	char		skills[128];		/* skills root */
	char		out[128];		/* outside directory */
	char		secret[192];		/* outside/secret.txt */
	struct yx_broker b;
	bool		 open;
	bool		 quota;			/* user-data is a disk image */
};

extern struct fx fx;

/* Build the tree and open fx.b (limits may be NULL). Aborts on failure. */
void	fx_setup_lim(const struct yx_broker_limits *lim);
void	fx_setup(void);
/* Close fx.b and remove the tree. */
void	fx_teardown(void);
/* Reopen fx.b with other limits. */
void	fx_reopen(const struct yx_broker_limits *lim);

/* Host-side helpers (paths relative to fx.ud unless absolute). */
char	*fx_path(const char *rel);		/* static buffer */
void	 fx_put(const char *rel, const void *data, size_t len);
void	 fx_puts(const char *rel, const char *s);
void	 fx_mkdir(const char *rel);
void	 fx_symlink(const char *target, const char *rel);
/* A hardlink at rel to the outside secret. On a disk image (fx.quota) it
 * cannot exist: link(2) must fail with EXDEV, and the test is skipped. */
void	 fx_link_secret(const char *rel);
/* Whole file into a heap NUL-terminated buffer (NULL if absent). */
char	*fx_slurp(const char *abspath, size_t *lenp);
/* Names in directory rel of the user-data root, joined by ',' (static). */
const char *fx_names(const char *rel);
/* Remove a tree (no symlink followed). */
void	 fx_rmrf(const char *path);

#endif
