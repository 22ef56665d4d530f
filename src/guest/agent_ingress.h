/* SPDX-License-Identifier: MIT */
/*
 * agent_ingress.h - the preview relay inside the sandbox (docs/api.md
 * "Previews", src/guest/agent_proto.h 'N'); called by yuxi-agent's handler
 * for a request that is 'H' 'N'.
 *
 * libc only, no heap: the connections' buffers are one anonymous mapping
 * made once (untouched pages cost nothing).
 */
#ifndef YUXI_AGENT_INGRESS_H
#define YUXI_AGENT_INGRESS_H

/*
 * Become the box's preview relay on conn, the host's connection: take each
 * browser connection the host passes ('J', a descriptor and a port),
 * connect it to 127.0.0.1:<port> (else [::1]:<port>) and copy bytes both
 * ways, half-closes included; report each one's bytes when it ends ('V').
 * Exits once the host's end is closed and no connection is left.
 */
void	agent_ingress(int conn) __attribute__((noreturn));

#endif /* YUXI_AGENT_INGRESS_H */
