/* SPDX-License-Identifier: MIT */
/*
 * supervise.c - a helper process kept running by a supervisor of its own,
 * restarted with a backoff; see include/yuxi/supervise.h.
 *
 * The supervisor blocks SIGTERM and SIGINT except while it waits (for the
 * helper or a backoff), so a stop is seen between two steps, never lost.
 */
#include "config.h"

#include <sys/prctl.h>
#include <sys/wait.h>

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "yuxi/clock.h"
#include "yuxi/config.h"
#include "yuxi/error.h"
#include "yuxi/log.h"
#include "yuxi/supervise.h"

static volatile sig_atomic_t	sup_term;

static void
sup_sig(int signo)
{
	(void)signo;
	sup_term = 1;
}

/* Fork the helper; its pid or -1. */
static pid_t
sup_fork(const struct yx_supervise *sv, const struct yx_config *cfg,
    const sigset_t *old)
{
	pid_t	pid, sup = getpid();

	if ((pid = fork()) != 0)
		return pid;
	(void)prctl(PR_SET_PDEATHSIG, SIGTERM);
	if (getppid() != sup)
		_exit(1);
	(void)signal(SIGTERM, SIG_DFL);
	(void)signal(SIGINT, SIG_DFL);
	(void)sigprocmask(SIG_SETMASK, old, NULL);
	_exit(sv->main(cfg));
}

/* The wait before the next start after fails quick exits in a row. */
static int64_t
sup_delay(int fails)
{
	int64_t delay;

	delay = fails == 0 ? 0 : (int64_t)YX_SUPERVISE_BACKOFF_MIN_MS << (fails > 7 ? 7 : fails - 1);
	if (delay > YX_SUPERVISE_BACKOFF_MAX_MS)
		delay = YX_SUPERVISE_BACKOFF_MAX_MS;
	return delay;
}

/* Restart the helper with a backoff until told to stop. Never returns. */
static void __attribute__((noreturn))
sup_main(const struct yx_supervise *sv, const struct yx_config *cfg,
    pid_t master)
{
	struct sigaction	 sa;
	sigset_t		 block, old, wait;
	int64_t			 started, lived, delay;
	pid_t			 pid = -1, w;
	int			 st, fails = 0;

	(void)prctl(PR_SET_PDEATHSIG, SIGTERM);
	if (getppid() != master)
		_exit(0);
	(void)prctl(PR_SET_NAME, sv->name);	/* ps tells it from workers */
	log_init(sv->name, cfg->verbose);
	sv->enter();
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = sup_sig;
	sigemptyset(&sa.sa_mask);
	sigemptyset(&block);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGINT);
	sigprocmask(SIG_BLOCK, &block, &old);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGHUP, &(struct sigaction){ .sa_handler = SIG_IGN }, NULL);
	wait = old;
	sigdelset(&wait, SIGTERM);
	sigdelset(&wait, SIGINT);
	while (!sup_term) {
		started = yx_mono_ms();
		if ((pid = sup_fork(sv, cfg, &old)) == -1)
			log_warn("%s: fork", sv->tag);
		while (pid > 0 && !sup_term) {
			sigprocmask(SIG_SETMASK, &wait, NULL);
			w = waitpid(pid, &st, 0);
			sigprocmask(SIG_BLOCK, &block, NULL);
			if (w == pid)
				break;
		}
		if (sup_term)
			break;
		lived = yx_mono_ms() - started;
		fails = lived >= YX_SUPERVISE_STABLE_MS ? 0 : fails + 1;
		delay = sup_delay(fails);
		log_warnx("%s exited (status 0x%x); restart in %lld ms", sv->what,
		    pid > 0 ? st : -1, (long long)delay);
		pid = -1;
		sigprocmask(SIG_SETMASK, &wait, NULL);
		if (delay > 0)
			(void)nanosleep(&(struct timespec){ delay / 1000,
					    (long)(delay % 1000) * 1000000 },
			    NULL);
		sigprocmask(SIG_BLOCK, &block, NULL);
	}
	if (pid > 0) {
		kill(pid, SIGTERM);
		(void)waitpid(pid, &st, 0);
	}
	_exit(0);
}

int
yx_supervise_start(const struct yx_supervise *sv, const struct yx_config *cfg,
    pid_t *pidp)
{
	pid_t pid, master = getpid();

	*pidp = -1;
	if ((pid = fork()) == -1) {
		log_warn("%s: fork", sv->tag);
		return YX_E_INTERNAL;
	}
	if (pid == 0)
		sup_main(sv, cfg, master);
	*pidp = pid;
	return YX_OK;
}

void
yx_supervise_stop(const struct yx_supervise *sv, pid_t pid)
{
	int64_t	deadline;
	pid_t	r;

	if (pid <= 0)
		return;
	kill(pid, SIGTERM);
	deadline = yx_mono_ms() + YX_SUPERVISE_STOP_MS;
	while ((r = waitpid(pid, NULL, WNOHANG)) == 0 && yx_mono_ms() < deadline)
		(void)poll(NULL, 0, 10);
	if (r == 0) {
		log_warnx("%s %ld did not stop in time: SIGKILL", sv->what, (long)pid);
		kill(pid, SIGKILL);
		(void)waitpid(pid, NULL, 0);
	}
}
