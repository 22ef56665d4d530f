/* SPDX-License-Identifier: MIT */
/*
 * master.c - the master process of yuxi-sandboxd (docs/design.md §1;
 * after nginx's ngx_process_cycle.c).
 *
 * The master creates the shared provider table and the metrics segment,
 * opens the FastCGI socket, forks cfg->workers workers and one reaper, and
 * then only supervises: all signals it cares about are blocked and it waits
 * for them in sigsuspend() alone; the handlers only set sig_atomic_t flags.
 * On SIGCHLD it reaps with waitpid(-1, WNOHANG) in a loop, logs every exit
 * with its status or signal, repairs the table (a dead worker may have held
 * the lock or a sandbox), and respawns the child: at once when it had run
 * for a while, with an exponential backoff (100 ms .. 10 s, driven by an
 * ITIMER_REAL/SIGALRM) when it keeps dying young. SIGUSR1 is passed on to
 * every child (workers reopen their audit log, for logrotate).
 *
 * Its other children are supervised the same way (issue 27): the
 * privileged helper (started again on the same socket, yx_priv_respawn:
 * the master keeps CAP_SYS_ADMIN permitted for that, never effective)
 * and the egress proxy's supervisor. Each death is a log line and a count
 * (/metrics yuxi_component_restarts_total), its state is in the metrics
 * segment for /readyz, and what they hold comes back: the helper's mounts
 * are checked by the reaper when it sees a new helper, the proxy serves
 * its kept registrations again (src/egress/proxy.c).
 * Before anything else the master takes its table's lock (instance.c: a
 * second instance with the same YUXI_SHM_NAME is refused, naming the first)
 * and writes its pid file. SIGUSR2 is a SIGTERM followed by executing the
 * program file again (instance.c: the restart in place of an upgrade
 * without a service manager).
 *
 * SIGHUP reloads (docs/operations.md, "Reload and stop"): the configuration
 * and the agents file are read again (reload.c); when they do not validate,
 * one line says why and nothing changes. Otherwise the generation counter
 * goes up, workers of the new generation are forked on the same listen
 * socket (it is never closed, so no connection is refused), and then every
 * child of an older generation gets SIGTERM: a worker finishes its request
 * in flight, takes no other and exits (worker.c); its slot is dropped. The
 * old reaper stops between two passes and a new one starts once it is
 * gone, so two reapers never overlap. A child that has not retired after
 * exec_timeout + 10 s is SIGKILLed. The master itself never exits on
 * SIGHUP.
 *
 * On SIGTERM/SIGINT it stops accepting (closes and unlinks the socket, so
 * nginx can queue nothing more), sets `draining` in the shared segment,
 * sends SIGTERM to every child (workers finish their in-flight request and
 * serve what was already queued on the socket), waits at most the largest
 * exec_timeout it ran with + 10 s, SIGKILLs what is left and exits 0.
 *
 * Socket permissions: the socket is created 0660 (umask 0117), then given
 * YUXI_FCGI_SOCKET_GROUP (nginx's group, e.g. www-data) and
 * YUXI_FCGI_SOCKET_MODE (0660 or 0600) when set; else it keeps the group of
 * its directory (set-group-ID directories pass theirs on). Whoever connects
 * can name any user, so "other" never gets access. The dev run
 * (scripts/run-service.sh) runs nginx with `user root;`.
 */
#include "config.h"

#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <fcgiapp.h>

#include "daemon_int.h"
#include "yuxi/clock.h"
#include "yuxi/egress.h"
#include "yuxi/preview.h"
#include "yuxi/log.h"
#include "common/control_int.h"
#include "yuxi/priv.h"

#define YX_BACKOFF_MIN_MS	100
#define YX_BACKOFF_MAX_MS	10000
#define YX_CHILD_STABLE_MS	10000	/* lived this long: not a crash loop */
#define YX_STOP_MARGIN_S	10	/* beyond exec_timeout, to finish a request */

enum child_kind { CHILD_WORKER,
	CHILD_REAPER };

struct child {
	pid_t		pid;		/* 0 = not running */
	enum child_kind	kind;
	int		fails;		/* consecutive early deaths */
	int64_t		started_ms;
	int64_t		respawn_at_ms;	/* 0 = none pending */
	uint32_t	gen;		/* generation of the configuration it runs */
	int64_t		retire_by_ms;	/* retiring: SIGKILL then; 0 = serving */
};

/*
 * Ownership: cfg is the configuration of the current generation: main's
 * until the first reload, then `owned` (heap, freed on the next reload and
 * at exit). Children keep the copy they were forked with.
 */
struct master {
	const struct yx_config	*cfg;
	struct yx_config	*owned;
	uint32_t		 gen;		/* 1 at start, +1 per reload */
	int			 grace_s;	/* stop/retire bound: largest exec_timeout + margin */
	struct yx_table		*table;
	struct yx_metrics	*metrics;
	int			 listen_fd;
	struct child		*kids;		/* every generation; retired slots removed */
	size_t			 nkids;
	bool			 stopping;
	pid_t			 egress_pid;	/* yx_egress_start() */
	pid_t			 ingress_pid;	/* yx_preview_ingress_start() */
	struct comp {
		pid_t	pid;		/* 0 = not running */
		int	fails;		/* consecutive early deaths */
		int64_t	started_ms;
		int64_t	respawn_at_ms;	/* 0 = none pending */
	}			 comps[YX_COMP_N];
	struct yx_instance	 inst;		/* table lock, pid file */
};

static volatile sig_atomic_t	m_sigchld, m_term, m_alarm, m_hup, m_usr1, m_usr2;

static void
master_sig(int signo)
{
	switch (signo) {
	case SIGCHLD:
		m_sigchld = 1;
		break;
	case SIGALRM:
		m_alarm = 1;
		break;
	case SIGUSR1:
		m_usr1 = 1;
		break;
	case SIGHUP:
		m_hup = 1;
		break;
	case SIGUSR2:
		m_usr2 = 1;
		break;
	default:
		m_term = 1;
		break;
	}
}

/* Fork one child; returns its pid or -1. The child never returns. */
static pid_t
master_fork(struct master *m, struct child *c)
{
	pid_t	pid;
	int	status;

	if ((pid = fork()) == -1) {
		log_warn("fork");
		return -1;
	}
	if (pid > 0) {
		c->pid = pid;
		c->started_ms = yx_mono_ms();
		c->respawn_at_ms = 0;
		if (c->kind == CHILD_WORKER)
			atomic_fetch_add(&m->metrics->workers_alive, 1);
		log_info("started %s pid %ld (generation %u)",
		    c->kind == CHILD_WORKER ? "worker" : "reaper", (long)pid, c->gen);
		return pid;
	}
	if (getppid() == 1)	/* master died between fork and prctl */
		_exit(1);
	yx_priv_child_drop();	/* not even permitted: only the helper has it */
	if (c->kind == CHILD_WORKER) {
		log_init("yuxi-worker", m->cfg->verbose);
		status = yx_worker_main(m->cfg, m->listen_fd, m->table, m->metrics);
	} else {
		close(m->listen_fd);
		log_init("yuxi-reaper", m->cfg->verbose);
		status = yx_reaper_main(m->cfg, m->table);
	}
	_exit(status);
}

/* The backoff after `fails` early deaths in a row (0: at once). */
static int64_t
master_backoff(int fails)
{
	int64_t delay;

	if (fails <= 0)
		return 0;
	delay = (int64_t)YX_BACKOFF_MIN_MS << (fails > 8 ? 7 : fails - 1);
	return delay > YX_BACKOFF_MAX_MS ? YX_BACKOFF_MAX_MS : delay;
}

/*
 * Was pid the helper or the egress supervisor? Then note it down (its
 * state, a count, a log line) and schedule it again (backoff); true.
 */
static bool
master_comp_exited(struct master *m, pid_t pid, int ws)
{
	struct comp	*c;
	int64_t		 lived, delay;
	int		 k;

	for (k = 0; k < YX_COMP_N && m->comps[k].pid != pid; k++)
		continue;
	if (k == YX_COMP_N || pid <= 0)
		return false;
	c = &m->comps[k];
	c->pid = 0;
	if (k == YX_COMP_PRIV)
		yx_priv_exited(pid);
	else if (k == YX_COMP_EGRESS)
		m->egress_pid = -1;
	else
		m->ingress_pid = -1;
	yx_provider_comp_note(m->table, k, YX_COMP_DOWN, false);
	if (m->stopping)
		return true;
	if (YX_CONTROL_OFF("supervise")) {	/* how it was: gone for good */
		log_warnx("%s %ld exited: not started again (control)", yx_comp_name(k),
		    (long)pid);
		return true;
	}
	lived = yx_mono_ms() - c->started_ms;
	c->fails = lived >= YX_CHILD_STABLE_MS ? 0 : c->fails + 1;
	delay = master_backoff(c->fails);
	c->respawn_at_ms = yx_mono_ms() + (delay > 0 ? delay : 1);
	log_warnx("%s %ld exited (%s %d) after %lld ms; started again in %lld ms",
	    yx_comp_name(k), (long)pid, WIFSIGNALED(ws) ? "signal" : "status",
	    WIFSIGNALED(ws) ? WTERMSIG(ws) : WEXITSTATUS(ws), (long long)lived,
	    (long long)delay);
	return true;
}

/* Start component k again; true when it runs. */
static bool
master_comp_start(struct master *m, int k)
{
	struct comp	*c = &m->comps[k];
	pid_t		 pid = -1;

	if (k == YX_COMP_PRIV) {
		if (yx_priv_respawn() == YX_OK)
			pid = yx_priv_pid();
	} else if (k == YX_COMP_EGRESS) {
		if (yx_egress_start(m->cfg, &pid) == YX_OK)
			m->egress_pid = pid;
	} else if (yx_preview_ingress_start(m->cfg, &pid) == YX_OK)
		m->ingress_pid = pid;
	if (pid <= 0) {
		c->fails++;
		c->respawn_at_ms = yx_mono_ms() + master_backoff(c->fails);
		return false;
	}
	c->pid = pid;
	c->started_ms = yx_mono_ms();
	c->respawn_at_ms = 0;
	yx_provider_comp_note(m->table, k, YX_COMP_UP, true);
	log_info("%s started again: pid %ld", yx_comp_name(k), (long)pid);
	return true;
}

/* Note the exit of pid with wait status ws. */
static void
master_exited(struct master *m, pid_t pid, int ws)
{
	struct child	*c = NULL;
	int64_t		 lived, delay;
	size_t		 i;

	for (i = 0; i < m->nkids; i++)
		if (m->kids[i].pid == pid)
			c = &m->kids[i];
	if (master_comp_exited(m, pid, ws))
		return;
	if (WIFSIGNALED(ws))
		log_warnx("child %ld exited on signal %d%s", (long)pid, WTERMSIG(ws),
		    WCOREDUMP(ws) ? " (core dumped)" : "");
	else if (WEXITSTATUS(ws) != 0 || !m->stopping)
		log_info("child %ld exited with status %d", (long)pid, WEXITSTATUS(ws));
	if (c == NULL || c->retire_by_ms == 0)	/* a retirement is no crash */
		atomic_fetch_add(&m->metrics->child_exits, 1);
	if (c == NULL)
		return;
	if (c->kind == CHILD_WORKER)
		atomic_fetch_sub(&m->metrics->workers_alive, 1);
	c->pid = 0;
	if (c->retire_by_ms != 0) {
		log_info("retired %s pid %ld (generation %u)",
		    c->kind == CHILD_WORKER ? "worker" : "reaper", (long)pid, c->gen);
		c->retire_by_ms = 0;
		if (c->kind == CHILD_WORKER) {	/* its successor runs already */
			*c = m->kids[--m->nkids];
			return;
		}
		/* the reaper's successor starts now, with the current generation */
		c->gen = m->gen;
		c->fails = 0;
		c->respawn_at_ms = m->stopping ? 0 : yx_mono_ms();
		return;
	}
	if (m->stopping)
		return;
	lived = yx_mono_ms() - c->started_ms;
	c->fails = lived >= YX_CHILD_STABLE_MS ? 0 : c->fails + 1;
	delay = master_backoff(c->fails);
	if (c->fails > 0) {
		log_warnx("child %ld died after %lld ms; respawn in %lld ms", (long)pid,
		    (long long)lived, (long long)delay);
	}
	c->respawn_at_ms = yx_mono_ms() + delay;
}

static void
master_reap(struct master *m)
{
	pid_t	pid;
	int	ws;

	while ((pid = waitpid(-1, &ws, WNOHANG)) > 0)
		master_exited(m, pid, ws);
	/* a child killed while holding the table lock or a sandbox */
	if (!m->stopping) {
		unsigned fixes = yx_provider_repair(m->table);

		if (fixes > 0)
			log_info("table: %u repair(s) after a child exit", fixes);
	}
}

/* SIGKILL a retiring child past its deadline; returns the next deadline or 0. */
static int64_t
master_overdue(struct master *m, int64_t now)
{
	int64_t	next = 0;
	size_t	i;

	for (i = 0; i < m->nkids; i++) {
		struct child *c = &m->kids[i];

		if (c->pid == 0 || c->retire_by_ms == 0 || c->retire_by_ms == INT64_MAX)
			continue;
		if (c->retire_by_ms <= now) {
			log_warnx("child %ld did not retire in %ds: SIGKILL", (long)c->pid,
			    m->grace_s);
			kill(c->pid, SIGKILL);
			c->retire_by_ms = INT64_MAX;	/* retiring, not again */
			continue;
		}
		if (next == 0 || c->retire_by_ms < next)
			next = c->retire_by_ms;
	}
	return next;
}

/*
 * Respawn due children and SIGKILL overdue retiring ones; arm the timer for
 * the next of either.
 */
static void
master_respawn(struct master *m)
{
	struct itimerval	it;
	int64_t			now = yx_mono_ms(), next, d;
	size_t			i;

	next = master_overdue(m, now);
	for (i = 0; i < m->nkids; i++) {
		struct child *c = &m->kids[i];

		if (c->pid != 0 || c->respawn_at_ms == 0)
			continue;
		if (c->respawn_at_ms <= now) {
			if (master_fork(m, c) == -1)
				c->respawn_at_ms = now + YX_BACKOFF_MAX_MS;
			continue;
		}
		if (next == 0 || c->respawn_at_ms < next)
			next = c->respawn_at_ms;
	}
	for (i = 0; i < m->nkids; i++)	/* fork failures above */
		if (m->kids[i].pid == 0 && m->kids[i].respawn_at_ms > now &&
		    (next == 0 || m->kids[i].respawn_at_ms < next))
			next = m->kids[i].respawn_at_ms;
	for (i = 0; i < YX_COMP_N; i++) {
		struct comp *c = &m->comps[i];

		if (c->pid != 0 || c->respawn_at_ms == 0)
			continue;
		if (c->respawn_at_ms <= now)
			(void)master_comp_start(m, (int)i);
		if (c->pid == 0 && (next == 0 || c->respawn_at_ms < next))
			next = c->respawn_at_ms;
	}
	memset(&it, 0, sizeof(it));
	if (next > 0) {
		d = next - now > 0 ? next - now : 1;
		it.it_value.tv_sec = d / 1000;
		it.it_value.tv_usec = (d % 1000) * 1000;
	}
	setitimer(ITIMER_REAL, &it, NULL);
}

static size_t
master_alive(const struct master *m)
{
	size_t i, n = 0;

	for (i = 0; i < m->nkids; i++)
		if (m->kids[i].pid != 0)
			n++;
	return n;
}

/*
 * Ask a child of an older generation to finish and exit (SIGTERM; SIGKILL
 * by master_respawn() after grace_s). The control build's "drain" switch
 * kills it at once instead: the naive reload the tests must catch.
 */
static void
master_retire(struct master *m, struct child *c)
{
	int sig = SIGTERM;

	if (YX_CONTROL_OFF("drain"))
		sig = SIGKILL;
	c->retire_by_ms = yx_mono_ms() + (int64_t)m->grace_s * 1000;
	kill(c->pid, sig);
}

/*
 * SIGHUP: a new generation from the configuration read again, or nothing
 * at all when it does not validate (one log line says why).
 */
static void
master_reload(struct master *m)
{
	struct yx_config	*next;
	struct child		*kids, *c;
	char			 err[1024];
	size_t			 i, nnew;

	if ((next = malloc(sizeof(*next))) == NULL) {
		log_warn("reload refused");
		goto refused;
	}
	if (yx_reload_config(m->cfg, next, err, sizeof(err)) != YX_OK) {
		log_warnx("reload refused, generation %u keeps serving: %s", m->gen, err);
		goto refused;
	}
	nnew = (size_t)next->workers;
	if ((kids = realloc(m->kids, (m->nkids + nnew) * sizeof(*kids))) == NULL) {
		log_warn("reload refused");
		goto refused;
	}
	m->kids = kids;
	free(m->owned);
	m->cfg = m->owned = next;
	m->gen++;
	if (next->exec_timeout + YX_STOP_MARGIN_S > m->grace_s)
		m->grace_s = next->exec_timeout + YX_STOP_MARGIN_S;
	log_setverbose(next->verbose);
	atomic_store(&m->metrics->generation, m->gen);
	atomic_fetch_add(&m->metrics->reloads, 1);
	log_info("reload: generation %u (%s), %d worker(s)", m->gen,
	    next->config_file[0] != '\0' ? next->config_file : "environment only",
	    next->workers);
	/* old workers waiting for a respawn go; a waiting reaper takes this generation */
	for (i = 0; i < m->nkids;) {
		c = &m->kids[i];
		if (c->pid == 0 && c->kind == CHILD_WORKER) {
			*c = m->kids[--m->nkids];
			continue;
		}
		if (c->pid == 0)
			c->gen = m->gen;
		i++;
	}
	for (i = 0; i < nnew; i++) {
		c = &m->kids[m->nkids++];
		memset(c, 0, sizeof(*c));
		c->kind = CHILD_WORKER;
		c->gen = m->gen;
		c->respawn_at_ms = 1;	/* due now */
	}
	master_respawn(m);	/* the new workers first: serving never pauses */
	for (i = 0; i < m->nkids; i++) {
		c = &m->kids[i];
		if (c->pid != 0 && c->gen != m->gen && c->retire_by_ms == 0)
			master_retire(m, c);
	}
	master_respawn(m);	/* arms the timer for the retire deadlines */
	return;
refused:
	free(next);
	atomic_fetch_add(&m->metrics->reloads_refused, 1);
}

/* Graceful stop: TERM everyone, wait (bounded), then KILL. */
static void
master_stop(struct master *m, const sigset_t *waitmask)
{
	struct itimerval	it;
	size_t			i;
	int			grace = m->grace_s;

	m->stopping = true;
	atomic_store(&m->metrics->draining, 1);	/* before the signals */
	log_info("stopping: waiting up to %ds for %zu child(ren)", grace, master_alive(m));
	for (i = 0; i < m->nkids; i++)
		if (m->kids[i].pid != 0)
			kill(m->kids[i].pid, SIGTERM);
	memset(&it, 0, sizeof(it));
	it.it_value.tv_sec = grace;
	m_alarm = 0;
	setitimer(ITIMER_REAL, &it, NULL);
	while (master_alive(m) > 0 && !m_alarm) {
		sigsuspend(waitmask);
		if (m_sigchld) {
			m_sigchld = 0;
			master_reap(m);
		}
	}
	for (i = 0; i < m->nkids; i++)
		if (m->kids[i].pid != 0) {
			log_warnx("child %ld did not stop in time: SIGKILL",
			    (long)m->kids[i].pid);
			kill(m->kids[i].pid, SIGKILL);
		}
	while (master_alive(m) > 0) {
		int	ws;
		pid_t	pid = waitpid(-1, &ws, 0);

		if (pid == -1)
			break;
		master_exited(m, pid, ws);
	}
}

/*
 * Open the FastCGI socket: a stale socket file is removed first (anything
 * else at that path is refused). Returns the non-blocking listen fd or -1.
 */
static int
master_listen(const struct yx_config *cfg)
{
	struct stat	sb;
	mode_t		old;
	int		fd, fl;

	if (lstat(cfg->fcgi_socket, &sb) == 0) {
		if (!S_ISSOCK(sb.st_mode)) {
			log_warnx("%s exists and is not a socket", cfg->fcgi_socket);
			return -1;
		}
		if (unlink(cfg->fcgi_socket) == -1) {
			log_warn("unlink %s", cfg->fcgi_socket);
			return -1;
		}
	}
	old = umask(0117);
	fd = FCGX_OpenSocket(cfg->fcgi_socket, 128);
	umask(old);
	if (fd < 0) {
		log_warnx("cannot listen on %s", cfg->fcgi_socket);
		return -1;
	}
	/* until here 0660 with our own group: nobody else could connect */
	if ((cfg->fcgi_socket_gid != -1 && chown(cfg->fcgi_socket, (uid_t)-1, (gid_t)cfg->fcgi_socket_gid) == -1) ||
	    chmod(cfg->fcgi_socket, cfg->fcgi_socket_mode) == -1) {
		log_warn("%s: group %d mode %04o", cfg->fcgi_socket,
		    cfg->fcgi_socket_gid, cfg->fcgi_socket_mode);
		close(fd);
		unlink(cfg->fcgi_socket);
		return -1;
	}
	if ((fl = fcntl(fd, F_GETFL)) == -1 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) == -1 ||
	    fcntl(fd, F_SETFD, FD_CLOEXEC) == -1) {
		log_warn("fcntl");
		close(fd);
		return -1;
	}
	return fd;
}

/* Component k started (pid > 0) or not used (pid <= 0). */
static void
master_comp_note(struct master *m, int k, pid_t pid)
{
	m->comps[k].pid = pid > 0 ? pid : 0;
	m->comps[k].started_ms = yx_mono_ms();
	yx_provider_comp_note(m->table, k, pid > 0 ? YX_COMP_UP : YX_COMP_UNUSED, false);
}

/* Shared state made before any fork. YX_OK or a logged error. */
static int
master_setup(struct master *m)
{
	struct yx_thread_store	st;
	struct yx_thread_repair	rep;
	struct yx_errctx	e;
	unsigned		n;
	int			rc;

	yx_errctx_clear(&e);
	if ((m->metrics = yx_metrics_new()) == NULL) {
		log_warn("metrics segment");
		return YX_E_NOMEM;
	}
	atomic_store(&m->metrics->started_ms, yx_mono_ms());
	if ((rc = yx_table_selftest(&e)) != YX_OK ||
	    (rc = yx_table_open(&m->table, m->cfg->shm_name, (uint32_t)m->cfg->max_replicas,
		 YX_TABLE_CREATE | YX_TABLE_RECREATE, &e)) != YX_OK) {
		log_warnx("shared table %s: %s", m->cfg->shm_name, e.msg);
		return rc;
	}
	if ((rc = yx_thread_store_init(&st, m->cfg, &e)) != YX_OK) {
		log_warnx("YUXI_SAVES_DIR: %s", e.msg);
		return rc;
	}
	/* before any other child: only it keeps CAP_SYS_ADMIN (design §8) */
	if ((rc = yx_priv_start(m->cfg, &e)) != YX_OK) {
		log_warnx("%s", e.msg);
		yx_thread_store_fini(&st);
		return rc;
	}
	if ((n = yx_thread_store_sweep(&st)) > 0)
		log_info("removed %u leftover temporary thread director(ies)", n);
	yx_thread_store_reconcile(&st, &rep);
	if (rep.index_added + rep.index_dropped + rep.uids_dropped +
		rep.runs_dropped >
	    0)
		log_info("thread store repaired: %u index entries added, %u "
			 "dropped, %u uid claims and %u run directories of absent "
			 "threads removed",
		    rep.index_added, rep.index_dropped,
		    rep.uids_dropped, rep.runs_dropped);
	yx_thread_store_fini(&st);
	/* the egress proxy of profiles with network, after CAP_SYS_ADMIN was
	 * dropped; stopped after the workers, dies with us. A front runs no
	 * sandboxes: none there */
	if (m->cfg->mode != YX_MODE_FRONT &&
	    yx_egress_start(m->cfg, &m->egress_pid) != YX_OK)
		log_warnx("no egress proxy: sandboxes with network answer 503");
	master_comp_note(m, YX_COMP_PRIV, yx_priv_pid());
	master_comp_note(m, YX_COMP_EGRESS, m->egress_pid);
	/* the preview ingress (YUXI_PREVIEW_DOMAIN), likewise; not on a front */
	if (yx_preview_ingress_start(m->cfg, &m->ingress_pid) != YX_OK)
		log_warnx("no preview ingress: previews answer 503");
	master_comp_note(m, YX_COMP_INGRESS, m->ingress_pid);
	if ((m->listen_fd = master_listen(m->cfg)) == -1)
		return YX_E_IO;
	if (FCGX_Init() != 0) {
		log_warnx("FCGX_Init failed");
		return YX_E_INTERNAL;
	}
	return YX_OK;
}

static void
master_signals(sigset_t *waitmask)
{
	struct sigaction	sa;
	sigset_t		block;

	memset(&sa, 0, sizeof(sa));
	sigemptyset(&sa.sa_mask);
	sa.sa_handler = SIG_IGN;	/* a worker writing to a closed nginx socket */
	sigaction(SIGPIPE, &sa, NULL);
	sigemptyset(&block);
	sigaddset(&block, SIGCHLD);
	sigaddset(&block, SIGALRM);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGHUP);
	sigaddset(&block, SIGUSR1);
	sigaddset(&block, SIGUSR2);
	sigprocmask(SIG_BLOCK, &block, waitmask);
	sa.sa_handler = master_sig;
	sigaction(SIGCHLD, &sa, NULL);
	sigaction(SIGALRM, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sigaction(SIGUSR1, &sa, NULL);
	sigaction(SIGUSR2, &sa, NULL);
	sigdelset(waitmask, SIGCHLD);
	sigdelset(waitmask, SIGALRM);
	sigdelset(waitmask, SIGTERM);
	sigdelset(waitmask, SIGINT);
	sigdelset(waitmask, SIGHUP);
	sigdelset(waitmask, SIGUSR1);
	sigdelset(waitmask, SIGUSR2);
}

/* SIGUSR1: every child reopens its logs (workers: the audit log). */
static void
master_forward_usr1(struct master *m)
{
	size_t i;

	log_info("SIGUSR1: children reopen the audit log");
	for (i = 0; i < m->nkids; i++)
		if (m->kids[i].pid != 0)
			kill(m->kids[i].pid, SIGUSR1);
}

int
yx_master_main(const struct yx_config *cfg)
{
	struct master	m;
	sigset_t	waitmask;
	size_t		i;
	int		rc, status = 1;
	bool		restart = false;

	memset(&m, 0, sizeof(m));
	yx_tablelock_init(&m.inst.lock);
	m.cfg = cfg;
	m.gen = 1;
	m.grace_s = cfg->exec_timeout + YX_STOP_MARGIN_S;
	m.listen_fd = -1;
	m.egress_pid = -1;
	m.ingress_pid = -1;
	master_signals(&waitmask);
	/* another live instance owns the table: a configuration conflict,
	 * exit 2 as for a bad configuration (the unit does not restart it) */
	if ((rc = yx_instance_claim(&m.inst, cfg)) != YX_OK) {
		status = rc == YX_E_BUSY ? 2 : 1;
		goto done;
	}
	if (master_setup(&m) != YX_OK)
		goto done;
	atomic_store(&m.metrics->generation, m.gen);
	m.nkids = (size_t)cfg->workers + 1;
	if ((m.kids = calloc(m.nkids, sizeof(*m.kids))) == NULL)
		goto done;
	m.kids[cfg->workers].kind = CHILD_REAPER;
	for (i = 0; i < m.nkids; i++) {
		m.kids[i].gen = m.gen;
		m.kids[i].respawn_at_ms = 1;	/* due now */
	}
	log_info("listening on %s with %d worker(s)", cfg->fcgi_socket, cfg->workers);
	master_respawn(&m);
	while (!m_term) {
		sigsuspend(&waitmask);
		if (m_sigchld) {
			m_sigchld = 0;
			master_reap(&m);
		}
		if (m_usr1) {
			m_usr1 = 0;
			master_forward_usr1(&m);
		}
		if (m_hup && !m_term) {
			m_hup = 0;
			master_reload(&m);
		}
		if (m_usr2 && !m_term) {
			m_usr2 = 0;
			restart = yx_instance_restart_ok(m.cfg);
			m_term = restart;
		}
		m_alarm = 0;
		if (!m_term)
			master_respawn(&m);
	}
	close(m.listen_fd);	/* stop accepting; workers keep their copy */
	m.listen_fd = -1;
	unlink(cfg->fcgi_socket);
	master_stop(&m, &waitmask);
	yx_egress_stop(m.egress_pid);	/* in-flight commands kept their network */
	m.egress_pid = -1;
	yx_preview_ingress_stop(m.ingress_pid);	/* open previews end here */
	m.ingress_pid = -1;
	log_info("stopped");
	status = 0;
done:
	if (m.listen_fd != -1) {
		close(m.listen_fd);
		unlink(cfg->fcgi_socket);
	}
	yx_table_close(m.table);
	if (m.table != NULL)
		(void)yx_table_unlink(cfg->shm_name);
	yx_metrics_free(m.metrics);
	free(m.kids);
	free(m.owned);
	yx_egress_stop(m.egress_pid);
	yx_preview_ingress_stop(m.ingress_pid);
	yx_priv_stop();
	yx_instance_release(&m.inst, restart && status == 0);
	if (restart && status == 0) {
		yx_instance_exec();
		status = 1;
	}
	return status;
}
