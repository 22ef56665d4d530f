/* SPDX-License-Identifier: MIT */
/*
 * buf.c - growable byte buffer; see include/yuxi/buf.h.
 */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "yuxi/buf.h"
#include "yuxi/error.h"

void
yx_buf_init(struct yx_buf *b, size_t cap)
{
	b->data = NULL;
	b->len = 0;
	b->alloc = 0;
	b->cap = cap;
}

void
yx_buf_fini(struct yx_buf *b)
{
	free(b->data);
	yx_buf_init(b, b->cap);
}

void
yx_buf_reset(struct yx_buf *b)
{
	b->len = 0;
	if (b->data != NULL)
		b->data[0] = '\0';
}

int
yx_buf_reserve(struct yx_buf *b, size_t extra)
{
	size_t	 need, n;
	char	*p;

	if (extra > b->cap || b->len > b->cap - extra)
		return YX_E_PAYLOAD_TOO_LARGE;
	need = b->len + extra + 1;
	if (need <= b->alloc)
		return YX_OK;
	n = b->alloc ? b->alloc : 256;
	while (n < need) {
		if (n > SIZE_MAX / 2)
			return YX_E_NOMEM;
		n *= 2;
	}
	if ((p = realloc(b->data, n)) == NULL)
		return YX_E_NOMEM;
	b->data = p;
	b->alloc = n;
	return YX_OK;
}

int
yx_buf_append(struct yx_buf *b, const void *p, size_t n)
{
	int rc;

	if ((rc = yx_buf_reserve(b, n)) != YX_OK)
		return rc;
	if (n > 0)
		memcpy(b->data + b->len, p, n);
	b->len += n;
	b->data[b->len] = '\0';
	return YX_OK;
}

int
yx_buf_puts(struct yx_buf *b, const char *s)
{
	return yx_buf_append(b, s, strlen(s));
}

int
yx_buf_printf(struct yx_buf *b, const char *fmt, ...)
{
	va_list	ap;
	int	n, rc;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		return YX_E_INTERNAL;
	if ((rc = yx_buf_reserve(b, (size_t)n)) != YX_OK)
		return rc;
	va_start(ap, fmt);
	vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
	return YX_OK;
}

char *
yx_buf_steal(struct yx_buf *b, size_t *lenp)
{
	char *p;

	if (b->data == NULL) {
		if (yx_buf_reserve(b, 0) != YX_OK)
			return NULL;
		b->data[0] = '\0';
	}
	p = b->data;
	if (lenp != NULL)
		*lenp = b->len;
	yx_buf_init(b, b->cap);
	return p;
}

size_t
yx_strlcpy(char *dst, const char *src, size_t size)
{
	size_t n;

	if (src == NULL)
		src = "";
	n = strlen(src);
	if (size > 0) {
		size_t c = n < size ? n : size - 1;

		memcpy(dst, src, c);
		dst[c] = '\0';
	}
	return n;
}
