/* SPDX-License-Identifier: MIT */
/*
 * passwd.c - SHA-512-crypt ("$6$") with libcrypto's SHA-512; see
 * include/yuxi/passwd.h. The steps and their numbers follow the
 * specification ("Unix crypt using SHA-256 and SHA-512", Drepper 2008),
 * whose test vectors tests/common/test_passwd.c checks, together with
 * hashes made by glibc's crypt(3).
 */
#include "config.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include <openssl/evp.h>
#include <openssl/rand.h>

#include "yuxi/error.h"
#include "yuxi/passwd.h"

#define PW_LEN_MAX	1024	/* bytes of a password */
#define PW_ROUNDS_MIN	1000
#define PW_ROUNDS_MAX	999999999U
#define PW_MD		64	/* SHA-512 */

static const char pw_b64[] =
    "./0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/* One digest of the parts (n pairs of pointer and length) into md. */
static bool
pw_digest(EVP_MD_CTX *ctx, unsigned char md[PW_MD], const void *const *parts,
    const size_t *lens, size_t n)
{
	unsigned int	mdlen = 0;
	size_t		i;

	if (EVP_DigestInit_ex(ctx, EVP_sha512(), NULL) != 1)
		return false;
	for (i = 0; i < n; i++)
		if (lens[i] > 0 && EVP_DigestUpdate(ctx, parts[i], lens[i]) != 1)
			return false;
	return EVP_DigestFinal_ex(ctx, md, &mdlen) == 1 && mdlen == PW_MD;
}

/* Add len bytes made of `block` (PW_MD bytes) repeated to ctx. */
static bool
pw_repeat(EVP_MD_CTX *ctx, const unsigned char *block, size_t len)
{
	for (; len >= PW_MD; len -= PW_MD)
		if (EVP_DigestUpdate(ctx, block, PW_MD) != 1)
			return false;
	return len == 0 || EVP_DigestUpdate(ctx, block, len) == 1;
}

/* Steps 1-12: the digest A of password, salt and B. */
static bool
pw_digest_a(EVP_MD_CTX *ctx, const char *pw, size_t pwlen, const char *salt,
    size_t saltlen, unsigned char a[PW_MD])
{
	const void	*pb[3] = { pw, salt, pw };
	const size_t	 lb[3] = { pwlen, saltlen, pwlen };
	unsigned char	 b[PW_MD];
	unsigned int	 mdlen = 0;
	size_t		 n;

	if (!pw_digest(ctx, b, pb, lb, 3) ||
	    EVP_DigestInit_ex(ctx, EVP_sha512(), NULL) != 1 ||
	    EVP_DigestUpdate(ctx, pw, pwlen) != 1 ||
	    (saltlen > 0 && EVP_DigestUpdate(ctx, salt, saltlen) != 1) ||
	    !pw_repeat(ctx, b, pwlen))
		return false;
	for (n = pwlen; n > 0; n >>= 1)
		if ((n & 1) ? EVP_DigestUpdate(ctx, b, PW_MD) != 1 :
			      EVP_DigestUpdate(ctx, pw, pwlen) != 1)
			return false;
	return EVP_DigestFinal_ex(ctx, a, &mdlen) == 1 && mdlen == PW_MD;
}

/* Steps 13-20: the sequences P (pwlen bytes) and S (saltlen bytes). */
static bool
pw_sequences(EVP_MD_CTX *ctx, const char *pw, size_t pwlen, const char *salt,
    size_t saltlen, unsigned char a0, unsigned char *p, unsigned char *s)
{
	unsigned char	dp[PW_MD], ds[PW_MD];
	unsigned int	mdlen = 0;
	size_t		i;

	if (EVP_DigestInit_ex(ctx, EVP_sha512(), NULL) != 1)
		return false;
	for (i = 0; i < pwlen; i++)
		if (EVP_DigestUpdate(ctx, pw, pwlen) != 1)
			return false;
	if (EVP_DigestFinal_ex(ctx, dp, &mdlen) != 1 ||
	    EVP_DigestInit_ex(ctx, EVP_sha512(), NULL) != 1)
		return false;
	for (i = 0; i < 16U + a0; i++)
		if (saltlen > 0 && EVP_DigestUpdate(ctx, salt, saltlen) != 1)
			return false;
	if (EVP_DigestFinal_ex(ctx, ds, &mdlen) != 1)
		return false;
	for (i = 0; i < pwlen; i++)
		p[i] = dp[i % PW_MD];
	memcpy(s, ds, saltlen);
	return true;
}

/* Step 21: the rounds, c in place. */
static bool
pw_rounds(EVP_MD_CTX *ctx, unsigned char c[PW_MD], const unsigned char *p,
    size_t pwlen, const unsigned char *s, size_t saltlen, unsigned rounds)
{
	const void	*parts[4];
	size_t		 lens[4], n;
	unsigned	 r;

	for (r = 0; r < rounds; r++) {
		n = 0;
		parts[n] = (r & 1) ? (const void *)p : c;
		lens[n++] = (r & 1) ? pwlen : PW_MD;
		if (r % 3 != 0) {
			parts[n] = s;
			lens[n++] = saltlen;
		}
		if (r % 7 != 0) {
			parts[n] = p;
			lens[n++] = pwlen;
		}
		parts[n] = (r & 1) ? (const void *)c : p;
		lens[n++] = (r & 1) ? PW_MD : pwlen;
		if (!pw_digest(ctx, c, parts, lens, n))
			return false;
	}
	return true;
}

/* Step 22: the scheme's base-64 of the final digest, after `out`'s end. */
static void
pw_encode(const unsigned char c[PW_MD], char *out)
{
	size_t		o = strlen(out);
	unsigned	i, j, k, w;
	int		m;

	/* byte triples (i, j, k) = (n, n + 21, n + 42) rotated per group */
	for (m = 0; m < 21; m++) {
		i = (unsigned)(m % 3 == 0 ? m : m % 3 == 1 ? m + 21 :
							     m + 42);
		j = (unsigned)(m % 3 == 0 ? m + 21 : m % 3 == 1 ? m + 42 :
								  m);
		k = (unsigned)(m % 3 == 0 ? m + 42 : m % 3 == 1 ? m :
								  m + 21);
		w = (unsigned)c[i] << 16 | (unsigned)c[j] << 8 | c[k];
		for (i = 0; i < 4; i++, w >>= 6)
			out[o++] = pw_b64[w & 0x3f];
	}
	for (w = c[63], i = 0; i < 2; i++, w >>= 6)
		out[o++] = pw_b64[w & 0x3f];
	out[o] = '\0';
}

int
yx_passwd_sha512(const char *pw, size_t pwlen, const char *salt,
    unsigned rounds, char *out, size_t outlen)
{
	unsigned char	 a[PW_MD], p[PW_LEN_MAX], s[YX_PASSWD_SALT];
	EVP_MD_CTX	*ctx = NULL;
	size_t		 saltlen = strcspn(salt, "$");
	int		 rc = YX_E_INTERNAL;

	if (saltlen > YX_PASSWD_SALT)
		saltlen = YX_PASSWD_SALT;
	if (outlen < YX_PASSWD_MAX || pwlen > PW_LEN_MAX ||
	    rounds < PW_ROUNDS_MIN || rounds > PW_ROUNDS_MAX)
		return YX_E_BAD_REQUEST;
	if (rounds == YX_PASSWD_ROUNDS)
		snprintf(out, outlen, "$6$%.*s$", (int)saltlen, salt);
	else
		snprintf(out, outlen, "$6$rounds=%u$%.*s$", rounds, (int)saltlen,
		    salt);
	if ((ctx = EVP_MD_CTX_new()) == NULL)
		goto done;
	if (!pw_digest_a(ctx, pw, pwlen, salt, saltlen, a) ||
	    !pw_sequences(ctx, pw, pwlen, salt, saltlen, a[0], p, s) ||
	    !pw_rounds(ctx, a, p, pwlen, s, saltlen, rounds))
		goto done;
	pw_encode(a, out);
	rc = YX_OK;
done:
	EVP_MD_CTX_free(ctx);
	OPENSSL_cleanse(p, sizeof(p));
	OPENSSL_cleanse(a, sizeof(a));
	if (rc != YX_OK)
		out[0] = '\0';
	return rc;
}

int
yx_passwd_hash(const char *pw, size_t pwlen, char *out, size_t outlen)
{
	unsigned char	rnd[YX_PASSWD_SALT];
	char		salt[YX_PASSWD_SALT + 1];
	size_t		i;

	if (RAND_bytes(rnd, sizeof(rnd)) != 1)
		return YX_E_INTERNAL;
	for (i = 0; i < YX_PASSWD_SALT; i++)
		salt[i] = pw_b64[rnd[i] & 0x3f];
	salt[YX_PASSWD_SALT] = '\0';
	return yx_passwd_sha512(pw, pwlen, salt, YX_PASSWD_ROUNDS, out, outlen);
}
