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
