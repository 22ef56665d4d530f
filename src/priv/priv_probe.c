/* SPDX-License-Identifier: MIT */
/*
 * priv_probe.c - what this host lets the service mount, asked before the
 * helper starts: whether the protections that are on by default (a pool
 * of pre-started boxes, a disk quota per thread; yx_config_settle) can be
 * given here. See include/yuxi/priv.h and docs/design.md §8.
 *
 * Both need CAP_SYS_ADMIN in the engine's mount namespace: a mount made
 * in a namespace of the service's own (systemd's PrivateMounts=,
 * ProtectSystem=) would never reach the sandboxes, which the engine makes
 * in the host's. The engine's namespace is taken to be init's (pid 1);
 * when /proc/1 cannot be read it is assumed to be ours. The quota also
 * needs loop devices (/dev/loop-control) and the mkfs of the images'
 * filesystem (mke2fs, or mkfs.btrfs: YUXI_THREAD_DISK_FS). The probe only looks:
 * it opens /dev/loop-control and closes it, it mounts nothing.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "yuxi/priv.h"
#include "priv/priv_int.h"

/* Is this process in init's mount namespace (or can that not be told)? */
static bool
probe_host_mounts(void)
{
	char	mine[64], init[64];
	ssize_t	a, b;

	if ((a = readlink("/proc/self/ns/mnt", mine, sizeof(mine) - 1)) <= 0 ||
	    (b = readlink("/proc/1/ns/mnt", init, sizeof(init) - 1)) <= 0)
		return true;
	mine[a] = init[b] = '\0';
	return strcmp(mine, init) == 0;
}

unsigned
yx_priv_probe(enum yx_disk_fs fs, char *why, size_t whylen)
{
	const char	*mkfs = fs == YX_DISK_FS_BTRFS ? YX_MKFS_BTRFS : YX_MKE2FS;
	unsigned	 can = 0;
	int		 fd;

	if (why != NULL && whylen > 0)
		why[0] = '\0';
	if (!priv_capable()) {
		if (why != NULL)
			snprintf(why, whylen, "no CAP_SYS_ADMIN (the service is "
					      "not root, or not granted it)");
		return 0;
	}
	if (!probe_host_mounts()) {
		if (why != NULL)
			snprintf(why, whylen, "in a mount namespace of its own, "
					      "not the engine's: its mounts would "
					      "not reach the sandboxes");
		return 0;
	}
	can |= YX_PROTECT_POOL;
	if ((fd = open("/dev/loop-control", O_RDWR | O_CLOEXEC)) == -1) {
		if (why != NULL)
			snprintf(why, whylen, "no loop devices: /dev/loop-control: %s",
			    strerror(errno));
		return can;
	}
	close(fd);
	if (access(mkfs, X_OK) == -1) {
		if (why != NULL)
			snprintf(why, whylen, "no %s (%s): %s", mkfs,
			    fs == YX_DISK_FS_BTRFS ? "btrfs-progs" : "e2fsprogs",
			    strerror(errno));
		return can;
	}
	return can | YX_PROTECT_QUOTA;
}
