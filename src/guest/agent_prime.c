/* SPDX-License-Identifier: MIT */
/*
 * agent_prime.c - primed shells; see agent_prime.h.
 *
 * The key (directory and environment of the last "/bin/sh -c" request) is
 * shared by the daemon's children through an anonymous shared mapping the
 * daemon makes before its first spare, under a sequence counter: a writer
 * takes `busy`, makes `seq` odd, copies, makes it even; a reader copies
 * and keeps the copy only if `seq` was even and unchanged. The key is a
 * hint and nothing more: a spare starts its shell with its own copy and
 * compares each request with that copy, so a torn, stale or forged key
 * (everything in the sandbox runs as the agent's uid) costs at most a
 * dropped shell. A writer killed while it holds `busy` leaves priming off
 * until the agent restarts; so do PRIME_FAILS_MAX primed shells in a row
 * that never acknowledged (a /proc the shell cannot reopen the host's pipe
 * through, say).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "guest/agent_prime.h"
#include "guest/agent_proto.h"

#define PRIME_KEY_MAX	16384	/* cwd and environment, NUL-separated */
#define PRIME_PREFIX	160	/* room for the prefix prime_run writes */
#define PRIME_CMD_MAX	(PIPE_BUF - PRIME_PREFIX)	/* one atomic write */
#define PRIME_FAILS_MAX	8
#define PRIME_SHELL	"/bin/sh"

struct prime_key {
	unsigned	seq;		/* odd while a writer copies */
	int		busy;		/* a writer holds the key */
	int		fails;		/* unacknowledged shells in a row */
	size_t		len;		/* of data; 0: none yet */
	char		data[PRIME_KEY_MAX];
};

static struct prime_key	*prime_shared;	/* MAP_SHARED, or NULL */
static int		 prime_event = -1;	/* an eventfd: a key was published */

/* This process's primed shell; c.pid -1: none. */
static struct {
	struct run_cmd	 c;
	int		 script;	/* write end of its stdin */
	int		 ack;		/* read end of its acknowledgement */
	int		 dir;		/* its directory (O_PATH) */
	struct stat	 dir_st, sh_st;
	size_t		 len;
	char		 key[PRIME_KEY_MAX];
	char		*envp[YX_AGENT_ENVS_MAX + 1];
} pr = { .c = { .pid = -1, .rfd = -1, .pidfd = -1 },
	.script = -1,
	.ack = -1,
	.dir = -1 };

void
prime_init(void)
{
	void *p = mmap(NULL, sizeof(*prime_shared), PROT_READ | PROT_WRITE,
	    MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	prime_shared = p == MAP_FAILED ? NULL : p;
	if (prime_shared != NULL)
		prime_event = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
}

int
prime_wait_fd(void)
{
	return pr.c.pid == -1 ? prime_event : -1;
}

static void
prime_close(int *fd)
{
	if (*fd != -1)
		close(*fd);
	*fd = -1;
}

/* Kill and reap the primed shell, close its descriptors. Its wait status
 * (that of its own exit when it had ended already), -1 without one. */
static int
prime_end(void)
{
	int st = -1;

	if (pr.c.pid != -1) {
		(void)kill(-pr.c.pid, SIGKILL);
		(void)kill(pr.c.pid, SIGKILL);	/* if setpgid never ran */
		while (waitpid(pr.c.pid, &st, 0) == -1 && errno == EINTR)
			;
		pr.c.pid = -1;
	}
	prime_close(&pr.c.pidfd);
	prime_close(&pr.script);
	prime_close(&pr.ack);
	prime_close(&pr.dir);
	return st;
}

void
prime_drop(void)
{
	(void)prime_end();
}

/* "cwd\0env0\0env1\0..." into k; its length, 0 when it does not fit. */
static size_t
prime_key_make(char *k, const char *cwd, char *const *env, size_t nenv)
{
	size_t i, n = 0, l;

	for (i = 0; i <= nenv; i++) {
		l = strlen(i == 0 ? cwd : env[i - 1]) + 1;
		if (l > PRIME_KEY_MAX - n)
			return 0;
		memcpy(k + n, i == 0 ? cwd : env[i - 1], l);
		n += l;
	}
	return n;
}

static void
prime_publish(const char *k, size_t n)
{
	struct prime_key *s = prime_shared;

	if (s == NULL ||
	    ((__atomic_load_n(&s->seq, __ATOMIC_ACQUIRE) & 1) == 0 &&
		s->len == n && memcmp(s->data, k, n) == 0))
		return;		/* (a racy look: at worst a needless write) */
	if (__atomic_exchange_n(&s->busy, 1, __ATOMIC_ACQUIRE) != 0)
		return;
	__atomic_fetch_add(&s->seq, 1, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	memcpy(s->data, k, n);
	s->len = n;
	__atomic_fetch_add(&s->seq, 1, __ATOMIC_RELEASE);
	__atomic_store_n(&s->busy, 0, __ATOMIC_RELEASE);
	if (prime_event != -1)	/* wake the spares that have no shell */
		(void)!write(prime_event, &(uint64_t){ 1 }, sizeof(uint64_t));
}

/* Copy the shared key into pr.key. 1, or 0 when there is none to have. */
static int
prime_fetch(void)
{
	struct prime_key	*s = prime_shared;
	unsigned		 s1;
	size_t			 n;
	int			 i;

	if (s == NULL || __atomic_load_n(&s->fails, __ATOMIC_RELAXED) >= PRIME_FAILS_MAX)
		return 0;
	for (i = 0; i < 4; i++) {
		s1 = __atomic_load_n(&s->seq, __ATOMIC_ACQUIRE);
		n = __atomic_load_n(&s->len, __ATOMIC_RELAXED);
		if ((s1 & 1) != 0 || n == 0 || n > PRIME_KEY_MAX)
			continue;
		memcpy(pr.key, s->data, n);
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (__atomic_load_n(&s->seq, __ATOMIC_RELAXED) == s1) {
			pr.len = n;
			return pr.key[n - 1] == '\0';
		}
	}
	return 0;
}

/* fd moved to a number above RUN_PRIME_ACK_FD (close-on-exec), or -1. */
static int
prime_high(int fd)
{
	int h = fcntl(fd, F_DUPFD_CLOEXEC, RUN_PRIME_ACK_FD + 1);

	close(fd);
	return h;
}

/*
 * Is /bin/sh dash? Only its behaviour was checked to be that of
 * "/bin/sh -c" once primed (docs/agent.md): busybox sh, say, has no
 * "set +s" and keeps "c" in $-, and bash reads a script on a pipe byte by
 * byte. Any other shell is spawned as before.
 */
static int
prime_shell_known(void)
{
	char		 rp[PATH_MAX];
	const char	*b;

	if (realpath(PRIME_SHELL, rp) == NULL)
		return 0;
	b = strrchr(rp, '/');
	return b != NULL && strcmp(b + 1, "dash") == 0;
}

void
prime_start(void)
{
	struct run_prime_args	 a;
	char			*p, *end = pr.key;
	size_t			 i = 0;
	int			 s[2] = { -1, -1 }, k[2] = { -1, -1 };

	if (!prime_shell_known() || !prime_fetch())
		return;
	p = pr.key + strlen(pr.key) + 1;
	for (end = pr.key + pr.len; p < end && i < YX_AGENT_ENVS_MAX; i++) {
		pr.envp[i] = p;
		p += strlen(p) + 1;
	}
	pr.envp[i] = NULL;
	if (p != end || pr.key[0] != '/' ||
	    (pr.dir = open(pr.key, O_PATH | O_DIRECTORY | O_CLOEXEC)) == -1 ||
	    (pr.dir = prime_high(pr.dir)) == -1 ||
	    fstat(pr.dir, &pr.dir_st) == -1 || stat(PRIME_SHELL, &pr.sh_st) == -1 ||
	    pipe2(s, O_CLOEXEC) == -1 || pipe2(k, O_CLOEXEC) == -1 ||
	    (s[0] = prime_high(s[0])) == -1 || (k[1] = prime_high(k[1])) == -1)
		goto fail;
	a.envp = pr.envp;
	a.dirfd = pr.dir;
	a.script = s[0];
	a.ack = k[1];
	if (run_prime(&pr.c, &a) != 0) {
		pr.c.pid = -1;
		goto fail;
	}
	close(s[0]);
	close(k[1]);
	pr.script = s[1];
	pr.ack = k[0];
	return;
fail:
	for (i = 0; i < 2; i++) {
		prime_close(&s[i]);
		prime_close(&k[i]);
	}
	prime_drop();
}

/*
 * May cmd run in a primed shell? dash -s reads its script from descriptor
 * 0: once the buffered script is used up it reads 0 again, so a shell whose
 * stdin the command moved (`exec <file`) would run what that file holds.
 * The buffer holds the whole command (one write), the prefix moves stdin to
 * /dev/null (EOF: the shell ends after the command); only the command's
 * own `exec` can move it again - written out, or through eval, a sourced
 * file or a function: commands with any of these words are spawned.
 */
static int
prime_cmd_ok(const char *cmd)
{
	static const char *const words[] = { "exec", "eval", "source" };
	const char	*p;
	size_t		 i;

	for (i = 0; i < sizeof(words) / sizeof(words[0]); i++)
		if (strstr(cmd, words[i]) != NULL)
			return 0;
	for (p = strchr(cmd, '.'); p != NULL; p = strchr(p + 1, '.'))
		if ((p == cmd || strchr(" \t\n;&|({`", p[-1]) != NULL) &&
		    (p[1] == ' ' || p[1] == '\t'))
			return 0;	/* the dot command */
	return 1;
}

static int
prime_same_file(const struct stat *a, const struct stat *b)
{
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino &&
	    a->st_size == b->st_size &&
	    a->st_mtim.tv_sec == b->st_mtim.tv_sec &&
	    a->st_mtim.tv_nsec == b->st_mtim.tv_nsec &&
	    a->st_ctim.tv_sec == b->st_ctim.tv_sec &&
	    a->st_ctim.tv_nsec == b->st_ctim.tv_nsec;
}

pid_t
prime_fits(const char *cwd, char *const *argv, size_t nargv,
    char *const *env, size_t nenv)
{
	static char	k[PRIME_KEY_MAX];
	struct stat	st;
	size_t		n;

	if (cwd == NULL || nargv != 3 || strcmp(argv[0], PRIME_SHELL) != 0 ||
	    strcmp(argv[1], "-c") != 0) {
		prime_drop();
		return 0;
	}
	if ((n = prime_key_make(k, cwd, env, nenv)) != 0)
		prime_publish(k, n);
	/* the directory and the shell must be what they were when it started
	 * (a mount over the workspace, a reinstalled shell) */
	if (pr.c.pid == -1 || n == 0 || n != pr.len || memcmp(k, pr.key, n) != 0 ||
	    strlen(argv[2]) > PRIME_CMD_MAX || !prime_cmd_ok(argv[2]) ||
	    stat(cwd, &st) == -1 ||
	    st.st_dev != pr.dir_st.st_dev || st.st_ino != pr.dir_st.st_ino ||
	    stat(PRIME_SHELL, &st) == -1 || !prime_same_file(&st, &pr.sh_st)) {
		prime_drop();
		return 0;
	}
	return pr.c.pid;
}

/* Wait for the shell's byte: 1 it came, 0 the shell is gone without it,
 * -1 the deadline passed or the host hung up first. */
static int
prime_ack(int conn, long long deadline)
{
	struct pollfd	p[2];
	long long	left;
	ssize_t		r;
	char		b;
	int		ms;

	for (;;) {
		ms = -1;
		if (deadline != 0) {
			if ((left = deadline - yx_mono_ms()) <= 0)
				return -1;
			ms = left > INT_MAX ? INT_MAX : (int)left;
		}
		p[0].fd = pr.ack;
		p[0].events = POLLIN;
		p[1].fd = conn;
		p[1].events = POLLIN | POLLRDHUP;
		p[0].revents = p[1].revents = 0;
		if (poll(p, 2, ms) == -1) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		if (p[0].revents != 0) {
			if ((r = read(pr.ack, &b, 1)) == 1)
				return 1;
			if (r == 0 || (errno != EINTR && errno != EAGAIN))
				return 0;
		}
		if (p[1].revents != 0)
			return -1;
	}
}

int
prime_run(struct run_cmd *c, const char *cmd, int *out, int conn,
    long long deadline)
{
	static char	script[PIPE_BUF];
	struct stat	ps;
	ssize_t		w;
	int		n, r, st;

	/* the shell must be allowed to open the host's pipe anew: the host
	 * lets others write to it only for a sandbox of its own uid */
	if (fstat(*out, &ps) == -1 || !S_ISFIFO(ps.st_mode) ||
	    ((ps.st_mode & S_IWOTH) == 0 &&
		(ps.st_uid != geteuid() || (ps.st_mode & S_IWUSR) == 0))) {
		prime_drop();
		return 0;
	}

	/*
	 * The prefix runs before any word of cmd, on the same line (line
	 * numbers as with -c): stdin /dev/null, stdout and stderr a new open
	 * of the host's pipe (our descriptor, through /proc), the byte, 9
	 * closed, -s cleared ($- as with -c). The whole first line is parsed
	 * before any of it runs: one that does not parse never acknowledges
	 * (dash exits 2). A redirection that fails exits 126, a byte that
	 * cannot be written 125: neither runs anything of cmd.
	 */
	n = snprintf(script, sizeof(script),
	    "command exec </dev/null >/proc/%d/fd/%d 2>&1||exit 126;"
	    "echo >&%d||exit 125;exec %d>&-;set +s;%s",
	    (int)getpid(), *out, RUN_PRIME_ACK_FD, RUN_PRIME_ACK_FD, cmd);
	if (n < 0 || (size_t)n >= sizeof(script) ||
	    (w = write(pr.script, script, (size_t)n)) != n) {
		prime_drop();
		return 0;
	}
	prime_close(&pr.script);	/* EOF after the command */
	r = prime_ack(conn, deadline);
	if (r == 0) {
		/* only the prefix's own failures count (a first line that does
		 * not parse exits 2, a shell killed meanwhile by a signal) */
		st = prime_end();
		if (prime_shared != NULL && WIFEXITED(st) &&
		    (WEXITSTATUS(st) == 125 || WEXITSTATUS(st) == 126))
			__atomic_fetch_add(&prime_shared->fails, 1, __ATOMIC_RELAXED);
		return 0;
	}
	if (r == 1) {
		if (prime_shared != NULL)
			__atomic_store_n(&prime_shared->fails, 0, __ATOMIC_RELAXED);
		prime_close(out);	/* the shell has its own open of it */
	}
	c->pid = pr.c.pid;
	c->pidfd = pr.c.pidfd;
	c->rfd = -1;
	pr.c.pid = -1;		/* the caller's now */
	pr.c.pidfd = -1;
	prime_close(&pr.ack);
	prime_close(&pr.dir);
	return 1;
}
