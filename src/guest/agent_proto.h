/* SPDX-License-Identifier: MIT */
/*
 * agent_proto.h - the wire format between the host executor and the
 * in-sandbox agent (docs/agent.md "Protocol"); shared by src/guest/yuxi-agent.c
 * and src/exec/agent_client.c. No code, constants only.
 *
 * One request per connection on a unix stream socket. Every message is a
 * frame: 1 type byte, a 4-byte big-endian payload length, the payload.
 *
 * host -> agent:  'H' YX_AGENT_MAGIC (first), 'C' workdir, 'T' timeout in decimal
 *                 seconds (0..86400, 0 = none), 'E' "K=V" (repeated),
 *                 'A' argv element (repeated, >= 1), 'G' (empty: go),
 *                 carrying with its first byte (SCM_RIGHTS) the write end
 *                 of the output pipe the host made. The agent runs argv
 *                 itself (src/guest/run_core.c) with stdout and stderr on
 *                 that pipe; the host reads the other end. When the command
 *                 cannot change directory or exec, the output says why and
 *                 the status is 126/127, as with yuxi-run.
 * agent -> host:  'S' (empty: the command started), 'O' output bytes
 *                 (1..YX_AGENT_OUT_MAX; for an agent that relays the output
 *                 instead of using the pipe), 'X' exit status (4 bytes,
 *                 big-endian, 0..255); or, before 'S' only, 'F' a short
 *                 reason (the host then falls back to the engine exec
 *                 path). The agent passes no descriptors: the host refuses
 *                 them (SO_PASSRIGHTS off, and any that arrive are closed
 *                 unread and fail the request).
 * Background processes (docs/agent.md "Background processes"): the same
 * request with 'I' the process id ([a-z0-9], 1..YX_AGENT_PROCID_MAX) and 'M'
 * the output ring's size (decimal bytes, YX_AGENT_RING_MIN..MAX) ends with
 * 'B' (empty, no descriptor) instead of 'G'. The handler becomes the
 * process's keeper: it starts argv with stdin and stdout+stderr on pipes of
 * its own, listens on proc.<id>.sock beside agent.sock, answers 'S' (or
 * 'F') and hangs up. The keeper outlives the agent daemon and any host
 * worker; it keeps the last `ring` bytes of output and, once the process
 * ended, leaves proc.<id>.exit ("code=N ended=MS timedout=0|1").
 *
 * host -> keeper: 'H' YX_AGENT_MAGIC, then one operation:
 *                 'Q' (empty: status), 'R' "OFFSET HAVE WAIT_MS MAX" (the
 *                 output from OFFSET, after waiting up to WAIT_MS while the
 *                 process runs and has no byte past HAVE), 'W' bytes for
 *                 its stdin (0..YX_AGENT_OUT_MAX; empty: close stdin),
 *                 'K' (empty: kill the process group; the keeper ends).
 * keeper -> host: 'D' output bytes (1..YX_AGENT_OUT_MAX, for 'R'), then
 *                 'Z' the status, space-separated KEY=N words: from, to
 *                 (the output range sent), total, run (0/1), code (-1
 *                 while running), timedout, killed, written (for 'W'),
 *                 stdin (0 once closed), ended (unix ms, 0 while running);
 *                 or 'F' a reason. Then it hangs up.
 * A background request may carry 'P' the mode, before 'B': "pty COLS ROWS"
 * (1..YX_AGENT_TTY_MAX each): the process runs on a new pseudo-terminal
 * of that size, its output and stdin are the terminal's; or "session
 * SHELL IDLE" (SHELL auto, bash or sh; IDLE seconds, 0: none): the process
 * is a session's shell (argv is ignored), started in the request's
 * directory with its environment, and the keeper runs commands in it
 * ('U'); its 'S' then says "shell=bash" or "shell=sh".
 *
 * host -> keeper (more): 'Y' "COLS ROWS": resize the terminal (then 'Z');
 *                 'U' "TIMEOUT\nCOMMAND" (a session's: TIMEOUT seconds,
 *                 0: none): run COMMAND in the shell; 'D' frames of its
 *                 output while it runs, then 'Z' "code=N timedout=0|1
 *                 run=0|1 busy=0 cmd=N cwd=DIR" (cwd last, to the end;
 *                 run=0: the shell ended, code is its status), or at
 *                 once "busy=1 run=1" (a command runs) or "busy=0 run=0"
 *                 (the shell ended). A 'Q' status says busy=0|1 too.
 * host -> agent:  'H' YX_AGENT_MAGIC, 'L' a process id (ends the request):
 *                 does its keeper live? A keeper holds an exclusive flock
 *                 on YX_AGENT_KEEP_PREFIX<id> in the agent's records
 *                 directory as long as it runs; the agent answers 'Z'
 *                 "alive=0" when that file is there and nobody holds its
 *                 lock (the keeper died), "alive=1" while it is held, or
 *                 'F' when it cannot tell. (Under gVisor a dead keeper's
 *                 socket still takes connections and never answers.)
 *
 * host -> agent:  'H' YX_AGENT_MAGIC, 'N' (empty): previews (docs/api.md
 *                 "Previews"). The handler becomes the box's preview relay
 *                 (agent_ingress.c) and the connection stays open: each
 *                 'J' frame that follows carries a port (decimal) and, with
 *                 its first byte, one descriptor (SCM_RIGHTS), a browser's
 *                 connection that the host accepted; the relay connects it
 *                 to 127.0.0.1:<port> (or [::1]) inside the box and copies
 *                 bytes both ways. relay -> host: 'V' "PORT IN OUT" when one
 *                 ended (bytes each way). The host's end closed: no more
 *                 connections; the relay leaves when its last one ends.
 *
 * Strings carry no NUL. Any other type, an over-long frame or a frame out of
 * order is a protocol error: the reader closes the connection.
 */
#ifndef YUXI_AGENT_PROTO_H
#define YUXI_AGENT_PROTO_H

#define YX_AGENT_MAGIC		"YXA5"	/* bumped whenever the format changes */
#define YX_AGENT_HDR		5		/* type + length */
#define YX_AGENT_OUT_MAX	65536		/* largest 'O' payload */
#define YX_AGENT_FAIL_MAX	1024		/* largest 'F' payload */
#define YX_AGENT_STR_MAX	(128 * 1024)	/* one argv/env string (MAX_ARG_STRLEN) */
#define YX_AGENT_REQ_MAX	(1024 * 1024)	/* all request payloads together */
#define YX_AGENT_ARGS_MAX	64		/* argv elements */
#define YX_AGENT_ENVS_MAX	128		/* env entries */
#define YX_AGENT_PROCID_MAX		32		/* bytes of a process id */
#define YX_AGENT_RING_MIN	4096		/* a keeper's output ring */
#define YX_AGENT_RING_MAX	(64 * 1024 * 1024)
#define YX_AGENT_STATUS_MAX	4352		/* largest 'Z' payload (a cwd) */
#define YX_AGENT_STARTED_MAX	32		/* largest 'S' payload */
#define YX_AGENT_TTY_MAX	1000		/* a terminal's columns, rows */
#define YX_AGENT_MODE_MAX	64		/* a 'P' payload */

#define YX_AGENT_T_HELLO	'H'
#define YX_AGENT_T_CWD		'C'
#define YX_AGENT_T_TIMEOUT	'T'
#define YX_AGENT_T_ENV		'E'
#define YX_AGENT_T_ARG		'A'
#define YX_AGENT_T_GO		'G'
#define YX_AGENT_T_STARTED	'S'
#define YX_AGENT_T_OUTPUT	'O'
#define YX_AGENT_T_EXIT		'X'
#define YX_AGENT_T_FAIL		'F'
#define YX_AGENT_T_PROCID	'I'	/* background: the process id */
#define YX_AGENT_T_RING		'M'	/* background: output kept, bytes */
#define YX_AGENT_T_BACKGROUND	'B'	/* background: go (ends the request) */
#define YX_AGENT_T_STATUS	'Q'	/* keeper ops */
#define YX_AGENT_T_READ		'R'
#define YX_AGENT_T_STDIN	'W'
#define YX_AGENT_T_KILL		'K'
#define YX_AGENT_T_DATA		'D'	/* keeper replies */
#define YX_AGENT_T_STATE	'Z'
#define YX_AGENT_T_ALIVE	'L'	/* does a keeper live (to the agent) */
#define YX_AGENT_T_MODE		'P'	/* background: pty or session */
#define YX_AGENT_T_RESIZE	'Y'	/* keeper op: a terminal's size */
#define YX_AGENT_T_COMMAND	'U'	/* keeper op: a session's command */
#define YX_AGENT_T_INGRESS	'N'	/* be the preview relay */
#define YX_AGENT_T_PASS		'J'	/* preview: a connection for PORT, + fd */
#define YX_AGENT_T_REPORT	'V'	/* preview relay: "PORT IN OUT", one ended */
#define YX_AGENT_PASS_MAX	5	/* bytes of a 'J' payload ("65535") */

/* Paths inside the sandbox. */
#define YX_AGENT_TARGET		"/opt/yuxi/bin/yuxi-agent"
#define YX_AGENT_RUN_TARGET	"/opt/yuxi/run"
#define YX_AGENT_SOCK_NAME	"agent.sock"
#define YX_AGENT_SOCK_TARGET	YX_AGENT_RUN_TARGET "/" YX_AGENT_SOCK_NAME
#define YX_AGENT_PROC_PREFIX	"proc."	/* proc.<id>.sock, proc.<id>.exit */
#define YX_AGENT_KEEP_PREFIX	"keep."	/* a keeper's lock, keep.<id> */

#endif /* YUXI_AGENT_PROTO_H */
