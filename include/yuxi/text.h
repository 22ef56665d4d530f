/* SPDX-License-Identifier: MIT */
/*
 * yuxi/text.h - UTF-8 and JSON text, written once for every reply that
 * carries bytes from a sandbox (command output, file content, file names,
 * grep lines): the UTF-8 scanner (RFC 3629), cleaning with U+FFFD, and the
 * JSON string writer (RFC 8259) that escapes and cleans in one pass;
 * base64 for bytes carried in JSON.
 *
 * Two replacement rules exist because two APIs promised them: the agent
 * view (execute, cat, grep, listings) replaces every invalid byte with one
 * U+FFFD; the viewer's file read replaces each maximal ill-formed
 * subsequence with one U+FFFD (Unicode §3.9, as Python's "replace").
 *
 * Ownership: functions append to caller buffers (yx_buf) or return a new
 * json-c object the caller puts.
 */
#ifndef YUXI_TEXT_H
#define YUXI_TEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "yuxi/buf.h"

struct json_object;

enum yx_fffd {
	YX_FFFD_BYTE,		/* one U+FFFD per invalid byte */
	YX_FFFD_MAXIMAL,	/* one per maximal ill-formed subsequence */
};

/* Bytes of the well-formed UTF-8 sequence at s (n > 0 bytes left), 0 when
 * s does not start one (RFC 3629 table 3-7: no overlongs, no surrogates,
 * nothing above U+10FFFF). */
size_t	yx_utf8_seq(const unsigned char *s, size_t n);
/* True when all len bytes of s are well-formed UTF-8. */
bool	yx_utf8_valid(const char *s, size_t len);

/*
 * Where to cut s (len bytes) to keep at most max bytes: max, or less so
 * that no well-formed sequence is split (its bytes all go); len when it
 * fits. Ill-formed bytes are cut anywhere (they stay ill-formed).
 */
size_t	yx_utf8_cut(const char *s, size_t len, size_t max);

/*
 * Bytes at the end of s (0..3) that begin a well-formed sequence the end
 * cut short: a text that arrives in pieces keeps them for the next piece,
 * so that a character split by a piece boundary is neither replaced nor
 * lost (and a piece ends on a character boundary).
 */
size_t	yx_utf8_tail(const char *s, size_t len);

/*
 * Append s to b with ill-formed sequences replaced by U+FFFD under `mode`.
 * With `cut`, a sequence left incomplete by the end of s (the input was
 * cut at a size limit) is dropped rather than replaced. *changed (may be
 * NULL) says whether anything was replaced or dropped. YX_OK or the
 * buffer's error (YX_E_NOMEM, YX_E_PAYLOAD_TOO_LARGE).
 */
int	yx_utf8_clean(struct yx_buf *b, const char *s, size_t len,
    enum yx_fffd mode, bool cut, bool *changed);

/*
 * Append s as a JSON string, quotes included: '"', '\\' and control bytes
 * escaped, invalid bytes replaced (YX_FFFD_BYTE), everything else copied in
 * runs (a word at a time: a reply can be megabytes). YX_OK or the buffer's
 * error.
 */
int	yx_json_str_append(struct yx_buf *b, const char *s, size_t len);

/*
 * A json-c string of s cleaned as yx_utf8_clean(YX_FFFD_BYTE) does, so that
 * every reply is valid UTF-8 JSON. NULL on ENOMEM or len > INT32_MAX.
 */
struct json_object *yx_json_text(const char *s, size_t len);

/* A time (unix ms) as an ISO 8601 json-c string; NULL (JSON null) for 0
 * or less, or ENOMEM. */
struct json_object *yx_json_time(int64_t ms);

/* An environment variable's name: [A-Za-z_][A-Za-z0-9_]*. */
bool	yx_env_name_ok(const char *s);

/*
 * Base64 (RFC 4648 §4, the standard alphabet with '=' padding), for bytes
 * that travel inside JSON (the MCP endpoint's upload and download).
 * yx_base64_append appends the encoding of len bytes to b.
 * yx_base64_decode appends the bytes of the len characters of s to b;
 * ASCII whitespace is skipped and the padding may be left out;
 * YX_E_BAD_REQUEST for any other character, a '=' before the end or a
 * length no encoding has. Both: YX_OK or the buffer's error.
 */
int	yx_base64_append(struct yx_buf *b, const void *data, size_t len);
int	yx_base64_decode(struct yx_buf *b, const char *s, size_t len);

#endif /* YUXI_TEXT_H */
