/* SPDX-License-Identifier: MIT */
/*
 * test_priv_pool.c - the privileged helper's pool operations (src/priv/
 * priv_pool.c) with a real forked helper and real mounts: a thread's
 * user-data and a skill bound into a box directory (the skill read-only),
 * nothing stacked twice, everything unmounted and removed by a clear; and
 * what a request must not reach: bad names, a box or a user-data that is
 * a symlink, a skill outside the skills root. Needs root (skipped
 * otherwise).
 */
#include "config.h"

#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "yuxi/priv.h"
#include "yuxi/threads.h"
#include "priv/priv_int.h"
#include "../lib/storetest.h"
#include "../lib/tutil.h"

#define BOX	"pool-0123456789abcdef"
#define TID	"t-pool-1"

static char			base[256];
static struct yx_config		cfg;
static struct yx_thread_store	st;
static bool			started;

static const char *
path(char *buf, size_t len, const char *rel)
{
	snprintf(buf, len, "%s/%s", base, rel);
	return buf;
}

static void
mk(const char *rel, mode_t mode)
{
	char p[512];

	cr_assert(mkdir(path(p, sizeof(p), rel), mode) == 0 || errno == EEXIST,
	    "%s: %s", p, strerror(errno));
	(void)chmod(p, mode);
}

static void
put(const char *rel, const char *text)
{
	char	p[512];
	FILE	*f;

	cr_assert_not_null(f = fopen(path(p, sizeof(p), rel), "w"), "%s", p);
	fputs(text, f);
	fclose(f);
}

static void
setup(void)
{
	struct yx_errctx e;

	if (geteuid() != 0)
		return;
	storetest_open("yx-privpool", base, sizeof(base), &cfg, &st);
	cfg.pool_size = 1;
	mk("skills", 0755);
	mk("skills/pdf", 0755);
	put("skills/pdf/SKILL.md", "skill\n");
	snprintf(cfg.skills_dir, sizeof(cfg.skills_dir), "%s/skills", base);
	mk("saves/threads/" TID, 0755);
	mk("saves/threads/" TID "/user-data", 0755);
	put("saves/threads/" TID "/user-data/marker", "mine\n");
	yx_errctx_clear(&e);
	cr_assert_eq(priv_start(&cfg, false, &e), YX_OK, "%s", e.msg);
	started = true;
	mk("saves/pool/" BOX, 0755);
	mk("saves/pool/" BOX "/user-data", 0755);
	mk("saves/pool/" BOX "/skills", 0755);
}

/* Mount points at or below base/rel. */
static int
mounts_below(const char *rel)
{
	char	line[4096], mp[1024], dir[512];
	size_t	len;
	FILE	*f;
	int	n = 0;

	path(dir, sizeof(dir), rel);
	len = strlen(dir);
	if ((f = fopen("/proc/self/mountinfo", "r")) == NULL)
		return -1;
	while (fgets(line, sizeof(line), f) != NULL)
		if (sscanf(line, "%*s %*s %*s %*s %1023s", mp) == 1 &&
		    strncmp(mp, dir, len) == 0 && (mp[len] == '/' || mp[len] == '\0'))
			n++;
	fclose(f);
	return n;
}

static void
teardown(void)
{
	if (started)
		storetest_priv_close(base, &st);
	started = false;
}

TestSuite(privpool, .init = setup, .fini = teardown, .timeout = 60);

#define NEED_ROOT()                                   \
	do {                                          \
		if (geteuid() != 0)                   \
			cr_skip_test("needs root");   \
	} while (0)

Test(privpool, bind_skill_clear)
{
	struct yx_errctx	e;
	char			p[512], buf[16] = "";
	int			fd;

	NEED_ROOT();
	cr_assert_eq(mounts_below("saves/pool"), 1, "the pool root is a mount");
	yx_errctx_clear(&e);
	cr_assert_eq(yx_priv_pool_bind(TID, BOX, &e), YX_OK, "%s", e.msg);
	cr_assert_eq(yx_priv_pool_skill("pdf", BOX, &e), YX_OK, "%s", e.msg);
	cr_assert_geq(fd = open(path(p, sizeof(p), "saves/pool/" BOX "/user-data/marker"), O_RDONLY), 0);
	cr_assert_eq(read(fd, buf, sizeof(buf) - 1), 5);
	close(fd);
	cr_assert_str_eq(buf, "mine\n");
	/* the skill is read-only in the box, writable at its source */
	cr_assert_eq(open(path(p, sizeof(p), "saves/pool/" BOX "/skills/pdf/x"),
			 O_WRONLY | O_CREAT, 0644),
	    -1);
	cr_assert_eq(errno, EROFS);
	/* nothing is stacked twice */
	cr_assert_eq(yx_priv_pool_bind(TID, BOX, &e), YX_E_BUSY);
	cr_assert_eq(yx_priv_pool_skill("pdf", BOX, &e), YX_E_BUSY);
	cr_assert_eq(mounts_below("saves/pool/" BOX), 2);
	cr_assert_eq(yx_priv_pool_clear(BOX, &e), YX_OK, "%s", e.msg);
	cr_assert_eq(mounts_below("saves/pool/" BOX), 0);
	cr_assert_eq(access(path(p, sizeof(p), "saves/pool/" BOX), F_OK), -1);
	/* the thread's files are untouched */
	cr_assert_eq(access(path(p, sizeof(p), "saves/threads/" TID "/user-data/marker"), F_OK), 0);
	cr_assert_eq(yx_priv_pool_clear(BOX, &e), YX_OK, "absent: nothing to do");
}

Test(privpool, bad_names_refused)
{
	struct priv_req		rq;
	struct priv_rep		rep;
	struct yx_errctx	e;

	NEED_ROOT();
	cr_assert_eq(yx_priv_pool_bind(TID, "pool-xyz", &e), YX_E_BAD_REQUEST);
	cr_assert_eq(yx_priv_pool_bind(TID, "../" BOX, &e), YX_E_BAD_REQUEST);
	cr_assert_eq(yx_priv_pool_bind("../" TID, BOX, &e), YX_E_BAD_REQUEST);
	cr_assert_eq(yx_priv_pool_skill("..", BOX, &e), YX_E_BAD_REQUEST);
	cr_assert_eq(yx_priv_pool_skill("a/b", BOX, &e), YX_E_BAD_REQUEST);
	/* the helper checks again what a client would never send */
	memset(&rq, 0, sizeof(rq));
	rq.op = PRIV_POOL_SKILL;
	snprintf(rq.name, sizeof(rq.name), "../../etc");
	snprintf(rq.arg, sizeof(rq.arg), "%s", BOX);
	cr_assert_eq(priv_call(&rq, &rep, &e), YX_E_BAD_REQUEST);
	snprintf(rq.name, sizeof(rq.name), "pdf");
	snprintf(rq.arg, sizeof(rq.arg), "../pool/%s", BOX);
	cr_assert_eq(priv_call(&rq, &rep, &e), YX_E_BAD_REQUEST);
	cr_assert_eq(mounts_below("saves/pool/" BOX), 0);
}

Test(privpool, symlinks_refused)
{
	struct yx_errctx	e;
	char			p[512], q[512];

	NEED_ROOT();
	/* a box that is a symlink to the thread's own directory */
	cr_assert_eq(symlink(path(q, sizeof(q), "saves/threads/" TID),
			 path(p, sizeof(p), "saves/pool/pool-00000000000000ff")),
	    0);
	cr_assert_neq(yx_priv_pool_bind(TID, "pool-00000000000000ff", &e), YX_OK);
	/* a thread whose user-data is a symlink to elsewhere */
	mk("saves/threads/t-evil", 0755);
	cr_assert_eq(symlink(path(q, sizeof(q), "skills"),
			 path(p, sizeof(p), "saves/threads/t-evil/user-data")),
	    0);
	cr_assert_neq(yx_priv_pool_bind("t-evil", BOX, &e), YX_OK);
	/* a skill that is a symlink out of the skills root */
	cr_assert_eq(symlink(path(q, sizeof(q), "saves"),
			 path(p, sizeof(p), "skills/evil")),
	    0);
	cr_assert_neq(yx_priv_pool_skill("evil", BOX, &e), YX_OK);
	cr_assert_eq(mounts_below("saves/pool/" BOX), 0);
	cr_assert_eq(mounts_below("saves/threads"), 0);
}

#define T_UID	3000001u	/* the thread's own uid: owns its files */
#define B_UID	3000500u	/* the box's own uid */

/* As uid u (a child): create rel. The child's exit status: 0 done. */
static int
create_as(unsigned u, const char *rel)
{
	char	p[512];
	pid_t	c;
	int	status = -1, fd;

	path(p, sizeof(p), rel);
	if ((c = fork()) == 0) {
		if (setgroups(0, NULL) == -1 || setresgid(u, u, u) == -1 ||
		    setresuid(u, u, u) == -1)
			_exit(2);
		fd = open(p, O_WRONLY | O_CREAT | O_EXCL, 0644);
		_exit(fd == -1 ? 1 : 0);
	}
	cr_assert_neq(c, -1);
	cr_assert_eq(waitpid(c, &status, 0), c);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/*
 * A box of its own uid (its <box>/uid file): the thread's user-data is
 * bound idmapped, its files (the thread's uid on disk) shown as the box's,
 * and what the box's uid writes lands as the thread's. Without the file
 * (the shared user) nothing is mapped.
 */
Test(privpool, own_uid_box_is_idmapped)
{
	struct yx_errctx	e;
	struct stat		sb;
	char			p[512];

	NEED_ROOT();
	cr_assert_eq(chown(path(p, sizeof(p), "saves/threads/" TID "/user-data"),
			 T_UID, T_UID),
	    0);
	cr_assert_eq(chown(path(p, sizeof(p), "saves/threads/" TID "/user-data/marker"),
			 T_UID, T_UID),
	    0);
	put("saves/pool/" BOX "/uid", "3000500\n");
	/* the box's uid passes through the test's directory */
	cr_assert_eq(chmod(base, 0755), 0);
	yx_errctx_clear(&e);
	cr_assert_eq(yx_priv_pool_bind(TID, BOX, &e), YX_OK, "%s", e.msg);
	cr_assert_eq(stat(path(p, sizeof(p), "saves/pool/" BOX "/user-data/marker"), &sb), 0);
	cr_assert_eq(sb.st_uid, B_UID, "shown as the box's: %u", (unsigned)sb.st_uid);
	cr_assert_eq(sb.st_gid, B_UID);
	cr_assert_eq(create_as(B_UID, "saves/pool/" BOX "/user-data/new"), 0);
	cr_assert_eq(stat(path(p, sizeof(p), "saves/threads/" TID "/user-data/new"), &sb), 0);
	cr_assert_eq(sb.st_uid, T_UID, "lands as the thread's: %u", (unsigned)sb.st_uid);
	/* the thread's uid itself is nobody there */
	cr_assert_neq(create_as(T_UID, "saves/pool/" BOX "/user-data/other"), 0);
	cr_assert_eq(yx_priv_pool_clear(BOX, &e), YX_OK, "%s", e.msg);
}

/* The uid file must be the service's own regular file naming a uid; the
 * user-data of a box of its own uid must not be root's. */
Test(privpool, bad_box_uid_refused)
{
	struct yx_errctx	e;
	char			p[512];

	NEED_ROOT();
	cr_assert_eq(chown(path(p, sizeof(p), "saves/threads/" TID "/user-data"),
			 T_UID, T_UID),
	    0);
	yx_errctx_clear(&e);
	put("saves/pool/" BOX "/uid", "0\n");
	cr_assert_eq(yx_priv_pool_bind(TID, BOX, &e), YX_E_BAD_REQUEST);
	put("saves/pool/" BOX "/uid", "3000500x\n");
	cr_assert_eq(yx_priv_pool_bind(TID, BOX, &e), YX_E_BAD_REQUEST);
	put("saves/pool/" BOX "/uid", "3000500\n");
	cr_assert_eq(chown(path(p, sizeof(p), "saves/pool/" BOX "/uid"), 1000, 1000), 0);
	cr_assert_eq(yx_priv_pool_bind(TID, BOX, &e), YX_E_BAD_REQUEST);
	cr_assert_eq(unlink(p), 0);
	put("saves/real-uid", "3000500\n");
	cr_assert_eq(symlink("../../real-uid", p), 0);
	cr_assert_eq(yx_priv_pool_bind(TID, BOX, &e), YX_E_BAD_REQUEST);
	cr_assert_eq(unlink(p), 0);
	put("saves/pool/" BOX "/uid", "3000500\n");
	cr_assert_eq(chown(path(p, sizeof(p), "saves/threads/" TID "/user-data"), 0, 0), 0);
	cr_assert_eq(yx_priv_pool_bind(TID, BOX, &e), YX_E_BAD_REQUEST);
	cr_assert_eq(mounts_below("saves/pool/" BOX), 0, "nothing was bound");
}
