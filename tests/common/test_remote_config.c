/* SPDX-License-Identifier: MIT */
/*
 * test_remote_config.c - the remote mode's settings (src/common/config.c,
 * docs/configuration.md "Remote mode"): YUXI_MODE, a front needing its
 * hosts, and the credential file both sides read (yx_config_read_token):
 * missing, readable by others, too short, with a byte that could end an
 * nginx directive or a header, all refused with a message naming the
 * setting and never the secret. Each test runs in its own process.
 */
#include "config.h"

#include <sys/stat.h>

#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "yuxi/config.h"
#include "yuxi/error.h"
#include "../lib/tutil.h"

#define SECRET	"0123456789abcdef0123456789abcdef0123456789abcdef"

static char tokdir[] = "/tmp/yxtokXXXXXX";

static void
setup(void)
{
	tutil_clear_yuxi_env();
	cr_assert_eq(setenv("YUXI_CONFIG", "none", 1), 0);
	cr_assert_not_null(mkdtemp(tokdir));
}

static void
teardown(void)
{
	char cmd[64];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", tokdir);
	(void)system(cmd);
}

TestSuite(remote_config, .init = setup, .fini = teardown);

/* A token file with text and mode; its path (static). */
static const char *
token(const char *text, mode_t mode)
{
	static char	path[128];
	int		fd;

	snprintf(path, sizeof(path), "%s/tok", tokdir);
	(void)unlink(path);
	cr_assert_neq(fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600), -1);
	cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	cr_assert_eq(chmod(path, mode), 0);
	return path;
}

static int
load(struct yx_config *c, char *eb, size_t el)
{
	eb[0] = '\0';
	return yx_config_load(c, eb, el);
}

Test(remote_config, default_is_standalone)
{
	struct yx_config	c;
	char			eb[256];

	cr_assert_eq(load(&c, eb, sizeof(eb)), YX_OK, "%s", eb);
	cr_expect_eq(c.mode, YX_MODE_STANDALONE);
	/* a standalone daemon needs no credential, and a host list is only checked */
	cr_assert_eq(setenv("YUXI_SANDBOX_PROVISIONER_URL", "p1=https://127.0.0.1:9443", 1), 0);
	cr_expect_eq(load(&c, eb, sizeof(eb)), YX_OK, "%s", eb);
	cr_assert_eq(setenv("YUXI_SANDBOX_PROVISIONER_URL", "http://127.0.0.1:9443", 1), 0);
	cr_expect_eq(load(&c, eb, sizeof(eb)), YX_E_BAD_REQUEST);
	cr_expect(strncmp(eb, "YUXI_SANDBOX_PROVISIONER_URL: ", 30) == 0, "%s", eb);
}

Test(remote_config, modes)
{
	struct yx_config	c;
	char			eb[256];

	cr_assert_eq(setenv("YUXI_PROVISIONER_TOKEN_FILE", token(SECRET "\n", 0600), 1), 0);
	cr_assert_eq(setenv("YUXI_MODE", "provisioner", 1), 0);
	cr_assert_eq(load(&c, eb, sizeof(eb)), YX_OK, "%s", eb);
	cr_expect_eq(c.mode, YX_MODE_PROVISIONER);
	cr_assert_eq(setenv("YUXI_MODE", "front", 1), 0);
	cr_expect_eq(load(&c, eb, sizeof(eb)), YX_E_BAD_REQUEST, "a front without hosts");
	cr_expect(strstr(eb, "YUXI_SANDBOX_PROVISIONER_URL") != NULL, "%s", eb);
	cr_assert_eq(setenv("YUXI_SANDBOX_PROVISIONER_URL",
			 "p1=https://127.0.0.1:9443,p2=https://127.0.0.1:9444", 1),
	    0);
	cr_assert_eq(load(&c, eb, sizeof(eb)), YX_OK, "%s", eb);
	cr_expect_eq(c.mode, YX_MODE_FRONT);
	cr_assert_eq(setenv("YUXI_MODE", "both", 1), 0);
	cr_expect_eq(load(&c, eb, sizeof(eb)), YX_E_BAD_REQUEST);
	cr_expect(strncmp(eb, "YUXI_MODE: ", 11) == 0, "%s", eb);
}

/* The credential file of a provisioner: refused, the message names it. */
static void
refused(const char *why_part)
{
	struct yx_config	c;
	char			eb[256];

	cr_assert_eq(setenv("YUXI_MODE", "provisioner", 1), 0);
	cr_expect_eq(load(&c, eb, sizeof(eb)), YX_E_BAD_REQUEST, "accepted (%s)", why_part);
	cr_expect(strncmp(eb, "YUXI_PROVISIONER_TOKEN_FILE: ", 29) == 0, "%s", eb);
	cr_expect(strstr(eb, why_part) != NULL, "%s", eb);
	cr_expect(strstr(eb, "0123456789abcdef") == NULL, "the secret in %s", eb);
}

Test(remote_config, token_file)
{
	struct yx_config	c;
	char			eb[256], tok[300], why[256];

	refused("needed");	/* not set */
	cr_assert_eq(setenv("YUXI_PROVISIONER_TOKEN_FILE", "/nonexistent/tok", 1), 0);
	refused("No such file");
	cr_assert_eq(setenv("YUXI_PROVISIONER_TOKEN_FILE", token(SECRET, 0644), 1), 0);
	refused("readable by others");
	token("short-secret\n", 0600);
	refused("32-256 bytes");
	token(SECRET "\";\n", 0600);	/* would end an nginx directive */
	refused("32-256 bytes");
	token(SECRET " x\n", 0600);
	refused("32-256 bytes");
	token(SECRET "\r\n", 0640);	/* CR LF ending, group-readable: fine */
	cr_assert_eq(setenv("YUXI_MODE", "provisioner", 1), 0);
	cr_assert_eq(load(&c, eb, sizeof(eb)), YX_OK, "%s", eb);
	cr_assert_eq(yx_config_read_token(&c, tok, sizeof(tok), why, sizeof(why)), YX_OK, "%s", why);
	cr_expect_str_eq(tok, SECRET);
}
