/* SPDX-License-Identifier: MIT */
/*
 * etc_hosts.c - the /etc/hosts of the sandboxes: <saves>/etc/hosts,
 * bind-mounted read-only into every container.
 *
 * The engine writes one per container when it sets up the container's
 * network, even for network mode "none" (localhost, ip6-localhost and the
 * IPv6 multicast names). A sandbox that mounts its own /etc/hosts lets the
 * driver skip that setup (Config.NetworkDisabled, src/driver/spec.c: the
 * runtime then gives the container a network namespace of its own with
 * only the loopback interface); this file keeps the same names resolving.
 * Its text is fixed: nothing of the host or of a thread is in it.
 *
 * Also the sandboxes' /mnt: <saves>/mnt, bind-mounted read-only at /mnt,
 * holds two symlinks, user-data -> /home/yuxi/user-data and skills ->
 * /home/yuxi/skills, so seed 000's paths (/mnt/user-data/workspace/app.py)
 * name the same files inside every sandbox. The links resolve inside the
 * sandbox's own mount namespace, so a pool box, whose user-data is bound
 * after it started, sees its thread's files there too; nothing on the
 * host ever follows them.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "yuxi/error.h"
#include "yuxi/log.h"
#include "yuxi/path.h"
#include "yuxi/replace.h"
#include "exec/exec_int.h"

#define HOSTS_DIR	"etc"
#define HOSTS_NAME	"hosts"
#define MNT_DIR		"mnt"

static const char *const mnt_links[][2] = {
	{ "user-data", YX_VROOT_USER_DATA },
	{ "skills", YX_VROOT_SKILLS },
};

/* What the engine writes for network mode "none". */
static const char hosts_text[] = "127.0.0.1\tlocalhost\n"
				 "::1\tlocalhost ip6-localhost ip6-loopback\n"
				 "fe00::0\tip6-localnet\n"
				 "ff00::0\tip6-mcastprefix\n"
				 "ff02::1\tip6-allnodes\n"
				 "ff02::2\tip6-allrouters\n";

/* True when dfd/HOSTS_NAME is a regular file of ours holding hosts_text. */
static bool
hosts_current(int dfd)
{
	char		buf[sizeof(hosts_text)];
	struct stat	st;
	ssize_t		n;
	bool		ok = false;
	int		fd;

	if ((fd = openat(dfd, HOSTS_NAME,
		 O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)) == -1)
		return false;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
	    st.st_uid == geteuid() && (st.st_mode & 07777) == 0644 &&
	    (n = read(fd, buf, sizeof(buf))) == (ssize_t)sizeof(hosts_text) - 1)
		ok = memcmp(buf, hosts_text, sizeof(hosts_text) - 1) == 0;
	close(fd);
	return ok;
}

/* Write dfd/HOSTS_NAME anew. No fsync: hosts_current() checks the text at
 * every start and a lost or torn file is written again. */
static int
hosts_write(int dfd)
{
	const struct yx_replace r = { .data = hosts_text,
		.len = sizeof(hosts_text) - 1,
		.mode = 0644,
		.flags = YX_REPLACE_HINT };

	return yx_replace_at(dfd, HOSTS_NAME, &r) == YX_OK ? YX_OK : YX_E_IO;
}

/*
 * Open <saves_dir>/<name> (made when missing) with flags | O_DIRECTORY |
 * O_NOFOLLOW, and require a directory only we may write: every sandbox
 * mounts what it holds. fd, or -1 with errno.
 */
static int
etc_dir_open(const char *saves_dir, const char *name, int flags)
{
	struct stat	st;
	int		sfd, dfd = -1, en = 0;

	if ((sfd = open(saves_dir, O_PATH | O_DIRECTORY | O_CLOEXEC)) == -1)
		return -1;
	if ((mkdirat(sfd, name, 0755) == -1 && errno != EEXIST) ||
	    (dfd = openat(sfd, name, flags | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) == -1 ||
	    fstat(dfd, &st) == -1)
		en = errno;
	else if (st.st_uid != geteuid() || (st.st_mode & 022) != 0)
		en = EPERM;
	close(sfd);
	if (en != 0) {
		if (dfd != -1)
			close(dfd);
		errno = en;
		return -1;
	}
	return dfd;
}

/* <saves_dir>/<rel> into path. YX_OK, or YX_E_IO (errno ENAMETOOLONG). */
static int
etc_path(char *path, size_t len, const char *saves_dir, const char *rel)
{
	if ((size_t)snprintf(path, len, "%s/%s", saves_dir, rel) < len)
		return YX_OK;
	errno = ENAMETOOLONG;
	return YX_E_IO;
}

int
yx_exec_hosts_setup(const char *saves_dir, char *path, size_t len)
{
	int dfd, rc = YX_E_IO;

	if ((dfd = etc_dir_open(saves_dir, HOSTS_DIR, O_PATH)) != -1 &&
	    (hosts_current(dfd) || hosts_write(dfd) == YX_OK))
		rc = etc_path(path, len, saves_dir, HOSTS_DIR "/" HOSTS_NAME);
	if (rc != YX_OK) {
		log_warnx("%s/" HOSTS_DIR "/" HOSTS_NAME ": %s; sandboxes get the "
			  "engine's network setup",
		    saves_dir, strerror(errno));
		path[0] = '\0';
	}
	if (dfd != -1)
		close(dfd);
	return rc;
}

/* dfd/name is a symlink to target, made anew when it is anything else. */
static int
mnt_link(int dfd, const char *name, const char *target)
{
	char	buf[64];
	ssize_t	n = readlinkat(dfd, name, buf, sizeof(buf));

	if (n == (ssize_t)strlen(target) && memcmp(buf, target, (size_t)n) == 0)
		return YX_OK;
	if (yx_replace_at(dfd, name, &(struct yx_replace){ .link = target }) != YX_OK)
		return YX_E_IO;
	return YX_OK;
}

int
yx_exec_mnt_setup(const char *saves_dir, char *path, size_t len)
{
	size_t	i;
	int	dfd, rc = YX_E_IO;

	if ((dfd = etc_dir_open(saves_dir, MNT_DIR, O_RDONLY)) != -1) {
		rc = YX_OK;
		for (i = 0; rc == YX_OK && i < sizeof(mnt_links) / sizeof(mnt_links[0]); i++)
			rc = mnt_link(dfd, mnt_links[i][0], mnt_links[i][1]);
		if (rc == YX_OK)
			rc = etc_path(path, len, saves_dir, MNT_DIR);
	}
	if (rc != YX_OK) {
		log_warnx("%s/" MNT_DIR ": %s; sandboxes have no /mnt/user-data",
		    saves_dir, strerror(errno));
		path[0] = '\0';
	}
	if (dfd != -1)
		close(dfd);
	return rc;
}
