/* SPDX-License-Identifier: MIT */
/*
 * keeper_int.h - what the keeper's two files share (private to
 * src/guest): agent_keeper.c, the keeper of a background process or
 * terminal, and agent_session.c, the session mode where the process is a
 * long-lived shell that runs the host's commands one at a time
 * (docs/agent.md "Sessions").
 *
 * One keeper is one process: its state is static, its loop one poll(),
 * no threads, no heap (mappings made once).
 */
#ifndef YUXI_KEEPER_INT_H
#define YUXI_KEEPER_INT_H

#include <limits.h>
#include <poll.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/un.h>

#include "guest/agent_keeper.h"
#include "guest/agent_proto.h"

#define KEEP_CONNS	8		/* host connections at once */
#define KEEP_SEND_MS	2000		/* a reply must leave by then */
#define KEEP_CHUNK	65536		/* one read of the output */

enum keep_cstate {
	KC_FREE = 0,
	KC_READ,	/* reading the request */
	KC_WAIT,	/* 'R' waiting for output past `have` */
	KC_STDIN,	/* 'W' bytes going to the process's stdin */
	KC_CMD,		/* 'C' a session's command: output, then 'Z' */
};

struct keep_conn {
	int		 fd;
	int		 state;
	int		 hello;		/* the first frame was read */
	long long	 deadline;
	unsigned char	 hdr[YX_AGENT_HDR];
	size_t		 got;		/* bytes of header and payload read */
	uint32_t	 len;
	unsigned long long offset, have, max;
	size_t		 wpos;		/* stdin bytes written */
	size_t		 opos, olen;	/* KC_CMD: an output frame in buf */
	char		 buf[YX_AGENT_OUT_MAX];
};

struct keep_sess;

struct keeper {
	char		*ring;
	size_t		 cap;
	uint64_t	 total;		/* output bytes ever read */
	pid_t		 pid;		/* main process = group */
	int		 pidfd, rfd, wfd, lfd, recdir;
	int		 running, code, timedout, killed, quit;
	int		 writer;	/* the connection writing stdin, -1 */
	int		 tty;		/* rfd is a terminal's master */
	struct keep_sess *sess;		/* a session's state; NULL: none */
	long long	 deadline;	/* lifetime (mono ms), 0: none */
	long long	 linger;	/* leave then, once ended */
	long long	 ended;		/* unix ms */
	char		 sock[sizeof(((struct sockaddr_un *)0)->sun_path)];
	char		 exitf[PATH_MAX], rec[64];
	char		 lock[YX_AGENT_PROCID_MAX + 16];	/* in recdir */
};

extern struct keep_conn	kc[KEEP_CONNS];

/* keeper_io.c */
struct run_args;
int	keep_send(int fd, const void *p, size_t n, long long deadline);
int	keep_frame(int fd, int type, const void *p, size_t n, long long deadline);
int	keep_spawn(struct keeper *k, const struct keep_req *r, struct run_args *a,
    int out);
/* A new pseudo-terminal of size "COLS ROWS": the slave's descriptor
 * (above 2; the master, non-blocking, in *master), or -1. */
int	keep_pty(const char *size, int *master);
/* Parse "COLS ROWS" (1..YX_AGENT_TTY_MAX each). 0 or -1. */
struct winsize;
int	keep_parse_size(const char *s, struct winsize *ws);
void	keep_close(struct keeper *k, struct keep_conn *c);
void	keep_read_out(struct keeper *k);

/*
 * A process of the sandbox as /proc/<pid>/stat tells it. keep_ps fills
 * at most max of them (all the sandbox's, as far as they fit); the count.
 */
struct keep_ps {
	pid_t			pid, ppid, pgrp, sid;
	unsigned long long	start;	/* clock ticks after boot */
};
size_t	keep_ps(struct keep_ps *v, size_t max);
/* Is v[i] a descendant of pid (through the ppid links of v)? */
int	keep_ps_under(const struct keep_ps *v, size_t n, size_t i, pid_t pid);

/* agent_session.c: the session mode's parts of the keeper's loop */
#define SESS_PFDS	(3 + 8)		/* ctl, output, script, orphans */
const char *sess_start(struct keeper *k, const struct keep_req *r,
    char *started, size_t len);
void	sess_command(struct keeper *k, struct keep_conn *c);
int	sess_busy(const struct keeper *k);
void	sess_pollfds(struct keeper *k, struct pollfd *pfd);
void	sess_events(struct keeper *k, const struct pollfd *pfd);
void	sess_conn_event(struct keeper *k, struct keep_conn *c, short revents);
void	sess_timers(struct keeper *k, long long now);
long long sess_next(const struct keeper *k);
void	sess_kill(struct keeper *k);
void	sess_end(struct keeper *k);
int	sess_idle_ended(const struct keeper *k);

#endif /* YUXI_KEEPER_INT_H */
