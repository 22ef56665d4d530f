/* SPDX-License-Identifier: MIT */
/*
 * ident.c - thread ids and user names; see include/yuxi/ident.h.
 */
#include "config.h"

#include <string.h>

#include "yuxi/ident.h"
#include "common/control_int.h"

bool
yx_thread_id_valid(const char *id, size_t len)
{
	size_t	 i;
	char	 c;

	if (id == NULL || len == 0 || len > YX_THREAD_ID_MAX)
		return false;
	/* control mode "threadid": any non-empty id without '/' or NUL */
	if (YX_CONTROL_OFF("threadid"))
		return memchr(id, '/', len) == NULL && memchr(id, '\0', len) == NULL;
	for (i = 0; i < len; i++) {
		c = id[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			(c >= '0' && c <= '9') || c == '_' || c == '-'))
			return false;
	}
	return true;
}

bool
yx_user_valid(const char *user)
{
	size_t i;

	if (user == NULL || user[0] == '\0' || user[0] == '.')
		return false;
	for (i = 0; user[i] != '\0'; i++) {
		char c = user[i];

		if (i >= YX_USER_MAX)
			return false;
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			(c >= '0' && c <= '9') || c == '.' || c == '_' || c == '@' ||
			c == '+' || c == '-'))
			return false;
	}
	return true;
}
