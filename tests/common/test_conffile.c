/* SPDX-License-Identifier: MIT */
/*
 * test_conffile.c - the configuration file (src/common/config.c,
 * docs/configuration.md): KEY=value lines, comments and quotes, the
 * environment overriding the file, and errors that name the file and the
 * line for an unknown setting, a bad value or a line that is not a setting.
 */
#include "config.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "yuxi/config.h"
#include "yuxi/error.h"
#include "../lib/conffix.h"

TestSuite(conffile, .init = conffix_setup, .fini = conffix_teardown);

/* Load the fixture's file; returns the status, the message in err. */
static int
load(struct yx_config *c, char *err, size_t errlen)
{
	err[0] = '\0';
	return yx_config_load_file(c, conffix_path, err, errlen);
}

Test(conffile, values_comments_quotes_and_crlf)
{
	static struct yx_config	c;
	char			err[256];

	conffix_write("# yuxi-sandbox.conf\n"
		      "\n"
		      "   # indented comment\n"
		      "YUXI_WORKERS=7\n"
		      "YUXI_SANDBOX_IMAGE = \"my image:1\"  \n"
		      "YUXI_SANDBOX_MEMORY=2g\r\n"
		      "YUXI_SAVES_DIR=/srv/yx\n"
		      "YUXI_WORKERS=9\n"); /* the last one wins */
	cr_assert_eq(load(&c, err, sizeof(err)), YX_OK, "%s", err);
	cr_assert_eq(c.workers, 9);
	cr_assert_str_eq(c.image, "my image:1");
	cr_assert_eq(c.memory_bytes, 2LL << 30);
	cr_assert_str_eq(c.saves_dir, "/srv/yx");
	cr_assert_str_eq(c.config_file, conffix_path);
}

Test(conffile, empty_value_is_the_default)
{
	static struct yx_config	c, d;
	char			err[256];

	yx_config_defaults(&d);
	conffix_write("YUXI_WORKERS=\n");
	cr_assert_eq(load(&c, err, sizeof(err)), YX_OK, "%s", err);
	cr_assert_eq(c.workers, d.workers);
}

Test(conffile, environment_overrides_the_file)
{
	static struct yx_config	c;
	char			err[256];

	conffix_write("YUXI_WORKERS=7\nYUXI_SANDBOX_PIDS=300\n");
	setenv("YUXI_WORKERS", "3", 1);
	cr_assert_eq(load(&c, err, sizeof(err)), YX_OK, "%s", err);
	cr_assert_eq(c.workers, 3);
	cr_assert_eq(c.pids, 300);
}

Test(conffile, environment_value_overrides_a_bad_file_value)
{
	static struct yx_config	c;
	char			err[256];

	/* The bad file value is never parsed: the environment has it. */
	conffix_write("YUXI_WORKERS=lots\n");
	setenv("YUXI_WORKERS", "2", 1);
	cr_assert_eq(load(&c, err, sizeof(err)), YX_OK, "%s", err);
	cr_assert_eq(c.workers, 2);
}

Test(conffile, unknown_setting_names_file_and_line)
{
	static struct yx_config	c;
	char			err[256], want[256];

	conffix_write("YUXI_WORKERS=2\n# typo below\nYUXI_WORKRES=4\n");
	cr_assert_eq(load(&c, err, sizeof(err)), YX_E_BAD_REQUEST);
	snprintf(want, sizeof(want), "%s:3: YUXI_WORKRES: unknown setting", conffix_path);
	cr_assert_str_eq(err, want);
}

Test(conffile, bad_value_names_file_and_line)
{
	static struct yx_config	c;
	char			err[256], want[256];

	conffix_write("\n\nYUXI_SANDBOX_MEMORY=lots\n");
	cr_assert_eq(load(&c, err, sizeof(err)), YX_E_BAD_REQUEST);
	snprintf(want, sizeof(want), "%s:3: YUXI_SANDBOX_MEMORY: ", conffix_path);
	cr_assert_eq(strncmp(err, want, strlen(want)), 0, "%s", err);
}

Test(conffile, bad_environment_value_names_the_variable_only)
{
	static struct yx_config	c;
	char			err[256];

	conffix_write("YUXI_WORKERS=2\n");
	setenv("YUXI_SANDBOX_PIDS", "1", 1);
	cr_assert_eq(load(&c, err, sizeof(err)), YX_E_BAD_REQUEST);
	cr_assert_eq(strncmp(err, "YUXI_SANDBOX_PIDS: ", 19), 0, "%s", err);
}

Test(conffile, line_without_equals)
{
	static struct yx_config	c;
	char			err[256], want[256];

	conffix_write("YUXI_WORKERS 2\n");
	cr_assert_eq(load(&c, err, sizeof(err)), YX_E_BAD_REQUEST);
	snprintf(want, sizeof(want), "%s:1: expected KEY=value", conffix_path);
	cr_assert_str_eq(err, want);
}

Test(conffile, not_a_yuxi_setting)
{
	static struct yx_config	c;
	char			err[256], want[256];

	conffix_write("PATH=/bin\n");
	cr_assert_eq(load(&c, err, sizeof(err)), YX_E_BAD_REQUEST);
	snprintf(want, sizeof(want), "%s:1: PATH: not a YUXI_* setting", conffix_path);
	cr_assert_str_eq(err, want);
}

Test(conffile, file_too_large)
{
	static struct yx_config	c;
	char			err[256];
	static char		big[70 * 1024];

	memset(big, '#', sizeof(big) - 1);
	conffix_write(big);
	cr_assert_eq(load(&c, err, sizeof(err)), YX_E_BAD_REQUEST);
	cr_assert_not_null(strstr(err, "larger than 64 KiB"), "%s", err);
}

Test(conffile, named_file_must_exist)
{
	static struct yx_config	c;
	char			err[256];

	cr_assert_eq(load(&c, err, sizeof(err)), YX_E_BAD_REQUEST);
	cr_assert_not_null(strstr(err, "No such file"), "%s", err);
}

Test(conffile, yuxi_config_names_the_file)
{
	static struct yx_config	c;
	char			err[256];

	conffix_write("YUXI_WORKERS=5\n");
	setenv("YUXI_CONFIG", conffix_path, 1);
	cr_assert_eq(yx_config_load(&c, err, sizeof(err)), YX_OK, "%s", err);
	cr_assert_eq(c.workers, 5);
	cr_assert_str_eq(c.config_file, conffix_path);
}

Test(conffile, yuxi_config_none_reads_no_file)
{
	static struct yx_config	c, d;
	char			err[256];

	yx_config_defaults(&d);
	setenv("YUXI_CONFIG", "none", 1);
	cr_assert_eq(yx_config_load(&c, err, sizeof(err)), YX_OK, "%s", err);
	cr_assert_eq(c.workers, d.workers);
	cr_assert_str_eq(c.config_file, "");
}

Test(conffile, missing_yuxi_config_file_is_an_error)
{
	static struct yx_config	c;
	char			err[256];

	setenv("YUXI_CONFIG", "/nonexistent/yuxi.conf", 1);
	cr_assert_eq(yx_config_load(&c, err, sizeof(err)), YX_E_BAD_REQUEST);
	cr_assert_not_null(strstr(err, "/nonexistent/yuxi.conf"), "%s", err);
}
