/* SPDX-License-Identifier: MIT */
/*
 * yuxi/sig.h - what a freshly forked child does before it execs or starts
 * its own loop: every signal back to its default action, none blocked.
 */
#ifndef YUXI_SIG_H
#define YUXI_SIG_H

/* Every signal's action to SIG_DFL and an empty signal mask. */
void	yx_signals_default(void);

#endif /* YUXI_SIG_H */
