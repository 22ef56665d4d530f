/* SPDX-License-Identifier: MIT */
/*
 * relay.c - the egress relay inside a sandbox; see relay.h.
 *
 * Started by the agent daemon right after it listens (and again when it
 * dies, a bounded number of times); its port is bound before the fork, so
 * it is open when the agent says it is ready. When the port is taken - the
 * relay of an earlier agent still runs - the relay retries every second,
 * so it takes over when that one goes.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "yuxi/sock.h"
#include "guest/relay.h"

#define RELAY_CONNS_MAX		64
#define RELAY_RESTARTS		100
#define RELAY_IDLE_MS		(300 * 1000)
#define RELAY_CLOSE_MAX		8

static int	relay_port;
static char	relay_path[sizeof(((struct sockaddr_un *)0)->sun_path)];
static pid_t	relay_pid;
static int	relay_restarts;
static int	relay_close[RELAY_CLOSE_MAX];
static int	relay_nclose;

int
relay_set(const char *arg)
{
	const char	*colon = strchr(arg, ':'), *p;
	long		 port = 0;

	if (colon == NULL || colon == arg || colon[1] != '/' ||
	    strlen(colon + 1) >= sizeof(relay_path))
		return -1;
	for (p = arg; p < colon; p++) {
		if (*p < '0' || *p > '9' || port > 65535)
			return -1;
		port = port * 10 + (*p - '0');
	}
	if (port < 1 || port > 65535)
		return -1;
	relay_port = (int)port;
	memcpy(relay_path, colon + 1, strlen(colon + 1) + 1);
	return 0;
}

/* Copy both ways until both sides closed, an error, or idle too long. */
static void
relay_pump(int a, int b)
{
	struct pollfd	pfd[2];
	char		buf[32768];
	bool		in[2] = { true, true };
	int		fds[2] = { a, b }, i;
	ssize_t		n;

	while (in[0] || in[1]) {
		for (i = 0; i < 2; i++) {
			pfd[i].fd = in[i] ? fds[i] : -1;
			pfd[i].events = POLLIN;
			pfd[i].revents = 0;
		}
		if (poll(pfd, 2, RELAY_IDLE_MS) <= 0)
			return;
		for (i = 0; i < 2; i++) {
			if (pfd[i].revents == 0)
				continue;
			if ((n = recv(fds[i], buf, sizeof(buf), 0)) <= 0) {
				in[i] = false;
				(void)shutdown(fds[1 - i], SHUT_WR);
				if (n < 0)
					in[1 - i] = false;
				continue;
			}
			(void)yx_sock_send_all(fds[1 - i], buf, (size_t)n);
		}
	}
}

/* One connection: to the host's socket, then both ways. */
static void __attribute__((noreturn))
relay_conn(int c)
{
	struct sockaddr_un	sun;
	int			u;

	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	memcpy(sun.sun_path, relay_path, strlen(relay_path));
	if ((u = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1 ||
	    connect(u, (struct sockaddr *)&sun, sizeof(sun)) == -1) {
		static const char msg[] = "HTTP/1.1 502 yuxi egress relay: the "
					  "host proxy does not answer\r\n"
					  "Content-Length: 0\r\nConnection: close\r\n\r\n";

		(void)yx_sock_send_all(c, msg, sizeof(msg) - 1);
		_exit(1);
	}
	relay_pump(c, u);
	_exit(0);
}

/* Listen on 127.0.0.1:port: the socket, or -1 with errno (EADDRINUSE
 * while the relay of an earlier agent holds the port). */
static int
relay_listen_once(void)
{
	struct sockaddr_in	sin;
	int			s, on = 1, en;

	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_port = htons((unsigned short)relay_port);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if ((s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1)
		return -1;
	(void)setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
	if (bind(s, (struct sockaddr *)&sin, sizeof(sin)) == 0 &&
	    listen(s, 64) == 0)
		return s;
	en = errno;
	close(s);
	errno = en;
	return -1;
}

/* Listen on 127.0.0.1:port, retrying every second while it is taken. */
static int
relay_listen(void)
{
	int s;

	while ((s = relay_listen_once()) == -1 && errno == EADDRINUSE)
		sleep(1);
	return s;
}

/* The relay's loop, on s (listening already) or, when s is -1, on the
 * socket relay_listen gets once the port is free. */
static void __attribute__((noreturn))
relay_serve(int s)
{
	sigset_t	none;
	pid_t		pid;
	int		c, i, nkids = 0;

	for (i = 0; i < relay_nclose; i++)
		close(relay_close[i]);
	sigemptyset(&none);
	(void)sigprocmask(SIG_SETMASK, &none, NULL);
	(void)signal(SIGCHLD, SIG_DFL);
	(void)signal(SIGPIPE, SIG_IGN);
	if (s == -1 && (s = relay_listen()) == -1)
		_exit(1);
	for (;;) {
		while (waitpid(-1, NULL, nkids >= RELAY_CONNS_MAX ? 0 : WNOHANG) > 0)
			nkids--;
		if ((c = accept4(s, NULL, NULL, SOCK_CLOEXEC)) == -1) {
			if (errno != EINTR && errno != ECONNABORTED)
				usleep(10000);	/* EMFILE...: no busy loop */
			continue;
		}
		if ((pid = fork()) == 0) {
			close(s);
			relay_conn(c);
		}
		if (pid > 0)
			nkids++;
		close(c);
	}
}

int
relay_start(const int *close_fds, int n)
{
	pid_t	pid;
	int	s;

	if (relay_port == 0)
		return 0;
	for (relay_nclose = 0; close_fds != NULL && relay_nclose < n &&
	     relay_nclose < RELAY_CLOSE_MAX;
	     relay_nclose++)
		relay_close[relay_nclose] = close_fds[relay_nclose];
	/* listening before the agent says it is ready, so that the first
	 * command finds the port open (the child bound it only after the
	 * fork: a command on a loaded machine once came first and got
	 * ECONNREFUSED); a port still taken is the child's to wait for */
	s = relay_listen_once();
	if ((pid = fork()) == -1) {
		if (s != -1)
			close(s);
		return -1;
	}
	if (pid == 0)
		relay_serve(s);
	if (s != -1)
		close(s);
	relay_pid = pid;
	return 0;
}

int
relay_reaped(pid_t pid)
{
	if (relay_pid == 0 || pid != relay_pid)
		return 0;
	relay_pid = 0;
	if (relay_restarts++ < RELAY_RESTARTS)
		(void)relay_start(relay_close, relay_nclose);
	return 1;
}
