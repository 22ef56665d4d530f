/* SPDX-License-Identifier: MIT */
/*
 * agent_services.c - a profile's services inside the sandbox: the
 * supervisor the agent daemon forks, and the restart loop each service's
 * keeper runs; see agent_services.h for the design and the file format.
 *
 * Two processes per service besides the service itself: its keeper
 * (agent_keeper.c, unchanged: the output ring and the host's operations)
 * and the loop, the keeper's process. A service that exits is started
 * again by its loop after a backoff, with a line in its output saying so;
 * a loop that is killed ends its keeper's process, so the supervisor sees
 * the keeper's exit file, makes the keeper leave ('K' on its socket, as
 * the host would) and starts a new keeper; a keeper that is killed leaves
 * its lock free, and the supervisor starts a new one (after the agent's
 * sweep killed what the old one left running). The supervisor dies with
 * the daemon; the keepers, their loops and the services do not: the next
 * command starts the agent again, whose supervisor takes over.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "yuxi/clock.h"
#include "guest/agent_keeper.h"
#include "guest/agent_proto.h"
#include "guest/agent_services.h"
#include "guest/keeper_int.h"
#include "guest/run_core.h"

#define SVC_MAX			8	/* as YX_SERVICES_MAX (include/yuxi/agents.h) */
#define SVC_TICK_MS		250	/* the supervisor looks that often */
#define SVC_RESTARTS		100	/* the daemon starts a supervisor again */
#define SVC_BACKOFF_MS		500	/* first delay before a start again */
#define SVC_BACKOFF_MAX_MS	30000
#define SVC_HEALTHY_MS		10000	/* ran that long: the backoff starts over */
#define SVC_PROBE_MS		100	/* readiness: a connect that often */
#define SVC_KILL_WAIT_MS	2000	/* a keeper's answer to 'K' */
#define SVC_LOCK		"svc.lock"	/* the supervisor's, in the records */

struct svc {
	char		*name, *cmd;
	char		 port[8];		/* decimal, "0": none */
	char		 id[YX_AGENT_PROCID_MAX + 1];	/* svc-<name> */
	char		 restarts[16];		/* passed to the loop */
	char		*argv[12];
	long long	 next;			/* start no earlier (mono ms) */
	long long	 started;		/* the last keeper's start */
	int		 fails;			/* keepers that died young */
};

static char		 svc_path[108];	/* --services */
static pid_t		 svc_pid;	/* the supervisor, in the daemon */
static pid_t		 svc_daemon;	/* its parent */
static int		 svc_nrestarts;
static char		 svc_dir[108];	/* agent.sock's directory */
static int		 svc_recdir = -1;
static int		 svc_lockfd = -1;	/* the supervisor's lock */
static int		 svc_close[4];
static int		 svc_nclose;
static void		(*svc_sweep)(void);
static char		 svc_self[108] = YX_AGENT_TARGET;	/* this program */

/* The file as read, and what it says (pointers into svc_buf). */
static char		 svc_buf[YX_SVC_CONF_MAX + 1];
static char		*svc_env[YX_AGENT_ENVS_MAX + 1];
static size_t		 svc_nenv;
static char		*svc_cwd;
static long		 svc_ring;
static struct svc	 svcs[SVC_MAX];
static size_t		 nsvcs;

/* One line into fd 2 (the daemon's is /dev/null; a loop's, its output). */
static void
svc_say(const char *name, const char *what)
{
	run_say("yuxi-agent: service %s: %s\n", name, what);
}

int
svc_set(const char *path, const char *self)
{
	if (path[0] != '/' || strlen(path) >= sizeof(svc_path))
		return -1;
	memcpy(svc_path, path, strlen(path) + 1);
	if (self[0] == '/' && strlen(self) < sizeof(svc_self))
		memcpy(svc_self, self, strlen(self) + 1);
	return 0;
}

/* A decimal in lo..hi. 0 or -1. */
static int
svc_num(const char *s, long lo, long hi, long *v)
{
	char *end;

	errno = 0;
	*v = strtol(s, &end, 10);
	return s[0] >= '0' && s[0] <= '9' && *end == '\0' && errno == 0 &&
		*v >= lo && *v <= hi ?
	    0 :
	    -1;
}

/* [a-z][a-z0-9]{0,11}: it names a keeper and files. */
static int
svc_name_ok(const char *s)
{
	size_t n = strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789");

	return s[0] >= 'a' && s[0] <= 'z' && n == strlen(s) && n <= 12 ? 0 : -1;
}

/* One "key=value" entry of the file. 0 or -1. */
static int
svc_entry(char *e, int *first)
{
	struct svc	*s = nsvcs > 0 ? &svcs[nsvcs - 1] : NULL;
	char		*v = strchr(e, '=');
	long		 n;

	if (v == NULL)
		return -1;
	*v++ = '\0';
	if (*first) {
		*first = 0;
		return strcmp(e, "yuxi-services") == 0 && strcmp(v, "1") == 0 ? 0 : -1;
	}
	if (strcmp(e, "ring") == 0)
		return svc_num(v, YX_AGENT_RING_MIN, YX_AGENT_RING_MAX, &svc_ring);
	if (strcmp(e, "cwd") == 0 && v[0] == '/')
		return (svc_cwd = v), 0;
	if (strcmp(e, "env") == 0 && strchr(v, '=') != NULL &&
	    svc_nenv < YX_AGENT_ENVS_MAX)
		return (svc_env[svc_nenv++] = v), 0;
	if (strcmp(e, "service") == 0 && nsvcs < SVC_MAX && svc_name_ok(v) == 0) {
		svcs[nsvcs++].name = v;
		return 0;
	}
	if (s != NULL && strcmp(e, "ready") == 0 && svc_num(v, 0, 65535, &n) == 0)
		return snprintf(s->port, sizeof(s->port), "%ld", n), 0;
	if (s != NULL && strcmp(e, "command") == 0 && s->cmd == NULL)
		return (s->cmd = v), 0;
	return -1;
}

/* Read and parse the file. 0, or -1 (nothing runs). */
static int
svc_load(void)
{
	ssize_t	n, got = 0;
	char	*p;
	int	fd, first = 1;
	size_t	i, len;

	if ((fd = open(svc_path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)) == -1)
		return -1;
	while ((n = read(fd, svc_buf + got, sizeof(svc_buf) - 1 - (size_t)got)) > 0)
		got += n;
	close(fd);
	if (n < 0 || got == 0 || got == (ssize_t)sizeof(svc_buf) - 1 ||
	    svc_buf[got - 1] != '\0')
		return -1;
	for (p = svc_buf; p < svc_buf + got; p += len + 1) {
		len = strlen(p);	/* before svc_entry cuts it at '=' */
		if (svc_entry(p, &first) == -1)
			return -1;
	}
	for (i = 0; i < nsvcs; i++)
		if (svcs[i].cmd == NULL || svcs[i].port[0] == '\0')
			return -1;
	return svc_ring > 0 && svc_cwd != NULL ? 0 : -1;
}

/* Does the keeper of id live? 1 yes, 0 no (its lock is free or was never
 * taken), -1 cannot tell (no records directory). */
static int
svc_alive(const char *id)
{
	char	name[YX_AGENT_PROCID_MAX + 16];
	int	fd, r;

	if (svc_recdir == -1)
		return -1;
	snprintf(name, sizeof(name), YX_AGENT_KEEP_PREFIX "%s", id);
	if ((fd = openat(svc_recdir, name,
		 O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)) == -1)
		return 0;
	r = flock(fd, LOCK_SH | LOCK_NB) == 0 ? 0 : errno == EWOULDBLOCK ? 1 :
									   -1;
	close(fd);
	return r;
}

/* Has the keeper of id's process ended (its exit file is there)? */
static int
svc_ended(const char *id)
{
	char path[sizeof(svc_dir) + YX_AGENT_PROCID_MAX + 16];

	snprintf(path, sizeof(path), "%s/" YX_AGENT_PROC_PREFIX "%s.exit", svc_dir, id);
	return access(path, F_OK) == 0;
}

/* Read a small file of the agent's directory into buf (NUL-terminated);
 * its length or -1. */
static ssize_t
svc_read_small(const char *name, char *buf, size_t len)
{
	char	path[sizeof(svc_dir) + 32];
	ssize_t	n;
	int	fd;

	snprintf(path, sizeof(path), "%s/%s", svc_dir, name);
	if ((fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)) == -1)
		return -1;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n >= 0)
		buf[n] = '\0';
	return n;
}

/*
 * Write the state of service name into <dir>/svc.<name> (through a
 * temporary and a rename: the host reads a whole line or the old one).
 */
static void
svc_state(const char *dir, const char *name, const char *state, pid_t pid,
    long restarts, int code)
{
	char	path[160], tmp[176], s[160];
	int	fd, n;

	n = snprintf(s, sizeof(s), "state=%s pid=%d restarts=%ld code=%d since=%lld\n",
	    state, (int)pid, restarts, code, (long long)yx_now_ms());
	if (snprintf(path, sizeof(path), "%s/" YX_SVC_STATE_PREFIX "%s", dir, name) >=
		(int)sizeof(path) ||
	    snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= (int)sizeof(tmp) ||
	    (fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC,
		 0644)) == -1)
		return;
	if (n > 0 && write(fd, s, (size_t)n) == n && close(fd) == 0)
		(void)rename(tmp, path);
	else {
		close(fd);
		(void)unlink(tmp);
	}
}

/* The restarts the state file of s counts; -1: no file (the first start
 * in this container). */
static long
svc_restarts_of(const struct svc *s)
{
	char	name[32], buf[256], *p;
	long	v = 0;

	snprintf(name, sizeof(name), YX_SVC_STATE_PREFIX "%s", s->name);
	if (svc_read_small(name, buf, sizeof(buf)) <= 0)
		return -1;
	if ((p = strstr(buf, " restarts=")) != NULL)
		v = strtol(p + 10, NULL, 10);
	return v >= 0 && v < 1000000000 ? v : 0;
}

/* 'K' to the keeper of id, as the host would: it kills what is left and
 * leaves. Waits (bounded) for its hang-up. */
static void
svc_kill_keeper(const char *id)
{
	struct sockaddr_un	sun;
	struct pollfd		pfd;
	unsigned char		f[2 * YX_AGENT_HDR + 4];
	long long		until = yx_mono_ms() + SVC_KILL_WAIT_MS;
	char			buf[512];
	int			fd;

	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	if (snprintf(sun.sun_path, sizeof(sun.sun_path),
		"%s/" YX_AGENT_PROC_PREFIX "%s.sock", svc_dir,
		id) >= (int)sizeof(sun.sun_path) ||
	    (fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1)
		return;
	memcpy(f, "H\0\0\0\4" YX_AGENT_MAGIC "K\0\0\0\0", sizeof(f));
	if (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) == 0 &&
	    run_write_all(fd, f, sizeof(f), 1) == 0)
		for (;;) {
			pfd.fd = fd;
			pfd.events = POLLIN;
			if (until <= yx_mono_ms() ||
			    poll(&pfd, 1, (int)(until - yx_mono_ms())) <= 0 ||
			    read(fd, buf, sizeof(buf)) <= 0)
				break;
		}
	close(fd);
}

/* In a new child: become service s's keeper (never returns). */
static void __attribute__((noreturn))
svc_keeper(struct svc *s)
{
	static struct run_args	a;
	struct keep_req		k;

	if (svc_lockfd != -1)	/* a flock is shared across fork */
		close(svc_lockfd);
	(void)prctl(PR_SET_NAME, "yuxi-agent", 0, 0, 0);	/* as other keepers */
	a.cwd = svc_cwd;
	a.argv = s->argv;
	a.envp = svc_env;
	a.in = a.ctl = a.tty = -1;
	memset(&k, 0, sizeof(k));
	k.args = &a;
	k.timeout = 0;		/* no lifetime: it lives as long as the box */
	k.id = s->id;
	k.ring = (size_t)svc_ring;
	k.dir = svc_dir;
	k.recdir = svc_recdir;
	agent_keep(-1, &k);	/* no host to answer: 'S' goes nowhere */
}

/* Start s's keeper (a child of ours; it outlives us). */
static void
svc_start_keeper(struct svc *s, long long now)
{
	long r = svc_restarts_of(s);

	/* a keeper that dies young is started again ever later */
	if (s->started != 0 && now - s->started < SVC_HEALTHY_MS)
		s->fails++;
	else
		s->fails = 0;
	s->started = now;
	s->next = now + (s->fails == 0 ? 0 : s->fails > 6 ? SVC_BACKOFF_MAX_MS :
							    SVC_BACKOFF_MS << (s->fails - 1));
	/* a keeper started again counts as a restart of its service */
	snprintf(s->restarts, sizeof(s->restarts), "%ld", r < 0 ? 0 : r + 1);
	if (fork() == 0)
		svc_keeper(s);
}

/* One look at service s. */
static void
svc_check(struct svc *s, long long now)
{
	int alive = svc_alive(s->id);

	if (alive == 1 && svc_ended(s->id)) {
		/* its loop was killed: the keeper lingers with the output */
		svc_kill_keeper(s->id);
		alive = svc_alive(s->id);
	}
	if (alive == 0 && now >= s->next) {
		if (s->started != 0 && svc_sweep != NULL)
			svc_sweep();	/* a killed keeper's group */
		svc_start_keeper(s, now);
	}
}

/* The supervisor: its lock, then a look at every service each tick. */
static void __attribute__((noreturn))
svc_serve(void)
{
	sigset_t	none;
	size_t		i;
	int		st;
	pid_t		pid;

	for (i = 0; i < (size_t)svc_nclose; i++)
		close(svc_close[i]);
	sigemptyset(&none);
	(void)sigprocmask(SIG_SETMASK, &none, NULL);
	(void)signal(SIGCHLD, SIG_DFL);
	(void)signal(SIGPIPE, SIG_IGN);
	umask(022);		/* what commands get (agent_spare) */
	(void)prctl(PR_SET_NAME, "yuxi-services", 0, 0, 0);
	/* it dies with the daemon (the keepers do not): the agent started
	 * again has a supervisor of its own, never two */
	(void)prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != svc_daemon)
		_exit(0);
	if (svc_load() == -1)
		_exit(0);	/* nothing to run: not started again */
	for (i = 0; i < nsvcs; i++) {
		struct svc *s = &svcs[i];
		char *const av[] = { svc_self, "--service", s->name, s->port, svc_dir,
			s->restarts, "--", "/bin/sh", "-c", s->cmd, NULL };

		snprintf(s->id, sizeof(s->id), YX_SVC_ID_PREFIX "%s", s->name);
		memcpy(s->argv, av, sizeof(av));
	}
	/* one supervisor at a time: a second one (the agent was started
	 * again) waits for the first to go */
	if (svc_recdir != -1 &&
	    (svc_lockfd = openat(svc_recdir, SVC_LOCK,
		 O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600)) != -1)
		while (flock(svc_lockfd, LOCK_EX | LOCK_NB) == -1)
			sleep(1);
	for (;;) {
		while ((pid = waitpid(-1, &st, WNOHANG)) > 0)
			if (WIFSIGNALED(st) && svc_sweep != NULL)
				svc_sweep();	/* a keeper killed */
		for (i = 0; i < nsvcs; i++)
			svc_check(&svcs[i], yx_mono_ms());
		(void)poll(NULL, 0, SVC_TICK_MS);
	}
}

int
svc_start(const char *sockdir, int recdir, const int *close_fds, int n,
    void (*sweep)(void))
{
	pid_t pid;

	if (svc_path[0] == '\0')
		return 0;
	if (sockdir != svc_dir)	/* svc_reaped passes our own */
		snprintf(svc_dir, sizeof(svc_dir), "%s", sockdir);
	svc_recdir = recdir;
	svc_sweep = sweep;
	for (svc_nclose = 0; close_fds != NULL && svc_nclose < n &&
	     svc_nclose < (int)(sizeof(svc_close) / sizeof(svc_close[0]));
	     svc_nclose++)
		svc_close[svc_nclose] = close_fds[svc_nclose];
	svc_daemon = getpid();
	if ((pid = fork()) == -1)
		return -1;
	if (pid == 0)
		svc_serve();
	svc_pid = pid;
	return 0;
}

int
svc_reaped(pid_t pid, int status)
{
	if (svc_pid == 0 || pid != svc_pid)
		return 0;
	svc_pid = 0;
	if (!(WIFEXITED(status) && WEXITSTATUS(status) == 0) &&
	    svc_nrestarts++ < SVC_RESTARTS)
		(void)svc_start(svc_dir, svc_recdir, svc_close, svc_nclose, svc_sweep);
	return 1;
}

/* Is something listening on 127.0.0.1:port? */
static int
svc_listening(int port)
{
	struct sockaddr_in	sin;
	int			fd, ok;

	if ((fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1)
		return 0;
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_port = htons((unsigned short)port);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ok = connect(fd, (struct sockaddr *)&sin, sizeof(sin)) == 0;
	close(fd);
	return ok;
}

/* Kill what a run left in our group, and reap what comes to us. */
static void
svc_kill_rest(void)
{
	static struct keep_ps	v[1024];
	pid_t			self = getpid(), grp = getpgrp();
	size_t			n, i;

	n = keep_ps(v, sizeof(v) / sizeof(v[0]));
	for (i = 0; i < n; i++)
		if (v[i].pgrp == grp && v[i].pid != self)
			(void)kill(v[i].pid, SIGKILL);
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
}

/* The run's child: default signals, dies with the loop, exec. */
static void __attribute__((noreturn))
svc_exec(char **argv)
{
	sigset_t	none;
	int		sig;

	for (sig = 1; sig < NSIG; sig++)
		if (sig != SIGKILL && sig != SIGSTOP)
			(void)signal(sig, SIG_DFL);
	sigemptyset(&none);
	(void)sigprocmask(SIG_SETMASK, &none, NULL);
	(void)prctl(PR_SET_PDEATHSIG, SIGKILL);
	execvp(argv[0], argv);
	svc_say(argv[0], strerror(errno));
	_exit(errno == ENOENT ? RUN_STATUS_NOTFOUND : RUN_STATUS_NOEXEC);
}

/* Wait for pid's end, probing port (0: none) until it listens (last: the
 * previous run's status, for the state file). Its shell-style status. */
static int
svc_wait(const char *name, const char *dir, pid_t pid, int port,
    long restarts, int last)
{
	char	msg[64];
	int	st = 0, ready = port == 0;
	pid_t	r;

	for (;;) {
		r = waitpid(-1, &st, ready ? 0 : WNOHANG);
		if (r == pid)
			break;
		if (r > 0 || (r == -1 && errno == EINTR))
			continue;	/* an orphan of the run, reaped */
		if (r == -1)
			return RUN_STATUS_USAGE;
		if (svc_listening(port)) {
			ready = 1;
			snprintf(msg, sizeof(msg), "ready (port %d)", port);
			svc_say(name, msg);
			svc_state(dir, name, "ready", pid, restarts, last);
			continue;
		}
		(void)poll(NULL, 0, SVC_PROBE_MS);
	}
	return WIFEXITED(st) ? WEXITSTATUS(st) :
	    WIFSIGNALED(st)  ? 128 + WTERMSIG(st) :
			       RUN_STATUS_USAGE;
}

int
svc_loop_main(int argc, char **argv)
{
	const char	*name, *dir;
	long		 port, restarts, t0, delay;
	char		 msg[160];
	int		 code = -1, fails = 0;
	pid_t		 pid;

	/* --service NAME PORT DIR RESTARTS -- ARGV... */
	if (argc < 8 || strcmp(argv[0], "--service") != 0 ||
	    strcmp(argv[5], "--") != 0 || svc_name_ok(argv[1]) == -1 ||
	    svc_num(argv[2], 0, 65535, &port) == -1 || argv[3][0] != '/' ||
	    svc_num(argv[4], 0, 1000000000, &restarts) == -1)
		return RUN_STATUS_USAGE;
	name = argv[1];
	dir = argv[3];
	argv += 6;
	(void)prctl(PR_SET_CHILD_SUBREAPER, 1);
	/* a broad kill (pkill -f NAME matches this command line too) stops
	 * the service, not its loop */
	(void)signal(SIGTERM, SIG_IGN);
	(void)signal(SIGINT, SIG_IGN);
	(void)signal(SIGHUP, SIG_IGN);
	(void)signal(SIGPIPE, SIG_IGN);
	for (;;) {
		svc_state(dir, name, "starting", 0, restarts, code);
		t0 = (long)yx_mono_ms();
		if ((pid = fork()) == 0)
			svc_exec(argv);
		if (pid == -1) {
			code = RUN_STATUS_USAGE;
			svc_say(name, "cannot fork");
		} else {
			snprintf(msg, sizeof(msg), "started (pid %d)", (int)pid);
			svc_say(name, msg);
			if (port == 0)
				svc_state(dir, name, "running", pid, restarts, code);
			code = svc_wait(name, dir, pid, (int)port, restarts, code);
		}
		svc_kill_rest();
		fails = (long)yx_mono_ms() - t0 >= SVC_HEALTHY_MS ? 0 : fails + 1;
		delay = fails == 0 ? SVC_BACKOFF_MS :
		    fails > 6	   ? SVC_BACKOFF_MAX_MS :
				     SVC_BACKOFF_MS << (fails - 1);
		restarts++;
		snprintf(msg, sizeof(msg), "exited with status %d after %.1f s; "
					   "starting again in %.1f s",
		    code, ((long)yx_mono_ms() - t0) / 1000.0, delay / 1000.0);
		svc_say(name, msg);
		svc_state(dir, name, "backoff", 0, restarts, code);
		(void)poll(NULL, 0, (int)delay);
	}
}
