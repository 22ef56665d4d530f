/* SPDX-License-Identifier: MIT */
/*
 * drvtest.c - see drvtest.h.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "drvtest.h"

struct dt_env dt;

bool
dt_runsc(void)
{
	return strcmp(dt.cfg.runtime, "runsc") == 0;
}

static int dt_seq;

static void
dt_write(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	cr_assert(f != NULL, "cannot write %s", path);
	fputs(text, f);
	fclose(f);
}

void
dt_prepare(enum yx_driver_kind kind, int pids, int64_t mem)
{
	struct yx_errctx	 err;
	const char		*b = getenv("top_builddir");
	char			 p[PATH_MAX], f[PATH_MAX];

	memset(&dt, 0, sizeof(dt));
	yx_config_defaults(&dt.cfg);
	/* YUXI_TEST_IMAGE: run the suite against another build of the image */
	snprintf(dt.cfg.image, sizeof(dt.cfg.image), "%s",
	    getenv("YUXI_TEST_IMAGE") ? getenv("YUXI_TEST_IMAGE") : DT_IMAGE);
	dt.cfg.driver = kind;
	/* YUXI_TEST_RUNTIME=runsc: the same tests under gVisor */
	if (getenv("YUXI_TEST_RUNTIME") != NULL && getenv("YUXI_TEST_RUNTIME")[0] != '\0')
		snprintf(dt.cfg.runtime, sizeof(dt.cfg.runtime), "%s",
		    getenv("YUXI_TEST_RUNTIME"));
	/* list (and so any reconcile) sees only names with this prefix */
	/* the drivers list only <prefix><hex id>: name ours that way */
	snprintf(dt.cfg.container_prefix, sizeof(dt.cfg.container_prefix),
	    "yuxi-drvtest-%d-", (int)getpid());
	if (pids > 0)
		dt.cfg.pids = pids;
	if (mem > 0)
		dt.cfg.memory_bytes = mem;
	snprintf(dt.name, sizeof(dt.name), "%s%08x", dt.cfg.container_prefix,
	    (unsigned)++dt_seq);
	snprintf(dt.thread, sizeof(dt.thread), "drvtest-%d-%d", (int)getpid(),
	    dt_seq);
	snprintf(dt.sid, sizeof(dt.sid), "%08x", (unsigned)getpid());
	snprintf(dt.runner, sizeof(dt.runner), "%s/yuxi-run", b ? b : ".");
	if (realpath(dt.runner, p) != NULL)
		snprintf(dt.runner, sizeof(dt.runner), "%s", p);
	cr_assert(access(dt.runner, X_OK) == 0, "%s not built", dt.runner);
	snprintf(dt.tmpdir, sizeof(dt.tmpdir), "/tmp/yuxi-drvtest.XXXXXX");
	cr_assert(mkdtemp(dt.tmpdir) != NULL);
	chmod(dt.tmpdir, 0755);
	snprintf(dt.skills, sizeof(dt.skills), "%s/skills-demo", dt.tmpdir);
	snprintf(dt.userdata, sizeof(dt.userdata), "%s/user-data", dt.tmpdir);
	cr_assert(mkdir(dt.skills, 0755) == 0 && mkdir(dt.userdata, 0755) == 0);
	cr_assert(chown(dt.userdata, 1000, 1000) == 0);
	snprintf(f, sizeof(f), "%s/skills-demo/SKILL.md", dt.tmpdir);
	dt_write(f, "# demo skill\n");
	dt.mounts[0] = (struct yx_mount){ dt.userdata, "/home/yuxi/user-data",
		false };
	dt.mounts[1] = (struct yx_mount){ dt.skills, "/home/yuxi/skills/demo",
		true };
	dt.mounts[2] = (struct yx_mount){ dt.runner, DT_RUNNER, true };
	dt.spec = (struct yx_container_spec){ dt.name, dt.cfg.image, dt.thread,
		dt.sid, "fp-demo", dt.mounts, 3, 0, &dt.cfg, 0, 0, NULL, NULL, 0, false };
	dt.d = yx_driver_new(&dt.cfg, &err);
	cr_assert(dt.d != NULL, "%s", err.msg);
}

void
dt_setup(enum yx_driver_kind kind, int pids, int64_t mem)
{
	struct yx_errctx err;
	int rc;

	dt_prepare(kind, pids, mem);
	yx_errctx_clear(&err);
	rc = dt.d->ops->create(dt.d, &dt.spec, &dt.info, &err);
	cr_assert_eq(rc, YX_OK, "create via %s: %s", dt.d->ops->name, err.msg);
}

void
dt_teardown(void)
{
	struct yx_errctx	err;
	char			cmd[PATH_MAX + 32];

	if (dt.d != NULL) {
		if (dt.d->ops->remove(dt.d, dt.name, &err) != YX_OK)
			fprintf(stderr, "teardown: remove %s: %s\n", dt.name,
			    err.msg);
		yx_driver_free(dt.d);
		dt.d = NULL;
	}
	if (dt.tmpdir[0] == '/' && strncmp(dt.tmpdir, "/tmp/yuxi-drvtest.", 18) == 0) {
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dt.tmpdir);
		(void)!system(cmd);
	}
}

int
dt_sink(void *arg, const char *data, size_t len)
{
	return yx_buf_append(arg, data, len);
}

int
dt_sh(const char *cmd, int timeout, struct yx_buf *out,
    struct yx_exec_result *res)
{
	struct yx_errctx	err;
	char			t[16];
	const char		*argv[] = { DT_RUNNER, "-t", t, "-C",
		       "/home/yuxi/user-data", "--", "/bin/sh", "-c", cmd, NULL };
	const char		*env[] = { "LANG=C", NULL };
	struct yx_exec_req	req = { argv, env, "/home/yuxi", "1000:1000",
		timeout, dt_sink, out, NULL };
	int			rc;

	snprintf(t, sizeof(t), "%d", timeout);
	yx_buf_reset(out);
	yx_errctx_clear(&err);
	rc = dt.d->ops->exec(dt.d, dt.name, &req, res, &err);
	if (rc != YX_OK)
		fprintf(stderr, "exec %s: %s\n", cmd, err.msg);
	return rc;
}

int
dt_sh_ok(const char *cmd, struct yx_buf *out)
{
	struct yx_exec_result res;

	cr_assert_eq(dt_sh(cmd, 20, out, &res), YX_OK, "exec failed: %s", cmd);
	return res.exit_code;
}
