/* SPDX-License-Identifier: MIT */
/*
 * yuxi/error.h - the one error vocabulary of yuxi-sandbox.
 *
 * Every fallible function in the project returns `int`: YX_OK (0) on success
 * or one of the positive `enum yx_err` values below. The X-macro generates the
 * enum, the human text (yx_strerror), the HTTP status and the API error code
 * (docs/api.md "Errors"), so the HTTP layer never keeps a second table. errno is
 * translated once, at the system-call boundary, by yx_err_from_errno().
 *
 * Functions that can say more than the code (which path, which image, how many
 * matches) also take a `struct yx_errctx *` (NULL allowed) and fill its
 * message; the message is safe to show to the API caller (no host paths).
 */
#ifndef YUXI_ERROR_H
#define YUXI_ERROR_H

#include <stddef.h>

/*        name                 http  api code               text */
#define YX_ERRORS(X)                                                           \
	X(OK,                  200, "ok",                  "success")              \
	X(BAD_REQUEST,         400, "bad_request",         "bad request")          \
	X(INVALID_PATH,        400, "invalid_path",        "invalid path")         \
	X(INVALID_THREAD_ID,   400, "invalid_thread_id",   "invalid thread id")    \
	X(INVALID_METADATA,    400, "invalid_metadata",    "invalid metadata")     \
	X(INVALID_ENV,         400, "invalid_env",         "invalid environment")  \
	X(CWD_NOT_FOUND,       400, "cwd_not_found",       "no such working directory") \
	X(BINARY_FILE,         400, "binary_file",         "binary file")          \
	X(IS_DIRECTORY,        400, "is_directory",        "is a directory")       \
	X(NOT_DIRECTORY,       400, "invalid_path",        "not a directory")      \
	X(NOT_REGULAR,         400, "bad_request",         "not a regular file")   \
	X(UNAUTHENTICATED,     401, "unauthenticated",     "no identity")          \
	X(PATH_NOT_ALLOWED,    403, "path_not_allowed",    "path not allowed")     \
	X(READ_ONLY,           403, "read_only",           "read-only path")       \
	X(FORBIDDEN,           403, "forbidden",           "forbidden")            \
	X(NOT_FOUND,           404, "not_found",           "not found")            \
	X(FILE_NOT_FOUND,      404, "file_not_found",      "no such file")         \
	X(METHOD_NOT_ALLOWED,  405, "method_not_allowed",  "method not allowed")   \
	X(FILE_EXISTS,         409, "file_exists",         "file exists")          \
	X(STRING_NOT_FOUND,    409, "string_not_found",    "string not found")     \
	X(AMBIGUOUS_MATCH,     409, "ambiguous_match",     "ambiguous match")      \
	X(THREAD_EXISTS,       409, "thread_exists",       "thread exists")        \
	X(PAYLOAD_TOO_LARGE,   413, "payload_too_large",   "payload too large")    \
	X(THREAD_LIMIT,        429, "thread_limit",        "too many threads")     \
	X(SANDBOX_LIMIT,       429, "sandbox_limit",       "too many sandboxes")   \
	X(NOMEM,               500, "internal",            "out of memory")        \
	X(IO,                  500, "internal",            "input/output error")   \
	X(NOSPACE,             507, "insufficient_storage", "no space left")       \
	X(QUOTA_EXCEEDED,      507, "quota_exceeded",      "disk quota exceeded")  \
	X(INTERNAL,            500, "internal",            "internal error")       \
	X(TIMEOUT,             504, "timeout",             "timed out")            \
	X(CAPACITY,            503, "capacity",            "no sandbox capacity")  \
	X(BACKEND_UNAVAILABLE, 503, "backend_unavailable", "backend unavailable")  \
	X(IMAGE_MISSING,       503, "backend_unavailable", "sandbox image missing") \
	X(BUSY,                503, "capacity",            "resource busy")        \
	X(AGENT_UNAVAILABLE,   503, "agent_unavailable",   "in-sandbox agent unavailable") \
	X(PROCESS_LIMIT,       409, "process_limit",       "background process limit reached") \
	X(NOT_RUNNING,         409, "not_running",         "process not running")  \
	X(SESSION_NOT_FOUND,   404, "session_not_found",   "no such session")      \
	X(SESSION_BUSY,        409, "session_busy",        "session busy")         \
	X(SESSION_LIMIT,       429, "session_limit",       "too many sessions")    \
	X(PREVIEW_LIMIT,       409, "preview_limit",       "preview limit reached") \
	X(THREAD_BUSY,         409, "thread_busy",         "thread busy")          \
	X(SNAPSHOT_LIMIT,      409, "snapshot_limit",      "too many snapshots")   \
	X(UNSUPPORTED,         409, "not_supported",       "not supported by the thread's storage") \
	X(CLIENT_GONE,         499, "client_gone",         "client went away")

enum yx_err {
#define YX_ERR_ENUM(name, status, code, text) YX_E_##name,
	YX_ERRORS(YX_ERR_ENUM)
#undef YX_ERR_ENUM
	    YX_E__COUNT
};
#define YX_OK YX_E_OK

/* Context for a detailed, caller-safe message. */
struct yx_errctx {
	int	code;		/* an enum yx_err */
	char	msg[512];
};

/* Static text for an error; never NULL (unknown values give "unknown error"). */
const char	*yx_strerror(int err);
/* HTTP status for an error (500 for unknown values). */
int		 yx_err_http_status(int err);
/* API error code string (docs/api.md), e.g. "file_not_found". */
const char	*yx_err_api_code(int err);
/* Reason phrase for an HTTP status ("Not Found"); "Unknown" if none. */
const char	*yx_http_reason(int status);
/* Translate an errno value into the vocabulary (ENOENT -> FILE_NOT_FOUND, ...). */
int		 yx_err_from_errno(int errnum);

/*
 * Record `err` with a printf-style message in `ctx` (which may be NULL) and
 * return `err`, so callers can write `return yx_fail(e, YX_E_IO, "...")`.
 * With fmt == NULL the message is yx_strerror(err).
 */
int		 yx_fail(struct yx_errctx *ctx, int err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Reset a context to YX_OK with an empty message. */
void		 yx_errctx_clear(struct yx_errctx *ctx);

#endif /* YUXI_ERROR_H */
