/* SPDX-License-Identifier: MIT */
/*
 * path.c - the virtual path namespace (docs/design.md §4): canonicalisation of
 * request paths, alias mapping, confinement to the two roots, and thread id
 * syntax. Pure string functions: no I/O, no allocation, bounded by
 * YX_VPATH_MAX; see include/yuxi/path.h for the contract.
 *
 * The input has already been percent-decoded once by the HTTP layer, so it is
 * never decoded again here: "%2e%2e" is an ordinary file name. The checks run
 * in two stages. First syntax (YX_E_INVALID_PATH): empty input, NUL or
 * control bytes, a ".." component anywhere (even one that would stay inside),
 * a component over YX_VNAME_MAX, a result that does not fit YX_VPATH_MAX.
 * Then the namespace (YX_E_PATH_NOT_ALLOWED): the normalised absolute path
 * must be one of the roots or aliases, matched on whole components, or lie
 * below one. String checks only name a path; host access must still resolve
 * it beneath the thread root (openat2), see src/broker.
 */
#include "config.h"

#include <string.h>

#include "yuxi/error.h"
#include "yuxi/path.h"
#include "common/control_int.h"

/*
 * Prefixes of the normalised path, matched on a whole-component boundary,
 * and what they map to. Order does not matter: no prefix is a component
 * prefix of another.
 */
static const struct {
	const char	*prefix;
	const char	*target;	/* starts with the root */
} path_maps[] = {
	{ YX_VROOT_USER_DATA,	YX_VROOT_USER_DATA },
	{ YX_VROOT_SKILLS,	YX_VROOT_SKILLS },
	{ "/workspace",		YX_VROOT_USER_DATA "/workspace" },
	{ "/outputs",		YX_VROOT_USER_DATA "/outputs" },
	{ "/uploads",		YX_VROOT_USER_DATA "/uploads" },
	{ "/attachments",	YX_VROOT_USER_DATA "/uploads/attachments" },
	{ "/skills",		YX_VROOT_SKILLS },
	{ YX_MNT_USER_DATA,	YX_VROOT_USER_DATA },
	{ YX_MNT_SKILLS,	YX_VROOT_SKILLS },
	/* where deepagents keeps evicted tool results and summaries */
	{ "/large_tool_results", YX_VROOT_USER_DATA "/large_tool_results" },
	{ "/conversation_history", YX_VROOT_USER_DATA "/conversation_history" },
};

/*
 * Append "/" and the component c (n bytes) to dst (length *dlen, capacity
 * YX_VPATH_MAX). Returns YX_OK, or YX_E_INVALID_PATH for a ".." component,
 * a component over YX_VNAME_MAX, or a result that would not leave room for
 * the terminating NUL.
 */
static int
path_push(char *dst, size_t *dlen, const char *c, size_t n)
{
	/* control mode "path": a naive canonicaliser pops ".." lexically */
	if (n == 2 && c[0] == '.' && c[1] == '.' && YX_CONTROL_OFF("path")) {
		while (*dlen > 0 && dst[--(*dlen)] != '/')
			continue;
		dst[*dlen] = '\0';
		return YX_OK;
	}
	if (n == 2 && c[0] == '.' && c[1] == '.')
		return YX_E_INVALID_PATH;
	if (n > YX_VNAME_MAX)
		return YX_E_INVALID_PATH;
	if (n + 1 >= YX_VPATH_MAX - *dlen)
		return YX_E_INVALID_PATH;
	dst[(*dlen)++] = '/';
	memcpy(dst + *dlen, c, n);
	*dlen += n;
	dst[*dlen] = '\0';
	return YX_OK;
}

/*
 * Normalise `in` (len bytes) into an absolute path in dst (YX_VPATH_MAX
 * bytes): relative input is placed under YX_VROOT_WORKSPACE, empty and "."
 * components vanish, the result has no trailing slash ("/" for the root).
 * Returns YX_OK or YX_E_INVALID_PATH (see path_push, plus empty input and
 * NUL/control bytes).
 */
static int
path_normalise(const char *in, size_t len, char *dst)
{
	size_t	 i, start, dlen = 0;
	int	 rc = YX_OK;

	dst[0] = '\0';
	if (in == NULL || len == 0)
		return YX_E_INVALID_PATH;
	for (i = 0; i < len; i++) {
		/* control mode "path": only NUL is refused */
		if (YX_CONTROL_OFF("path") && in[i] != '\0')
			continue;
		if ((unsigned char)in[i] < 0x20 || in[i] == 0x7f)
			return YX_E_INVALID_PATH;
	}
	if (in[0] != '/') {
		dlen = sizeof(YX_VROOT_WORKSPACE) - 1;
		memcpy(dst, YX_VROOT_WORKSPACE, dlen + 1);
	}
	for (i = 0; i < len && rc == YX_OK; i = start) {
		while (i < len && in[i] == '/')
			i++;
		for (start = i; start < len && in[start] != '/'; start++)
			continue;
		if (start == i || (start - i == 1 && in[i] == '.'))
			continue;
		rc = path_push(dst, &dlen, in + i, start - i);
	}
	if (rc == YX_OK && dlen == 0) {
		dst[0] = '/';
		dst[1] = '\0';
	}
	return rc;
}

/*
 * Map the normalised absolute path `norm` onto its root. Returns YX_OK with
 * out filled, YX_E_PATH_NOT_ALLOWED when no root or alias covers it, or
 * YX_E_INVALID_PATH when the mapped path no longer fits YX_VPATH_MAX.
 */
static int
path_map(const char *norm, struct yx_vpath *out)
{
	const size_t	 nmaps = sizeof(path_maps) / sizeof(path_maps[0]);
	size_t		 i, plen = 0, tlen, rest;

	for (i = 0; i < nmaps; i++) {
		plen = strlen(path_maps[i].prefix);
		if (strncmp(norm, path_maps[i].prefix, plen) == 0 &&
		    (norm[plen] == '\0' || norm[plen] == '/'))
			break;
	}
	if (i == nmaps)
		return YX_E_PATH_NOT_ALLOWED;
	tlen = strlen(path_maps[i].target);
	rest = strlen(norm + plen);
	if (tlen + rest >= YX_VPATH_MAX)
		return YX_E_INVALID_PATH;
	memcpy(out->canon, path_maps[i].target, tlen);
	memcpy(out->canon + tlen, norm + plen, rest + 1);
	plen = strlen(YX_VROOT_SKILLS);
	if (strncmp(out->canon, YX_VROOT_SKILLS, plen) == 0)
		out->root = YX_ROOT_SKILLS;
	else {
		out->root = YX_ROOT_USER_DATA;
		plen = strlen(YX_VROOT_USER_DATA);
	}
	out->rel = out->canon + plen + (out->canon[plen] == '/');
	return YX_OK;
}

/*
 * Resolve a request path into out (see path.h). On failure out->canon is ""
 * and out->rel points at it.
 */
int
yx_path_resolve(const char *in, size_t len, struct yx_vpath *out)
{
	char	 norm[YX_VPATH_MAX];
	int	 rc;

	if ((rc = path_normalise(in, len, norm)) != YX_OK)
		goto fail;
	if ((rc = path_map(norm, out)) != YX_OK)
		goto fail;
	return YX_OK;
fail:
	out->root = YX_ROOT_USER_DATA;
	out->canon[0] = '\0';
	out->rel = out->canon;
	return rc;
}

bool
yx_path_is_top(const char *in, size_t len)
{
	char norm[YX_VPATH_MAX];

	return in != NULL && len > 0 && in[0] == '/' &&
	    path_normalise(in, len, norm) == YX_OK && strcmp(norm, "/") == 0;
}

/*
 * Resolve and copy the canonical path into buf (buflen bytes). Returns the
 * yx_path_resolve() result, or YX_E_INVALID_PATH when buf is NULL or too
 * small (the path does not fit the caller's limit; nothing is truncated).
 * buf holds "" on any failure (if buflen > 0).
 */
int
yx_path_canon(const char *in, size_t len, char *buf, size_t buflen)
{
	struct yx_vpath	 vp;
	size_t		 n;
	int		 rc;

	if (buf == NULL || buflen == 0)
		return YX_E_INVALID_PATH;
	buf[0] = '\0';
	if ((rc = yx_path_resolve(in, len, &vp)) != YX_OK)
		return rc;
	n = strlen(vp.canon);
	if (n >= buflen)
		return YX_E_INVALID_PATH;
	memcpy(buf, vp.canon, n + 1);
	return YX_OK;
}
