/* SPDX-License-Identifier: MIT */
/*
 * bench_stream.c - bench-only FastCGI responder that streams one file
 * through the worker (FCGX_PutStr, 64 KiB chunks), the comparator for
 * X-Accel-Redirect downloads in bench/download_bench.sh. It is not part of
 * the service: the file is fixed on the command line (nothing from the
 * request selects it), it serves one request at a time, and it logs
 * "stream dur_ms=<busy time> bytes=<n> status=<s>" per request on stderr,
 * where the busy time runs from accept to FCGX_Finish_r (all bytes handed
 * to nginx).
 *
 * usage: bench_stream SOCKET FILE     (runs until killed)
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <fcgiapp.h>

#define CHUNK	(64 * 1024)

static double
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1000.0 + (double)ts.tv_nsec / 1e6;
}

/*
 * Send `path` as the reply to `fr`. Returns the number of bytes of the
 * body sent, or -1 when the file could not be read or the client went
 * away (a 500 is sent if nothing was sent yet).
 */
static long long
stream_file(FCGX_Request *fr, const char *path, char *buf)
{
	struct stat	 st;
	long long	 sent = -1;
	ssize_t		 n;
	int		 fd = -1;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1 ||
	    fstat(fd, &st) == -1) {
		FCGX_FPrintF(fr->out, "Status: 500 Internal Server Error\r\n"
		    "Content-Type: text/plain\r\n\r\nno file\n");
		goto done;
	}
	FCGX_FPrintF(fr->out, "Status: 200 OK\r\n"
	    "Content-Type: application/octet-stream\r\n"
	    "Content-Length: %lld\r\n\r\n", (long long)st.st_size);
	sent = 0;
	for (;;) {
		n = read(fd, buf, CHUNK);
		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		if (FCGX_PutStr(buf, (int)n, fr->out) != (int)n) {
			sent = -1;
			break;
		}
		sent += n;
	}
	if (n < 0)
		sent = -1;
done:
	if (fd != -1)
		close(fd);
	return sent;
}

int
main(int argc, char *argv[])
{
	FCGX_Request	 fr;
	long long	 sent;
	double		 t0;
	char		*buf = NULL;
	int		 sock, status = 1;

	if (argc != 3) {
		fprintf(stderr, "usage: bench_stream SOCKET FILE\n");
		return 2;
	}
	if ((buf = malloc(CHUNK)) == NULL || FCGX_Init() != 0) {
		fprintf(stderr, "bench_stream: init failed\n");
		goto fail;
	}
	if ((sock = FCGX_OpenSocket(argv[1], 16)) < 0) {
		fprintf(stderr, "bench_stream: cannot listen on %s\n", argv[1]);
		goto fail;
	}
	if (FCGX_InitRequest(&fr, sock, 0) != 0)
		goto fail;
	while (FCGX_Accept_r(&fr) >= 0) {
		t0 = now_ms();
		sent = stream_file(&fr, argv[2], buf);
		FCGX_Finish_r(&fr);
		fprintf(stderr, "stream dur_ms=%.1f bytes=%lld status=%s\n",
		    now_ms() - t0, sent, sent >= 0 ? "ok" : "error");
	}
	status = 0;
fail:
	free(buf);
	return status;
}
