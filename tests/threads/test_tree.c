/* SPDX-License-Identifier: MIT */
/*
 * test_tree.c - removal of a thread's tree (src/threads/threads.c,
 * yx_tree_remove and the tombstone sweep): any depth without recursion and
 * with a bounded number of descriptors, never through a symlink, within a
 * time budget whose leftovers the sweep finishes, and never by two removers
 * at once. Figures are printed; the only times compared are budget versus
 * no budget on the same tree (the control).
 */
#include "config.h"

#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include <criterion/criterion.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "yuxi/clock.h"
#include "yuxi/threads.h"
#include "yuxi/tree.h"
#include "../lib/storetest.h"

static char			base[256];
static struct yx_config		cfg;
static struct yx_thread_store	st;

static void
setup(void)
{
	storetest_open("yx-tree", base, sizeof(base), &cfg, &st);
}

static void
teardown(void)
{
	storetest_close(base, &st);
}

TestSuite(tree, .init = setup, .fini = teardown, .timeout = 120);

/* A new thread `id` of alice; returns the path of its workspace in p. */
static void
mk_thread(const char *id, char *p, size_t len)
{
	struct yx_thread	w, o;
	bool			created;

	memset(&w, 0, sizeof(w));
	snprintf(w.thread_id, sizeof(w.thread_id), "%s", id);
	snprintf(w.owner, sizeof(w.owner), "alice");
	cr_assert_eq(yx_thread_create(&st, &w, &o, &created, NULL), YX_OK);
	snprintf(p, len, "%s/saves/threads/%s/user-data/workspace", base, id);
}

/*
 * A chain dir/d/d/... of `levels` directories, built with *at() calls (no
 * path gets long). Every `side`-th level also holds a branch e/e/... of
 * `side_levels` and a file; level `link_at` holds "evil", a symlink to
 * `target`. A file at the bottom.
 */
static void
mk_chain(const char *dir, int levels, int side, int side_levels,
    const char *target, int link_at)
{
	int fd, nfd, sfd, i, j;

	cr_assert_geq(fd = open(dir, O_RDONLY | O_DIRECTORY), 0);
	for (i = 0; i < levels; i++) {
		cr_assert_eq(mkdirat(fd, "d", 0755), 0, "level %d", i);
		if (i == link_at)
			cr_assert_eq(symlinkat(target, fd, "evil"), 0);
		if (side > 0 && i % side == 0) {
			close(openat(fd, "f.txt", O_CREAT | O_WRONLY, 0644));
			cr_assert_geq(sfd = dup(fd), 0);
			for (j = 0; j < side_levels; j++) {
				cr_assert_eq(mkdirat(sfd, "e", 0755), 0);
				nfd = openat(sfd, "e", O_RDONLY | O_DIRECTORY);
				cr_assert_geq(nfd, 0);
				close(sfd);
				sfd = nfd;
			}
			close(sfd);
		}
		cr_assert_geq(nfd = openat(fd, "d", O_RDONLY | O_DIRECTORY), 0);
		close(fd);
		fd = nfd;
	}
	close(openat(fd, "bottom.txt", O_CREAT | O_WRONLY, 0644));
	close(fd);
}

/* Names in <saves>/threads starting with '.', joined by ' ' (static). */
static const char *
hidden_names(void)
{
	static char	 out[1024];
	struct dirent	*de;
	char		 p[512];
	DIR		*d;

	out[0] = '\0';
	snprintf(p, sizeof(p), "%s/saves/threads", base);
	cr_assert_not_null(d = opendir(p));
	while ((de = readdir(d)) != NULL)
		if (de->d_name[0] == '.' && strcmp(de->d_name, ".") != 0 &&
		    strcmp(de->d_name, "..") != 0 &&
		    strlen(out) + strlen(de->d_name) + 2 < sizeof(out)) {
			strcat(out, de->d_name);
			strcat(out, " ");
		}
	closedir(d);
	return out;
}

/*
 * A thread holding 2,000 levels (and side branches deeper than the 32
 * directories a removal keeps open) is deleted completely, with 64
 * descriptors allowed, and a symlink to an outside directory on the way is
 * removed, not followed. Before: YX_E_IO at 256 levels and a tombstone left.
 */
Test(tree, remove_deep_tree)
{
	struct yx_thread	 o;
	struct rlimit		 rl;
	struct stat		 sb;
	char			 ws[512], victim[512], p[600];
	int64_t			 t0;

	snprintf(victim, sizeof(victim), "%s/victim", base);
	cr_assert_eq(mkdir(victim, 0755), 0);
	snprintf(p, sizeof(p), "%s/keep.txt", victim);
	close(open(p, O_CREAT | O_WRONLY, 0644));
	mk_thread("deep", ws, sizeof(ws));
	mk_chain(ws, 2000, 100, 50, victim, 1500);
	cr_assert_eq(getrlimit(RLIMIT_NOFILE, &rl), 0);
	rl.rlim_cur = 64;
	cr_assert_eq(setrlimit(RLIMIT_NOFILE, &rl), 0);
	st.remove_budget_ms = 0;	/* depth here, not the budget */
	t0 = yx_mono_ms();
	cr_assert_eq(yx_thread_remove(&st, "deep", "alice", NULL), YX_OK);
	printf("tree: 2,000 levels + 20 branches of 50 removed in %lld ms "
	       "(64 fds allowed)\n",
	    (long long)(yx_mono_ms() - t0));
	snprintf(p, sizeof(p), "%s/saves/threads/deep", base);
	cr_assert_neq(lstat(p, &sb), 0);
	cr_assert_str_eq(hidden_names(), "", "left behind: %s", hidden_names());
	snprintf(p, sizeof(p), "%s/keep.txt", victim);
	cr_assert_eq(stat(p, &sb), 0, "the symlink's target was removed");
	cr_assert_eq(yx_thread_get(&st, "deep", "alice", &o, NULL), YX_E_NOT_FOUND);
}

/* Plain yx_tree_remove of a deep tree that is not a thread. */
Test(tree, tree_remove_any_depth)
{
	struct stat	sb;
	char		p[512], victim[512];
	int		fd;

	snprintf(victim, sizeof(victim), "%s/victim", base);
	cr_assert_eq(mkdir(victim, 0755), 0);
	snprintf(p, sizeof(p), "%s/x", base);
	cr_assert_eq(mkdir(p, 0755), 0);
	mk_chain(p, 5000, 0, 0, victim, 4000);
	cr_assert_geq(fd = open(base, O_RDONLY | O_DIRECTORY), 0);
	cr_assert_eq(yx_tree_remove(fd, "x"), YX_OK);
	cr_assert_neq(faccessat(fd, "x", F_OK, AT_SYMLINK_NOFOLLOW), 0);
	cr_assert_eq(stat(victim, &sb), 0);
	close(fd);
}

/* `n` empty files in dir. */
static void
mk_files(const char *dir, int n)
{
	char	name[32];
	int	fd, i;

	cr_assert_geq(fd = open(dir, O_RDONLY | O_DIRECTORY), 0);
	for (i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "f%06d", i);
		close(openat(fd, name, O_CREAT | O_WRONLY, 0644));
	}
	close(fd);
}

/*
 * A DELETE on a budget: the id is free at once, what is left stays in the
 * tombstone, and the sweep (the reaper's) removes it. Control: without the
 * budget the same removal takes its full time in the call.
 */
Test(tree, remove_budget_leaves_tombstone_for_sweep)
{
	struct yx_thread	o;
	struct stat		sb;
	char			ws[512], claim[600];
	unsigned		left = 9, uid;
	int64_t			t0, ms, ms0;

	mk_thread("wide", ws, sizeof(ws));
	cr_assert_eq(yx_thread_get(&st, "wide", "alice", &o, NULL), YX_OK);
	uid = o.own_uid ? o.uid : 0;
	mk_files(ws, 20000);
	st.remove_budget_ms = 1;
	t0 = yx_mono_ms();
	cr_assert_eq(yx_thread_remove(&st, "wide", "alice", NULL), YX_OK);
	ms = yx_mono_ms() - t0;
	cr_assert_eq(yx_thread_get(&st, "wide", "alice", &o, NULL), YX_E_NOT_FOUND);
	cr_assert_eq(strncmp(hidden_names(), ".trash-", 7), 0,
	    "no tombstone: '%s'", hidden_names());
	/* its uid is not free while its files are on disk */
	if (uid != 0) {
		snprintf(claim, sizeof(claim), "%s/saves/uids/%u", base, uid);
		cr_assert_eq(lstat(claim, &sb), 0, "uid freed with files left");
	}
	cr_assert_eq(yx_thread_store_sweep_trash(&st, 0, &left), 1);
	cr_assert_eq(left, 0);
	cr_assert_str_eq(hidden_names(), "");
	if (uid != 0)	/* the sweep that finished the files freed it */
		cr_assert_eq(lstat(claim, &sb), -1, "uid still claimed");
	/* control: no budget, the call does it all */
	mk_thread("wide", ws, sizeof(ws));
	mk_files(ws, 20000);
	st.remove_budget_ms = 0;
	t0 = yx_mono_ms();
	cr_assert_eq(yx_thread_remove(&st, "wide", "alice", NULL), YX_OK);
	ms0 = yx_mono_ms() - t0;
	cr_assert_str_eq(hidden_names(), "");
	cr_assert_gt(ms0, 1, "control: removing 20,000 files must outlast "
			     "the 1 ms budget (%lld ms)",
	    (long long)ms0);
	printf("tree: DELETE of 20,000 files: budget 1 ms returned in %lld ms "
	       "(rest swept later); no budget %lld ms\n",
	    (long long)ms,
	    (long long)ms0);
}

/* A sweep on a budget makes progress pass by pass, and skips a tombstone
 * another process is removing (flock). */
Test(tree, sweep_budget_and_busy)
{
	unsigned	left = 0, n, passes = 0;
	char		p[512];
	int		fd;

	snprintf(p, sizeof(p), "%s/saves/threads/.trash-aa", base);
	cr_assert_eq(mkdir(p, 0755), 0);
	mk_files(p, 20000);
	do {
		n = yx_thread_store_sweep_trash(&st, 1, &left);
		passes++;
	} while (left > 0 && passes < 100000);
	cr_assert_eq(n, 1);
	cr_assert_eq(left, 0);
	cr_assert_gt(passes, 1, "one 1 ms pass removed 20,000 files");
	printf("tree: 20,000 files swept in %u passes of 1 ms\n", passes);
	cr_assert_eq(mkdir(p, 0755), 0);
	cr_assert_geq(fd = open(p, O_RDONLY | O_DIRECTORY), 0);
	cr_assert_eq(flock(fd, LOCK_EX | LOCK_NB), 0);
	cr_assert_eq(yx_thread_store_sweep_trash(&st, 0, &left), 0);
	cr_assert_eq(left, 1);
	cr_assert_eq(access(p, F_OK), 0);
	close(fd);
	cr_assert_eq(yx_thread_store_sweep_trash(&st, 0, &left), 1);
	cr_assert_eq(left, 0);
}
