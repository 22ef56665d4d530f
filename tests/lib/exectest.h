/* SPDX-License-Identifier: MIT */
/*
 * exectest.h - the fixture of the tests that run the executor against the
 * real engine (tests/exec/test_executor.c, tests/guest/test_agent.c): a
 * configuration loaded from the environment with names of its own (the
 * container prefix, shm name and saves directory under /tmp all carry a
 * tag and the pid), a shared table, a driver, an executor and a thread
 * store. exectest_close() removes every container under the prefix, the
 * shm object and the saves tree. Failures are Criterion assertions.
 */
#ifndef TESTS_LIB_EXECTEST_H
#define TESTS_LIB_EXECTEST_H

#include <stddef.h>

#include "yuxi/config.h"
#include "yuxi/driver.h"
#include "yuxi/executor.h"
#include "yuxi/shm_table.h"
#include "yuxi/threads.h"
#include "exec/exec_int.h"

struct exectest {
	struct yx_config	 cfg;
	struct yx_table		*table;
	struct yx_driver	*drv;
	struct yx_executor	*ex;
	struct yx_thread_store	 store;
	char			 saves[256];	/* the saves directory */
};

extern struct exectest xt;

/*
 * Load the configuration into xt.cfg with image `image`, at most 8
 * sandboxes, container prefix "<tag><pid>-<k>-", shm name "/<tag>-<pid>-<k>"
 * (k counts the calls) and a fresh saves directory /tmp/<tag>-<pid>-XXXXXX.
 * YUXI_TEST_RUNTIME (runc, runsc) picks the container runtime.
 * The caller may change xt.cfg before exectest_open().
 */
void	exectest_config(const char *tag, const char *image);
/* Open the table, driver, executor (with transport t) and thread store. */
void	exectest_open(enum yx_exec_transport t);
/* Undo exectest_config() and exectest_open(); safe after either. */
void	exectest_close(void);

/* Thread tid of "tester", created on first use (with its own uid). */
void	exectest_thread(const char *tid, struct yx_thread *t);
/* Run cmd in thread tid (timeout 0: the configured one); the call's own
 * result, *out filled on YX_OK. */
int	exectest_try_run(const char *tid, const char *cmd, int timeout,
    struct yx_exec_output *out, struct yx_errctx *e);
/* The same, asserting YX_OK. */
void	exectest_run(const char *tid, const char *cmd, int timeout,
    struct yx_exec_output *out);
/* Run cmd in thread tid (timeout 0); assert its output is want (NULL: any). */
void	exectest_expect(const char *tid, const char *cmd, const char *want);
/* The container id of thread tid's sandbox, from the table (asserted). */
void	exectest_container_of(const char *tid, char *id, size_t idlen);

#endif
