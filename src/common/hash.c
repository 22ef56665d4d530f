/* SPDX-License-Identifier: MIT */
/*
 * hash.c - SHA-256 hex digests with libcrypto's EVP interface; see
 * include/yuxi/hash.h.
 */
#include "config.h"

#include <string.h>

#include <openssl/evp.h>

#include "yuxi/error.h"
#include "yuxi/hash.h"

int
yx_sha256_hex_parts(const void *const *parts, const size_t *lens, size_t n,
    char hex[YX_SHA256_HEX])
{
	static const char	 digits[] = "0123456789abcdef";
	unsigned char		 md[EVP_MAX_MD_SIZE];
	unsigned int		 mdlen = 0, i;
	EVP_MD_CTX		*ctx;
	size_t			 k;
	int			 rc = YX_E_INTERNAL;

	memset(hex, '0', YX_SHA256_HEX - 1);
	hex[YX_SHA256_HEX - 1] = '\0';
	if ((ctx = EVP_MD_CTX_new()) == NULL)
		return rc;
	if (EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) != 1)
		goto done;
	for (k = 0; k < n; k++)
		if ((k > 0 && EVP_DigestUpdate(ctx, "\n", 1) != 1) ||
		    EVP_DigestUpdate(ctx, parts[k], lens[k]) != 1)
			goto done;
	if (EVP_DigestFinal_ex(ctx, md, &mdlen) != 1 || mdlen != 32)
		goto done;
	for (i = 0; i < mdlen; i++) {
		hex[2 * i] = digits[md[i] >> 4];
		hex[2 * i + 1] = digits[md[i] & 0xf];
	}
	rc = YX_OK;
done:
	EVP_MD_CTX_free(ctx);
	return rc;
}

int
yx_sha256_hex(const void *data, size_t len, char hex[YX_SHA256_HEX])
{
	const void *parts[1] = { data };

	return yx_sha256_hex_parts(parts, &len, 1, hex);
}
