/* SPDX-License-Identifier: MIT */
/*
 * agent_services.h - a profile's services inside the sandbox (docs/agent.md
 * "Services", docs/browser.md): the processes the agent starts with the box
 * and keeps running - a virtual display, a browser, a VNC server.
 *
 * The host writes what to run into the agent's directory before the
 * container starts (services.conf, YX_SVC_CONF_NAME: NUL-separated
 * "key=value" entries, below) and starts the agent with --services PATH.
 * Right after it listens, the agent daemon forks the services' supervisor,
 * which starts one keeper per service (agent_keeper.c: output ring, socket
 * proc.svc-<name>.sock, exit file), so the host reads a service's output
 * as a background process's. The keeper's process is this binary again in
 * its restart loop (yuxi-agent --service ...), which runs the service's
 * command, kills what it left when it exits, and starts it again after a
 * backoff (0.5 s, doubling while it keeps dying within 10 s, at most 30 s),
 * writing the service's state to svc.<name> in the agent's directory. The
 * supervisor starts a keeper again when one is gone (killed, or its loop
 * killed). It dies with the daemon (PR_SET_PDEATHSIG) and holds a lock of
 * its own, so a second supervisor (the agent started again) waits until
 * the first is gone; keepers, loops and services outlive the daemon (a
 * service's own restarts go on meanwhile). All of it goes with the
 * container.
 *
 * services.conf:
 *	yuxi-services=1  ring=BYTES  cwd=DIR  env=NAME=VALUE ...
 *	then per service:  service=NAME  ready=PORT (0: none)  command=CMD
 *
 * libc only, no heap: the file is read once into static storage.
 */
#ifndef YUXI_AGENT_SERVICES_H
#define YUXI_AGENT_SERVICES_H

#include <sys/types.h>

#define YX_SVC_CONF_NAME	"services.conf"	/* in the agent's directory */
#define YX_SVC_ID_PREFIX	"svc-"		/* a service's keeper id */
#define YX_SVC_STATE_PREFIX	"svc."		/* svc.<name>: its state */
#define YX_SVC_CONF_MAX		(256 * 1024)	/* bytes of services.conf */

/* --services PATH: remember it (checked when read), and self, this
 * program's path when absolute (argv[0]; else YX_AGENT_TARGET), which each
 * service's loop runs. 0, or -1 when PATH is not an absolute path. */
int	svc_set(const char *path, const char *self);
/*
 * Fork the supervisor when --services was given: sockdir is agent.sock's
 * directory, recdir the records' directory (agent.c, -1: none), close_fds
 * what it must not keep (the listening socket, the agent's lock), sweep
 * the agent's cleanup of groups whose keeper died. 0, or -1 (fork failed).
 */
int	svc_start(const char *sockdir, int recdir, const int *close_fds, int n,
    void (*sweep)(void));
/* The agent reaped pid (wait status st): when it was the supervisor and
 * did not just find nothing to run, start it again (a bounded number of
 * times). Returns 1 when it was the supervisor. */
int	svc_reaped(pid_t pid, int st);
/*
 * yuxi-agent --service NAME PORT DIR -- ARGV...: the restart loop of one
 * service (argv from "--service" on). Never returns when the arguments are
 * right; 125 when they are not.
 */
int	svc_loop_main(int argc, char **argv);

#endif /* YUXI_AGENT_SERVICES_H */
