/* SPDX-License-Identifier: MIT */
/*
 * bench_exec - a benchmark peer for bench/exec_bench.py.
 *
 * Holds one executor (shared table + driver) for the life of the process and
 * runs one command per line read from stdin, answering with the elapsed
 * wall time in microseconds, so the orchestrator can time our whole exec
 * path (policy, table hit, runner, driver, cap, mask) without counting
 * process start-up, exactly like a service worker that stays up.
 *   stdin:  "<thread_id> <command...>\n"
 *   stdout: "<microseconds> <exit_code>\n"  (or "ERR <message>\n")
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "yuxi/config.h"
#include "yuxi/driver.h"
#include "yuxi/executor.h"
#include "yuxi/shm_table.h"
#include "yuxi/threads.h"

static int64_t
now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int
main(void)
{
	struct yx_config	 cfg;
	struct yx_table		*table = NULL;
	struct yx_driver	*drv = NULL;
	struct yx_executor	*ex = NULL;
	struct yx_thread_store	 store = { .dirfd = -1, .ownfd = -1, .uidfd = -1,
				    .runfd = -1 };
	struct yx_errctx	 e;
	char			 line[8192], eb[256], *sp;
	int			 rc = 1;

	if (yx_config_load(&cfg, eb, sizeof(eb)) != YX_OK) {
		fprintf(stderr, "bench_exec: %s\n", eb);
		return 2;
	}
	if (yx_table_open(&table, cfg.shm_name, (uint32_t)cfg.max_replicas,
	    YX_TABLE_CREATE, &e) != YX_OK ||
	    (drv = yx_driver_new(&cfg, &e)) == NULL ||
	    (ex = yx_executor_new(&cfg, table, drv, &e)) == NULL ||
	    yx_thread_store_init(&store, &cfg, &e) != YX_OK) {
		fprintf(stderr, "bench_exec: %s\n", e.msg);
		goto done;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	while (fgets(line, sizeof(line), stdin) != NULL) {
		struct yx_exec_request	req = { 0 };
		struct yx_exec_output	out;
		struct yx_thread	want = { 0 }, t;
		bool			created;
		int64_t			t0;

		line[strcspn(line, "\n")] = '\0';
		if ((sp = strchr(line, ' ')) == NULL)
			continue;
		*sp = '\0';
		/* the thread of the line, made on first use like the API does */
		snprintf(want.thread_id, sizeof(want.thread_id), "%s", line);
		snprintf(want.owner, sizeof(want.owner), "bench");
		if (yx_thread_create(&store, &want, &t, &created, &e) != YX_OK) {
			printf("ERR %s\n", e.msg);
			continue;
		}
		yx_exec_request_thread(&req, &t);
		req.command = sp + 1;
		t0 = now_us();
		if (yx_executor_run(ex, &req, &out, &e) != YX_OK) {
			printf("ERR %s\n", e.msg);
			continue;
		}
		printf("%lld %d\n", (long long)(now_us() - t0), out.exit_code);
		yx_exec_output_fini(&out);
	}
	rc = 0;
done:
	yx_thread_store_fini(&store);
	yx_executor_free(ex);
	yx_driver_free(drv);
	yx_table_close(table);
	return rc;
}
