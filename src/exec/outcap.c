/* SPDX-License-Identifier: MIT */
/*
 * outcap.c - bounded output sink with spill-to-file, and its stream form;
 * see outcap.h.
 */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <unistd.h>

#include "yuxi/error.h"
#include "yuxi/log.h"
#include "exec/outcap.h"

void
yx_outcap_init(struct yx_outcap *oc, size_t limit, uint64_t spill_cap,
    yx_spill_open_fn spill_open, void *spill_arg)
{
	yx_buf_init(&oc->mem, limit);
	oc->limit = limit;
	oc->total = 0;
	oc->truncated = false;
	oc->spill_fd = -1;
	oc->spill_failed = false;
	oc->spilled = 0;
	oc->spill_cap = spill_cap;
	oc->spill_open = spill_open;
	oc->spill_arg = spill_arg;
}

void
yx_outcap_fini(struct yx_outcap *oc)
{
	yx_buf_fini(&oc->mem);
	if (oc->spill_fd != -1)
		close(oc->spill_fd);
	oc->spill_fd = -1;
}

/* Write all of p (bounded by the spill cap); on error stop spilling. */
static void
outcap_spill(struct yx_outcap *oc, const char *p, size_t n)
{
	ssize_t w;

	if (oc->spill_failed || oc->spill_fd == -1)
		return;
	if (oc->spilled + n > oc->spill_cap)
		n = (size_t)(oc->spill_cap - oc->spilled);
	while (n > 0) {
		w = write(oc->spill_fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			log_warn("output spill write");
			oc->spill_failed = true;
			return;
		}
		p += w;
		n -= (size_t)w;
		oc->spilled += (uint64_t)w;
	}
}

int
yx_outcap_write(void *arg, const char *data, size_t len)
{
	struct yx_outcap	*oc = arg;
	size_t			 room, keep;

	oc->total += len;
	room = oc->limit - oc->mem.len;
	keep = len < room ? len : room;
	if (keep > 0 && yx_buf_append(&oc->mem, data, keep) != YX_OK)
		keep = 0;
	if (keep == len && !oc->truncated)
		return YX_OK;
	if (!oc->truncated) {
		oc->truncated = true;
		if (oc->spill_open != NULL)
			oc->spill_fd = oc->spill_open(oc->spill_arg);
		if (oc->spill_fd == -1)
			oc->spill_failed = true;
		/* the file holds the full text: first what memory kept */
		outcap_spill(oc, oc->mem.data, oc->mem.len);
		outcap_spill(oc, data + keep, len - keep);
		return YX_OK;
	}
	outcap_spill(oc, data + keep, len - keep);
	return YX_OK;
}

char *
yx_outcap_take(struct yx_outcap *oc, size_t *lenp)
{
	return yx_buf_steal(&oc->mem, lenp);
}

void
yx_outstream_init(struct yx_outstream *st, struct yx_outcap *oc,
    const struct yx_mask_rule *rules, size_t nrules,
    int (*fn)(void *, const char *, size_t), int (*tick)(void *), void *arg)
{
	st->oc = oc;
	yx_mask_stream_init(&st->ms, rules, nrules);
	yx_buf_init(&st->out, SIZE_MAX);
	st->fn = fn;
	st->tick = tick;
	st->arg = arg;
}

void
yx_outstream_fini(struct yx_outstream *st)
{
	yx_mask_stream_fini(&st->ms);
	yx_buf_fini(&st->out);
}

/* The next piece of the kept output, masked, to fn (all with `final`). */
static int
outstream_emit(struct yx_outstream *st, const char *p, size_t n, bool final)
{
	int rc;

	yx_buf_reset(&st->out);
	if ((rc = yx_mask_stream_feed(&st->ms, p, n, final, &st->out)) != YX_OK)
		return rc;
	return st->out.len > 0 ? st->fn(st->arg, st->out.data, st->out.len) :
				 YX_OK;
}

int
yx_outstream_write(void *arg, const char *data, size_t len)
{
	struct yx_outstream	*st = arg;
	size_t			 before = st->oc->mem.len;

	(void)yx_outcap_write(st->oc, data, len);
	if (st->oc->mem.len == before)
		return YX_OK;	/* past the cap: only the spill file has it */
	return outstream_emit(st, st->oc->mem.data + before,
	    st->oc->mem.len - before, false);
}

int
yx_outstream_tick(void *arg)
{
	struct yx_outstream *st = arg;

	return st->tick != NULL ? st->tick(st->arg) : YX_OK;
}

int
yx_outstream_flush(struct yx_outstream *st)
{
	return outstream_emit(st, NULL, 0, true);
}
