/* SPDX-License-Identifier: MIT */
/*
 * test_http.c - the pure helpers of the HTTP layer (src/daemon/http.c):
 * query parsing, percent-coding, Content-Disposition, and the router table;
 * the client-gone check on a socketpair and the request budget settings.
 */
#include "config.h"

#include <sys/socket.h>

#include <criterion/criterion.h>
#include <stdio.h>
#include <fcgiapp.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../src/daemon/daemon_int.h"
#include "yuxi/buf.h"
#include "yuxi/http.h"

Test(http, query_parse)
{
	struct yx_query q;
	size_t len = 0;
	const char *v;

	cr_assert_eq(yx_query_parse(&q, "a=1&b=x%2Fy+z&a=2&&flag&e=", 26, NULL), YX_OK);
	cr_assert_eq(q.n, 5);
	cr_assert_str_eq(yx_query_get(&q, "a", NULL), "1");
	cr_assert_eq(yx_query_count(&q, "a"), 2);
	cr_assert_str_eq(yx_query_get(&q, "b", &len), "x/y z");
	cr_assert_eq(len, 5);
	cr_assert_str_eq(yx_query_get(&q, "flag", NULL), "");
	cr_assert_str_eq(yx_query_get(&q, "e", NULL), "");
	cr_assert_null(yx_query_get(&q, "zz", NULL));
	yx_query_fini(&q);
	cr_assert_eq(yx_query_parse(&q, "p=a%00b", 7, NULL), YX_OK);
	v = yx_query_get(&q, "p", &len);
	cr_assert_eq(len, 3);
	cr_assert_eq(v[1], '\0');
	yx_query_fini(&q);
}

Test(http, query_refuses)
{
	static const char *const bad[] = { "a=%", "a=%4", "a=%zz", "k%00=1" };
	struct yx_query q;
	char many[1024] = "";
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cr_assert_eq(yx_query_parse(&q, bad[i], strlen(bad[i]), NULL), YX_E_BAD_REQUEST,
		    "%s", bad[i]);
		yx_query_fini(&q);
	}
	for (i = 0; i < YX_QUERY_PARAMS_MAX + 1; i++)
		strcat(many, "k=v&");
	cr_assert_eq(yx_query_parse(&q, many, strlen(many), NULL), YX_E_BAD_REQUEST);
	yx_query_fini(&q);
	cr_assert_eq(yx_query_parse(&q, many, YX_QUERY_MAX + 1, NULL), YX_E_BAD_REQUEST);
	yx_query_fini(&q);
}

Test(http, encode_path)
{
	struct yx_buf b;

	yx_buf_init(&b, 4096);
	cr_assert_eq(yx_pct_encode_path(&b, "a b/c?d#e%/..;/\xc3\xa9.txt"), YX_OK);
	cr_assert_str_eq(b.data, "a%20b/c%3Fd%23e%25/..%3B/%C3%A9.txt");
	yx_buf_fini(&b);
}

Test(http, content_disposition)
{
	struct yx_buf b;

	yx_buf_init(&b, 4096);
	cr_assert_eq(yx_content_disposition(&b, "r\xc3\xa9sum\xc3\xa9 \"x\"\r\n%.txt"), YX_OK);
	cr_assert_str_eq(b.data, "attachment; filename=\"r__sum__ _x___\x5f.txt\"; "
				 "filename*=UTF-8''r%C3%A9sum%C3%A9%20%22x%22%0D%0A%25.txt");
	cr_assert_not(yx_header_unsafe(b.data));
	cr_assert(yx_header_unsafe("a\r\nb"));
	yx_buf_fini(&b);
}

Test(http, router)
{
	char arg[256];
	size_t idx;

	cr_assert_eq(yx_router_match(YX_M_GET, "/api/threads/abc", &idx, arg, sizeof(arg)), YX_OK);
	cr_assert_str_eq(arg, "abc");
	cr_assert_eq(yx_routes[idx].fn, yx_h_threads_get);
	cr_assert_eq(yx_router_match(YX_M_DELETE, "/api/threads/abc", &idx, arg, sizeof(arg)), YX_OK);
	cr_assert_eq(yx_routes[idx].fn, yx_h_threads_delete);
	cr_assert_eq(yx_router_match(YX_M_PUT, "/api/threads/abc", &idx, arg, sizeof(arg)),
	    YX_E_METHOD_NOT_ALLOWED);
	cr_assert_eq(yx_router_match(YX_M_GET, "/api/threads/a/b", &idx, arg, sizeof(arg)),
	    YX_E_NOT_FOUND);
	cr_assert_eq(yx_router_match(YX_M_GET, "/api/threads/", &idx, arg, sizeof(arg)),
	    YX_E_NOT_FOUND);
	cr_assert_eq(yx_router_match(YX_M_POST, "/api/admin/sandboxes/0123abcd/release", &idx,
			 arg, sizeof(arg)),
	    YX_OK);
	cr_assert_str_eq(arg, "0123abcd");
	cr_assert_eq(yx_routes[idx].fn, yx_h_admin_release);
	cr_assert_eq(yx_router_match(YX_M_HEAD, "/healthz", &idx, arg, sizeof(arg)), YX_OK);
}

/* A zeroed request r on a connection of its own: a zeroed fr whose socket
 * is sv[0] of a fresh socketpair (sv[1] the peer; the test closes both). */
static void
req_on_socketpair(FCGX_Request *fr, struct yx_http_req *r, int sv[2])
{
	memset(fr, 0, sizeof(*fr));
	memset(r, 0, sizeof(*r));
	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	fr->ipcFd = sv[0];
	r->fcgi = fr;
}

/* The gone check on the request's connection: false while the peer is
 * there (also with unread bytes), true once it closed, false without one. */
Test(http, client_gone)
{
	FCGX_Request		fr;
	struct yx_http_req	r;
	int			sv[2];

	req_on_socketpair(&fr, &r, sv);
	cr_assert_not(yx_http_client_gone(&r));
	cr_assert_eq(write(sv[1], "x", 1), 1);
	cr_assert_not(yx_http_client_gone(&r));
	close(sv[1]);
	cr_assert(yx_http_client_gone(&r));
	close(sv[0]);
	fr.ipcFd = -1;
	cr_assert_not(yx_http_client_gone(&r));
}

/* The MCP endpoint is a route of its own, POST only, not on a sandbox host. */
Test(http, router_mcp)
{
	char	arg[256];
	size_t	idx;

	cr_assert_eq(yx_router_match(YX_M_POST, "/mcp", &idx, arg, sizeof(arg)), YX_OK);
	cr_assert_eq(yx_routes[idx].fn, yx_h_mcp);
	cr_assert_eq(yx_routes[idx].needs & (YX_R_USER | YX_R_JSON | YX_R_SLOT | YX_R_PROVISIONER),
	    YX_R_USER);
	cr_assert_eq(yx_router_match(YX_M_GET, "/mcp", &idx, arg, sizeof(arg)),
	    YX_E_METHOD_NOT_ALLOWED);
	cr_assert_eq(yx_router_match(YX_M_POST, "/mcp/", &idx, arg, sizeof(arg)), YX_E_NOT_FOUND);
}

static int
capture_piece(void *arg, const char *data, size_t len)
{
	struct yx_buf *b = arg;

	return len == 4 && memcmp(data, "stop", 4) == 0 ? YX_E_CLIENT_GONE :
							  yx_buf_append(b, data, len);
}

/*
 * Capture mode: a sub-request has the outer request's identity, id,
 * client and connection, its own method, path, query and body; every
 * writer records into the capture, nothing goes to the connection.
 */
Test(http, capture)
{
	FCGX_Request		fr;
	struct yx_http_req	outer, sub;
	struct yx_http_capture	cap;
	struct yx_errctx	e;
	struct yx_buf		pieces;
	char			buf[8], big[201];
	int			sv[2];

	req_on_socketpair(&fr, &outer, sv);
	snprintf(outer.user, sizeof(outer.user), "alice");
	snprintf(outer.request_id, sizeof(outer.request_id), "rid-1");
	snprintf(outer.client, sizeof(outer.client), "127.0.0.1");
	outer.body_limit = 100;
	yx_http_capture_init(&cap, 200);
	cap.qs = "thread_id=t1&path=a%20b";
	cap.in = "hello";
	cap.in_len = 5;
	cr_assert_eq(yx_http_req_sub(&sub, &outer, YX_M_POST, "/p/api/x", &cap, &e), YX_OK);
	cr_assert_str_eq(sub.user, "alice");
	cr_assert_str_eq(sub.request_id, "rid-1");
	cr_assert_str_eq(sub.method_str, "POST");
	cr_assert_str_eq(sub.path, "/p/api/x");
	cr_assert_str_eq(yx_query_get(&sub.query, "path", NULL), "a b");
	cr_assert_str_eq(yx_http_query_string(&sub), "thread_id=t1&path=a%20b");
	cr_assert_eq(sub.content_length, 5);
	cr_assert_eq(yx_http_read_some(&sub, buf, 3), 3);
	cr_assert_eq(yx_http_read_some(&sub, buf + 3, sizeof(buf)), 2);
	cr_assert_eq(yx_http_read_some(&sub, buf, sizeof(buf)), 0);
	cr_assert_eq(sub.bytes_in, 5);
	cr_assert_eq(yx_http_send_error_hdr(&sub, YX_E_CAPACITY, "busy", "Retry-After: 5\r\n"),
	    YX_OK);
	cr_assert_eq(cap.status, 503);
	cr_assert_eq(sub.status, 503);
	cr_assert_str_eq(cap.retry_after, "5");
	cr_assert_str_eq(cap.ctype, YX_CT_JSON);
	cr_assert(cap.body.len > 0 && !cap.overflow);
	cr_assert_not(yx_http_client_gone(&sub));	/* the outer connection's */
	/* a body beyond the capture's limit */
	yx_buf_reset(&cap.body);
	memset(big, 'x', sizeof(big));
	cr_assert_eq(yx_http_send_raw(&sub, 200, YX_CT_JSON, big, sizeof(big)), YX_E_IO);
	cr_assert(cap.overflow);
	/* a stream's pieces go to on_piece, which can stop it */
	yx_buf_init(&pieces, SIZE_MAX);
	cap.on_piece = capture_piece;
	cap.arg = &pieces;
	cr_assert_eq(yx_http_send_stream(&sub, 200, "application/x-ndjson"), YX_OK);
	cr_assert(cap.streamed);
	cr_assert_eq(yx_http_write(&sub, "ab", 2), YX_OK);
	cr_assert_eq(yx_http_write(&sub, "cd", 2), YX_OK);
	cr_assert_eq(yx_http_write(&sub, "stop", 4), YX_E_IO);
	cr_assert(pieces.len == 4 && memcmp(pieces.data, "abcd", 4) == 0);
	/* nothing reached the connection */
	close(sv[0]);
	cr_assert_eq(read(sv[1], buf, sizeof(buf)), 0);
	close(sv[1]);
	yx_buf_fini(&pieces);
	yx_http_req_fini(&sub);
	yx_http_capture_fini(&cap);
	/* a path that does not fit */
	yx_http_capture_init(&cap, 32);
	cr_assert_eq(yx_http_req_sub(&sub, &outer, YX_M_GET, "api", &cap, &e), YX_E_BAD_REQUEST);
	yx_http_req_fini(&sub);
	yx_http_capture_fini(&cap);
}

/* YUXI_REQUEST_BUDGET_MS / YUXI_WALK_READ_BUDGET: defaults, 0 = none,
 * sizes, refusals naming the variable. */
Test(config, request_budgets)
{
	struct yx_config	c;
	char			eb[160];

	cr_assert_eq(yx_config_load(&c, eb, sizeof(eb)), YX_OK);
	cr_assert_eq(c.request_budget_ms, 5000);
	cr_assert_eq(c.walk_read_budget, 256u << 20);
	setenv("YUXI_REQUEST_BUDGET_MS", "0", 1);
	setenv("YUXI_WALK_READ_BUDGET", "1g", 1);
	cr_assert_eq(yx_config_load(&c, eb, sizeof(eb)), YX_OK);
	cr_assert_eq(c.request_budget_ms, 0);
	cr_assert_eq(c.walk_read_budget, 1ull << 30);
	setenv("YUXI_REQUEST_BUDGET_MS", "-1", 1);
	cr_assert_eq(yx_config_load(&c, eb, sizeof(eb)), YX_E_BAD_REQUEST);
	cr_assert_not_null(strstr(eb, "YUXI_REQUEST_BUDGET_MS"));
	setenv("YUXI_REQUEST_BUDGET_MS", "100", 1);
	setenv("YUXI_WALK_READ_BUDGET", "lots", 1);
	cr_assert_eq(yx_config_load(&c, eb, sizeof(eb)), YX_E_BAD_REQUEST);
	cr_assert_not_null(strstr(eb, "YUXI_WALK_READ_BUDGET"));
	unsetenv("YUXI_REQUEST_BUDGET_MS");
	unsetenv("YUXI_WALK_READ_BUDGET");
}
