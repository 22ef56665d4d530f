/* SPDX-License-Identifier: MIT */
/*
 * control_int.h - the test-only control mode (docs/security.md, "Control
 * mode"). Only the binary tests/security/yuxi-sandboxd-control is compiled
 * with -DYX_CONTROL_UNSAFE; there the environment variable YX_CONTROL_OFF
 * (a comma-separated list of protection names) switches individual
 * protections off so the security suite can prove each of its tests would
 * catch the leak. The production daemon and libyuxi.a are compiled without
 * the macro: they contain neither this declaration's callers nor the code
 * behind it, and nothing can switch a protection off there.
 *
 * Names: identity (also trust HTTP_X_YUXI_USER), path (".." resolved
 * lexically instead of refused), headers (no CR/LF refusal or encoding of
 * X-Accel-Redirect and Content-Disposition), threadid (no thread id
 * syntax check), authz (no owner check), rundir (a thread's agent run
 * directory outlives it and passes to the next thread of its id),
 * ownerindex (listings read every thread, not the caller's index),
 * enginelog (sandbox containers get the engine's default log driver
 * instead of none), enginemsg (the engine's own error text, host paths
 * included, reaches the client), mask (no output masking of host paths),
 * clientgone (a walk never learns that its client went away:
 * yx_http_client_gone() says false), crosssite (a browser's cross-site
 * POST or DELETE is served), readonly (a read-only workspace is mounted
 * and served writable), rolayout (a read-only workspace's writable
 * folders are not laid out again right before its container is made),
 * egress (the egress proxy skips the IP-literal, allowlist and address
 * checks), drain (a reload SIGKILLs the old workers
 * instead of letting them finish, and a stop serves nothing that was
 * queued on the socket), fairevict (a full table evicts the globally
 * least recently used idle sandbox, whoever owns it, instead of choosing
 * by fair share), limitlock (a user's threads are counted and created
 * without the owner lock, so racing creates may overshoot the limit),
 * procowner (the background process and session routes skip the owner
 * check of the thread, keeper_req.c), sesslimit (a session is opened
 * without counting the user's others: YUXI_SESSION_USER_MAX is not held,
 * h_session.c), quota (a thread gets no disk image: its user-data is
 * a plain directory on the saves filesystem, as without
 * YUXI_THREAD_DISK_QUOTA), privdrop (the master, workers and reaper keep
 * CAP_SYS_ADMIN after the privileged helper started), supervise (the
 * master does not start the privileged helper or the egress proxy's
 * supervisor again when one dies), egresskeep (a restarted egress proxy
 * does not serve the registrations it kept: a sandbox's network waits for
 * its next command), previewsock (nginx is told to proxy a preview to a
 * socket in the sandbox's own agent directory, where a relay in the box
 * would listen, instead of the ingress's socket in a directory only the
 * service writes), previewproxy (the worker fetches a preview's response
 * itself, holding itself for the whole of it, as a worker-proxied design
 * would, before answering nginx's check), txresolve (a transaction's
 * commit opens the thread's paths with plain openat: a symlink the
 * sandbox put in a directory's place is followed), snapcopy (a fork
 * copies a snapshot following its symlinks), svcstate (the host reads a
 * service's state file with a plain open that follows symlinks,
 * src/exec/services.c). The broker's own
 * control build
 * (YX_BROKER_CONTROL_UNSAFE) is a second control binary,
 * tests/security/yuxi-sandboxd-control-broker.
 *
 * The MCP endpoint's (docs/mcp.md, tests/mcp): mcpidentity (a tool call
 * runs as the user its message names in _meta "yuxi/user"), mcpbatch (a
 * batch is run, call after call, in one worker, as MCP 2025-03-26
 * allowed).
 *
 * The remote mode's (docs/scaling.md, tests/remote): provcred (a sandbox
 * host takes any request as the front's, believing the X-Yuxi-User it
 * names), provroutes (the naive front: a request for a route it does not
 * serve goes to the first host with the front's credential), hostack (a
 * front's connections to its hosts get the kernel's defaults: no
 * keepalive probes, no TCP_USER_TIMEOUT, so a silent host holds a call
 * until its whole timeout), resend (a front lets libcurl send a request
 * again on a fresh connection when the kept one died after it went out).
 */
#ifndef YUXI_CONTROL_INT_H
#define YUXI_CONTROL_INT_H

#include <stdbool.h>

/*
 * YX_CONTROL_OFF(name): true when protection `name` is switched off. In the
 * control build it asks yx_control_off(); in every other build it is the
 * constant false, so the compiler drops the branch it guards - its code
 * and strings, at any optimisation level (-O0 included) - and production
 * objects name no switch. A guard reads
 *	if (YX_CONTROL_OFF("mask"))
 *		return 0;
 * Code that only the control build may compile at all (a function of its
 * own, declarations) stays inside #ifdef YX_CONTROL_UNSAFE.
 */
#ifdef YX_CONTROL_UNSAFE
/* True when protection `name` is listed in YX_CONTROL_OFF. */
bool	yx_control_off(const char *name);
#define YX_CONTROL_OFF(name)	yx_control_off(name)
#define YX_CONTROL_BUILD	1	/* this is the control build */
#else
#define YX_CONTROL_OFF(name)	false
#define YX_CONTROL_BUILD	0
#endif

#endif /* YUXI_CONTROL_INT_H */
