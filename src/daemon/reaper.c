/* SPDX-License-Identifier: MIT */
/*
 * reaper.c - the reaper process (docs/design.md §1).
 *
 * At start it runs the readiness checks once (include/yuxi/ready.h) and
 * logs the outcome - a failing check is a warning, the service serves
 * anyway and /readyz keeps telling; the reaper is the one child of every
 * start with the engine and the table at hand. Then it adopts running
 * labelled containers (a restart rediscovers instead of duplicating); then
 * every cfg->idle_check_interval seconds it
 * drops holds of dead processes, destroys sandboxes idle longer than
 * cfg->idle_timeout (never one with a hold: the provider re-checks under the
 * table lock; nor one whose thread runs a background process, up to
 * YUXI_PROCESS_KEEPALIVE), reconciles the table with the engine and removes the thread
 * tombstones (".trash-*") that a DELETE left when its budget ran out, for at
 * most YUXI_REQUEST_BUDGET_MS per pass. Every action is logged. It waits in
 * ppoll() with SIGTERM unblocked only there, so a stop never interrupts a
 * pass half-way; a pass is bounded by driver timeouts and that budget.
 */
#include "config.h"

#include <poll.h>
#include <signal.h>
#include <string.h>
#include <time.h>

#include "daemon_int.h"
#include "yuxi/log.h"
#include "yuxi/procs.h"

/* The reaper's veto: a sandbox whose thread runs a background process
 * (started less than YUXI_PROCESS_KEEPALIVE ago) is not idle. */
struct reaper_keep {
	const struct yx_config	*cfg;
	struct yx_thread_store	*st;
};

static bool
reaper_keep(void *arg, const char *thread_id, int64_t now_ms)
{
	struct reaper_keep *k = arg;

	if (k->st->dirfd == -1 || !yx_proc_keeps_alive(k->cfg, k->st, thread_id, now_ms))
		return false;
	log_debug("reaper: %s runs a background process: kept", thread_id);
	return true;
}

/* Remove tombstones within the budget; the rest waits for the next pass. */
static void
reaper_sweep(const struct yx_config *cfg, struct yx_thread_store *st)
{
	unsigned n, left = 0;

	if (st->dirfd == -1)
		return;
	n = yx_thread_store_sweep_trash(st, cfg->request_budget_ms, &left);
	if (n > 0 || left > 0)
		log_info("reaper: removed %u thread tombstone(s), %u left", n, left);
}

static void
reaper_pass(struct yx_provider *p)
{
	struct yx_errctx	e;
	unsigned		n = 0;
	int			rc;

	yx_errctx_clear(&e);
	if (yx_provider_drop_dead_holds(p, &n, &e) == YX_OK && n > 0)
		log_info("reaper: dropped %u hold(s) of dead processes", n);
	n = 0;
	rc = yx_provider_reap(p, yx_now_ms(), &n, &e);
	if (n > 0)
		log_info("reaper: destroyed %u idle sandbox(es)", n);
	if (rc != YX_OK)
		log_warnx("reaper: reap: %s", e.msg[0] ? e.msg : yx_strerror(rc));
	yx_errctx_clear(&e);
	if ((rc = yx_provider_reconcile(p, &e)) != YX_OK)
		log_warnx("reaper: reconcile: %s", e.msg[0] ? e.msg : yx_strerror(rc));
}

/*
 * A front's reaper (docs/scaling.md): no sandboxes here, each host's own
 * reaper cleans up its idle ones; the front's thread tombstones are ours.
 */
static int
reaper_front(const struct yx_config *cfg, struct yx_thread_store *st,
    const sigset_t *waitmask)
{
	struct timespec ts;

	log_info("reaper: front: idle sandboxes are each host's; tombstones every %ds",
	    cfg->idle_check_interval);
	while (!yx_child_stop) {
		ts.tv_sec = cfg->idle_check_interval;
		ts.tv_nsec = 0;
		if (ppoll(NULL, 0, &ts, waitmask) < 0 || yx_child_stop)
			continue;
		reaper_sweep(cfg, st);
	}
	return 0;
}

/* The start-up readiness report: one warning per failing check. */
static void
reaper_ready(const struct yx_config *cfg, struct yx_table *table,
    struct yx_driver *drv)
{
	struct yx_ready_result	res[YX_READY_N];
	struct yx_ready		rd;
	unsigned		bad;
	int			i;

	yx_ready_init(&rd, cfg, drv, table);
	bad = yx_ready_run(&rd, res);
	for (i = 0; i < YX_READY_N; i++)
		if (res[i].rc != YX_OK)
			log_warnx("readiness: %s failed: %s", res[i].name, res[i].oper);
	if (bad == 0)
		log_info("readiness: all %d checks pass", YX_READY_N);
	else
		log_warnx("readiness: %u check(s) fail: /readyz answers 503 "
			  "until they pass",
		    bad);
}

int
yx_reaper_main(const struct yx_config *cfg, struct yx_table *table)
{
	struct yx_provider	 p;
	struct yx_thread_store	 st;
	struct reaper_keep	 keep = { cfg, &st };
	struct yx_driver	*drv = NULL;
	struct yx_errctx	 e;
	struct timespec		 ts;
	sigset_t		 waitmask;
	int			 status = 1;

	yx_child_signals(&waitmask);
	yx_errctx_clear(&e);
	if (yx_thread_store_init(&st, cfg, &e) != YX_OK)
		log_warnx("reaper: no tombstone sweep: %s", e.msg);
	yx_errctx_clear(&e);
	if (cfg->mode == YX_MODE_FRONT) {
		status = reaper_front(cfg, &st, &waitmask);
		goto done;
	}
	if (table == NULL || (drv = yx_driver_new(cfg, &e)) == NULL ||
	    yx_provider_init(&p, cfg, table, drv) != YX_OK) {
		log_warnx("reaper: cannot start: %s", e.msg);
		goto done;
	}
	p.keep = reaper_keep;
	p.keep_arg = &keep;
	log_info("reaper: every %ds, idle timeout %ds", cfg->idle_check_interval,
	    cfg->idle_timeout);
	reaper_ready(cfg, table, drv);
	if (yx_provider_discover_all(&p, &e) != YX_OK)
		log_warnx("reaper: discover: %s", e.msg);
	while (!yx_child_stop) {
		ts.tv_sec = cfg->idle_check_interval;
		ts.tv_nsec = 0;
		if (ppoll(NULL, 0, &ts, &waitmask) < 0 || yx_child_stop)
			continue;
		reaper_pass(&p);
		reaper_sweep(cfg, &st);
	}
	yx_provider_fini(&p);
	status = 0;
done:
	yx_thread_store_fini(&st);
	yx_driver_free(drv);
	return status;
}
