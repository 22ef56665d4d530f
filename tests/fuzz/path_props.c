/* SPDX-License-Identifier: MIT */
/*
 * path_props.c - properties of yx_path_resolve and yx_cmd_check, asserted
 * by the fuzzers and by the corpus replay test; see path_props.h.
 *
 * Canonicalisation: the result code is one of OK, INVALID_PATH,
 * PATH_NOT_ALLOWED; a failure leaves an empty canon; an accepted path starts
 * with a root followed by '/' or its end, has no "." or ".." component, no
 * "//", no trailing '/', no control byte, fits YX_VPATH_MAX, agrees with
 * root and rel, and resolves again to itself; input with a control byte or a
 * ".." component is never accepted.
 * Commands: the off policy accepts everything; strict answers OK or
 * PATH_NOT_ALLOWED with a non-empty token, deterministically; a command that
 * passes stops passing once " /etc/passwd" is appended (and reports it), and
 * "cat /etc/passwd;" in front is always reported first. Devices: "cat
 * /dev/<X>", X the input's leading run of [A-Za-z0-9._/+-], passes exactly
 * when an oracle written apart from cmd.c allows it (null, zero, full,
 * random, urandom, stdin, stdout, stderr, or fd/ and one or more digits):
 * /dev/zeroes, /dev/fdX, /dev/fd/../x, /dev/tcp/... stay refused.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "yuxi/error.h"
#include "yuxi/path.h"

#include "path_props.h"

#define CMD_PROPS_MAX	(64 * 1024)

static bool
has_dotdot_component(const uint8_t *p, size_t n)
{
	size_t	 i;

	for (i = 0; i + 1 < n; i++) {
		if (p[i] == '.' && p[i + 1] == '.' && (i == 0 || p[i - 1] == '/') &&
		    (i + 2 == n || p[i + 2] == '/'))
			return true;
	}
	return false;
}

static bool
has_control(const uint8_t *p, size_t n)
{
	size_t	 i;

	for (i = 0; i < n; i++) {
		if (p[i] < 0x20 || p[i] == 0x7f)
			return true;
	}
	return false;
}

static bool
ends_with(const char *s, size_t n, const char *suffix)
{
	size_t	 k = strlen(suffix);

	return n >= k && memcmp(s + n - k, suffix, k) == 0;
}

/* Properties of an accepted path; NULL or what failed. */
static const char *
path_ok_props(const struct yx_vpath *vp)
{
	struct yx_vpath	 again;
	const char	*root, *c = vp->canon;
	size_t		 n = strnlen(c, YX_VPATH_MAX), rlen;
	char		 buf[YX_VPATH_MAX];

	if (n >= YX_VPATH_MAX)
		return "canon not terminated within YX_VPATH_MAX";
	root = vp->root == YX_ROOT_SKILLS ? YX_VROOT_SKILLS : YX_VROOT_USER_DATA;
	rlen = strlen(root);
	if (strncmp(c, root, rlen) != 0 || (c[rlen] != '\0' && c[rlen] != '/'))
		return "canon not under its root";
	if (strstr(c, "/../") != NULL || strstr(c, "/./") != NULL ||
	    strstr(c, "//") != NULL || ends_with(c, n, "/..") ||
	    ends_with(c, n, "/.") || ends_with(c, n, "/"))
		return "canon has a dot component, // or a trailing slash";
	if (has_control((const uint8_t *)c, n))
		return "canon has a control byte";
	if (vp->rel != c + rlen + (c[rlen] == '/') || vp->rel[0] == '/')
		return "rel does not follow the root";
	if (yx_path_resolve(c, n, &again) != YX_OK)
		return "canon does not resolve again";
	if (strcmp(again.canon, c) != 0 || again.root != vp->root)
		return "resolving canon again is not idempotent";
	if (yx_path_canon(c, n, buf, sizeof(buf)) != YX_OK || strcmp(buf, c) != 0)
		return "yx_path_canon disagrees with yx_path_resolve";
	return NULL;
}

const char *
path_props_check(const uint8_t *data, size_t size)
{
	struct yx_vpath	 vp;
	int		 rc;

	rc = yx_path_resolve((const char *)data, size, &vp);
	if (rc != YX_OK && rc != YX_E_INVALID_PATH && rc != YX_E_PATH_NOT_ALLOWED)
		return "unexpected result code";
	if (rc != YX_OK)
		return vp.canon[0] == '\0' && vp.rel == vp.canon ? NULL :
								   "failure left output behind";
	if (size == 0 || has_control(data, size))
		return "accepted an empty path or a control byte";
	if (has_dotdot_component(data, size))
		return "accepted a .. component";
	return path_ok_props(&vp);
}

/* Strict-policy properties of the C string cmd (n bytes, room for more). */
static const char *
cmd_strict_props(char *cmd, size_t n)
{
	char	 bad[256], bad2[256];
	char	*pre;
	int	 rc;

	rc = yx_cmd_check(cmd, YX_CMD_POLICY_STRICT, bad, sizeof(bad));
	if (rc != YX_OK && rc != YX_E_PATH_NOT_ALLOWED)
		return "unexpected result code";
	if (rc != YX_OK && bad[0] == '\0')
		return "refused without a token";
	if (rc == YX_OK && bad[0] != '\0')
		return "token reported on success";
	if (yx_cmd_check(cmd, YX_CMD_POLICY_STRICT, bad2, sizeof(bad2)) != rc ||
	    strcmp(bad, bad2) != 0)
		return "not deterministic";
	if (rc == YX_OK) {
		memcpy(cmd + n, " /etc/passwd", 13);
		rc = yx_cmd_check(cmd, YX_CMD_POLICY_STRICT, bad, sizeof(bad));
		cmd[n] = '\0';
		if (rc != YX_E_PATH_NOT_ALLOWED || strcmp(bad, "/etc/passwd") != 0)
			return "appended /etc/passwd not refused";
	}
	if ((pre = malloc(n + 17)) == NULL)
		return NULL;
	memcpy(pre, "cat /etc/passwd;", 16);
	memcpy(pre + 16, cmd, n + 1);
	rc = yx_cmd_check(pre, YX_CMD_POLICY_STRICT, bad, sizeof(bad));
	free(pre);
	if (rc != YX_E_PATH_NOT_ALLOWED || strcmp(bad, "/etc/passwd") != 0)
		return "leading /etc/passwd not reported first";
	return NULL;
}

/* The oracle: is t (NUL-terminated, "/dev/...") an allowed device? */
static bool
dev_allowed(const char *t)
{
	static const char *const ok[] = { "null", "zero", "full", "random",
		"urandom", "stdin", "stdout", "stderr" };
	size_t	 i;

	if (strncmp(t, "/dev/", 5) != 0)
		return false;
	t += 5;
	for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
		if (strcmp(t, ok[i]) == 0)
			return true;
	if (strncmp(t, "fd/", 3) != 0 || t[3] == '\0')
		return false;
	return strspn(t + 3, "0123456789") == strlen(t + 3);
}

/* "cat /dev/<plain prefix of data>" passes iff the oracle allows it. */
static const char *
cmd_dev_props(const uint8_t *data, size_t size)
{
	static const char plain[] = "abcdefghijklmnopqrstuvwxyz"
				    "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._/+-";
	char	 cmd[160], bad[160];
	size_t	 n = 0;
	int	 rc;

	memcpy(cmd, "cat /dev/", 9);
	while (n < size && n < 128 && data[n] != '\0' &&
	    strchr(plain, data[n]) != NULL) {
		cmd[9 + n] = (char)data[n];
		n++;
	}
	cmd[9 + n] = '\0';
	rc = yx_cmd_check(cmd, YX_CMD_POLICY_STRICT, bad, sizeof(bad));
	if ((rc == YX_OK) != dev_allowed(cmd + 4))
		return rc == YX_OK ? "device outside the allowed set passed" :
				     "allowed device refused";
	return NULL;
}

const char *
cmd_props_check(const uint8_t *data, size_t size)
{
	const char	*why = NULL;
	char		*cmd;
	char		 bad[16];
	size_t		 n;

	if (size > CMD_PROPS_MAX)
		size = CMD_PROPS_MAX;
	if ((cmd = malloc(size + 16)) == NULL)
		return NULL;
	memcpy(cmd, data, size);
	cmd[size] = '\0';
	n = strlen(cmd);
	if (yx_cmd_check(cmd, YX_CMD_POLICY_OFF, bad, sizeof(bad)) != YX_OK ||
	    bad[0] != '\0')
		why = "off policy refused";
	else
		why = cmd_strict_props(cmd, n);
	free(cmd);
	if (why == NULL)
		why = cmd_dev_props(data, size);
	return why;
}
