/* SPDX-License-Identifier: MIT */
/*
 * yuxi/passwd.h - password hashes for nginx's basic authentication
 * (`yuxi-sandbox nginx-conf --htpasswd-user`, docs/nginx.md).
 *
 * nginx's auth_basic checks a "$apr1$", "{SHA}", "{SSHA}" or "{PLAIN}"
 * entry itself and hands every other one to the C library's crypt(3);
 * glibc's (libxcrypt on Debian 12) verifies SHA-512-crypt, "$6$" (Ulrich
 * Drepper, "Unix crypt using SHA-256 and SHA-512", 2008), the strongest of
 * the schemes both understand that libcrypto's digests can compute. It is
 * computed here with libcrypto's SHA-512 (EVP): no extra tool or library.
 * 5000 rounds, the scheme's default: nginx computes the hash on every
 * request it authenticates, so a costlier setting costs each API call.
 */
#ifndef YUXI_PASSWD_H
#define YUXI_PASSWD_H

#include <stddef.h>

#define YX_PASSWD_MAX		128	/* the longest hash, NUL included */
#define YX_PASSWD_SALT		16	/* salt characters, the scheme's most */
#define YX_PASSWD_ROUNDS	5000	/* the scheme's default */

/*
 * The SHA-512-crypt string of pw (pwlen bytes) with salt (at most 16
 * characters of it are used, stopping at '$') and rounds (1000..999999999;
 * YX_PASSWD_ROUNDS is written without "rounds="), into out (outlen >=
 * YX_PASSWD_MAX): "$6$[rounds=N$]salt$hash". YX_OK, YX_E_BAD_REQUEST for a
 * bad argument, YX_E_INTERNAL when libcrypto fails.
 */
int	yx_passwd_sha512(const char *pw, size_t pwlen, const char *salt,
    unsigned rounds, char *out, size_t outlen);
/* The same with a random salt (RAND_bytes) and the default rounds. */
int	yx_passwd_hash(const char *pw, size_t pwlen, char *out, size_t outlen);

#endif /* YUXI_PASSWD_H */
