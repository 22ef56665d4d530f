/* SPDX-License-Identifier: MIT */
/*
 * yuxi/hash.h - SHA-256 as lowercase hex, the one digest the project uses
 * (sandbox ids, skill-set and container-spec fingerprints).
 */
#ifndef YUXI_HASH_H
#define YUXI_HASH_H

#include <stddef.h>

#define YX_SHA256_HEX	65	/* 64 hex digits + NUL */

/*
 * Hash the n parts (parts[i], lens[i] bytes), joined by '\n', into hex
 * (size YX_SHA256_HEX). YX_OK or YX_E_INTERNAL (libcrypto failure; hex is
 * then all zeros).
 */
int	yx_sha256_hex_parts(const void *const *parts, const size_t *lens, size_t n,
    char hex[YX_SHA256_HEX]);
/* One buffer. */
int	yx_sha256_hex(const void *data, size_t len, char hex[YX_SHA256_HEX]);

#endif /* YUXI_HASH_H */
