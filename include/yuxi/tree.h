/* SPDX-License-Identifier: MIT */
/*
 * yuxi/tree.h - opening and removing within a directory tree that a
 * sandbox controls (a thread's data, its agent directory), and random
 * hidden names.
 *
 * The sandbox can shape the tree at will - any depth, symlinks anywhere,
 * names swapped while the host works - so removal never follows a symlink
 * (unlinkat removes a link as a link; only real directories are entered,
 * openat O_NOFOLLOW|O_DIRECTORY), keeps a bounded number of descriptors
 * open, and can stop at a deadline, leaving the rest for a later call.
 */
#ifndef YUXI_TREE_H
#define YUXI_TREE_H

#include <sys/types.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * openat2(2) of name beneath dirfd, no symlink followed anywhere on the
 * way nor at the end (RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
 * RESOLVE_NO_MAGICLINKS, O_NOFOLLOW | O_CLOEXEC added to flags), and
 * without crossing a mount unless xdev; mode with O_CREAT. Retried while
 * the kernel answers EAGAIN (a rename elsewhere raced the lookup). The
 * fd, or -1 with errno (EXDEV: an escape was refused).
 */
int	yx_openat_beneath(int dirfd, const char *name, int flags, mode_t mode,
    bool xdev);

/*
 * Remove the tree `name` beneath directory `dirfd` without following any
 * symlink: iteratively, at any depth, with at most 32 directories open (a
 * deeper one is first moved up to the top of the tree under a hidden
 * name). An flock(2) on the top directory keeps two removers apart.
 * YX_OK (also when absent); YX_E_IO when something stayed; YX_E_BUSY when
 * another process is removing the same tree.
 */
int	yx_tree_remove(int dirfd, const char *name);
/*
 * The same within budget_ms (<= 0: no limit): YX_E_TIMEOUT when the time
 * ran out first. Whatever is left stays for a later call.
 */
int	yx_tree_remove_for(int dirfd, const char *name, int64_t budget_ms);
/* The same with an absolute yx_mono_ms() deadline (0: none). */
int	yx_tree_remove_until(int dirfd, const char *name, int64_t deadline);

/* A random hidden name "<prefix><16 hex>" into buf (len >= prefix + 17). */
void	yx_hidden_name(char *buf, size_t len, const char *prefix);
/* Write len bytes into a new file name of dirfd (0644, O_EXCL, not
 * following a symlink). YX_OK or errno-mapped. */
int	yx_file_put(int dirfd, const char *name, const void *data, size_t len);

#endif /* YUXI_TREE_H */
