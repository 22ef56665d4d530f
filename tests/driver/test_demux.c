/* SPDX-License-Identifier: MIT */
/*
 * test_demux.c - the incremental attach-stream demultiplexer (demux.c):
 * frames split at every byte, mixed streams in order, zero-length frames,
 * corrupt headers (unknown stream id, padding, huge size) failing cleanly,
 * and a sink error stopping the stream.
 */
#include "config.h"

#include <string.h>

#include <criterion/criterion.h>

#include "yuxi/buf.h"
#include "yuxi/error.h"
#include "driver/driver_int.h"

static int
sink(void *arg, const char *data, size_t len)
{
	return yx_buf_append(arg, data, len);
}

/* Append one frame (stream, payload) to b. */
static void
frame(struct yx_buf *b, unsigned stream, const char *p, size_t n)
{
	unsigned char h[8] = { (unsigned char)stream, 0, 0, 0,
		(unsigned char)(n >> 24), (unsigned char)(n >> 16),
		(unsigned char)(n >> 8), (unsigned char)n };

	cr_assert_eq(yx_buf_append(b, h, 8), YX_OK);
	cr_assert_eq(yx_buf_append(b, p, n), YX_OK);
}

static void
build_stream(struct yx_buf *in)
{
	frame(in, 1, "hello ", 6);
	frame(in, 2, "err1\n", 5);
	frame(in, 1, "", 0);
	frame(in, 1, "world\n", 6);
	frame(in, 2, "err2\n", 5);
}

static const char expected[] = "hello err1\nworld\nerr2\n";

Test(demux, whole_buffer)
{
	struct yx_buf	 in, out;
	struct yx_demux	 dm;

	yx_buf_init(&in, 1 << 20);
	yx_buf_init(&out, 1 << 20);
	build_stream(&in);
	yx_demux_init(&dm, sink, &out);
	cr_assert_eq(yx_demux_feed(&dm, in.data, in.len), YX_OK);
	cr_assert(yx_demux_idle(&dm));
	cr_assert_str_eq(out.data, expected);
	yx_buf_fini(&in);
	yx_buf_fini(&out);
}

Test(demux, byte_by_byte)
{
	struct yx_buf	 in, out;
	struct yx_demux	 dm;
	size_t		 i;

	yx_buf_init(&in, 1 << 20);
	yx_buf_init(&out, 1 << 20);
	build_stream(&in);
	yx_demux_init(&dm, sink, &out);
	for (i = 0; i < in.len; i++) {
		cr_assert_eq(yx_demux_feed(&dm, in.data + i, 1), YX_OK);
		/* only at frame ends is the parser idle */
		if (i + 1 < in.len && i == 5)
			cr_assert(!yx_demux_idle(&dm));
	}
	cr_assert(yx_demux_idle(&dm));
	cr_assert_str_eq(out.data, expected);
	yx_buf_fini(&in);
	yx_buf_fini(&out);
}

Test(demux, every_split_point)
{
	struct yx_buf	 in, out;
	struct yx_demux	 dm;
	size_t		 cut;

	yx_buf_init(&in, 1 << 20);
	build_stream(&in);
	for (cut = 0; cut <= in.len; cut++) {
		yx_buf_init(&out, 1 << 20);
		yx_demux_init(&dm, sink, &out);
		cr_assert_eq(yx_demux_feed(&dm, in.data, cut), YX_OK);
		cr_assert_eq(yx_demux_feed(&dm, in.data + cut, in.len - cut),
		    YX_OK);
		cr_assert_str_eq(out.data, expected, "cut at %zu", cut);
		yx_buf_fini(&out);
	}
	yx_buf_fini(&in);
}

Test(demux, truncated_is_not_idle)
{
	struct yx_buf	 in, out;
	struct yx_demux	 dm;

	yx_buf_init(&in, 1 << 20);
	yx_buf_init(&out, 1 << 20);
	frame(&in, 1, "abcdef", 6);
	yx_demux_init(&dm, sink, &out);
	cr_assert_eq(yx_demux_feed(&dm, in.data, 11), YX_OK);
	cr_assert(!yx_demux_idle(&dm));
	cr_assert_str_eq(out.data, "abc");
	yx_demux_init(&dm, sink, &out);
	cr_assert_eq(yx_demux_feed(&dm, in.data, 3), YX_OK);	/* half header */
	cr_assert(!yx_demux_idle(&dm));
	yx_buf_fini(&in);
	yx_buf_fini(&out);
}

/* Feed `bad` after a good frame, byte by byte; it must fail and stay failed. */
static void
expect_corrupt(const unsigned char bad[8])
{
	struct yx_buf	 in, out;
	struct yx_demux	 dm;
	size_t		 i;
	int		 rc = YX_OK;

	yx_buf_init(&in, 1 << 20);
	yx_buf_init(&out, 1 << 20);
	frame(&in, 1, "ok", 2);
	cr_assert_eq(yx_buf_append(&in, bad, 8), YX_OK);
	cr_assert_eq(yx_buf_append(&in, "payload!", 8), YX_OK);
	yx_demux_init(&dm, sink, &out);
	for (i = 0; i < in.len && rc == YX_OK; i++)
		rc = yx_demux_feed(&dm, in.data + i, 1);
	cr_assert_eq(rc, YX_E_IO);
	cr_assert_eq(i, 10 + 8, "failed at byte %zu, not at the header end", i);
	cr_assert_str_eq(out.data, "ok");
	cr_assert_eq(yx_demux_feed(&dm, "x", 1), YX_E_IO);
	cr_assert(!yx_demux_idle(&dm));
	yx_buf_fini(&in);
	yx_buf_fini(&out);
}

Test(demux, corrupt_stream_id)
{
	const unsigned char bad[8] = { 7, 0, 0, 0, 0, 0, 0, 8 };

	expect_corrupt(bad);
}

Test(demux, corrupt_padding)
{
	const unsigned char bad[8] = { 1, 0, 1, 0, 0, 0, 0, 8 };

	expect_corrupt(bad);
}

Test(demux, corrupt_huge_size)
{
	const unsigned char bad[8] = { 1, 0, 0, 0, 0xff, 0xff, 0xff, 0xff };

	expect_corrupt(bad);
}

Test(demux, json_error_body_is_corrupt)
{
	struct yx_demux dm;
	const char *s = "{\"message\":\"no such exec\"}";

	yx_demux_init(&dm, NULL, NULL);
	cr_assert_eq(yx_demux_feed(&dm, s, strlen(s)), YX_E_IO);
}

static int
sink_fail(void *arg, const char *data, size_t len)
{
	int *calls = arg;

	(void)data;
	(void)len;
	return ++*calls == 2 ? YX_E_PAYLOAD_TOO_LARGE : YX_OK;
}

Test(demux, sink_error_stops)
{
	struct yx_buf	 in;
	struct yx_demux	 dm;
	int		 calls = 0;

	yx_buf_init(&in, 1 << 20);
	build_stream(&in);
	yx_demux_init(&dm, sink_fail, &calls);
	cr_assert_eq(yx_demux_feed(&dm, in.data, in.len),
	    YX_E_PAYLOAD_TOO_LARGE);
	cr_assert_eq(calls, 2);
	yx_buf_fini(&in);
}
