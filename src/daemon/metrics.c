/* SPDX-License-Identifier: MIT */
/*
 * metrics.c - request counters shared by all workers, and the Prometheus
 * text exposition (format 0.0.4) of GET /metrics.
 *
 * The master maps one anonymous MAP_SHARED segment before forking, so every
 * worker (including respawned ones) increments the same lock-free C11
 * atomics; nothing here needs a lock or a name in /dev/shm. Sandbox counts
 * and provider counters come from the shared provider table, read under its
 * lock.
 */
#include "config.h"

#include <sys/mman.h>

#include <stdio.h>
#include <string.h>

#include "daemon_int.h"
#include "yuxi/provider.h"

static const int metric_status[YX_METRIC_STATUSES] = {
	200, 201, 204, 400, 401, 403, 404, 405, 409, 413, 429, 500, 502, 503, 504, 507, 0
};
static const double metric_bucket[YX_METRIC_BUCKETS] = {
	0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10, 60
};

struct yx_metrics *
yx_metrics_new(void)
{
	void *p;

	p = mmap(NULL, sizeof(struct yx_metrics), PROT_READ | PROT_WRITE,
	    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	memset(p, 0, sizeof(struct yx_metrics));	/* atomics: zero is valid */
	return p;
}

void
yx_metrics_free(struct yx_metrics *m)
{
	if (m != NULL)
		munmap(m, sizeof(*m));
}

static int
metric_status_idx(int status)
{
	int i;

	for (i = 0; i < YX_METRIC_STATUSES - 1; i++)
		if (metric_status[i] == status)
			return i;
	return YX_METRIC_STATUSES - 1;	/* "other" */
}

void
yx_metrics_record(struct yx_metrics *m, int route, int status, int64_t usec)
{
	int b;

	if (m == NULL || route < 0 || route >= YX_METRIC_ROUTES)
		return;
	atomic_fetch_add(&m->req[route][metric_status_idx(status)], 1);
	for (b = 0; b < YX_METRIC_BUCKETS; b++)
		if ((double)usec <= metric_bucket[b] * 1e6)
			break;
	atomic_fetch_add(&m->lat[route][b], 1);
	atomic_fetch_add(&m->lat_sum_us[route], usec > 0 ? (uint64_t)usec : 0);
}

static const char *
metric_route_name(size_t i)
{
	return i < yx_nroutes ? yx_routes[i].pattern : "unmatched";
}

static const char *
metric_method(size_t i)
{
	return i < yx_nroutes ? yx_http_method_name(yx_routes[i].method) : "any";
}

static int
metrics_requests(struct yx_metrics *m, struct yx_buf *b)
{
	size_t	i;
	int	s, rc = YX_OK;

	rc = yx_buf_puts(b, "# HELP yuxi_http_requests_total HTTP requests by route and status.\n"
			    "# TYPE yuxi_http_requests_total counter\n");
	for (i = 0; i <= yx_nroutes && rc == YX_OK; i++)
		for (s = 0; s < YX_METRIC_STATUSES && rc == YX_OK; s++) {
			uint64_t v = atomic_load(&m->req[i][s]);
			char st[16];

			if (v == 0)
				continue;
			if (metric_status[s] != 0)
				snprintf(st, sizeof(st), "%d", metric_status[s]);
			else
				snprintf(st, sizeof(st), "other");
			rc = yx_buf_printf(b, "yuxi_http_requests_total{method=\"%s\",route=\"%s\",status=\"%s\"} %llu\n",
			    metric_method(i), metric_route_name(i), st, (unsigned long long)v);
		}
	return rc;
}

static int
metrics_latency(struct yx_metrics *m, struct yx_buf *b)
{
	size_t	i;
	int	k, rc;

	rc = yx_buf_puts(b, "# HELP yuxi_http_request_duration_seconds Request latency by route.\n"
			    "# TYPE yuxi_http_request_duration_seconds histogram\n");
	for (i = 0; i <= yx_nroutes && rc == YX_OK; i++) {
		uint64_t cum = 0, tot = 0;
		const char *rn = metric_route_name(i), *mn = metric_method(i);

		for (k = 0; k <= YX_METRIC_BUCKETS; k++)
			tot += atomic_load(&m->lat[i][k]);
		if (tot == 0)
			continue;
		for (k = 0; k < YX_METRIC_BUCKETS && rc == YX_OK; k++) {
			cum += atomic_load(&m->lat[i][k]);
			rc = yx_buf_printf(b, "yuxi_http_request_duration_seconds_bucket"
					      "{method=\"%s\",route=\"%s\",le=\"%g\"} %llu\n",
			    mn, rn, metric_bucket[k],
			    (unsigned long long)cum);
		}
		if (rc == YX_OK)
			rc = yx_buf_printf(b, "yuxi_http_request_duration_seconds_bucket"
					      "{method=\"%s\",route=\"%s\",le=\"+Inf\"} %llu\n"
					      "yuxi_http_request_duration_seconds_sum{method=\"%s\",route=\"%s\"} %.6f\n"
					      "yuxi_http_request_duration_seconds_count{method=\"%s\",route=\"%s\"} %llu\n",
			    mn, rn, (unsigned long long)tot, mn, rn,
			    (double)atomic_load(&m->lat_sum_us[i]) / 1e6, mn, rn,
			    (unsigned long long)tot);
	}
	return rc;
}

/* Sandbox and provider counters from the table (zero when it is absent). */
static int
metrics_table(struct yx_table *t, struct yx_buf *b)
{
	struct yx_provider_stats st;
	struct yx_shm_metrics	*pm = &st.metrics;
	uint32_t		*ns = st.nstate;
	int			 s, rc;

	(void)yx_provider_stats(t, &st, NULL);	/* zeroes when absent */
	rc = yx_buf_puts(b, "# HELP yuxi_sandboxes Sandboxes by state.\n"
			    "# TYPE yuxi_sandboxes gauge\n");
	for (s = 1; s < YX_SLOT_NSTATES && rc == YX_OK; s++)
		rc = yx_buf_printf(b, "yuxi_sandboxes{state=\"%s\"} %u\n",
		    yx_slot_state_name(s), ns[s]);
	if (rc == YX_OK)
		rc = yx_buf_printf(b,
		    "# HELP yuxi_sandbox_acquires_total Sandbox acquires by outcome.\n"
		    "# TYPE yuxi_sandbox_acquires_total counter\n"
		    "yuxi_sandbox_acquires_total{outcome=\"hit\"} %llu\n"
		    "yuxi_sandbox_acquires_total{outcome=\"warm\"} %llu\n"
		    "yuxi_sandbox_acquires_total{outcome=\"discovered\"} %llu\n"
		    "yuxi_sandbox_acquires_total{outcome=\"created\"} %llu\n"
		    "yuxi_sandbox_acquires_total{outcome=\"pooled\"} %llu\n"
		    "# HELP yuxi_reaper_destroys_total Idle sandboxes destroyed by the reaper.\n"
		    "# TYPE yuxi_reaper_destroys_total counter\n"
		    "yuxi_reaper_destroys_total %llu\n"
		    "# HELP yuxi_engine_errors_total Container engine calls that failed.\n"
		    "# TYPE yuxi_engine_errors_total counter\n"
		    "yuxi_engine_errors_total %llu\n"
		    "# HELP yuxi_sandbox_evictions_total LRU evictions at capacity.\n"
		    "# TYPE yuxi_sandbox_evictions_total counter\n"
		    "yuxi_sandbox_evictions_total %llu\n"
		    "# HELP yuxi_table_lock_repairs_total Table locks recovered after a holder died.\n"
		    "# TYPE yuxi_table_lock_repairs_total counter\n"
		    "yuxi_table_lock_repairs_total %llu\n"
		    "# HELP yuxi_holds_dropped_total In-flight holds of dead processes dropped.\n"
		    "# TYPE yuxi_holds_dropped_total counter\n"
		    "yuxi_holds_dropped_total %llu\n"
		    "# HELP yuxi_reconcile_total Labelled containers found in no slot, by action.\n"
		    "# TYPE yuxi_reconcile_total counter\n"
		    "yuxi_reconcile_total{action=\"adopted\"} %llu\n"
		    "yuxi_reconcile_total{action=\"removed\"} %llu\n",
		    (unsigned long long)pm->acquire_hit, (unsigned long long)pm->acquire_warm,
		    (unsigned long long)pm->acquire_discovered,
		    (unsigned long long)pm->acquire_created,
		    (unsigned long long)pm->acquire_pooled,
		    (unsigned long long)pm->reaper_destroys,
		    (unsigned long long)pm->engine_errors, (unsigned long long)pm->evictions,
		    (unsigned long long)pm->lock_repairs, (unsigned long long)pm->holds_dropped,
		    (unsigned long long)pm->reconcile_adopted,
		    (unsigned long long)pm->reconcile_removed);
	return rc;
}

/* Build info, the audit log's counters and the readiness checks. */
static int
metrics_service(struct yx_metrics *m, const struct yx_ready_result *ready,
    struct yx_buf *b)
{
	unsigned	bad = 0;
	int		i, rc;

	rc = yx_buf_printf(b,
	    "# HELP yuxi_build_info The running build (always 1).\n"
	    "# TYPE yuxi_build_info gauge\n"
	    "yuxi_build_info{version=\"%s\"} 1\n"
	    "# HELP yuxi_audit_lines_total Audit log lines written.\n"
	    "# TYPE yuxi_audit_lines_total counter\n"
	    "yuxi_audit_lines_total %llu\n"
	    "# HELP yuxi_audit_write_errors_total Audit log lines lost (file not open or write failed).\n"
	    "# TYPE yuxi_audit_write_errors_total counter\n"
	    "yuxi_audit_write_errors_total %llu\n",
	    YX_VERSION, (unsigned long long)atomic_load(&m->audit_lines),
	    (unsigned long long)atomic_load(&m->audit_errors));
	if (ready == NULL || rc != YX_OK)
		return rc;
	rc = yx_buf_puts(b, "# HELP yuxi_ready_check Readiness checks (1 passes, 0 fails), as /readyz.\n"
			    "# TYPE yuxi_ready_check gauge\n");
	for (i = 0; i < YX_READY_N && rc == YX_OK; i++) {
		bad += ready[i].rc != YX_OK;
		rc = yx_buf_printf(b, "yuxi_ready_check{check=\"%s\"} %d\n",
		    ready[i].name, ready[i].rc == YX_OK);
	}
	if (rc == YX_OK)
		rc = yx_buf_printf(b, "# HELP yuxi_ready 1 when every readiness check passes.\n"
				      "# TYPE yuxi_ready gauge\n"
				      "yuxi_ready %d\n",
		    bad == 0);
	return rc;
}

/*
 * Thread disk images (YUXI_THREAD_DISK_QUOTA): sums, not one series per
 * thread (bounded cardinality); the per-thread figures are in GET
 * /api/threads/{id} and the admin listing. A statfs per thread with an
 * image (YX_THREADS_SCAN_MAX entries at most), so only with a quota.
 */
int
yx_metrics_render_disk(const struct yx_config *cfg, struct yx_thread_store *st,
    struct yx_buf *b)
{
	struct yx_thread_disk_totals tot;

	if (cfg->thread_disk_quota <= 0 || st->dirfd == -1)
		return YX_OK;
	yx_thread_disk_totals(st, &tot);
	return yx_buf_printf(b,
	    "# HELP yuxi_thread_disk_quota_bytes The disk quota of a new thread (YUXI_THREAD_DISK_QUOTA).\n"
	    "# TYPE yuxi_thread_disk_quota_bytes gauge\n"
	    "yuxi_thread_disk_quota_bytes %lld\n"
	    "# HELP yuxi_thread_disk_images Threads by state of their disk image.\n"
	    "# TYPE yuxi_thread_disk_images gauge\n"
	    "yuxi_thread_disk_images{state=\"mounted\"} %u\n"
	    "yuxi_thread_disk_images{state=\"unmounted\"} %u\n"
	    "# HELP yuxi_thread_disk_full Threads whose mounted disk image has less than 5 %% available.\n"
	    "# TYPE yuxi_thread_disk_full gauge\n"
	    "yuxi_thread_disk_full %u\n"
	    "# HELP yuxi_thread_disk_used_bytes Bytes used in all mounted thread disk images together.\n"
	    "# TYPE yuxi_thread_disk_used_bytes gauge\n"
	    "yuxi_thread_disk_used_bytes %llu\n"
	    "# HELP yuxi_thread_disk_quota_total_bytes Quotas of all mounted thread disk images together.\n"
	    "# TYPE yuxi_thread_disk_quota_total_bytes gauge\n"
	    "yuxi_thread_disk_quota_total_bytes %llu\n"
	    "# HELP yuxi_thread_disk_scan_truncated 1 when the threads were too many to scan all.\n"
	    "# TYPE yuxi_thread_disk_scan_truncated gauge\n"
	    "yuxi_thread_disk_scan_truncated %d\n",
	    (long long)cfg->thread_disk_quota, tot.images, tot.unmounted,
	    tot.full, (unsigned long long)tot.used,
	    (unsigned long long)tot.quota, tot.truncated ? 1 : 0);
}

/* The master's other children: up or not, and how often started again. */
static int
metrics_components(struct yx_table *t, struct yx_buf *b)
{
	uint64_t	n;
	int		k, st, rc;

	if ((rc = yx_buf_puts(b,
		 "# HELP yuxi_component_up The privileged helper, the egress proxy and the preview ingress: 1 up, "
		 "0 down (being started again); absent when not used.\n"
		 "# TYPE yuxi_component_up gauge\n")) != YX_OK)
		return rc;
	for (k = 0; k < YX_COMP_N && rc == YX_OK; k++)
		if ((st = yx_provider_comp_state(t, k, NULL)) != YX_COMP_UNUSED)
			rc = yx_buf_printf(b, "yuxi_component_up{component=\"%s\"} %d\n",
			    yx_comp_name(k), st == YX_COMP_UP);
	if (rc == YX_OK)
		rc = yx_buf_puts(b, "# HELP yuxi_component_restarts_total Times the master "
				    "started a component again after it died.\n"
				    "# TYPE yuxi_component_restarts_total counter\n");
	for (k = 0; k < YX_COMP_N && rc == YX_OK; k++) {
		(void)yx_provider_comp_state(t, k, &n);
		rc = yx_buf_printf(b, "yuxi_component_restarts_total{component=\"%s\"} %llu\n",
		    yx_comp_name(k), (unsigned long long)n);
	}
	return rc;
}

int
yx_metrics_render(struct yx_metrics *m, struct yx_table *t,
    const struct yx_ready_result *ready, struct yx_buf *b)
{
	int rc;

	if ((rc = metrics_requests(m, b)) != YX_OK ||
	    (rc = metrics_latency(m, b)) != YX_OK ||
	    (rc = metrics_table(t, b)) != YX_OK ||
	    (rc = metrics_service(m, ready, b)) != YX_OK ||
	    (rc = metrics_components(t, b)) != YX_OK)
		return rc;
	return yx_buf_printf(b,
	    "# HELP yuxi_workers Live worker processes.\n"
	    "# TYPE yuxi_workers gauge\n"
	    "yuxi_workers %d\n"
	    "# HELP yuxi_child_exits_total Worker and reaper exits seen by the master, retirements excepted.\n"
	    "# TYPE yuxi_child_exits_total counter\n"
	    "yuxi_child_exits_total %llu\n"
	    "# HELP yuxi_reloads_total Reloads (SIGHUP) by result.\n"
	    "# TYPE yuxi_reloads_total counter\n"
	    "yuxi_reloads_total{result=\"done\"} %llu\n"
	    "yuxi_reloads_total{result=\"refused\"} %llu\n"
	    "# HELP yuxi_generation Configuration generation of new workers (1 at start).\n"
	    "# TYPE yuxi_generation gauge\n"
	    "yuxi_generation %u\n",
	    (int)atomic_load(&m->workers_alive),
	    (unsigned long long)atomic_load(&m->child_exits),
	    (unsigned long long)atomic_load(&m->reloads),
	    (unsigned long long)atomic_load(&m->reloads_refused),
	    (unsigned)atomic_load(&m->generation));
}
