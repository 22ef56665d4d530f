/* SPDX-License-Identifier: MIT */
/*
 * demux.c - incremental demultiplexer of the Docker attach/exec stream.
 *
 * Without a TTY the engine frames stdout and stderr on one connection
 * (Engine API v1.41, "Attach to a container" > "Stream format"): each frame
 * is an 8-byte header {STREAM_TYPE, 0, 0, 0, SIZE1, SIZE2, SIZE3, SIZE4}
 * (size big-endian) followed by SIZE payload bytes. libcurl hands us the body
 * in arbitrary pieces, so the parser keeps a partial header and the count of
 * payload bytes still owed, and passes payload to the sink in arrival order.
 * Anything that does not look like a header stops the stream for good.
 */
#include "config.h"

#include <string.h>

#include "yuxi/driver.h"
#include "yuxi/error.h"
#include "driver/driver_int.h"

void
yx_demux_init(struct yx_demux *dm, yx_output_fn fn, void *arg)
{
	memset(dm, 0, sizeof(*dm));
	dm->fn = fn;
	dm->arg = arg;
}

/* Validate the complete header in dm->hdr; YX_OK or YX_E_IO. */
static int
demux_header(struct yx_demux *dm)
{
	uint32_t size;

	if (dm->hdr[0] > 2 || dm->hdr[1] != 0 || dm->hdr[2] != 0 ||
	    dm->hdr[3] != 0)
		return YX_E_IO;
	size = (uint32_t)dm->hdr[4] << 24 | (uint32_t)dm->hdr[5] << 16 |
	    (uint32_t)dm->hdr[6] << 8 | (uint32_t)dm->hdr[7];
	if (size > YX_DEMUX_FRAME_MAX)
		return YX_E_IO;
	dm->remaining = size;
	dm->hlen = 0;
	return YX_OK;
}

int
yx_demux_feed(struct yx_demux *dm, const char *data, size_t len)
{
	size_t	n;
	int	rc = YX_OK;

	if (dm->failed)
		return YX_E_IO;
	while (len > 0) {
		if (dm->remaining == 0) {
			n = sizeof(dm->hdr) - dm->hlen;
			if (n > len)
				n = len;
			memcpy(dm->hdr + dm->hlen, data, n);
			dm->hlen += n;
			data += n;
			len -= n;
			if (dm->hlen < sizeof(dm->hdr))
				break;
			if ((rc = demux_header(dm)) != YX_OK) {
				dm->failed = true;
				break;
			}
			continue;
		}
		n = dm->remaining < len ? dm->remaining : len;
		if (dm->fn != NULL && (rc = dm->fn(dm->arg, data, n)) != YX_OK)
			break;
		dm->remaining -= n;
		data += n;
		len -= n;
	}
	return rc;
}

bool
yx_demux_idle(const struct yx_demux *dm)
{
	return !dm->failed && dm->hlen == 0 && dm->remaining == 0;
}
