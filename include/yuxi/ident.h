/* SPDX-License-Identifier: MIT */
/*
 * yuxi/ident.h - the names the API accepts for threads and users, checked
 * in one place: a thread id is a directory name on the host and part of a
 * container label and name; a user name comes from nginx and becomes a
 * directory name of the owner index.
 */
#ifndef YUXI_IDENT_H
#define YUXI_IDENT_H

#include <stdbool.h>
#include <stddef.h>

#define YX_THREAD_ID_MAX	128			/* bytes, NUL excluded */
#define YX_THREAD_ID_SIZE	(YX_THREAD_ID_MAX + 1)	/* a buffer for one */
#define YX_THREAD_ID_RULE	"thread_id must match [A-Za-z0-9_-]{1,128}"

#define YX_USER_MAX		64			/* bytes, NUL excluded */

/* Thread ids: [A-Za-z0-9_-]{1,128} (len bytes of id; NUL refused). */
bool	yx_thread_id_valid(const char *id, size_t len);
/* User names: [A-Za-z0-9._@+-]{1,64}, not starting with '.'. */
bool	yx_user_valid(const char *user);

#endif /* YUXI_IDENT_H */
