/* SPDX-License-Identifier: MIT */
/*
 * test_escape.c - escape scenarios against the broker, compiled twice: into
 * test_broker_escape (protections on: every scenario must show no leak) and
 * into test_broker_control with -DYX_BROKER_CONTROL_UNSAFE (protections off:
 * every scenario must show the leak). The same scenario code thus proves
 * both that the attack is real and that the broker stops it.
 */
#include "config.h"

#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "yuxi/broker.h"
#include "helpers.h"

#ifdef YX_BROKER_CONTROL_UNSAFE
#define SUITE		control
#define EXPECT_LEAK(leak, what) \
	cr_assert((leak), "control build must leak: %s", (what))
#define EXPECT_RC(rc, want)   \
	do {                  \
		(void)(rc);   \
		(void)(want); \
	} while (0)
#else
#define SUITE		escape
#define EXPECT_LEAK(leak, what) \
	cr_assert(!(leak), "protected build leaked: %s", (what))
#define EXPECT_RC(rc, want) \
	cr_assert_eq((rc), (want), "rc %d (%s), want %d (%s)", (rc), \
	    yx_strerror(rc), (want), yx_strerror(want))
#endif

#ifndef RACE_READS
#define RACE_READS	10000
#endif

TestSuite(SUITE, .init = fx_setup, .fini = fx_teardown, .timeout = 120);

static bool
has_secret(const char *s, size_t len)
{
	return s != NULL && memmem(s, len, FX_SECRET, strlen(FX_SECRET)) != NULL;
}

/* Read rel with the viewer and the agent cat; true if the secret came back. */
static bool
read_leaks(const char *rel, int *rcp)
{
	struct yx_broker_blob	*bl = NULL;
	struct yx_broker_text	*t = NULL;
	bool			 leak = false;
	int			 rc;

	rc = yx_broker_view(&fx.b, YX_ROOT_USER_DATA, rel, &bl, NULL);
	if (rc == YX_OK)
		leak |= has_secret(bl->content, bl->len);
	*rcp = rc;
	rc = yx_broker_cat(&fx.b, YX_ROOT_USER_DATA, rel, 0, 0, 0, &t, NULL);
	if (rc == YX_OK)
		leak |= has_secret(t->content, t->len);
	cr_assert_eq(rc, *rcp, "cat and view disagree: %d vs %d", rc, *rcp);
	yx_broker_blob_free(bl);
	yx_broker_text_free(t);
	return leak;
}

Test(SUITE, symlink_to_etc_passwd)
{
	struct yx_broker_blob	*bl = NULL;
	int			 rc;

	fx_symlink("/etc/passwd", "workspace/passwd");
	rc = yx_broker_view(&fx.b, YX_ROOT_USER_DATA, "workspace/passwd", &bl,
	    NULL);
	EXPECT_RC(rc, YX_E_PATH_NOT_ALLOWED);
	EXPECT_LEAK(rc == YX_OK && strstr(bl->content, "root:") != NULL,
	    "/etc/passwd through a symlink");
	yx_broker_blob_free(bl);
}

Test(SUITE, symlink_to_outside_file)
{
	int rc;

	fx_symlink(fx.secret, "workspace/s.txt");
	EXPECT_LEAK(read_leaks("workspace/s.txt", &rc), "file symlink");
	EXPECT_RC(rc, YX_E_PATH_NOT_ALLOWED);
}

Test(SUITE, relative_symlink_dotdot_chain)
{
	int rc;

	/* workspace/up -> ../../../.., a chain of relative hops upwards */
	fx_symlink("..", "workspace/u1");
	fx_symlink("u1/..", "workspace/u2");
	fx_symlink("u2/../..", "workspace/up");
	EXPECT_LEAK(read_leaks("workspace/up/outside/secret.txt", &rc),
	    "a .. chain of symlinks");
	EXPECT_RC(rc, YX_E_PATH_NOT_ALLOWED);
}

Test(SUITE, symlinked_intermediate_directory)
{
	int rc;

	fx_symlink(fx.out, "workspace/ext");
	EXPECT_LEAK(read_leaks("workspace/ext/secret.txt", &rc),
	    "directory symlink");
	EXPECT_RC(rc, YX_E_PATH_NOT_ALLOWED);
}

Test(SUITE, proc_self_root_magic_link)
{
	char	rel[PATH_MAX];
	int	rc;

	fx_symlink("/proc/self/root", "workspace/pr");
	snprintf(rel, sizeof(rel), "workspace/pr%s", fx.secret);
	EXPECT_LEAK(read_leaks(rel, &rc), "/proc/self/root");
	EXPECT_RC(rc, YX_E_PATH_NOT_ALLOWED);
}

Test(SUITE, proc_self_fd_magic_link)
{
	char	target[64];
	int	fd, rc;

	fd = open(fx.secret, O_RDONLY);
	cr_assert(fd >= 0);
	snprintf(target, sizeof(target), "/proc/self/fd/%d", fd);
	fx_symlink(target, "workspace/fdlink");
	EXPECT_LEAK(read_leaks("workspace/fdlink", &rc), "/proc/self/fd/N");
	EXPECT_RC(rc, YX_E_PATH_NOT_ALLOWED);
	close(fd);
}

Test(SUITE, download_through_symlink)
{
	struct yx_broker_dl	dl;
	int			rc;

	fx_symlink(fx.secret, "workspace/dl.txt");
	rc = yx_broker_download(&fx.b, YX_ROOT_USER_DATA, "workspace/dl.txt",
	    &dl, NULL);
	EXPECT_RC(rc, YX_E_PATH_NOT_ALLOWED);
	EXPECT_LEAK(rc == YX_OK, "download accepted a symlink");
}

/* Plant the symlink link -> target, then list dir of user-data into *l (the
 * caller frees it): yx_broker_ls()'s code. */
static int
ls_after_symlink(const char *target, const char *link, const char *dir,
    struct yx_broker_list **l)
{
	fx_symlink(target, link);
	return yx_broker_ls(&fx.b, YX_ROOT_USER_DATA, dir, l, NULL);
}

Test(SUITE, ls_does_not_reveal_target)
{
	struct yx_broker_list	*l = NULL;
	int			 rc;

	rc = ls_after_symlink(fx.secret, "workspace/s.txt", "workspace", &l);
	cr_assert_eq(rc, YX_OK);
	cr_assert_eq(l->n, 1);
	EXPECT_LEAK(l->v[0].type != YX_FT_SYMLINK || l->v[0].size != 0,
	    "ls revealed the symlink target");
	yx_broker_list_free(l);
}

Test(SUITE, ls_of_symlinked_directory)
{
	struct yx_broker_list	*l = NULL;
	int			 rc;

	rc = ls_after_symlink(fx.out, "workspace/ext", "workspace/ext", &l);
	EXPECT_RC(rc, YX_E_PATH_NOT_ALLOWED);
	EXPECT_LEAK(rc == YX_OK && l->n > 0, "listed an outside directory");
	yx_broker_list_free(l);
}

Test(SUITE, glob_and_grep_do_not_follow)
{
	struct yx_broker_list	*l = NULL;
	struct yx_broker_grep	*g = NULL;
	bool			 leak = false;
	size_t			 i;
	int			 rc;

	fx_symlink(fx.out, "workspace/ext");
	fx_symlink(fx.secret, "workspace/s.txt");
	rc = yx_broker_glob(&fx.b, YX_ROOT_USER_DATA, "", "**/secret.txt", &l,
	    NULL);
	cr_assert_eq(rc, YX_OK);
	for (i = 0; i < l->n; i++)
		leak |= strstr(l->v[i].path, "ext/secret.txt") != NULL;
	EXPECT_LEAK(leak, "glob walked into a symlinked directory");
	rc = yx_broker_grep(&fx.b, YX_ROOT_USER_DATA, "", FX_SECRET, NULL, 0,
	    &g, NULL);
	cr_assert_eq(rc, YX_OK);
	EXPECT_LEAK(g->n > 0, "grep read through a symlink");
	yx_broker_list_free(l);
	yx_broker_grep_free(g);
}

Test(SUITE, write_through_symlink)
{
	char	*after;
	int	 rc;

	fx_symlink(fx.secret, "workspace/w.txt");
	rc = yx_broker_write(&fx.b, YX_ROOT_USER_DATA, "workspace/w.txt",
	    "pwned\n", 6, true, NULL);
	EXPECT_RC(rc, YX_E_PATH_NOT_ALLOWED);
	after = fx_slurp(fx.secret, NULL);
	EXPECT_LEAK(!has_secret(after, strlen(after)),
	    "write went through a symlink");
	free(after);
}

Test(SUITE, write_into_symlinked_parent)
{
	char	p[PATH_MAX];
	int	rc;

	fx_symlink(fx.out, "workspace/ext");
	rc = yx_broker_write(&fx.b, YX_ROOT_USER_DATA, "workspace/ext/new.txt",
	    "x", 1, false, NULL);
	EXPECT_RC(rc, YX_E_PATH_NOT_ALLOWED);
	snprintf(p, sizeof(p), "%s/new.txt", fx.out);
	EXPECT_LEAK(access(p, F_OK) == 0, "created a file outside the tree");
}

/* Delete through a symlinked parent never reaches outside; a symlink to a
 * directory is removed as a link, its target untouched, even recursively. */
Test(SUITE, delete_never_follows)
{
	bool	pending;
	int	rc;

	fx_symlink(fx.out, "workspace/ext");
	rc = yx_broker_delete(&fx.b, YX_ROOT_USER_DATA,
	    "workspace/ext/secret.txt", false, &pending, NULL);
	EXPECT_RC(rc, YX_E_PATH_NOT_ALLOWED);
	EXPECT_LEAK(access(fx.secret, F_OK) != 0,
	    "deleted a file outside the tree through a symlinked parent");
	if (access(fx.secret, F_OK) != 0)
		return;		/* the control leaked; nothing more to see */
	rc = yx_broker_delete(&fx.b, YX_ROOT_USER_DATA, "workspace/ext", true,
	    &pending, NULL);
	cr_assert_eq(rc, YX_OK, "rc %s", yx_strerror(rc));
	cr_assert(access(fx.secret, F_OK) == 0, "the link's target went");
	cr_assert(access(fx_path("workspace/ext"), F_OK) != 0 &&
	    errno == ENOENT);
}

/* A hardlink inside the tree to a file outside it: replacing the name must
 * never write through to the outside inode. */
static void
hardlink_case(int op)
{
	const char	*body = "replaced by the agent\n";
	struct stat	 st;
	char		*after;
	int		 rc;

	fx_link_secret("workspace/hl.txt");
	if (op == 0)
		rc = yx_broker_write(&fx.b, YX_ROOT_USER_DATA, "workspace/hl.txt",
		    body, strlen(body), true, NULL);
	else
		rc = yx_broker_edit(&fx.b, YX_ROOT_USER_DATA, "workspace/hl.txt",
		    "OUTSIDE", "INSIDE", false, NULL, NULL);
	cr_assert_eq(rc, YX_OK, "rc %s", yx_strerror(rc));
	after = fx_slurp(fx.secret, NULL);
	cr_assert_not_null(after);
	EXPECT_LEAK(!has_secret(after, strlen(after)),
	    "the outside file was modified through a hardlink");
	free(after);
	cr_assert_eq(stat(fx.secret, &st), 0);
	EXPECT_LEAK(st.st_uid == FX_UID, "the outside file was chowned");
}

Test(SUITE, hardlink_write)
{
	hardlink_case(0);
}

Test(SUITE, hardlink_edit)
{
	hardlink_case(1);
}

struct membody {
	const char	*p;
	size_t		 left;
};

static ssize_t
membody_read(void *arg, char *buf, size_t len)
{
	struct membody *m = arg;

	if (len > m->left)
		len = m->left;
	memcpy(buf, m->p, len);
	m->p += len;
	m->left -= len;
	return (ssize_t)len;
}

Test(SUITE, hardlink_upload)
{
	struct membody	 m = { "uploaded bytes\n", 15 };
	char		*after;
	int		 rc;

	fx_link_secret("workspace/up.bin");
	rc = yx_broker_upload(&fx.b, YX_ROOT_USER_DATA, "workspace/up.bin",
	    membody_read, &m, true, NULL, NULL);
	cr_assert_eq(rc, YX_OK, "rc %s", yx_strerror(rc));
	after = fx_slurp(fx.secret, NULL);
	EXPECT_LEAK(!has_secret(after, strlen(after)),
	    "upload wrote through a hardlink");
	free(after);
}

/*
 * A FIFO: the read must answer NOT_REGULAR at once. The broker call runs in
 * a child under alarm(3): protected, it exits with the code; in the control
 * build it blocks on the open and SIGALRM kills it (the hang is the leak).
 */
Test(SUITE, fifo_never_blocks)
{
	pid_t	pid;
	int	status, rc;

	cr_assert_eq(mkfifo(fx_path("workspace/pipe"), 0644), 0);
	if ((pid = fork()) == 0) {
		struct yx_broker_blob *bl = NULL;

		alarm(3);
		rc = yx_broker_view(&fx.b, YX_ROOT_USER_DATA, "workspace/pipe",
		    &bl, NULL);
		_exit(rc);
	}
	cr_assert(pid > 0);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	EXPECT_LEAK(WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM,
	    "reading a FIFO blocked");
#ifndef YX_BROKER_CONTROL_UNSAFE
	cr_assert(WIFEXITED(status));
	cr_assert_eq(WEXITSTATUS(status), YX_E_NOT_REGULAR);
#endif
}

Test(SUITE, device_node_refused)
{
	struct yx_broker_blob	*bl = NULL;
	int			 rc;

	if (geteuid() != 0)
		cr_skip_test("mknod needs root");
	/* a /dev/zero-like character device planted in the tree */
	cr_assert_eq(mknod(fx_path("workspace/zero"), S_IFCHR | 0666,
			 makedev(1, 5)),
	    0, "mknod: %s", strerror(errno));
	rc = yx_broker_view(&fx.b, YX_ROOT_USER_DATA, "workspace/zero", &bl,
	    NULL);
	EXPECT_RC(rc, YX_E_NOT_REGULAR);
	/* protection off: the type check is gone, the device is opened */
	EXPECT_LEAK(rc != YX_E_NOT_REGULAR, "device node opened");
	yx_broker_blob_free(bl);
}

/* ---- the race ---------------------------------------------------------- */

/*
 * A child swaps `a` (a real entry) and `b` (a symlink to the outside) with
 * renameat2(RENAME_EXCHANGE) as fast as it can while the parent reads `rel`
 * RACE_READS times. Returns the number of reads that returned the secret;
 * *okp counts reads that returned the inside content.
 */
static size_t
race(const char *a, const char *b, const char *rel, size_t *okp)
{
	struct yx_broker_blob	*bl;
	size_t			 leaks = 0, i;
	pid_t			 pid;
	int			 dfd, rc;

	dfd = open(fx.ud, O_PATH | O_DIRECTORY);
	cr_assert(dfd >= 0);
	if ((pid = fork()) == 0) {
		alarm(100);
		for (;;)
			if (renameat2(dfd, a, dfd, b, RENAME_EXCHANGE) == -1)
				_exit(1);
	}
	cr_assert(pid > 0);
	*okp = 0;
	for (i = 0; i < RACE_READS; i++) {
		bl = NULL;
		rc = yx_broker_view(&fx.b, YX_ROOT_USER_DATA, rel, &bl, NULL);
		if (rc == YX_OK && has_secret(bl->content, bl->len))
			leaks++;
		else if (rc == YX_OK && strstr(bl->content, "inside") != NULL)
			(*okp)++;
		yx_broker_blob_free(bl);
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	close(dfd);
	return leaks;
}

Test(SUITE, race_exchange_file_and_symlink)
{
	size_t leaks, ok;

	fx_puts("workspace/victim.txt", "inside content\n");
	fx_symlink(fx.secret, "workspace/swap");
	leaks = race("workspace/victim.txt", "workspace/swap",
	    "workspace/victim.txt", &ok);
	cr_log_info("file race: %zu leaks, %zu clean reads of %d", leaks, ok,
	    RACE_READS);
	EXPECT_LEAK(leaks > 0, "file/symlink exchange race");
	cr_assert(ok > 0, "the race never let a clean read through");
}

Test(SUITE, race_exchange_directory_and_symlink)
{
	char	p[PATH_MAX];
	size_t	leaks, ok;
	FILE	*f;

	fx_mkdir("workspace/d");
	fx_puts("workspace/d/f.txt", "inside content\n");
	snprintf(p, sizeof(p), "%s/f.txt", fx.out);
	cr_assert_not_null(f = fopen(p, "w"));
	fputs(FX_SECRET "\n", f);
	fclose(f);
	fx_symlink(fx.out, "workspace/dswap");
	leaks = race("workspace/d", "workspace/dswap", "workspace/d/f.txt", &ok);
	cr_log_info("dir race: %zu leaks, %zu clean reads of %d", leaks, ok,
	    RACE_READS);
	EXPECT_LEAK(leaks > 0, "directory/symlink exchange race");
	cr_assert(ok > 0, "the race never let a clean read through");
}

/* Writes while the parent directory is swapped with a symlink to the
 * outside: no file may ever appear outside the tree. */
Test(SUITE, race_exchange_parent_on_write)
{
	struct stat	st;
	char		p[PATH_MAX];
	size_t		i, ok = 0, why[YX_E__COUNT] = { 0 };
	pid_t		pid;
	int		dfd, rc;

	fx_mkdir("workspace/d");
	fx_symlink(fx.out, "workspace/dswap");
	cr_assert((dfd = open(fx.ud, O_PATH | O_DIRECTORY)) >= 0);
	if ((pid = fork()) == 0) {
		alarm(100);
		for (;;)
			if (renameat2(dfd, "workspace/d", dfd, "workspace/dswap",
				RENAME_EXCHANGE) == -1)
				_exit(1);
	}
	cr_assert(pid > 0);
	for (i = 0; i < RACE_READS / 5; i++) {
		rc = yx_broker_write(&fx.b, YX_ROOT_USER_DATA,
		    "workspace/d/w.txt", "w\n", 2, true, NULL);
		ok += rc == YX_OK;
		why[rc]++;
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	close(dfd);
	snprintf(p, sizeof(p), "%s/w.txt", fx.out);
	cr_log_info("write race: %zu writes succeeded", ok);
	for (i = 0; i < YX_E__COUNT; i++)
		if (why[i] > 0)
			cr_log_info("  %s: %zu", yx_strerror((int)i), why[i]);
	EXPECT_LEAK(access(p, F_OK) == 0, "a write landed outside the tree");
	/* no temp file left anywhere (the swap may have starved every write:
	 * the no-leak claim above does not depend on a success) */
	cr_assert_str_eq(fx_names(fx.out), access(p, F_OK) == 0 ? "secret.txt,w.txt" : "secret.txt");
	cr_assert_eq(lstat(fx_path("workspace/d"), &st), 0);
	cr_assert_str_eq(fx_names(S_ISDIR(st.st_mode) ? "workspace/d" :
							"workspace/dswap"),
	    ok > 0 ? "w.txt" : "");
}

/*
 * A container binds user-data by path. A thread deleted (its directory
 * renamed away) and created again under the same id, maybe by another
 * user, has a new directory there: a container still being created for
 * the old thread must not get it (yx_broker_still_at, checked by the
 * executor just before the create).
 */
Test(SUITE, successor_directory_not_bound)
{
	struct yx_broker	 b;
	char			 th[192], gone[192], ud[224], old[224];
	int			 rc;

	snprintf(th, sizeof(th), "%s/thr", fx.top);
	snprintf(gone, sizeof(gone), "%s/thr.trash", fx.top);
	snprintf(ud, sizeof(ud), "%s/user-data", th);
	snprintf(old, sizeof(old), "%s/user-data", gone);
	cr_assert_eq(mkdir(th, 0755), 0);
	cr_assert_eq(yx_broker_init(&b, ud, NULL, NULL, 0, FX_UID, FX_GID, NULL,
			 YX_BROKER_CREATE, NULL),
	    YX_OK);
	cr_assert_eq(yx_broker_still_at(&b, ud, NULL), YX_OK);
	/* deleted: the thread's directory renamed away */
	cr_assert_eq(rename(th, gone), 0);
	rc = yx_broker_still_at(&b, ud, NULL);
	EXPECT_LEAK(rc == YX_OK, "a deleted thread's path still taken as its");
	EXPECT_RC(rc, YX_E_NOT_FOUND);
	/* created again under the same id: a new directory at the path */
	cr_assert_eq(mkdir(th, 0755), 0);
	cr_assert_eq(mkdir(ud, 0755), 0);
	rc = yx_broker_still_at(&b, ud, NULL);
	EXPECT_LEAK(rc == YX_OK, "the successor's directory taken as the thread's");
	EXPECT_RC(rc, YX_E_NOT_FOUND);
	/* a symlink to the old directory is not it either */
	cr_assert_eq(rmdir(ud), 0);
	cr_assert_eq(symlink(old, ud), 0);
	rc = yx_broker_still_at(&b, ud, NULL);
	EXPECT_LEAK(rc == YX_OK, "a symlink at the path taken as the directory");
	EXPECT_RC(rc, YX_E_NOT_FOUND);
	yx_broker_fini(&b);
}
