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
 *
 * With a pool (YUXI_POOL_SIZE, docs/design.md §2 "Pool") it also wakes every
 * REAPER_POOL_TICK_MS to start boxes until the pool is full (one locked scan
 * when it is), and each pass clears box directories that no slot names.
 */
#include "config.h"

#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "daemon_int.h"
#include "yuxi/agents.h"
#include "yuxi/clock.h"
#include "yuxi/executor.h"
#include "yuxi/log.h"
#include "yuxi/preview.h"
#include "yuxi/procs.h"
#include "yuxi/sessions.h"

#define REAPER_POOL_TICK_MS	100

/* The reaper's veto: a sandbox whose thread runs a background process
 * (started less than YUXI_PROCESS_KEEPALIVE ago), has a session used
 * less than YUXI_SESSION_IDLE ago, or that a preview connection is open
 * into (a WebSocket sends no new request) is not idle. */
struct reaper_keep {
	const struct yx_config	*cfg;
	struct yx_thread_store	*st;
};

static bool
reaper_keep(void *arg, const char *thread_id, int64_t now_ms)
{
	struct reaper_keep *k = arg;

	if (yx_preview_open_conns(k->cfg, thread_id) > 0) {
		log_debug("reaper: %s has open preview connections: kept", thread_id);
		return true;
	}
	if (k->st->dirfd == -1)
		return false;
	if (yx_proc_keeps_alive(k->cfg, k->st, thread_id, now_ms)) {
		log_debug("reaper: %s runs a background process: kept", thread_id);
		return true;
	}
	if (yx_session_keeps_alive(k->cfg, k->st, thread_id, now_ms)) {
		log_debug("reaper: %s has a session in use: kept", thread_id);
		return true;
	}
	return false;
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
	/* preview index entries of revoked, expired or deleted previews */
	if (cfg->preview_domain[0] != '\0' &&
	    (n = yx_preview_sweep(st, cfg, yx_now_ms(),
		 cfg->request_budget_ms > 0 ? cfg->request_budget_ms : 5000)) > 0)
		log_info("reaper: removed %u preview index entr(ies)", n);
}

/* What crashed transactions left: journals finished or undone, layers
 * and containers removed (docs/design.md §10 "Crashes"). */
static void
reaper_tx(struct yx_executor *ex, struct yx_thread_store *st)
{
	unsigned n;

	if (ex == NULL || st->dirfd == -1)
		return;
	if ((n = yx_exec_tx_recover_all(ex, st, NULL)) > 0)
		log_info("reaper: %u thread(s) with an interrupted transaction looked at", n);
}

/*
 * One step's log lines: what it did, "reaper: <verb> <n> <things>", when
 * n > 0, and its failure, "reaper: <step>: <message>", when rc is not
 * YX_OK.
 */
static void
reaper_log(int rc, const struct yx_errctx *e, unsigned n, const char *verb,
    const char *things, const char *step)
{
	if (n > 0)
		log_info("reaper: %s %u %s", verb, n, things);
	if (rc != YX_OK)
		log_warnx("reaper: %s: %s", step, e->msg[0] ? e->msg : yx_strerror(rc));
}

/*
 * The pool's upkeep (with an executor and a pool): start boxes until the
 * pool is full (fill), or clear the box directories and mounts that no
 * slot names (the reaper's provider p).
 */
static void
reaper_pool(struct yx_executor *ex, struct yx_provider *p, bool fill)
{
	struct yx_errctx	e;
	unsigned		n = 0;
	int			rc;

	yx_errctx_clear(&e);
	if (fill) {
		rc = yx_executor_pool_fill(ex, &n, &e);
		reaper_log(rc, &e, n, "started", "pool box(es)", "pool");
	} else {
		rc = yx_provider_pool_sweep(p, &n, &e);
		reaper_log(rc, &e, n, "cleared", "pool box director(ies)", "pool sweep");
	}
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
	reaper_log(rc, &e, n, "destroyed", "idle sandbox(es)", "reap");
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

/* The start-up readiness report: one warning per failing check; the
 * protections on, and a warning for each the defaults asked for and this
 * host does not give. */
static void
reaper_ready(const struct yx_config *cfg, struct yx_table *table,
    struct yx_driver *drv)
{
	struct yx_ready_result	 res[YX_READY_N];
	struct yx_ready_protect	 pr;
	struct yx_ready		 rd;
	struct yx_agents	*ag = NULL;
	struct yx_errctx	 e;
	char			 cap[256], capo[512];
	unsigned		 bad, k;
	int			 i;

	yx_ready_init(&rd, cfg, drv, table);
	/* the profiles' runtimes (a file that does not load: the workers say) */
	yx_errctx_clear(&e);
	if (yx_agents_load(&ag, cfg->agents_file, cfg->skills_dir, &e) == YX_OK &&
	    yx_agents_uses_runtime(ag, "runsc"))
		yx_ready_need_runtime(&rd, "runsc");
	yx_agents_free(ag);
	bad = yx_ready_run(&rd, res);
	for (i = 0; i < YX_READY_N; i++)
		if (res[i].rc != YX_OK)
			log_warnx("readiness: %s failed: %s", res[i].name, res[i].oper);
	if (!yx_ready_capacity(cfg, cap, sizeof(cap), capo, sizeof(capo)))
		log_warnx("WARNING: capacity: %s", capo);
	yx_ready_protect(cfg, &pr);
	if (pr.lost == 0)
		log_info("protections: %s", pr.oper);
	else {
		log_warnx("WARNING: protections: %s", pr.oper);
		for (k = 0; k < pr.nwarn; k++)
			log_warnx("WARNING: %s", pr.warn[k]);
	}
	if (bad == 0)
		log_info("readiness: all %d checks pass", YX_READY_N);
	else
		log_warnx("readiness: %u check(s) fail: /readyz answers 503 "
			  "until they pass",
		    bad);
}

/* YUXI_REAP_ORPHANS: remove what no live instance owns (opt-in). */
static void
reaper_orphans(const struct yx_config *cfg)
{
	struct yx_container_info	*v = NULL;
	struct yx_errctx		 e;
	unsigned			 removed = 0;
	size_t				 n = 0;

	if (cfg->reap_orphans[0] == '\0')
		return;
	yx_errctx_clear(&e);
	if (yx_orphans_find(cfg, strcmp(cfg->reap_orphans, "*") == 0 ? NULL : cfg->reap_orphans,
		&v, &n, &e) != YX_OK)
		log_warnx("reaper: orphans: %s", e.msg);
	else if (n > 0 && yx_orphans_remove(cfg, v, n, &removed, &e) != YX_OK)
		log_warnx("reaper: orphans: %s", e.msg);
	if (removed > 0)
		log_info("reaper: removed %u orphaned sandbox(es)", removed);
	free(v);
}

int
yx_reaper_main(const struct yx_config *cfg, struct yx_table *table)
{
	uint64_t		 priv_seen = 0, restarts;
	struct yx_provider	 p;
	struct yx_thread_store	 st;
	struct reaper_keep	 keep = { cfg, &st };
	struct yx_driver	*drv = NULL;
	struct yx_executor	*ex = NULL;
	struct yx_errctx	 e;
	struct timespec		 ts;
	sigset_t		 waitmask;
	int64_t			 next, wait_ms;
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
	(void)yx_provider_comp_state(table, YX_COMP_PRIV, &priv_seen);
	p.keep = reaper_keep;
	p.keep_arg = &keep;
	log_info("reaper: every %ds, idle timeout %ds", cfg->idle_check_interval,
	    cfg->idle_timeout);
	reaper_ready(cfg, table, drv);
	if (yx_provider_discover_all(&p, &e) != YX_OK)
		log_warnx("reaper: discover: %s", e.msg);
	/* the executor: the pool's boxes and interrupted transactions */
	if ((ex = yx_executor_new(cfg, table, drv, &e)) == NULL)
		log_warnx("reaper: no pool, no transaction recovery: %s", e.msg);
	reaper_tx(ex, &st);
	if (ex != NULL && cfg->pool_size > 0)
		reaper_pool(ex, &p, false);
	next = yx_mono_ms() + (int64_t)cfg->idle_check_interval * 1000;
	while (!yx_child_stop) {
		if (ex != NULL && cfg->pool_size > 0)
			reaper_pool(ex, &p, true);
		wait_ms = next - yx_mono_ms();
		if (ex != NULL && cfg->pool_size > 0 && wait_ms > REAPER_POOL_TICK_MS)
			wait_ms = REAPER_POOL_TICK_MS;
		if (wait_ms < 0)
			wait_ms = 0;
		ts.tv_sec = wait_ms / 1000;
		ts.tv_nsec = (wait_ms % 1000) * 1000000L;
		if (ppoll(NULL, 0, &ts, &waitmask) < 0 || yx_child_stop)
			continue;
		if (yx_mono_ms() < next)
			continue;
		next = yx_mono_ms() + (int64_t)cfg->idle_check_interval * 1000;
		/* a new privileged helper: what the old one mounted is checked */
		(void)yx_provider_comp_state(table, YX_COMP_PRIV, &restarts);
		if (restarts != priv_seen) {
			priv_seen = restarts;
			(void)yx_thread_store_remount(&st);
		}
		reaper_pass(&p);
		reaper_orphans(cfg);
		reaper_sweep(cfg, &st);
		reaper_tx(ex, &st);
		if (ex != NULL && cfg->pool_size > 0)
			reaper_pool(ex, &p, false);
	}
	yx_executor_free(ex);
	yx_provider_fini(&p);
	status = 0;
done:
	yx_thread_store_fini(&st);
	yx_driver_free(drv);
	return status;
}
