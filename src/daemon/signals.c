/* SPDX-License-Identifier: MIT */
/*
 * signals.c - signal setup of the master's children (workers and the
 * reaper), apart from master.c so that the children do not depend on the
 * master's file: TERM/INT/HUP only set yx_child_stop, USR1 only
 * yx_child_reopen (a worker reopens its audit log; the reaper has none), and
 * they stay blocked except where a child chooses to wait
 * (ppoll/epoll_pwait/sigtimedwait with *waitmask); every other handler is
 * reset; the child dies with the master.
 */
#include "config.h"

#include <sys/prctl.h>

#include <signal.h>
#include <string.h>
#include <time.h>

#include "daemon_int.h"

volatile sig_atomic_t	yx_child_stop;
volatile sig_atomic_t	yx_child_reopen;

static void
child_sig(int signo)
{
	if (signo == SIGUSR1)
		yx_child_reopen = 1;
	else
		yx_child_stop = 1;
}

void
yx_child_signals(sigset_t *waitmask)
{
	struct sigaction	sa;
	sigset_t		block;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_DFL;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGCHLD, &sa, NULL);
	sigaction(SIGALRM, &sa, NULL);
	sa.sa_handler = child_sig;	/* no SA_RESTART: ppoll must return */
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sigaction(SIGUSR1, &sa, NULL);
	sigemptyset(&block);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGHUP);
	sigaddset(&block, SIGUSR1);
	sigprocmask(SIG_SETMASK, &block, NULL);
	sigemptyset(waitmask);
	/* die with the master: a SIGKILLed master must not leave workers behind */
	prctl(PR_SET_PDEATHSIG, SIGTERM);
}

/*
 * epoll_pwait() and ppoll() return what is ready rather than EINTR when a
 * signal and an event arrive together, and put the signal back on hold
 * undelivered: ask the kernel what is pending.
 */
bool
yx_child_stopping(void)
{
	sigset_t pend;

	if (!yx_child_stop && sigpending(&pend) == 0 &&
	    (sigismember(&pend, SIGTERM) == 1 || sigismember(&pend, SIGINT) == 1 ||
		sigismember(&pend, SIGHUP) == 1))
		yx_child_stop = 1;
	return yx_child_stop != 0;
}

/*
 * A reopen asked (SIGUSR1)? Also when the signal is still pending (see
 * above: a busy worker's epoll_pwait() may keep returning ready); it is
 * taken here. Clears the request.
 */
bool
yx_child_reopen_due(void)
{
	static const struct timespec	zero = { 0, 0 };
	sigset_t			usr1;

	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	if (sigtimedwait(&usr1, NULL, &zero) == SIGUSR1)
		yx_child_reopen = 1;
	if (!yx_child_reopen)
		return false;
	yx_child_reopen = 0;
	return true;
}
