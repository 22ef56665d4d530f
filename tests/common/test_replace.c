/* SPDX-License-Identifier: MIT */
/*
 * test_replace.c - yx_replace_at (src/common/replace.c), the one writer of
 * a file, symlink or socket through a temporary and a rename: the new entry
 * replaces the old one whole; a file gets exactly its mode whatever the
 * umask; a temporary planted under the writer's name (a symlink to a file
 * of someone else's) is removed, never written through; an update of an
 * entry that is gone writes nothing (YX_E_NOT_FOUND); a make() that fails
 * leaves the old entry and no temporary, with its errno.
 */
#include "config.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "yuxi/error.h"
#include "yuxi/replace.h"
#include "yuxi/tree.h"

static char	dir[64];
static int	dfd = -1;

static void
setup(void)
{
	snprintf(dir, sizeof(dir), "/tmp/yx-replace-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	cr_assert_neq(dfd, -1);
}

static void
teardown(void)
{
	char	parent[64], *slash;
	int	pfd;

	close(dfd);
	snprintf(parent, sizeof(parent), "%s", dir);
	slash = strrchr(parent, '/');
	*slash = '\0';
	pfd = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	(void)yx_tree_remove(pfd, slash + 1);
	close(pfd);
}

TestSuite(replace, .init = setup, .fini = teardown);

/* The bytes of dfd/name ("" when it cannot be read). */
static const char *
slurp(const char *name)
{
	static char	buf[256];
	ssize_t		n;
	int		fd;

	buf[0] = '\0';
	if ((fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) == -1)
		return buf;
	n = read(fd, buf, sizeof(buf) - 1);
	buf[n > 0 ? n : 0] = '\0';
	close(fd);
	return buf;
}

/* How many entries dfd holds (besides . and ..). */
static int
entries(void)
{
	struct dirent	*de;
	DIR		*d;
	int		 n = 0, fd = dup(dfd);

	cr_assert_not_null(d = fdopendir(fd));
	rewinddir(d);
	while ((de = readdir(d)) != NULL)
		n += strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0;
	closedir(d);
	return n;
}

static int
put(const char *name, const char *text, mode_t mode, unsigned flags)
{
	const struct yx_replace r = { .data = text,
		.len = strlen(text),
		.mode = mode,
		.flags = flags };

	return yx_replace_at(dfd, name, &r);
}

Test(replace, file_is_replaced_whole_with_its_exact_mode)
{
	struct stat	st;
	mode_t		old = umask(077);

	cr_assert_eq(put("f", "one\n", 0644, 0), YX_OK);
	cr_assert_eq(put("f", "two, longer\n", 0644, YX_REPLACE_HINT), YX_OK);
	umask(old);
	cr_expect_str_eq(slurp("f"), "two, longer\n");
	cr_assert_eq(fstatat(dfd, "f", &st, AT_SYMLINK_NOFOLLOW), 0);
	cr_expect(S_ISREG(st.st_mode));
	cr_expect_eq(st.st_mode & 07777, 0644, "mode %o", st.st_mode & 07777);
	cr_expect_eq(entries(), 1, "no temporary stays");
}

Test(replace, planted_temporary_is_not_written_through)
{
	char	tmp[64];

	cr_assert_eq(put("victim", "theirs\n", 0600, 0), YX_OK);
	snprintf(tmp, sizeof(tmp), ".f.%ld.tmp", (long)getpid());
	cr_assert_eq(symlinkat("victim", dfd, tmp), 0);
	cr_assert_eq(put("f", "ours\n", 0600, 0), YX_OK);
	cr_expect_str_eq(slurp("victim"), "theirs\n");
	cr_expect_str_eq(slurp("f"), "ours\n");
	cr_expect_eq(entries(), 2);
}

Test(replace, existing_only_replaces_what_is_there)
{
	cr_expect_eq(put("rec", "new\n", 0600, YX_REPLACE_EXISTING), YX_E_NOT_FOUND);
	cr_expect_eq(entries(), 0, "nothing written for a gone entry");
	cr_assert_eq(put("rec", "v1\n", 0600, 0), YX_OK);
	cr_assert_eq(put("rec", "v2\n", 0600, YX_REPLACE_EXISTING), YX_OK);
	cr_expect_str_eq(slurp("rec"), "v2\n");
	cr_expect_eq(entries(), 1, "the old record is removed");
}

Test(replace, symlink_replaces_symlink)
{
	char	buf[64];
	ssize_t	n;

	cr_assert_eq(yx_replace_at(dfd, "l", &(struct yx_replace){ .link = "a" }), YX_OK);
	cr_assert_eq(yx_replace_at(dfd, "l", &(struct yx_replace){ .link = "b/c" }), YX_OK);
	n = readlinkat(dfd, "l", buf, sizeof(buf));
	cr_assert_eq(n, 3);
	cr_expect_eq(memcmp(buf, "b/c", 3), 0);
	cr_expect_eq(entries(), 1);
}

/* A make() that creates its entry, then fails. */
static int
make_fail(int fd, const char *tmp, void *arg)
{
	int f;

	(void)arg;
	if ((f = openat(fd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600)) == -1)
		return -1;
	close(f);
	errno = EACCES;
	return -1;
}

Test(replace, failed_make_leaves_the_old_entry_and_no_temporary)
{
	const struct yx_replace r = { .make = make_fail };

	cr_assert_eq(put("f", "old\n", 0600, 0), YX_OK);
	errno = 0;
	cr_expect_eq(yx_replace_at(dfd, "f", &r), yx_err_from_errno(EACCES));
	cr_expect_eq(errno, EACCES);
	cr_expect_str_eq(slurp("f"), "old\n");
	cr_expect_eq(entries(), 1, "the temporary is removed");
}

Test(replace, name_too_long_is_refused)
{
	char	name[300];

	memset(name, 'n', 250);
	name[250] = '\0';
	cr_expect_eq(put(name, "x", 0600, 0), YX_E_INVALID_PATH);
	cr_expect_eq(errno, ENAMETOOLONG);
	cr_expect_eq(entries(), 0);
}
