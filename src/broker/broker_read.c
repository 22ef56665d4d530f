/* SPDX-License-Identifier: MIT */
/*
 * broker_read.c - content reads through the broker: the agent's `cat -n`
 * view with offset/limit paging, the viewer's raw read decoded as UTF-8
 * with U+FFFD replacement, the download check that hands a verified
 * root-relative path to nginx, and a download's bytes read whole. Files are opened only through
 * broker_open_reg (regular files, no symlinks, never blocking).
 */
#include "config.h"

#include <sys/stat.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "yuxi/broker.h"
#include "yuxi/text.h"
#include "broker/broker_int.h"
#include "yuxi/buf.h"

void
yx_broker_text_free(struct yx_broker_text *t)
{
	if (t == NULL)
		return;
	free(t->path);
	free(t->content);
	free(t->cut);
	free(t);
}

void
yx_broker_blob_free(struct yx_broker_blob *bl)
{
	if (bl == NULL)
		return;
	free(bl->path);
	free(bl->content);
	free(bl);
}

/* Lines of a text: '\n'-terminated ones plus an unterminated tail. */
static size_t
broker_count_lines(const char *data, size_t len)
{
	size_t	n = 0, i;

	for (i = 0; i < len; i++)
		if (data[i] == '\n')
			n++;
	if (len > 0 && data[len - 1] != '\n')
		n++;
	return n;
}

/*
 * Bytes of a line to show: without `raw` a '\r' before '\n' dropped; cut at
 * max on a UTF-8 character boundary (*cutp set).
 */
static size_t
broker_line_len(const char *line, size_t n, size_t max, bool raw, bool *cutp)
{
	if (!raw && n > 0 && line[n - 1] == '\r')
		n--;
	*cutp = false;
	if (n <= max)
		return n;
	*cutp = true;
	n = max;
	while (n > 0 && ((unsigned char)line[n] & 0xC0) == 0x80)
		n--;
	return n;
}

/* Note line `lineno` (1-based) as cut in t. YX_OK or YX_E_NOMEM. */
static int
broker_note_cut(struct yx_broker_text *t, size_t lineno)
{
	size_t *nv;

	if ((nv = realloc(t->cut, (t->ncut + 1) * sizeof(*nv))) == NULL)
		return YX_E_NOMEM;
	t->cut = nv;
	t->cut[t->ncut++] = lineno;
	t->lines_cut = true;
	return YX_OK;
}

/*
 * Lines [offset, offset+limit) of data into t: numbered as cat -n, or raw
 * (each line with its terminator). Returns YX_OK or YX_E_NOMEM.
 */
static int
broker_cat_format(const char *data, size_t len, size_t offset, size_t limit,
    size_t line_max, bool raw, struct yx_broker_text *t)
{
	struct yx_buf	 out;
	const char	*p = data, *end = data + len, *nl;
	size_t		 lineno = 0, shown = 0, n;
	bool		 cut;
	int		 rc = YX_OK;

	yx_buf_init(&out, SIZE_MAX);
	while (p < end && shown < limit) {
		if ((nl = memchr(p, '\n', (size_t)(end - p))) == NULL)
			nl = end;
		if (lineno >= offset) {
			n = broker_line_len(p, (size_t)(nl - p), line_max, raw,
			    &cut);
			if ((cut && (rc = broker_note_cut(t, lineno + 1)) != YX_OK) ||
			    (!raw && shown > 0 &&
				(rc = yx_buf_puts(&out, "\n")) != YX_OK) ||
			    (!raw && (rc = yx_buf_printf(&out, "%6zu\t", lineno + 1)) != YX_OK) ||
			    (rc = yx_buf_append(&out, p, n)) != YX_OK ||
			    (raw && nl < end && (rc = yx_buf_append(&out, "\n", 1)) != YX_OK))
				goto out;
			shown++;
		}
		lineno++;
		p = nl + 1;
	}
	if ((t->content = broker_steal(&out, &t->len)) == NULL) {
		rc = YX_E_NOMEM;
		goto out;
	}
	t->start_line = shown > 0 ? offset + 1 : 0;
	t->end_line = shown > 0 ? offset + shown : 0;
	t->next_offset = offset + shown < t->total_lines ?
	    (int64_t)(offset + shown) :
	    -1;
out:
	yx_buf_fini(&out);
	return rc;
}

/* See broker.h. */
int
yx_broker_cat(struct yx_broker *b, enum yx_root root, const char *rel,
    size_t offset, size_t limit, unsigned flags, struct yx_broker_text **outp,
    struct yx_errctx *e)
{
	struct yx_broker_text	*t = NULL;
	struct stat		 st;
	char			*data = NULL;
	size_t			 len;
	bool			 trunc;
	int			 rc;

	*outp = NULL;
	if ((rc = broker_slurp(b, root, rel, b->lim.read_max, false, true,
		 &data, &len, &st, &trunc, e)) != YX_OK)
		goto out;
	if ((t = calloc(1, sizeof(*t))) == NULL ||
	    (t->path = broker_vpath_dup(root, rel, NULL)) == NULL) {
		rc = yx_fail(e, YX_E_NOMEM, NULL);
		goto out;
	}
	t->total_lines = broker_count_lines(data, len);
	t->size = (uint64_t)st.st_size;
	if (offset > 0 && offset >= t->total_lines) {
		rc = yx_fail(e, YX_E_BAD_REQUEST, "offset %zu is past the end "
						  "of the file (%zu lines)",
		    offset, t->total_lines);
		goto out;
	}
	if ((rc = broker_cat_format(data, len, offset,
		 limit == 0 ? YX_BROKER_CAT_LIMIT : limit, b->lim.line_max,
		 (flags & YX_CAT_RAW) != 0, t)) != YX_OK) {
		rc = yx_fail(e, rc, NULL);
		goto out;
	}
	*outp = t;
	t = NULL;
out:
	yx_broker_text_free(t);
	free(data);
	return rc;
}

/* See broker.h. */
int
yx_broker_view(struct yx_broker *b, enum yx_root root, const char *rel,
    struct yx_broker_blob **outp, struct yx_errctx *e)
{
	struct yx_broker_blob	*bl = NULL;
	struct yx_buf		 out;
	struct stat		 st;
	char			*data = NULL;
	size_t			 len;
	bool			 trunc;
	int			 rc;

	*outp = NULL;
	yx_buf_init(&out, SIZE_MAX);
	if ((rc = broker_slurp(b, root, rel, b->lim.viewer_max, true, false,
		 &data, &len, &st, &trunc, e)) != YX_OK)
		goto out;
	if ((bl = calloc(1, sizeof(*bl))) == NULL ||
	    (bl->path = broker_vpath_dup(root, rel, NULL)) == NULL ||
	    yx_utf8_clean(&out, data, len, YX_FFFD_MAXIMAL, trunc, NULL) != YX_OK ||
	    (bl->content = broker_steal(&out, &bl->len)) == NULL) {
		rc = yx_fail(e, YX_E_NOMEM, NULL);
		goto out;
	}
	bl->size = (uint64_t)st.st_size;
	bl->modified_at = (int64_t)st.st_mtim.tv_sec;
	bl->truncated = trunc;
	*outp = bl;
	bl = NULL;
out:
	yx_broker_blob_free(bl);
	yx_buf_fini(&out);
	free(data);
	return rc;
}

/* See broker.h. */
int
yx_broker_download(struct yx_broker *b, enum yx_root root, const char *rel,
    struct yx_broker_dl *out, struct yx_errctx *e)
{
	struct stat	 st;
	const char	*slash;
	int		 fd = -1, rc;

	memset(out, 0, sizeof(*out));
	if ((rc = broker_open_file(b, root, rel, &fd, &st, e)) != YX_OK)
		goto out;
	out->size = (uint64_t)st.st_size;
	out->modified_at = (int64_t)st.st_mtim.tv_sec;
	snprintf(out->rel, sizeof(out->rel), "%s", rel);
	slash = strrchr(rel, '/');
	snprintf(out->name, sizeof(out->name), "%s",
	    slash != NULL ? slash + 1 : rel);
out:
	if (fd != -1)
		close(fd);
	return rc;
}

int
yx_broker_fetch(struct yx_broker *b, enum yx_root root, const char *rel, size_t max,
    char **datap, size_t *lenp, struct yx_errctx *e)
{
	struct stat	st;
	bool		trunc = false;

	*lenp = 0;
	return broker_slurp(b, root, rel, max, false, false, datap, lenp, &st, &trunc, e);
}
