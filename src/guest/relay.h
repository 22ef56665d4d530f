/* SPDX-License-Identifier: MIT */
/*
 * relay.h - the egress relay inside a sandbox with network (started by
 * yuxi-agent --relay PORT:SOCKET, include/yuxi/egress.h).
 *
 * The relay listens on 127.0.0.1:PORT - the sandbox has no interface but
 * lo - and carries every connection, byte for byte, over the unix socket
 * SOCKET (bind-mounted from the host, read-only) to the host's egress
 * proxy, which decides. It is no boundary: a command may as well connect
 * to SOCKET itself, and kill the relay; the proxy serves only what the
 * sandbox's allowlist allows either way. One process per connection,
 * RELAY_CONNS_MAX at once. libc only, no allocation.
 */
#ifndef YUXI_GUEST_RELAY_H
#define YUXI_GUEST_RELAY_H

#include <sys/types.h>

/* Take "PORT:ABSPATH" (yuxi-agent's --relay). 0, or -1 when malformed. */
int	relay_set(const char *arg);
/*
 * Fork the relay when one was set (closing keep[0..n) in it: the agent's
 * listening socket and lock). 0, or -1 (fork failed).
 */
int	relay_start(const int *close_fds, int n);
/* The agent reaped pid: when it was the relay, start it again (at most
 * RELAY_RESTARTS times). Returns 1 when it was the relay. */
int	relay_reaped(pid_t pid);

#endif /* YUXI_GUEST_RELAY_H */
