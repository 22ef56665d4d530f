/* SPDX-License-Identifier: MIT */
/*
 * drvtest.h - helpers for the driver tests against the real engine: a
 * per-test sandbox (container named yuxi-drvtest-<pid>-<n> from
 * yuxi-sandbox-test:latest, the runner and two host directories mounted)
 * and a shell helper that runs a command through yuxi-run.
 */
#ifndef DRVTEST_H
#define DRVTEST_H

#include <limits.h>
#include <stdbool.h>

#include "yuxi/buf.h"
#include "yuxi/config.h"
#include "yuxi/driver.h"

#define DT_IMAGE	"yuxi-sandbox-test:latest"
#define DT_RUNNER	"/opt/yuxi/bin/yuxi-run"

struct dt_env {
	struct yx_config		cfg;
	struct yx_driver		*d;
	char				name[128];
	char				thread[64];
	char				sid[32];
	char				tmpdir[64];
	char				skills[PATH_MAX];
	char				userdata[PATH_MAX];
	char				runner[PATH_MAX];
	struct yx_mount			mounts[3];
	struct yx_container_spec	spec;
	struct yx_container_info	info;
};

extern struct dt_env dt;

/* Configure dt for driver `kind` (pids/memory 0 = defaults), no container.
 * YUXI_TEST_RUNTIME (runc, runsc) picks the runtime (default runc). */
void	dt_prepare(enum yx_driver_kind kind, int pids, int64_t mem);
/* dt_prepare then create the container (asserts). */
void	dt_setup(enum yx_driver_kind kind, int pids, int64_t mem);
/* True when the sandboxes run under gVisor (YUXI_TEST_RUNTIME=runsc). */
bool	dt_runsc(void);
/* Remove the container and the host directories (fixture .fini). */
void	dt_teardown(void);
/* Run `cmd` via the runner (-t timeout) in dt's container; output in out
 * (reset first). Returns the exec rc; *res filled. */
int	dt_sh(const char *cmd, int timeout, struct yx_buf *out,
    struct yx_exec_result *res);
/* Like dt_sh but asserts rc OK and returns the exit code. */
int	dt_sh_ok(const char *cmd, struct yx_buf *out);
/* Sink appending to a struct yx_buf. */
int	dt_sink(void *arg, const char *data, size_t len);

#endif
