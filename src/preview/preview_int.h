/* SPDX-License-Identifier: MIT */
/*
 * preview_int.h - private to src/preview: the ingress's control protocol
 * (client.c talks it, ingress.c serves it) and what ingress.c and
 * ingress_link.c share.
 *
 * Control: one request per connection to <saves>/preview/ctl.sock (0600,
 * the service's), one line, one line back ("ok ..." or "err <reason>"):
 *   ensure <tid> <port> <uid> <expires ms>   + the run directory (SCM_RIGHTS)
 *       -> ok <socket name> <linked 0|1>
 *   revoke <tid> <port>                      (port 0: all of tid's)
 *       -> ok
 *   conns <tid>                              -> ok <open connections>
 *   stats -> ok <sockets> <sandboxes> <open> <accepted> <refused> <closed>
 *               <bytes in> <bytes out>
 */
#ifndef YUXI_PREVIEW_INT_H
#define YUXI_PREVIEW_INT_H

#include <sys/types.h>

#include <stdbool.h>
#include <stdint.h>

#include "yuxi/config.h"
#include "yuxi/preview.h"
#include "yuxi/threads.h"

#define ING_CTL			"ctl.sock"
#define ING_CTL_MAX		512	/* bytes of a request or an answer */
#define ING_CTL_WAIT_MS		1000	/* a request arrives, an answer comes */
#define ING_REPORT_MAX		64	/* a relay's 'V' payload */

/* One sandbox the ingress hands connections to. */
struct ing_box {
	char		 tid[YX_THREAD_ID_SIZE];	/* "" = free */
	int		 rundir;	/* its agent directory (O_PATH); -1 */
	unsigned	 uid;		/* agent.sock's owner */
	dev_t		 dev;		/* of rundir, to see it replaced */
	ino_t		 ino;
	int		 link;		/* our connection to its relay; -1 */
	char		 rbuf[1100];	/* what the relay sent, not parsed yet */
	size_t		 rlen;
	int		 nconns;	/* connections open into it */
	int		 nlis;		/* its listening sockets */
};

/* Counters (yx_ingress_stats). */
struct ing_counts {
	uint64_t	accepted, refused, closed, bytes_in, bytes_out;
};

/* ingress_link.c: the connection to a box's relay (agent_proto.h 'N'). */
int	ing_link_open(struct ing_box *b);
void	ing_link_close(struct ing_box *b);
/* Hand connection fd (for port) to b's relay. 0, or -1: not handed (the
 * caller closes fd; the link is closed when it broke). */
int	ing_link_pass(struct ing_box *b, int fd, int port);
/* The relay sent something: read and count its reports. false when the
 * link is gone (closed). */
bool	ing_link_read(struct ing_box *b, struct ing_counts *c);
/* Is the link still there (a relay that died, its container gone, hung
 * up: closed now)? Never blocks. */
bool	ing_link_check(struct ing_box *b, struct ing_counts *c);

#endif /* YUXI_PREVIEW_INT_H */
