/* SPDX-License-Identifier: MIT */
/*
 * test_reload.c - what a reload (SIGHUP) reads again (src/daemon/reload.c,
 * docs/operations.md): the same file under the same environment, a refusal
 * that names the file and the line, the agents file checked as at start,
 * and every restart-only setting kept at its running value while the
 * others change.
 */
#include "config.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/daemon_int.h"
#include "yuxi/config.h"
#include "yuxi/error.h"
#include "../lib/conffix.h"

TestSuite(reload, .init = conffix_setup, .fini = conffix_teardown);

/* The running configuration: `text` read from the file, as at start. */
static void
start(struct yx_config *cur, const char *text)
{
	char err[512];

	conffix_write(text);
	cr_assert_eq(yx_config_load_file(cur, conffix_path, err, sizeof(err)), YX_OK, "%s", err);
	cr_assert_str_eq(cur->config_file, conffix_path);
}

Test(reload, reads_the_same_file_again)
{
	static struct yx_config	cur, next;
	char			err[512];

	start(&cur, "YUXI_SANDBOX_OUTPUT_LIMIT=4k\n");
	cr_assert_eq(cur.output_limit, 4096);
	conffix_write("YUXI_SANDBOX_OUTPUT_LIMIT=8k\nYUXI_WORKERS=7\n");
	cr_assert_eq(yx_reload_config(&cur, &next, err, sizeof(err)), YX_OK, "%s", err);
	cr_assert_eq(next.output_limit, 8192);
	cr_assert_eq(next.workers, 7);
	cr_assert_str_eq(next.config_file, conffix_path);
}

Test(reload, environment_still_overrides)
{
	static struct yx_config	cur, next;
	char			err[512];

	cr_assert_eq(setenv("YUXI_WORKERS", "3", 1), 0);
	start(&cur, "YUXI_WORKERS=5\n");
	conffix_write("YUXI_WORKERS=6\n");
	cr_assert_eq(yx_reload_config(&cur, &next, err, sizeof(err)), YX_OK, "%s", err);
	cr_assert_eq(next.workers, 3);
	unsetenv("YUXI_WORKERS");
}

/* A refusal names the file, the line and the setting. */
Test(reload, invalid_value_refused_with_file_and_line)
{
	static struct yx_config	cur, next;
	char			err[512], want[256];

	start(&cur, "YUXI_SANDBOX_OUTPUT_LIMIT=4k\n");
	conffix_write("# changed\nYUXI_SANDBOX_OUTPUT_LIMIT=lots\n");
	cr_assert_neq(yx_reload_config(&cur, &next, err, sizeof(err)), YX_OK);
	snprintf(want, sizeof(want), "%s:2: YUXI_SANDBOX_OUTPUT_LIMIT: ", conffix_path);
	cr_assert_not_null(strstr(err, want), "%s", err);
	conffix_write("YUXI_WORKRES=4\n");
	cr_assert_neq(yx_reload_config(&cur, &next, err, sizeof(err)), YX_OK);
	snprintf(want, sizeof(want), "%s:1: YUXI_WORKRES: unknown setting", conffix_path);
	cr_assert_not_null(strstr(err, want), "%s", err);
}

Test(reload, agents_file_and_skills_dir_checked)
{
	static struct yx_config	cur, next;
	char			err[512];

	start(&cur, "");
	conffix_write("YUXI_AGENTS_FILE=/nonexistent/agents.json\n");
	cr_assert_neq(yx_reload_config(&cur, &next, err, sizeof(err)), YX_OK);
	cr_assert_not_null(strstr(err, "YUXI_AGENTS_FILE: /nonexistent/agents.json"), "%s", err);
	conffix_write("YUXI_SKILLS_DIR=/nonexistent/skills\n");
	cr_assert_neq(yx_reload_config(&cur, &next, err, sizeof(err)), YX_OK);
	cr_assert_not_null(strstr(err, "YUXI_SKILLS_DIR: /nonexistent/skills is not a directory"),
	    "%s", err);
}

/* Every restart-only setting keeps its running value; the rest changes. */
Test(reload, restart_only_settings_kept)
{
	static struct yx_config	cur, next;
	char			err[512];

	start(&cur, "YUXI_SANDBOX_OUTPUT_LIMIT=4k\n");
	conffix_write("YUXI_SANDBOX_OUTPUT_LIMIT=8k\n"
		      "YUXI_FCGI_SOCKET=/tmp/yx-reload-other.sock\n"
		      "YUXI_FCGI_SOCKET_GROUP=0\n"
		      "YUXI_FCGI_SOCKET_MODE=0600\n"
		      "YUXI_SHM_NAME=/yx-reload-other\n"
		      "YUXI_SANDBOX_MAX_REPLICAS=7\n"
		      "YUXI_SAVES_DIR=/tmp/yx-reload-other-saves\n"
		      "YUXI_SANDBOX_CONTAINER_PREFIX=yx-reload-other-\n");
	cr_assert_eq(yx_reload_config(&cur, &next, err, sizeof(err)), YX_OK, "%s", err);
	cr_assert_eq(next.output_limit, 8192);
	cr_assert_str_eq(next.fcgi_socket, cur.fcgi_socket);
	cr_assert_eq(next.fcgi_socket_gid, cur.fcgi_socket_gid);
	cr_assert_eq(next.fcgi_socket_mode, cur.fcgi_socket_mode);
	cr_assert_str_eq(next.shm_name, cur.shm_name);
	cr_assert_eq(next.max_replicas, cur.max_replicas);
	cr_assert_str_eq(next.saves_dir, cur.saves_dir);
	cr_assert_str_eq(next.container_prefix, cur.container_prefix);
}
