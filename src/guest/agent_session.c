/* SPDX-License-Identifier: MIT */
/*
 * agent_session.c - a keeper whose process is a session's shell
 * (docs/agent.md "Sessions"; keeper_int.h).
 *
 * The shell is interactive ("bash --noprofile --norc --noediting -i", or
 * "sh -i" where the image has no bash) so that an interrupt ends the
 * command line it runs and the shell reads the next one, as at a prompt;
 * it reads its commands from a pipe of ours (its stdin), writes its own
 * chatter (prompts are emptied, job notices) into the keeper's ring, and
 * reports through RUN_CTL_FD, a pipe to us. Each host command ('U'
 * "TIMEOUT\nCOMMAND") is written there as
 *
 *	{ command eval 'COMMAND'
 *	} </dev/null >/proc/KEEPER/fd/W 2>&1 9>&-
 *	command printf 'N %d %s\0' "$?" "$PWD" >&9
 *
 * so that it runs in the shell itself (cd, variables, functions, aliases,
 * options, ulimit, a sourced venv stay), reads end-of-file on stdin, writes
 * into a pipe of its own (W, opened anew through /proc, as primed shells
 * do), and the shell then says which command ended, its status and where
 * it is. The output goes to the host as 'D' frames while it comes (the
 * pipe is read only while the host takes it); after the report, what the
 * pipe holds is sent and the reply ends with 'Z' "code=N timedout=0|1
 * run=1 busy=0 cmd=N cwd=DIR" (cwd last: the rest of the payload). What a
 * background job started by a command writes later goes to that command's
 * pipe, which we keep reading and drop (SESS_ORPHANS of them at most):
 * it never mixes into a later reply.
 *
 * At the timeout (or when the host hangs up) the command's processes -
 * those of the shell's group or below it that were not there when it
 * started (a snapshot of /proc) - and the shell are interrupted, as ^C at
 * a prompt: the shell abandons the rest of the command line (or its own
 * loop); what ignored the interrupt is killed 0.2 s later; if the shell
 * still does not report, it is interrupted again, then the report is
 * asked again (an interrupt may have swallowed it), then the shell is
 * killed and the session ends. A command that ends the
 * shell (exit, exec, a signal) ends the session: the reply says run=0
 * with the shell's status. One command at a time: another 'U' meanwhile is
 * answered busy=1 at once. A session idle for its lifetime (the 'P' frame)
 * ends: the shell and its processes are killed, the exit file says idle=1.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "guest/keeper_int.h"
#include "guest/run_core.h"
#include "yuxi/clock.h"

#define SESS_READY_MS	5000		/* the shell's first report */
#define SESS_TERM_MS	200		/* after the interrupt, before SIGKILL */
#define SESS_KILL_MS	500		/* after the command's processes died */
#define SESS_INT_MS	1000		/* after the second interrupt */
#define SESS_MARK_MS	1000		/* after the report was asked again */
#define SESS_GONE_MS	500		/* what exec'd over the shell may stay */
#define SESS_ORPHANS	8		/* pipes of commands that ended */
#define SESS_SCRIPT_MAX	(4 * YX_AGENT_OUT_MAX + 512)
#define SESS_PS_MAX	2048		/* processes a snapshot holds */
#define SESS_OUT_PIPE	(1024 * 1024)
#define SESS_DRAIN_MAX	64		/* reads after the report */

enum sess_phase {
	SP_IDLE,	/* between commands */
	SP_RUN,		/* a command runs */
	SP_STOPPING,	/* it and the shell were interrupted */
	SP_KILLED,	/* its processes were killed: waiting for the report */
	SP_INTED,	/* the shell was interrupted again */
	SP_MARKED,	/* the report was asked again */
	SP_DRAIN,	/* reported: the rest of its output */
};

struct keep_sess {
	int		 ctl;		/* the read end of the shell's RUN_CTL_FD */
	char		 mark[PATH_MAX + 64];	/* a report being read */
	size_t		 nmark;
	unsigned long	 serial;	/* the current (last) command's number */
	int		 phase;
	long long	 phase_at;	/* the phase's end (mono ms) */
	long long	 cmd_deadline;	/* the command's timeout; 0: none */
	int		 conn;		/* kc[] of the host waiting; -1: gone */
	int		 out[2];	/* the command's output pipe; -1 */
	int		 timedout, status, drains;
	char		*script;	/* bytes for the shell's stdin */
	size_t		 slen, spos;
	int		 orphans[SESS_ORPHANS];
	struct keep_ps	 before[SESS_PS_MAX];	/* the command's start */
	size_t		 nbefore;
	long long	 idle_ms, last;
	int		 idle;		/* ended by its idle lifetime */
	long long	 orphaned_at;	/* the shell's image went: end by then */
	char		 cwd[PATH_MAX];
};

static struct keep_sess	S;
static struct keep_ps	sess_ps_now[SESS_PS_MAX];
static char		sess_drop[YX_AGENT_OUT_MAX];

/* the first lines: no prompts, no history (bash's only: a set error ends
 * an interactive dash), then the first report */
static const char sess_init[] =
    "PS1= PS2= PS0= PS4='+ '; unset PROMPT_COMMAND MAILCHECK HISTFILE\n";
static const char sess_init_bash[] = "set +o history +H\n";
static const char sess_init_end[] =
    "command printf '0 %d %s\\0' \"$?\" \"$PWD\" >&9\n";

/* Is `name` an executable file in one of PATH's directories (envp's)? */
static int
sess_in_path(char *const *envp, const char *name)
{
	const char	*path = "/usr/local/bin:/usr/bin:/bin", *p, *e;
	char		 f[PATH_MAX];
	size_t		 i;

	for (i = 0; envp != NULL && envp[i] != NULL; i++)
		if (strncmp(envp[i], "PATH=", 5) == 0)
			path = envp[i] + 5;
	for (p = path; *p != '\0'; p = *e != '\0' ? e + 1 : e) {
		e = strchrnul(p, ':');
		if (e > p && snprintf(f, sizeof(f), "%.*s/%s", (int)(e - p), p, name) < (int)sizeof(f) &&
		    access(f, X_OK) == 0)
			return 1;
	}
	return 0;
}

/* A descriptor moved above RUN_CTL_FD (the child's dup2()s spare it). */
static int
sess_high(int fd)
{
	int h;

	if (fd > RUN_CTL_FD)
		return fd;
	h = fcntl(fd, F_DUPFD_CLOEXEC, RUN_CTL_FD + 1);
	close(fd);
	return h;
}

/* Parse one report "N STATUS CWD" (NUL-terminated). 0 or -1. */
static int
sess_parse_mark(const char *m, unsigned long *serial, int *status,
    const char **cwd)
{
	char *end;

	if (*m < '0' || *m > '9')
		return -1;
	*serial = strtoul(m, &end, 10);
	if (*end != ' ' || end[1] < '0' || end[1] > '9')
		return -1;
	*status = (int)strtol(end + 1, &end, 10);
	if (*end != ' ')
		return -1;
	*cwd = end + 1;
	return 0;
}

/* Write what is left of the script into the shell's stdin. */
static void
sess_write_script(struct keeper *k)
{
	ssize_t w;

	while (S.spos < S.slen) {
		w = write(k->wfd, S.script + S.spos, S.slen - S.spos);
		if (w > 0) {
			S.spos += (size_t)w;
			continue;
		}
		if (w == -1 && errno == EINTR)
			continue;
		break;	/* full: poll says when; EPIPE: the shell's exit does */
	}
}

/*
 * Wait (bounded) for the shell's first report: it reads its commands and
 * reports them. 0, or -1 when it died or stayed silent.
 */
static int
sess_ready(struct keeper *k)
{
	long long	until = yx_mono_ms() + SESS_READY_MS, left;
	struct pollfd	pfd[3];
	unsigned long	serial;
	const char	*cwd;
	ssize_t		r;
	int		st;

	while ((left = until - yx_mono_ms()) > 0) {
		pfd[0].fd = S.ctl;
		pfd[1].fd = k->rfd;
		pfd[2].fd = S.spos < S.slen ? k->wfd : -1;
		pfd[0].events = pfd[1].events = POLLIN;
		pfd[2].events = POLLOUT;
		pfd[0].revents = pfd[1].revents = pfd[2].revents = 0;
		if (poll(pfd, 3, (int)left) == -1 && errno != EINTR)
			return -1;
		if (pfd[1].revents != 0)
			keep_read_out(k);	/* its chatter: it must not block */
		if (pfd[2].revents != 0)
			sess_write_script(k);
		if (pfd[0].revents == 0)
			continue;
		r = read(S.ctl, S.mark + S.nmark, sizeof(S.mark) - 1 - S.nmark);
		if (r <= 0 && !(r == -1 && (errno == EAGAIN || errno == EINTR)))
			return -1;	/* the shell died */
		if (r > 0)
			S.nmark += (size_t)r;
		if (S.nmark == 0 || S.mark[S.nmark - 1] != '\0')
			continue;
		if (sess_parse_mark(S.mark, &serial, &st, &cwd) == -1 || serial != 0)
			return -1;
		snprintf(S.cwd, sizeof(S.cwd), "%s", cwd);
		S.nmark = 0;
		return 0;
	}
	return -1;
}

const char *
sess_start(struct keeper *k, const struct keep_req *r, char *started,
    size_t len)
{
	static char *const	bash[] = { "bash", "--noprofile", "--norc",
		"--noediting", "-i", NULL };
	static char *const	sh[] = { "sh", "-i", NULL };
	struct run_args		a = *r->args;
	char			want[8];
	long			idle;
	int			ctl[2], i, master, slave;

	memset(&S, 0, sizeof(S));
	S.ctl = S.out[0] = S.out[1] = S.conn = -1;
	S.orphaned_at = 0;
	for (i = 0; i < SESS_ORPHANS; i++)
		S.orphans[i] = -1;
	if (sscanf(r->mode, "session %7s %ld", want, &idle) != 2 || idle < 0)
		return "bad session request";
	if (strcmp(want, "sh") != 0 && sess_in_path(a.envp, "bash"))
		a.argv = bash;
	else if (strcmp(want, "bash") == 0)
		return "no bash in this sandbox";
	else
		a.argv = sh;
	S.script = mmap(NULL, SESS_SCRIPT_MAX, PROT_READ | PROT_WRITE,
	    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (S.script == MAP_FAILED)
		return "no memory for the session";
	if (pipe2(ctl, O_CLOEXEC) == -1)
		return "cannot start the shell";
	ctl[0] = sess_high(ctl[0]);
	ctl[1] = sess_high(ctl[1]);
	a.ctl = ctl[1];
	/* its own output (prompts, notices) on a terminal: an interactive
	 * shell resets the terminal after a command killed by a signal, and
	 * would say it cannot into the next command's output otherwise */
	slave = keep_pty("80 24", &master);
	if (ctl[0] == -1 || ctl[1] == -1 || slave == -1 ||
	    keep_spawn(k, r, &a, slave) != 0) {
		if (ctl[0] != -1)
			close(ctl[0]);
		if (ctl[1] != -1)
			close(ctl[1]);
		if (slave != -1) {
			close(slave);
			close(master);
		}
		return "cannot start the shell";
	}
	close(slave);
	k->rfd = master;
	close(ctl[1]);	/* the shell's alone: its exit is our EOF */
	S.ctl = ctl[0];
	(void)fcntl(S.ctl, F_SETFL, O_NONBLOCK);
	k->sess = &S;
	k->deadline = 0;	/* a session ends by idleness, not lifetime */
	S.slen = (size_t)snprintf(S.script, SESS_SCRIPT_MAX, "%s%s%s", sess_init,
	    a.argv == bash ? sess_init_bash : "", sess_init_end);
	sess_write_script(k);
	if (sess_ready(k) == -1) {
		(void)kill(-k->pid, SIGKILL);
		return "the shell did not start";
	}
	S.spos = S.slen = 0;
	S.idle_ms = idle * 1000;
	S.last = yx_mono_ms();
	snprintf(started, len, "shell=%s", a.argv[0]);
	return NULL;
}

int
sess_busy(const struct keeper *k)
{
	(void)k;
	return S.phase != SP_IDLE;
}

int
sess_idle_ended(const struct keeper *k)
{
	(void)k;
	return S.idle;
}

/* Is p one of the processes that were there when the command started? */
static int
sess_was_there(const struct keep_ps *p)
{
	size_t i;

	for (i = 0; i < S.nbefore; i++)
		if (S.before[i].pid == p->pid && S.before[i].start == p->start)
			return 1;
	return 0;
}

/* The shell's processes: its group's and those below it, not itself. */
static size_t
sess_procs(const struct keeper *k, struct keep_ps *v, size_t max)
{
	size_t n = keep_ps(sess_ps_now, SESS_PS_MAX), i, m = 0;

	for (i = 0; i < n && m < max; i++)
		if (sess_ps_now[i].pid != k->pid &&
		    (sess_ps_now[i].pgrp == k->pid ||
			keep_ps_under(sess_ps_now, n, i, k->pid)))
			v[m++] = sess_ps_now[i];
	return m;
}

/* Signal the command's processes (those not there at its start): SIGKILL
 * a few rounds, for the ones forked meanwhile; another signal once. */
static void
sess_signal_new(const struct keeper *k, int sig)
{
	static struct keep_ps	v[SESS_PS_MAX];
	size_t			n, i;
	int			round, hit;

	for (round = 0; round < (sig == SIGKILL ? 3 : 1); round++) {
		n = sess_procs(k, v, SESS_PS_MAX);
		for (i = 0, hit = 0; i < n; i++)
			if (!sess_was_there(&v[i]) && kill(v[i].pid, sig) == 0)
				hit++;
		if (hit == 0)
			break;
	}
}

void
sess_kill(struct keeper *k)
{
	static struct keep_ps	v[SESS_PS_MAX];
	size_t			n, i;

	n = sess_procs(k, v, SESS_PS_MAX);
	for (i = 0; i < n; i++)
		(void)kill(v[i].pid, SIGKILL);
	(void)kill(-k->pid, SIGKILL);
	(void)kill(k->pid, SIGKILL);
}

/* The 'Z' of a command: its status, the session's state, the directory. */
static void
sess_reply(struct keeper *k, struct keep_conn *c, int code, int run)
{
	char	s[YX_AGENT_STATUS_MAX];
	int	n;

	n = snprintf(s, sizeof(s), "code=%d timedout=%d run=%d busy=0 cmd=%lu cwd=%s",
	    code, S.timedout, run, S.serial, S.cwd);
	if (n > 0 && (size_t)n < sizeof(s))
		(void)keep_frame(c->fd, YX_AGENT_T_STATE, s, (size_t)n,
		    yx_mono_ms() + KEEP_SEND_MS);
	keep_close(k, c);
}

/* 'U' "TIMEOUT\nCOMMAND": start it, or answer busy (or ended) at once. */
void
sess_command(struct keeper *k, struct keep_conn *c)
{
	unsigned long	 timeout;
	size_t		 n, i, len;
	char		*cmd, *end, *p;
	int		 out[2];

	if (!k->running || S.phase != SP_IDLE) {
		(void)keep_frame(c->fd, YX_AGENT_T_STATE,
		    k->running ? "busy=1 run=1" : "busy=0 run=0", 12,
		    yx_mono_ms() + KEEP_SEND_MS);
		keep_close(k, c);
		return;
	}
	if (c->len >= sizeof(c->buf) || c->buf[0] < '0' || c->buf[0] > '9') {
		keep_close(k, c);
		return;
	}
	c->buf[c->len] = '\0';
	timeout = strtoul(c->buf, &end, 10);
	cmd = end + 1;
	len = c->len - (size_t)(cmd - c->buf);
	if (*end != '\n' || timeout > 86400 || len == 0 ||
	    memchr(cmd, '\0', len) != NULL || pipe2(out, O_CLOEXEC) == -1) {
		keep_close(k, c);
		return;
	}
	S.nbefore = sess_procs(k, S.before, SESS_PS_MAX);
	(void)fcntl(out[0], F_SETFL, O_NONBLOCK);
	(void)fcntl(out[0], F_SETPIPE_SZ, SESS_OUT_PIPE);
	S.out[0] = out[0];
	S.out[1] = out[1];
	S.serial++;
	/* the script: the command single-quoted ('\'' for each quote) */
	/* `command eval`: an error of a special builtin in it (set -o bad)
	 * must not make an interactive dash drop the rest of its input, the
	 * report line included */
	p = S.script;
	memcpy(p, "{ command eval '", 16);
	p += 16;
	for (i = 0; i < len; i++)
		if (cmd[i] == '\'') {
			memcpy(p, "'\\''", 4);
			p += 4;
		} else
			*p++ = cmd[i];
	n = (size_t)(p - S.script);
	n += (size_t)snprintf(p, SESS_SCRIPT_MAX - n,
	    "'\n} </dev/null >/proc/%d/fd/%d 2>&1 9>&-\n"
	    "command printf '%lu %%d %%s\\0' \"$?\" \"$PWD\" >&9\n",
	    (int)getpid(), out[1], S.serial);
	S.slen = n;
	S.spos = 0;
	S.phase = SP_RUN;
	S.timedout = S.drains = 0;
	S.cmd_deadline = timeout > 0 ? yx_mono_ms() + (long long)timeout * 1000 : 0;
	S.conn = (int)(c - kc);
	c->state = KC_CMD;
	c->deadline = LLONG_MAX;
	c->opos = c->olen = 0;
	S.last = yx_mono_ms();
	sess_write_script(k);
}

/*
 * Stop the command: interrupt its processes and the shell at once, as ^C
 * at a prompt does (a job killed by SIGINT makes the shell abandon the
 * rest of the command line; a loop of its own ends), then SIGKILL what is
 * left of them (sess_timers). The shell should then report.
 */
static void
sess_abort(struct keeper *k, int timedout)
{
	S.timedout = timedout;
	sess_signal_new(k, SIGINT);
	(void)kill(k->pid, SIGINT);
	S.phase = SP_STOPPING;
	S.phase_at = yx_mono_ms() + SESS_TERM_MS;
}

/* The host that waited left: the command stops, the session stays. */
static void
sess_conn_gone(struct keeper *k)
{
	if (S.conn != -1)
		keep_close(k, &kc[S.conn]);
	S.conn = -1;
	if (S.phase == SP_RUN)
		sess_abort(k, 0);
}

/* Send what is pending of the output frame. */
static void
sess_flush(struct keeper *k, struct keep_conn *c)
{
	ssize_t w;

	while (c->opos < c->olen) {
		w = send(c->fd, c->buf + c->opos, c->olen - c->opos,
		    MSG_DONTWAIT | MSG_NOSIGNAL);
		if (w > 0) {
			c->opos += (size_t)w;
			continue;
		}
		if (w == -1 && (errno == EAGAIN || errno == EINTR))
			return;
		sess_conn_gone(k);
		return;
	}
}

void
sess_conn_event(struct keeper *k, struct keep_conn *c, short revents)
{
	if (revents & (POLLIN | POLLRDHUP | POLLHUP | POLLERR)) {
		sess_conn_gone(k);	/* the host sends nothing after 'U' */
		return;
	}
	if (revents & POLLOUT)
		sess_flush(k, c);
}

/* A pipe of a command that ended, kept for its background jobs. */
static void
sess_orphan(int fd)
{
	int i;

	if (S.orphans[SESS_ORPHANS - 1] != -1)
		close(S.orphans[SESS_ORPHANS - 1]);	/* the oldest: EPIPE */
	for (i = SESS_ORPHANS - 1; i > 0; i--)
		S.orphans[i] = S.orphans[i - 1];
	S.orphans[0] = fd;
}

/* The command reported and its output is all sent: the reply. */
static void
sess_finish(struct keeper *k)
{
	sess_orphan(S.out[0]);
	close(S.out[1]);
	S.out[0] = S.out[1] = -1;
	S.phase = SP_IDLE;
	S.last = yx_mono_ms();
	if (S.conn != -1)
		sess_reply(k, &kc[S.conn], S.timedout ? RUN_STATUS_TIMEOUT : S.status,
		    1);
	S.conn = -1;
}

/*
 * One read of the command's pipe: to the host as a 'D' frame (when it is
 * still there; else dropped). In SP_DRAIN an empty pipe ends the command.
 */
static void
sess_out_read(struct keeper *k)
{
	struct keep_conn	*c = S.conn != -1 ? &kc[S.conn] : NULL;
	char			*into = c != NULL ? c->buf + YX_AGENT_HDR : sess_drop;
	size_t			 room = c != NULL ? sizeof(c->buf) - YX_AGENT_HDR :
					     sizeof(sess_drop);
	ssize_t			 r;

	if (c != NULL && c->opos < c->olen)
		return;
	r = read(S.out[0], into, room);
	if (r > 0 && c != NULL) {
		c->buf[0] = YX_AGENT_T_DATA;
		c->buf[1] = (char)((size_t)r >> 24);
		c->buf[2] = (char)((size_t)r >> 16);
		c->buf[3] = (char)((size_t)r >> 8);
		c->buf[4] = (char)r;
		c->opos = 0;
		c->olen = YX_AGENT_HDR + (size_t)r;
		sess_flush(k, c);
	}
	if (S.phase == SP_DRAIN &&
	    (r <= 0 || ++S.drains >= SESS_DRAIN_MAX) &&
	    (r != -1 || errno != EINTR) &&
	    (S.conn == -1 || kc[S.conn].opos == kc[S.conn].olen))
		sess_finish(k);
}

/* Reports arrived: the current command's ends it (then its output). */
static void
sess_read_ctl(struct keeper *k)
{
	unsigned long	 serial;
	const char	*cwd;
	size_t		 i, from = 0;
	ssize_t		 r;
	int		 st;

	r = read(S.ctl, S.mark + S.nmark, sizeof(S.mark) - 1 - S.nmark);
	if (r == -1 && (errno == EAGAIN || errno == EINTR))
		return;
	if (r <= 0) {
		/* the shell's image is gone (exit, exec): it cannot report any
		 * more; what exec'd in its place ends, or is ended soon */
		close(S.ctl);
		S.ctl = -1;
		S.orphaned_at = yx_mono_ms() + SESS_GONE_MS;
		return;
	}
	S.nmark += (size_t)r;
	for (i = 0; i < S.nmark; i++) {
		if (S.mark[i] != '\0')
			continue;
		if (sess_parse_mark(S.mark + from, &serial, &st, &cwd) == 0 &&
		    serial == S.serial && S.phase != SP_IDLE && S.phase != SP_DRAIN) {
			S.status = st;
			snprintf(S.cwd, sizeof(S.cwd), "%s", cwd);
			S.phase = SP_DRAIN;
		}
		from = i + 1;
	}
	memmove(S.mark, S.mark + from, S.nmark - from);
	S.nmark -= from;
	if (S.nmark == sizeof(S.mark) - 1)
		S.nmark = 0;	/* no report is that long */
}

void
sess_pollfds(struct keeper *k, struct pollfd *pfd)
{
	struct keep_conn	*c = S.conn != -1 ? &kc[S.conn] : NULL;
	int			 i;

	pfd[0].fd = S.ctl;
	pfd[0].events = POLLIN;
	pfd[1].fd = S.out[0] != -1 && (c == NULL || c->opos == c->olen) ?
	    S.out[0] :
	    -1;
	pfd[1].events = POLLIN;
	pfd[2].fd = S.spos < S.slen ? k->wfd : -1;
	pfd[2].events = POLLOUT;
	for (i = 0; i < SESS_ORPHANS; i++) {
		pfd[3 + i].fd = S.orphans[i];
		pfd[3 + i].events = POLLIN;
	}
}

void
sess_events(struct keeper *k, const struct pollfd *pfd)
{
	ssize_t	r;
	int	i;

	if (pfd[2].revents != 0 && pfd[2].fd != -1)
		sess_write_script(k);
	if (pfd[0].revents != 0 && S.ctl != -1)
		sess_read_ctl(k);
	if (S.out[0] != -1 && (pfd[1].revents != 0 || S.phase == SP_DRAIN))
		sess_out_read(k);
	for (i = 0; i < SESS_ORPHANS; i++) {
		if (pfd[3 + i].revents == 0 || pfd[3 + i].fd != S.orphans[i])
			continue;
		r = read(S.orphans[i], sess_drop, sizeof(sess_drop));
		if (r == 0 || (r == -1 && errno != EAGAIN && errno != EINTR)) {
			close(S.orphans[i]);	/* its last writer left */
			S.orphans[i] = -1;
		}
	}
}

void
sess_timers(struct keeper *k, long long now)
{
	static const char	again[] = "command printf '%lu %%d %%s\\0' "
				    "\"$?\" \"$PWD\" >&9\n";

	if (!k->running)
		return;
	if (S.orphaned_at != 0 && now >= S.orphaned_at) {
		S.orphaned_at = 0;
		sess_kill(k);	/* "exec sleep 100": no shell any more */
		return;
	}
	switch (S.phase) {
	case SP_RUN:
		if (S.cmd_deadline != 0 && now >= S.cmd_deadline)
			sess_abort(k, 1);
		break;
	case SP_STOPPING:	/* what ignored the interrupt */
		if (now < S.phase_at)
			break;
		sess_signal_new(k, SIGKILL);
		S.phase = SP_KILLED;
		S.phase_at = now + SESS_KILL_MS;
		break;
	case SP_KILLED:	/* still no report: interrupted in between? */
		if (now < S.phase_at)
			break;
		(void)kill(k->pid, SIGINT);
		S.phase = SP_INTED;
		S.phase_at = now + SESS_INT_MS;
		break;
	case SP_INTED:	/* the interrupt may have eaten the report */
		if (now < S.phase_at)
			break;
		if (S.spos < S.slen) {	/* it did not even read the command */
			sess_kill(k);
			S.phase_at = LLONG_MAX;
			break;
		}
		S.slen = (size_t)snprintf(S.script, SESS_SCRIPT_MAX, again, S.serial);
		S.spos = 0;
		sess_write_script(k);
		S.phase = SP_MARKED;
		S.phase_at = now + SESS_MARK_MS;
		break;
	case SP_MARKED:	/* a shell that cannot be brought back: it ends */
		if (now < S.phase_at)
			break;
		sess_kill(k);
		S.phase_at = LLONG_MAX;
		break;
	case SP_IDLE:
		if (S.idle_ms > 0 && now - S.last >= S.idle_ms && !S.idle) {
			S.idle = 1;
			sess_kill(k);	/* the exit comes through pidfd */
		}
		break;
	default:
		break;
	}
}

long long
sess_next(const struct keeper *k)
{
	if (!k->running)
		return 0;
	if (S.orphaned_at != 0)
		return S.orphaned_at;
	switch (S.phase) {
	case SP_RUN:
		return S.cmd_deadline;
	case SP_IDLE:
		return S.idle_ms > 0 && !S.idle ? S.last + S.idle_ms : 0;
	case SP_DRAIN:	/* an empty pipe ends it: look at once, unless the
			 * host has yet to take a frame (POLLOUT wakes us) */
		return S.conn != -1 && kc[S.conn].opos < kc[S.conn].olen ? 0 :
									   yx_mono_ms();
	default:
		return S.phase_at;
	}
}

void
sess_end(struct keeper *k)
{
	struct keep_conn	*c = S.conn != -1 ? &kc[S.conn] : NULL;
	long long		 deadline = yx_mono_ms() + KEEP_SEND_MS;
	ssize_t			 r;
	int			 i;

	if (c != NULL && S.out[0] != -1) {
		/* the frame under way, then what the command wrote before
		 * the shell went */
		if (c->opos < c->olen &&
		    keep_send(c->fd, c->buf + c->opos, c->olen - c->opos,
			deadline) == -1)
			i = SESS_DRAIN_MAX;
		else
			i = 0;
		c->opos = c->olen = 0;
		for (; i < SESS_DRAIN_MAX; i++) {
			r = read(S.out[0], sess_drop, sizeof(sess_drop));
			if (r <= 0 ||
			    keep_frame(c->fd, YX_AGENT_T_DATA, sess_drop,
				(size_t)r, deadline) == -1)
				break;
		}
	}
	if (c != NULL)
		sess_reply(k, c, S.timedout ? RUN_STATUS_TIMEOUT : k->code, 0);
	S.conn = -1;
	for (i = 0; i < 2; i++)
		if (S.out[i] != -1)
			close(S.out[i]);
	S.out[0] = S.out[1] = -1;
	for (i = 0; i < SESS_ORPHANS; i++)
		if (S.orphans[i] != -1)
			close(S.orphans[i]);
	if (S.ctl != -1)
		close(S.ctl);
	S.ctl = -1;
	S.phase = SP_IDLE;
	S.spos = S.slen = 0;
}
