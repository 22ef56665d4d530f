/* SPDX-License-Identifier: MIT */
/*
 * tutil.h - small helpers shared by the Criterion tests.
 */
#ifndef TESTS_LIB_TUTIL_H
#define TESTS_LIB_TUTIL_H

/* Remove the tree at path, depth first, never following a symlink;
 * errors are ignored (test teardown). */
void	tutil_rmtree(const char *path);
/* A unix stream socket (type flags such as SOCK_NONBLOCK) bound at path and
 * listening; failures are Criterion assertions. Returns the descriptor. */
int	tutil_unix_listen(const char *path, int flags);
/* Drop every YUXI_* variable of the calling environment (Criterion
 * assertions), so that no setting of the caller reaches the test. */
void	tutil_clear_yuxi_env(void);
/* Lazily unmount (MNT_DETACH) whatever is mounted at or beneath dir,
 * deepest first (at most 64 mounts; test teardown, errors ignored). */
void	tutil_unmount_below(const char *dir);

#endif
