/* SPDX-License-Identifier: MIT */
/*
 * yuxi/buf.h - a growable byte buffer with checked allocation and a hard cap.
 *
 * Ownership: the struct is caller storage (yx_buf_init / yx_buf_fini); the
 * byte array belongs to the buffer until yx_buf_steal() hands it over (the
 * caller then free()s it). Data is always NUL-terminated (not counted in len)
 * so text can be used as a C string. Appending past `cap` fails with
 * YX_E_PAYLOAD_TOO_LARGE; allocation failure gives YX_E_NOMEM. Neither aborts.
 */
#ifndef YUXI_BUF_H
#define YUXI_BUF_H

#include <stdarg.h>
#include <stddef.h>

struct yx_buf {
	char	*data;
	size_t	 len;
	size_t	 alloc;
	size_t	 cap;	/* maximum len; SIZE_MAX for none */
};

void	 yx_buf_init(struct yx_buf *b, size_t cap);
void	 yx_buf_fini(struct yx_buf *b);
void	 yx_buf_reset(struct yx_buf *b);
int	 yx_buf_reserve(struct yx_buf *b, size_t extra);
int	 yx_buf_append(struct yx_buf *b, const void *p, size_t n);
int	 yx_buf_puts(struct yx_buf *b, const char *s);
int	 yx_buf_printf(struct yx_buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Return the array (NUL-terminated, caller frees) and reset the buffer. */
char	*yx_buf_steal(struct yx_buf *b, size_t *lenp);

/*
 * Copy the C string src (NULL: "") into dst of size bytes, always
 * NUL-terminated, cut when it does not fit. Returns strlen(src) (as
 * OpenBSD's strlcpy): a result >= size means it was cut.
 */
size_t	 yx_strlcpy(char *dst, const char *src, size_t size);

#endif /* YUXI_BUF_H */
