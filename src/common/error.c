/* SPDX-License-Identifier: MIT */
/*
 * error.c - tables generated from YX_ERRORS (include/yuxi/error.h) and the
 * single errno translation point.
 */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "yuxi/error.h"

static const struct {
	int		 status;
	const char	*code;
	const char	*text;
} yx_err_table[] = {
#define YX_ERR_ROW(name, status, code, text) { status, code, text },
	YX_ERRORS(YX_ERR_ROW)
#undef YX_ERR_ROW
};

static int
err_valid(int err)
{
	return err >= 0 && err < YX_E__COUNT;
}

const char *
yx_strerror(int err)
{
	return err_valid(err) ? yx_err_table[err].text : "unknown error";
}

int
yx_err_http_status(int err)
{
	return err_valid(err) ? yx_err_table[err].status : 500;
}

const char *
yx_err_api_code(int err)
{
	return err_valid(err) ? yx_err_table[err].code : "internal";
}

const char *
yx_http_reason(int status)
{
	switch (status) {
	case 200: return "OK";
	case 201: return "Created";
	case 202: return "Accepted";
	case 204: return "No Content";
	case 400: return "Bad Request";
	case 401: return "Unauthorized";
	case 403: return "Forbidden";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 409: return "Conflict";
	case 411: return "Length Required";
	case 413: return "Payload Too Large";
	case 429: return "Too Many Requests";
	case 500: return "Internal Server Error";
	case 502: return "Bad Gateway";
	case 503: return "Service Unavailable";
	case 504: return "Gateway Timeout";
	case 507: return "Insufficient Storage";
	default: return "Unknown";
	}
}

int
yx_err_from_errno(int errnum)
{
	switch (errnum) {
	case 0: return YX_OK;
	case ENOENT: return YX_E_FILE_NOT_FOUND;
	case EEXIST: return YX_E_FILE_EXISTS;
	case EISDIR: return YX_E_IS_DIRECTORY;
	case ENOTDIR: return YX_E_NOT_DIRECTORY;
	case EXDEV:	/* openat2 RESOLVE_BENEATH / NO_XDEV escape */
	case ELOOP:	/* a symlink where none may be followed */
	case EACCES:
	case EPERM: return YX_E_PATH_NOT_ALLOWED;
	case EROFS: return YX_E_READ_ONLY;
	case ENAMETOOLONG: return YX_E_INVALID_PATH;
	case ENOMEM: return YX_E_NOMEM;
	case ENOSPC: return YX_E_NOSPACE;
	case EDQUOT: return YX_E_QUOTA_EXCEEDED;
	case EFBIG: return YX_E_PAYLOAD_TOO_LARGE;
	case ETIMEDOUT: return YX_E_TIMEOUT;
	case EAGAIN:
	case EBUSY: return YX_E_BUSY;
	case ENXIO:
	case ENODEV: return YX_E_NOT_REGULAR;
	default: return YX_E_IO;
	}
}

int
yx_fail(struct yx_errctx *ctx, int err, const char *fmt, ...)
{
	va_list ap;

	if (ctx == NULL)
		return err;
	ctx->code = err;
	if (fmt == NULL) {
		snprintf(ctx->msg, sizeof(ctx->msg), "%s", yx_strerror(err));
		return err;
	}
	va_start(ap, fmt);
	vsnprintf(ctx->msg, sizeof(ctx->msg), fmt, ap);
	va_end(ap);
	return err;
}

void
yx_errctx_clear(struct yx_errctx *ctx)
{
	if (ctx == NULL)
		return;
	ctx->code = YX_OK;
	ctx->msg[0] = '\0';
}
