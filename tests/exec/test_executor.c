/* SPDX-License-Identifier: MIT */
/*
 * test_executor.c - the executor against the real Docker engine, through
 * the driver named by YX_TEST_DRIVER ("api" or "cli") and the transport
 * named by YX_TEST_TRANSPORT ("engine": driver exec of the runner, the agent
 * disabled; "agent": every command through the in-sandbox agent, no
 * fallback allowed). This file is built once per combination, so the same
 * suite proves both paths give the same results. Each test gets its own
 * shared table, saves directory and container prefix, and removes every
 * container it made.
 */
#include "config.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "yuxi/provider.h"
#include "../lib/exectest.h"

#ifndef YX_TEST_DRIVER
#define YX_TEST_DRIVER "api"
#endif
#ifndef YX_TEST_TRANSPORT
#define YX_TEST_TRANSPORT "engine"
#endif
#define AGENT_MODE (strcmp(YX_TEST_TRANSPORT, "agent") == 0)

static void
setup_with(const char *image, size_t output_limit)
{
	exectest_config("yxexec" YX_TEST_DRIVER YX_TEST_TRANSPORT, image);
	xt.cfg.driver = strcmp(YX_TEST_DRIVER, "cli") == 0 ? YX_DRIVER_CLI :
							     YX_DRIVER_API;
	xt.cfg.output_limit = output_limit;
	exectest_open(AGENT_MODE ? YX_EXEC_TRANSPORT_AGENT :
				   YX_EXEC_TRANSPORT_ENGINE);
	cr_assert_eq(access(xt.cfg.runner_path, X_OK), 0, "runner %s missing",
	    xt.cfg.runner_path);
}

static void
setup(void)
{
	setup_with("yuxi-sandbox-test:latest", 256 << 10);
}

/* Every command of the test went through the transport under test. */
static void
check_transport(void)
{
	struct yx_exec_stats st;

	yx_executor_stats(xt.ex, &st);
	if (AGENT_MODE)
		cr_expect_eq(st.engine_runs, 0, "engine path used %llu times",
		    (unsigned long long)st.engine_runs);
	else
		cr_expect_eq(st.agent_runs, 0, "agent used %llu times",
		    (unsigned long long)st.agent_runs);
}

static void
teardown(void)
{
	if (xt.ex != NULL)
		check_transport();
	exectest_close();
}

TestSuite(executor, .init = setup, .fini = teardown, .timeout = 120);

Test(executor, echo_and_exit_code)
{
	struct yx_exec_output out;

	exectest_run("t-echo", "echo hi; exit 3", 0, &out);
	cr_assert_str_eq(out.output, "hi\n");
	cr_assert_eq(out.exit_code, 3);
	cr_assert(!out.truncated && !out.timed_out);
	cr_assert_geq(out.duration_ms, 0);
	yx_exec_output_fini(&out);
}

Test(executor, combined_output_in_write_order)
{
	exectest_expect("t-order", "for i in 1 2 3; do echo out$i; echo err$i >&2; done",
	    "out1\nerr1\nout2\nerr2\nout3\nerr3\n");
}

Test(executor, workdir_home_and_user)
{
	struct yx_exec_output out;

	struct yx_thread	t;
	char			want[200];

	exectest_run("t-env", "pwd; echo $HOME; id -u; id -g; whoami; touch $HOME/.cache-test && "
			      "echo homeok",
	    0, &out);
	exectest_thread("t-env", &t);
	/* the thread's own uid (root runs the tests: a range is in force) */
	cr_assert(t.own_uid && t.uid >= xt.cfg.uid_base &&
		t.uid - xt.cfg.uid_base < xt.cfg.uid_count,
	    "uid %u", t.uid);
	snprintf(want, sizeof(want), "/home/yuxi/user-data/workspace\n/home/yuxi\n"
				     "%u\n%u\nyuxi\nhomeok\n",
	    t.uid, t.gid);
	cr_assert_str_eq(out.output, want);
	yx_exec_output_fini(&out);
}

Test(executor, files_land_on_host_owned_by_sandbox_user)
{
	struct yx_exec_output	out;
	struct yx_thread	t;
	struct stat		st;
	char			p[512];

	exectest_run("t-files", "echo data > made.txt && ls /home/yuxi/user-data", 0, &out);
	exectest_thread("t-files", &t);
	cr_assert(strstr(out.output, "workspace") != NULL, "%s", out.output);
	cr_assert(strstr(out.output, "large_tool_results") != NULL, "%s", out.output);
	snprintf(p, sizeof(p), "%s/threads/t-files/user-data/workspace/made.txt", xt.saves);
	cr_assert_eq(stat(p, &st), 0, "no %s", p);
	cr_assert_eq(st.st_uid, t.uid);
	cr_assert_eq(st.st_size, 5);
	yx_exec_output_fini(&out);
}

Test(executor, timeout_kills_the_whole_tree)
{
	struct yx_exec_output out;

	exectest_run("t-timeout", "sleep 300 & sleep 300", 2, &out);
	cr_assert(out.timed_out);
	cr_assert_eq(out.exit_code, 124);
	cr_assert_lt(out.duration_ms, 10000);
	yx_exec_output_fini(&out);
	exectest_run("t-timeout", "ps -o args | grep -c '^sleep 300' || true", 0, &out);
	cr_assert_str_eq(out.output, "0\n", "left running: %s", out.output);
	yx_exec_output_fini(&out);
}

Test(executor, output_cap_and_spill)
{
	struct yx_exec_output	out;
	struct yx_thread	t;
	struct stat		st;
	char			p[5000];

	teardown();
	setup_with("yuxi-sandbox-test:latest", 4096);
	exectest_run("t-cap", "yes 0123456789 | head -c 1000000", 0, &out);
	cr_assert(out.truncated);
	cr_assert_eq(out.len, 4096);
	cr_assert_eq(strncmp(out.full_output_path,
			 "/home/yuxi/user-data/large_tool_results/", 40),
	    0, "%s", out.full_output_path);
	snprintf(p, sizeof(p), "%s/threads/t-cap/user-data/%s", xt.saves,
	    out.full_output_path + strlen("/home/yuxi/user-data/"));
	cr_assert_eq(stat(p, &st), 0, "spill file %s", p);
	cr_assert_eq(st.st_size, 1000000);
	exectest_thread("t-cap", &t);
	cr_assert_eq(st.st_uid, t.uid);
	yx_exec_output_fini(&out);
	/* one write far larger than any pipe: it must block, not fail */
	exectest_run("t-cap", "yes 0123456789 | head -c 3145728 > big.bin && "
			      "dd if=big.bin bs=1048576 count=3 2>/dev/null",
	    0, &out);
	cr_assert_eq(out.exit_code, 0, "dd failed: %.200s", out.output);
	cr_assert(out.truncated);
	snprintf(p, sizeof(p), "%s/threads/t-cap/user-data/%s", xt.saves,
	    out.full_output_path + strlen("/home/yuxi/user-data/"));
	cr_assert_eq(stat(p, &st), 0, "spill file %s", p);
	cr_assert_eq(st.st_size, 3 << 20);
	yx_exec_output_fini(&out);
}

Test(executor, host_paths_masked)
{
	struct yx_exec_output out;

	xt.cfg.cmd_policy = YX_CMD_POLICY_OFF;	/* /proc is outside the policy */
	exectest_run("t-mask", "cat /proc/self/mountinfo", 0, &out);
	cr_assert(strstr(out.output, "/home/yuxi/user-data") != NULL);
	cr_assert(strstr(out.output, xt.saves) == NULL, "host path leaked:\n%s", out.output);
	yx_exec_output_fini(&out);
}

Test(executor, policy_refuses_before_any_container)
{
	struct yx_exec_request		req = { 0 };
	struct yx_exec_output		out;
	struct yx_errctx		e;
	struct yx_provider_snapshot	snap;

	req.thread_id = "t-policy";
	req.command = "cat /etc/passwd";
	/* an ordinary result, like a shell that cannot run it: 126 */
	cr_assert_eq(yx_executor_run(xt.ex, &req, &out, &e), YX_OK);
	cr_assert_eq(out.exit_code, 126);
	cr_assert_str_eq(out.refused, "path_not_allowed");
	cr_assert(strstr(out.output, "/etc/passwd") != NULL, "%s", out.output);
	yx_exec_output_fini(&out);
	cr_assert_eq(yx_provider_list(yx_executor_provider(xt.ex), &snap, NULL), YX_OK);
	cr_assert_eq(snap.nslots, 0);
	yx_provider_snapshot_fini(&snap);
}

Test(executor, vanished_container_is_recreated)
{
	struct yx_provider_snapshot	snap;

	exectest_expect("t-vanish", "echo one", NULL);
	cr_assert_eq(yx_provider_list(yx_executor_provider(xt.ex), &snap, NULL), YX_OK);
	cr_assert_eq(snap.nslots, 1);
	cr_assert_eq(xt.drv->ops->remove(xt.drv, snap.slots[0].container_id, NULL), YX_OK);
	yx_provider_snapshot_fini(&snap);
	exectest_expect("t-vanish", "echo two", "two\n");
}

Test(executor, stopped_container_is_recreated)
{
	struct yx_provider_snapshot	snap;
	char				cmd[256];

	exectest_expect("t-stop", "echo one", NULL);
	cr_assert_eq(yx_provider_list(yx_executor_provider(xt.ex), &snap, NULL), YX_OK);
	cr_assert_eq(snap.nslots, 1);
	snprintf(cmd, sizeof(cmd), "docker stop -t 0 %s >/dev/null 2>&1",
	    snap.slots[0].container_id);
	yx_provider_snapshot_fini(&snap);
	cr_assert_eq(system(cmd), 0);
	exectest_expect("t-stop", "echo two", "two\n");
}

Test(executor, changed_settings_recreate_the_sandbox)
{
	struct yx_provider_snapshot	snap;
	struct yx_errctx		e;
	char				first[YX_CONTAINER_ID_MAX];

	exectest_expect("t-spec", "echo one", NULL);
	cr_assert_eq(yx_provider_list(yx_executor_provider(xt.ex), &snap, NULL), YX_OK);
	snprintf(first, sizeof(first), "%s", snap.slots[0].container_id);
	yx_provider_snapshot_fini(&snap);
	/* same settings: reused */
	exectest_expect("t-spec", "echo two", NULL);
	cr_assert_eq(yx_provider_list(yx_executor_provider(xt.ex), &snap, NULL), YX_OK);
	cr_assert_str_eq(snap.slots[0].container_id, first);
	yx_provider_snapshot_fini(&snap);
	/* the operator lowers the memory limit and restarts: recreated */
	yx_executor_free(xt.ex);
	xt.cfg.memory_bytes = 256LL << 20;
	xt.cfg.cmd_policy = YX_CMD_POLICY_OFF;	/* /sys is outside the policy */
	cr_assert_not_null(xt.ex = yx_executor_new(&xt.cfg, xt.table, xt.drv, &e), "%s", e.msg);
	yx_executor_set_transport(xt.ex, AGENT_MODE ? YX_EXEC_TRANSPORT_AGENT : YX_EXEC_TRANSPORT_ENGINE);
	cr_assert_eq(yx_thread_store_init(&xt.store, &xt.cfg, &e), YX_OK, "%s", e.msg);
	if (strcmp(xt.cfg.runtime, "runsc") != 0)
		exectest_expect("t-spec", "cat /sys/fs/cgroup/memory/memory.limit_in_bytes "
					  "2>/dev/null || cat /sys/fs/cgroup/memory.max",
		    "268435456\n");
	else	/* gVisor has no cgroupfs inside: ask the engine */
		exectest_expect("t-spec", "echo three", "three\n");
	cr_assert_eq(yx_provider_list(yx_executor_provider(xt.ex), &snap, NULL), YX_OK);
	cr_assert_eq(snap.nslots, 1);
	cr_assert_str_neq(snap.slots[0].container_id, first);
	if (strcmp(xt.cfg.runtime, "runsc") == 0) {
		char cmd[256], v[64] = "";
		FILE *p;

		snprintf(cmd, sizeof(cmd), "docker inspect -f '{{.HostConfig.Memory}} "
					   "{{.HostConfig.Runtime}}' %s",
		    snap.slots[0].container_id);
		cr_assert_not_null(p = popen(cmd, "r"));
		if (fgets(v, sizeof(v), p) == NULL)
			v[0] = '\0';
		pclose(p);
		cr_expect_str_eq(v, "268435456 runsc\n");
	}
	yx_provider_snapshot_fini(&snap);
}

Test(executor, one_container_per_thread_reused)
{
	struct yx_provider_snapshot	snap;

	exectest_expect("t-a", "hostname", NULL);
	exectest_expect("t-a", "hostname", NULL);
	exectest_expect("t-b", "hostname", NULL);
	cr_assert_eq(yx_provider_list(yx_executor_provider(xt.ex), &snap, NULL), YX_OK);
	cr_assert_eq(snap.nslots, 2);
	cr_assert_str_neq(snap.slots[0].container_id, snap.slots[1].container_id);
	yx_provider_snapshot_fini(&snap);
}

Test(executor, default_image_python)
{
	teardown();
	setup_with("yuxi-sandbox:latest", 256 << 10);
	if (xt.drv->ops->image_present(xt.drv, xt.cfg.image, NULL) != YX_OK)
		cr_skip_test("default image yuxi-sandbox:latest not built");
	exectest_expect("t-py", "python3 -c 'print(1+1)'", "2\n");
}
