/* SPDX-License-Identifier: MIT */
/*
 * yuxi/supervise.h - a helper process of the master kept running by a
 * supervisor of its own, written once for the egress proxy
 * (src/egress/proxy.c) and the preview ingress (src/preview/ingress.c).
 *
 * The master forks the supervisor (yx_supervise_start), which dies with
 * the master (PR_SET_PDEATHSIG), names itself, runs the caller's enter()
 * (each drops what the helper must not keep) and forks the helper; when
 * the helper exits the supervisor logs its status and forks it again
 * after a backoff: none after a run of YX_SUPERVISE_STABLE_MS or more,
 * else YX_SUPERVISE_BACKOFF_MIN_MS doubled per quick exit in a row, at
 * most YX_SUPERVISE_BACKOFF_MAX_MS. SIGTERM or SIGINT stops it: the
 * helper gets SIGTERM and is waited for. SIGHUP (a reload) is ignored:
 * the helper carries on.
 */
#ifndef YUXI_SUPERVISE_H
#define YUXI_SUPERVISE_H

#include <sys/types.h>

#define YX_SUPERVISE_BACKOFF_MIN_MS	100
#define YX_SUPERVISE_BACKOFF_MAX_MS	10000
#define YX_SUPERVISE_STABLE_MS		10000
#define YX_SUPERVISE_STOP_MS		5000	/* yx_supervise_stop's wait */

struct yx_config;

/* What is supervised; static storage (the supervisor keeps the pointer). */
struct yx_supervise {
	const char	*name;	/* the process name and log ident: "yuxi-egress" */
	const char	*what;	/* the helper in the log: "egress proxy" */
	const char	*tag;	/* before a fork's failure: "egress" */
	void		(*enter)(void);	/* first thing in the supervisor */
	int		(*main)(const struct yx_config *cfg);	/* the helper:
						 * its exit status */
};

/*
 * Fork the supervisor of sv with cfg (in the master). YX_OK with *pidp its
 * pid, or YX_E_INTERNAL (logged) when it cannot be forked (*pidp -1).
 */
int	yx_supervise_start(const struct yx_supervise *sv,
    const struct yx_config *cfg, pid_t *pidp);

/* Stop the supervisor pid (<= 0: none): SIGTERM, then SIGKILL when it has
 * not exited within YX_SUPERVISE_STOP_MS (logged). Reaps it. */
void	yx_supervise_stop(const struct yx_supervise *sv, pid_t pid);

#endif /* YUXI_SUPERVISE_H */
