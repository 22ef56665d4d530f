/* SPDX-License-Identifier: MIT */
/*
 * outcap.h - the executor's output sink (private to src/exec).
 *
 * Keeps the first `limit` bytes of a command's combined output in memory and,
 * once the output grows past that, spills the whole text (the kept prefix,
 * then every later chunk) to a file descriptor opened on demand through a
 * callback, up to `spill_cap` bytes. Memory use is bounded by `limit` whatever
 * the command prints: a command writing 1 GiB costs limit bytes of RAM.
 *
 * Ownership: caller storage (yx_outcap_init/_fini); the kept bytes belong to
 * the sink until yx_outcap_take(); the spill fd is closed by _fini.
 */
#ifndef YUXI_EXEC_OUTCAP_H
#define YUXI_EXEC_OUTCAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "yuxi/buf.h"
#include "yuxi/path.h"

/* Open the spill file; return an fd (>= 0) or -1 (spilling is then skipped). */
typedef int (*yx_spill_open_fn)(void *arg);

struct yx_outcap {
	struct yx_buf		 mem;		/* first `limit` bytes */
	size_t			 limit;
	uint64_t		 total;		/* bytes seen */
	bool			 truncated;
	int			 spill_fd;	/* -1 until needed */
	bool			 spill_failed;
	uint64_t		 spilled;
	uint64_t		 spill_cap;
	yx_spill_open_fn	 spill_open;
	void			*spill_arg;
};

void	yx_outcap_init(struct yx_outcap *oc, size_t limit, uint64_t spill_cap,
    yx_spill_open_fn spill_open, void *spill_arg);
void	yx_outcap_fini(struct yx_outcap *oc);
/* A yx_output_fn: always YX_OK (overflow is recorded, never an error). */
int	yx_outcap_write(void *oc, const char *data, size_t len);
/* Hand over the kept bytes (heap, NUL-terminated; caller frees). */
char	*yx_outcap_take(struct yx_outcap *oc, size_t *lenp);

/*
 * The stream form's sink (yx_exec_request.on_stream): each chunk goes
 * through the outcap as always (cap, spill), and what the cap kept of it
 * goes on at once, masked with the run's rules (held back only while a
 * host path may be cut by the chunk's end), to fn. Caller storage
 * (_init/_fini); oc and the rules are borrowed.
 */
struct yx_outstream {
	struct yx_outcap	*oc;
	struct yx_mask_stream	 ms;
	struct yx_buf		 out;
	int			(*fn)(void *arg, const char *data, size_t len);
	int			(*tick)(void *arg);
	void			*arg;
};

void	yx_outstream_init(struct yx_outstream *st, struct yx_outcap *oc,
    const struct yx_mask_rule *rules, size_t nrules,
    int (*fn)(void *, const char *, size_t), int (*tick)(void *), void *arg);
void	yx_outstream_fini(struct yx_outstream *st);
/* A yx_output_fn: the outcap's, then fn with what it kept. fn's error. */
int	yx_outstream_write(void *st, const char *data, size_t len);
/* yx_exec_req.on_tick: st->tick (YX_OK without one). */
int	yx_outstream_tick(void *st);
/* At the end: what masking held back, to fn. */
int	yx_outstream_flush(struct yx_outstream *st);

#endif /* YUXI_EXEC_OUTCAP_H */
