/* SPDX-License-Identifier: MIT */
/*
 * conffix.c - the configuration file fixture (conffix.h).
 */
#include "config.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "conffix.h"
#include "tutil.h"

static char	dir[] = "/tmp/yx-conffix-XXXXXX";
char		conffix_path[sizeof(dir) + 32];

void
conffix_setup(void)
{
	tutil_clear_yuxi_env();
	cr_assert_not_null(mkdtemp(dir));
	snprintf(conffix_path, sizeof(dir) + 32, "%s/yuxi-sandbox.conf", dir);
}

void
conffix_teardown(void)
{
	unlink(conffix_path);
	rmdir(dir);
}

void
conffix_write(const char *text)
{
	FILE *f = fopen(conffix_path, "w");

	cr_assert_not_null(f);
	cr_assert_eq(fputs(text, f) >= 0, true);
	cr_assert_eq(fclose(f), 0);
}
