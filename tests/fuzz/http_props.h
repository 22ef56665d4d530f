/* SPDX-License-Identifier: MIT */
/*
 * http_props.h - the properties the HTTP-layer fuzzers assert, shared by
 * the libFuzzer harnesses (fuzz_query.c, fuzz_json.c, fuzz_fcgi.c) and the
 * Criterion test that replays their seed corpora in every `make check`
 * (tests/security/test_http_corpus.c). Each returns NULL when every
 * property holds, else a static description of the first one violated.
 */
#ifndef TESTS_FUZZ_HTTP_PROPS_H
#define TESTS_FUZZ_HTTP_PROPS_H

#include <stddef.h>
#include <stdint.h>

/* data as a raw QUERY_STRING; and (up to its first NUL) as a file name
 * through the X-Accel-Redirect and Content-Disposition encoders. */
const char	*query_props_check(const uint8_t *data, size_t size);
/* data as a JSON request body (yx_json_parse_object). */
const char	*json_props_check(const uint8_t *data, size_t size);
/* data split at NUL bytes into FastCGI params (REQUEST_METHOD,
 * DOCUMENT_URI, QUERY_STRING, CONTENT_LENGTH, YUXI_USER, YUXI_ROLE,
 * HTTP_X_YUXI_USER) through yx_http_req_init() and route matching. */
const char	*fcgi_props_check(const uint8_t *data, size_t size);

#endif
