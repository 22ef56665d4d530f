/* SPDX-License-Identifier: MIT */
/*
 * egress_int.h - private interface of src/egress: the layout of the proxy's
 * directory, the control protocol, and one proxied connection (conn.c).
 *
 * Directory (made by the proxy, the service's own): <saves>/egress/ (0711)
 * holds ctl.sock (0600: the control socket workers ask) and sb/ (0711);
 * sb/<thread>/ (0755) holds proxy.sock, owned by the thread's sandbox
 * user, mode 0600, and is bind-mounted read-only at /opt/yuxi/egress in
 * that thread's sandbox only. Nothing in a sandbox can write there.
 *
 * Control protocol (ctl.sock, one request per connection, at most
 * EGRESS_CTL_MAX bytes, text):
 *	ensure <thread> <uid> <gid>\n
 *	allow <host>:<port|*>\n		(1..64 lines)
 *	private <host>\n		(0..64 lines)
 *	end\n
 * answered by "ok\n" or "err <reason>\n".
 */
#ifndef YUXI_EGRESS_INT_H
#define YUXI_EGRESS_INT_H

#include "yuxi/config.h"
#include "yuxi/egress.h"

#define EGRESS_DIR		"egress"
#define EGRESS_CTL		"ctl.sock"
#define EGRESS_SB		"sb"
#define EGRESS_REG		"reg"	/* each registration's request, for a restart */
#define EGRESS_CTL_MAX		(32 << 10)	/* bytes of one control request */
#define EGRESS_CTL_WAIT_MS	5000		/* a control exchange, each way */

/*
 * Serve one accepted connection `fd` of thread `tid` under policy `pol`
 * (a CONNECT or an absolute-URI HTTP request, then the bytes both ways)
 * and exit: runs in a child of the proxy, which it never returns to.
 */
void	egress_conn_serve(const struct yx_config *cfg, int fd, const char *tid,
    const struct yx_egress_policy *pol) __attribute__((noreturn));

#endif /* YUXI_EGRESS_INT_H */
