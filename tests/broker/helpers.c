/* SPDX-License-Identifier: MIT */
/*
 * helpers.c - fixtures for the broker tests; see helpers.h.
 */
#include "config.h"

#include <sys/stat.h>

#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "helpers.h"
#include "priv/priv_int.h"

struct fx fx;

static void
fx_die(const char *what)
{
	fprintf(stderr, "fixture: %s: %s\n", what, strerror(errno));
	abort();
}

char *
fx_path(const char *rel)
{
	static char buf[4][PATH_MAX];
	static int i;

	i = (i + 1) % 4;
	if (rel[0] == '/')
		snprintf(buf[i], sizeof(buf[i]), "%s", rel);
	else
		snprintf(buf[i], sizeof(buf[i]), "%s/%s", fx.ud, rel);
	return buf[i];
}

void
fx_put(const char *rel, const void *data, size_t len)
{
	int fd;

	fd = open(fx_path(rel), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW, 0644);
	if (fd == -1)
		fx_die(rel);
	if (write(fd, data, len) != (ssize_t)len)
		fx_die("write");
	close(fd);
}

void
fx_puts(const char *rel, const char *s)
{
	fx_put(rel, s, strlen(s));
}

void
fx_mkdir(const char *rel)
{
	if (mkdir(fx_path(rel), 0755) == -1 && errno != EEXIST)
		fx_die(rel);
}

void
fx_symlink(const char *target, const char *rel)
{
	if (symlink(target, fx_path(rel)) == -1)
		fx_die(rel);
}

void
fx_link_secret(const char *rel)
{
	int rc = link(fx.secret, fx_path(rel));

	if (!fx.quota) {
		cr_assert_eq(rc, 0, "link: %s", strerror(errno));
		return;
	}
	cr_assert_eq(rc, -1, "a hardlink across filesystems was made");
	cr_assert_eq(errno, EXDEV, "link: %s", strerror(errno));
	fx_teardown();	/* a skipped test gets no .fini */
	cr_skip_test("user-data is a disk image: a hardlink to an outside file "
		     "cannot exist (EXDEV)");
}

char *
fx_slurp(const char *abspath, size_t *lenp)
{
	FILE	*f;
	char	*p;
	long	 n;

	if ((f = fopen(abspath, "rb")) == NULL)
		return NULL;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	if ((p = calloc(1, (size_t)n + 1)) == NULL)
		fx_die("calloc");
	if (fread(p, 1, (size_t)n, f) != (size_t)n)
		fx_die("fread");
	fclose(f);
	if (lenp != NULL)
		*lenp = (size_t)n;
	return p;
}

static int
fx_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

const char *
fx_names(const char *rel)
{
	static char	 buf[8192];
	char		*names[256];
	DIR		*d;
	struct dirent	*de;
	size_t		 n = 0, i;

	buf[0] = '\0';
	if ((d = opendir(fx_path(rel))) == NULL)
		return buf;
	while ((de = readdir(d)) != NULL && n < 256)
		if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
			names[n++] = strdup(de->d_name);
	closedir(d);
	qsort(names, n, sizeof(*names), fx_cmp);
	for (i = 0; i < n; i++) {
		strncat(buf, names[i], sizeof(buf) - strlen(buf) - 2);
		if (i + 1 < n)
			strcat(buf, ",");
		free(names[i]);
	}
	return buf;
}

static int
fx_rm_cb(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	remove(p);
	return 0;
}

void
fx_rmrf(const char *path)
{
	nftw(path, fx_rm_cb, 32, FTW_DEPTH | FTW_PHYS);
}

static void
fx_mkdir_abs(const char *p)
{
	if (mkdir(p, 0755) == -1 && errno != EEXIST)
		fx_die(p);
}

static void
fx_open(const struct yx_broker_limits *lim)
{
	static const char *const vis[] = { "alpha", "beta" };
	struct yx_errctx e;

	if (yx_broker_init(&fx.b, fx.ud, fx.skills, vis, 2, FX_UID, FX_GID,
		lim, 0, &e) != YX_OK) {
		fprintf(stderr, "broker init: %s\n", e.msg);
		abort();
	}
	fx.open = true;
}

/* YX_TEST_DISK_QUOTA: the user-data root as a mounted disk image. */
static void
fx_quota(void)
{
	const char		*q = getenv("YX_TEST_DISK_QUOTA");
	struct yx_config	 cfg;
	struct yx_errctx	 e;
	int64_t			 size;

	if (q == NULL || q[0] == '\0' || yx_parse_size(q, &size) != YX_OK ||
	    size == 0)
		return;
	yx_config_defaults(&cfg);
	snprintf(cfg.saves_dir, sizeof(cfg.saves_dir), "%s", fx.top);
	cfg.thread_disk_quota = size;
	yx_errctx_clear(&e);
	if (priv_start(&cfg, false, &e) != YX_OK ||
	    yx_priv_create_image("t1", size, FX_UID, FX_GID, &e) != YX_OK ||
	    yx_priv_mount("t1", &e) != YX_OK) {
		fprintf(stderr, "fixture: disk image: %s\n", e.msg);
		abort();
	}
	fx.quota = true;
}

void
fx_setup_lim(const struct yx_broker_limits *lim)
{
	char p[PATH_MAX];
	FILE *f;

	memset(&fx, 0, sizeof(fx));
	snprintf(fx.top, sizeof(fx.top), "/tmp/yxbroker-XXXXXX");
	if (mkdtemp(fx.top) == NULL)
		fx_die("mkdtemp");
	snprintf(p, sizeof(p), "%s/threads", fx.top);
	fx_mkdir_abs(p);
	snprintf(p, sizeof(p), "%s/threads/t1", fx.top);
	fx_mkdir_abs(p);
	snprintf(fx.ud, sizeof(fx.ud), "%s/threads/t1/user-data", fx.top);
	fx_mkdir_abs(fx.ud);
	fx_quota();
	snprintf(fx.out, sizeof(fx.out), "%s/outside", fx.top);
	fx_mkdir_abs(fx.out);
	snprintf(fx.secret, sizeof(fx.secret), "%s/secret.txt", fx.out);
	if ((f = fopen(fx.secret, "w")) == NULL)
		fx_die("secret");
	fputs(FX_SECRET "\n", f);
	fclose(f);
	snprintf(fx.skills, sizeof(fx.skills), "%s/skills", fx.top);
	fx_mkdir_abs(fx.skills);
	for (int i = 0; i < 3; i++) {
		static const char *const names[] = { "alpha", "beta", "hidden" };

		snprintf(p, sizeof(p), "%s/%s", fx.skills, names[i]);
		fx_mkdir_abs(p);
		snprintf(p, sizeof(p), "%s/%s/SKILL.md", fx.skills, names[i]);
		if ((f = fopen(p, "w")) == NULL)
			fx_die("skill");
		fprintf(f, "# %s\nneedle in %s\n", names[i], names[i]);
		fclose(f);
	}
	fx_mkdir("workspace");
	fx_open(lim);
}

void
fx_setup(void)
{
	fx_setup_lim(NULL);
}

void
fx_reopen(const struct yx_broker_limits *lim)
{
	yx_broker_fini(&fx.b);
	fx_open(lim);
}

void
fx_teardown(void)
{
	if (fx.open)
		yx_broker_fini(&fx.b);
	fx.open = false;
	if (fx.quota) {
		if (yx_priv_remove("t1", NULL) != YX_OK)
			fprintf(stderr, "fixture: disk image not removed\n");
		yx_priv_stop();
		fx.quota = false;
	}
	if (fx.top[0] != '\0')
		fx_rmrf(fx.top);
}
