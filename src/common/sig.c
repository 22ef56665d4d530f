/* SPDX-License-Identifier: MIT */
/*
 * sig.c - a child's signals back to their defaults (yuxi/sig.h).
 */
#include "config.h"

#include <signal.h>
#include <string.h>

#include "yuxi/sig.h"

void
yx_signals_default(void)
{
	struct sigaction	sa;
	sigset_t		set;
	int			sig;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_DFL;
	for (sig = 1; sig < NSIG; sig++)
		(void)sigaction(sig, &sa, NULL);
	sigemptyset(&set);
	(void)sigprocmask(SIG_SETMASK, &set, NULL);
}
