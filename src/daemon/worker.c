/* SPDX-License-Identifier: MIT */
/*
 * worker.c - one pre-forked FastCGI worker.
 *
 * The listen socket is non-blocking and shared by all workers (of every
 * generation, docs/operations.md). A worker waits for it in epoll_pwait()
 * with SIGTERM/SIGINT/SIGHUP unblocked only there, so a stop request
 * interrupts the wait but never a request in flight: the request runs to
 * its end with those signals blocked, then the loop sees yx_child_stop and
 * exits. A signal that arrives together with a connection stays pending
 * (epoll_pwait returns the event): yx_child_stopping() looks before every
 * accept, so a worker told to stop never takes another request.
 *
 * The socket is registered EPOLLEXCLUSIVE, so a new connection wakes one
 * idle worker rather than all of them. Losing the accept race anyway just
 * makes FCGX_Accept_r() fail with EAGAIN, and the loop waits again. The one
 * woken may be a worker that was just told to retire and leaves the
 * connection queued; the others were not woken for it. So the wait has a
 * timeout (YX_WORKER_WAKE_MS) after which an idle worker tries an accept
 * anyway: such a connection waits that long at most, and is never lost.
 *
 * Retire (a reload: the master starts a new generation on the same socket)
 * and stop (SIGTERM to the master) look the same to a worker: finish the
 * request, take no other, exit 0. On a stop the master first unlinks the
 * socket and sets `draining` in the shared segment: then no connection can
 * arrive any more, and the workers also serve what nginx already queued on
 * the socket before they exit, so a stop loses none of them either.
 *
 * Each worker owns its driver (libcurl is not fork-safe), provider handle,
 * thread store, agents registry, executor, readiness cache and audit log
 * descriptor; all shared state lives in the provider table and the metrics
 * segment. SIGUSR1 (forwarded by the master) reopens the audit log, between
 * requests like a stop.
 */
#include "config.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <fcgiapp.h>
#include <malloc.h>

#include "daemon_int.h"
#include "remote_int.h"
#include "yuxi/clock.h"
#include "yuxi/executor.h"
#include "yuxi/log.h"
#include "common/control_int.h"

#define YX_WORKER_MMAP_MIN	(16 << 20)	/* larger blocks: their own mmap */
#define YX_WORKER_HEAP_KEEP	(32 << 20)	/* free heap kept for reuse */
#define YX_WORKER_WAKE_MS	1000		/* an idle worker tries an accept */

/*
 * The request layer's options: trust in a client's request id, and the
 * host roots no error message may name.
 */
static void
worker_http_setup(const struct yx_config *cfg)
{
	static char		agent[YX_CFG_PATH];	/* outlives every request */
	struct yx_http_opts	o = {
		.trust_request_id = cfg->trust_request_id,
		.hide = { cfg->saves_dir, cfg->skills_dir, cfg->runner_path, agent,
		    cfg->docker_api_socket, cfg->fcgi_socket, cfg->agents_file,
		    cfg->audit_log },
	};

	yx_config_agent_path(cfg, agent, sizeof(agent));
	yx_http_setup(&o);
}

/* Per-process resources; YX_OK or a start-up error (logged). */
static int
worker_open(struct yx_wctx *w, const struct yx_config *cfg, struct yx_table *table,
    struct yx_metrics *metrics)
{
	struct yx_errctx	e;
	int			rc;

	yx_errctx_clear(&e);
	memset(w, 0, sizeof(*w));
	/*
	 * Keep freed heap instead of handing it back after every request: a
	 * command's output passes through a few buffers of its size, and on
	 * these machines a fresh page costs a page fault of ~10-50 us, so a
	 * 1 MiB reply paid ~20 ms in faults alone (docs/benchmarks.md). Free
	 * memory at the top of the heap is returned beyond YX_WORKER_HEAP_KEEP;
	 * a worker's heap is bounded by its largest request (replies are
	 * capped by YUXI_SANDBOX_OUTPUT_LIMIT), not by this.
	 */
	(void)mallopt(M_MMAP_THRESHOLD, YX_WORKER_MMAP_MIN);
	(void)mallopt(M_TRIM_THRESHOLD, YX_WORKER_HEAP_KEEP);
	if (YX_CONTROL_BUILD)
		log_warnx("CONTROL BUILD (tests only): protections off: %s",
		    getenv("YX_CONTROL_OFF") != NULL ? getenv("YX_CONTROL_OFF") : "none");
	w->cfg = cfg;
	w->table = table;
	w->metrics = metrics;
	w->store.dirfd = -1;
	w->audit.fd = -1;
	worker_http_setup(cfg);
	yx_audit_init(&w->audit, cfg, metrics);
	if ((rc = yx_thread_store_init(&w->store, cfg, &e)) != YX_OK ||
	    (rc = yx_agents_load(&w->agents, cfg->agents_file, cfg->skills_dir, &e)) != YX_OK) {
		log_warnx("worker start: %s", e.msg);
		return rc;
	}
	if ((rc = yx_remote_worker_open(w)) != YX_OK)
		return rc;
	/* a front has no engine: the sandbox hosts have them */
	if (cfg->mode != YX_MODE_FRONT && (w->drv = yx_driver_new(cfg, &e)) == NULL)
		log_warnx("worker start: no driver: %s", e.msg);
	/* /readyz: the profiles' runtimes are doctor's and the reaper's report */
	yx_ready_init(&w->ready, cfg, w->drv, table);
	if (w->drv != NULL && table != NULL &&
	    yx_provider_init(&w->prov, cfg, table, w->drv) == YX_OK)
		w->prov_ok = true;
	yx_errctx_clear(&e);
	if (w->prov_ok && (w->exec = yx_executor_new(cfg, table, w->drv, &e)) == NULL)
		log_warnx("worker start: no executor (execute answers 503): %s", e.msg);
	return YX_OK;
}

static void
worker_close(struct yx_wctx *w)
{
	yx_remote_worker_close(w);
	yx_executor_free(w->exec);
	if (w->prov_ok)
		yx_provider_fini(&w->prov);
	yx_driver_free(w->drv);
	yx_agents_free(w->agents);
	yx_thread_store_fini(&w->store);
	yx_audit_fini(&w->audit);
}

/* Serve one accepted request. */
static void
worker_serve(struct yx_wctx *w, FCGX_Request *fr)
{
	struct yx_http_req	r;
	struct yx_errctx	e;
	int64_t			t0 = yx_mono_us();
	int			rc;

	yx_errctx_clear(&e);
	rc = yx_http_req_init(&r, fr, w->cfg->body_limit, &e);
	if (rc != YX_OK) {
		/* refused before routing: logged and audited as unmatched */
		w->note.has_command = w->note.has_path = w->note.has_exit = false;
		w->note.has_meta = w->note.has_preview = false;
		r.route = "unmatched";
		yx_send_errctx(&r, rc, &e);
		log_info("request %s refused before routing: %s", r.request_id, e.msg);
		yx_router_finish(w, &r, yx_nroutes, t0);
	} else
		(void)yx_router_dispatch(w, &r);
	yx_http_req_fini(&r);
}

/*
 * A stopping service: the socket is unlinked, so what is queued on it is
 * all that can come; serve it (FCGX_Accept_r fails with EAGAIN when the
 * queue is empty). Bounded by the master's stop deadline.
 */
static void
worker_drain(struct yx_wctx *w, FCGX_Request *fr)
{
	unsigned n = 0;

	if (YX_CONTROL_OFF("drain"))	/* control: the queue is dropped */
		return;
	while (FCGX_Accept_r(fr) >= 0) {
		worker_serve(w, fr);
		FCGX_Finish_r(fr);
		n++;
	}
	if (n > 0)
		log_info("stopping: served %u queued request(s)", n);
}

int
yx_worker_main(const struct yx_config *cfg, int listen_fd, struct yx_table *table,
    struct yx_metrics *metrics)
{
	struct yx_wctx		w;
	FCGX_Request		req;
	struct epoll_event	ev;
	sigset_t		waitmask;
	int			ep = -1, status = 1;

	yx_child_signals(&waitmask);
	if (worker_open(&w, cfg, table, metrics) != YX_OK)
		goto done;
	if (FCGX_InitRequest(&req, listen_fd, 0) != 0) {
		log_warnx("FCGX_InitRequest failed");
		goto done;
	}
	memset(&ev, 0, sizeof(ev));
	ev.events = EPOLLIN | EPOLLEXCLUSIVE;
	ev.data.fd = listen_fd;
	if ((ep = epoll_create1(EPOLL_CLOEXEC)) == -1 ||
	    epoll_ctl(ep, EPOLL_CTL_ADD, listen_fd, &ev) == -1) {
		log_warn("epoll on the FastCGI socket");
		goto done;
	}
	log_debug("worker ready");
	while (!yx_child_stop) {
		if (yx_child_reopen_due())
			yx_audit_reopen(&w.audit);
		/* 0 (timeout) goes on to try an accept, see the top comment */
		if (epoll_pwait(ep, &ev, 1, YX_WORKER_WAKE_MS, &waitmask) < 0 ||
		    yx_child_stopping())
			continue;	/* EINTR: the loop condition decides */
		if (FCGX_Accept_r(&req) < 0)
			continue;	/* another worker took it (EAGAIN) */
		worker_serve(&w, &req);
		FCGX_Finish_r(&req);
	}
	close(ep);	/* no more wake-ups meant for a serving worker */
	ep = -1;
	if (atomic_load(&metrics->draining))
		worker_drain(&w, &req);
	FCGX_Free(&req, 1);
	status = 0;
done:
	if (ep != -1)
		close(ep);
	worker_close(&w);
	return status;
}
