/* SPDX-License-Identifier: MIT */
/*
 * test_passwd.c - SHA-512-crypt (src/common/passwd.c), the hash
 * `yuxi-sandbox nginx-conf --htpasswd-user` writes for nginx: the test
 * vectors of its specification ("Unix crypt using SHA-256 and SHA-512")
 * and hashes glibc's crypt(3) made on Debian 12 (which is what nginx
 * calls to check them), salts of every length, rounds, an empty and a
 * UTF-8 password; random salts differ and verify.
 */
#include "config.h"

#include <criterion/criterion.h>
#include <string.h>

#include "yuxi/error.h"
#include "yuxi/passwd.h"

struct vec {
	const char	*pw;
	const char	*salt;
	unsigned	 rounds;
	const char	*want;
};

/* From the specification, and from crypt(3) of glibc 2.36 / libxcrypt. */
static const struct vec vecs[] = {
	{ "Hello world!", "saltstring", 5000,
	    "$6$saltstring$svn8UoSVapNtMuq1ukKS4tPQd8iKwSMHWjl/O817G3uBnIFNjnQJuesI68u4OTLiBFdcbYEdFCoEOfaS35inz1" },
	{ "Hello world!", "saltstringsaltstring", 10000,
	    "$6$rounds=10000$saltstringsaltst$OW1/O6BYHV6BcXZu8QVeXbDWra3Oeqh0sbHbbMCVNSnCM/UrjmM0Dp8vOuZeHBy/YTBmSK6H9qs/y3RnOaw5v." },
	{ "a very much longer text to encrypt.  This one even stretches over morethan one line.",
	    "anotherlongsaltstring", 1400,
	    "$6$rounds=1400$anotherlongsalts$POfYwTEok97VWcjxIiSOjiykti.o/pQs.wPvMxQ6Fm7I6IoYN3CmLs66x9t0oSwbtEW7o7UmJEiDwGqd8p4ur1" },
	{ "", "abc", 5000,
	    "$6$abc$mJP3a6FyA8uCnzRtlnNypPwjnvpi5TP9qOrInzrfDmwxUQG38PkpCPdqfTb8JQfAngapMxeim4AZ..hSdRRzD." },
	{ "p\xc3\xa4ss:w\xc3\xb6rd", "0123456789abcdef", 5000,
	    "$6$0123456789abcdef$puNTWg6E2FtwBA8pygy64YOaFzc3DUoXNIeQrj0mf83SRD60A/bgA/KpcMwdHOpR.by3m7iLGI1SQETnWkPp31" },
};

Test(passwd, vectors_of_the_specification_and_of_glibc)
{
	char	out[YX_PASSWD_MAX];
	size_t	i;

	for (i = 0; i < sizeof(vecs) / sizeof(vecs[0]); i++) {
		cr_assert_eq(yx_passwd_sha512(vecs[i].pw, strlen(vecs[i].pw),
				 vecs[i].salt, vecs[i].rounds, out, sizeof(out)),
		    YX_OK);
		cr_expect_str_eq(out, vecs[i].want, "vector %zu", i);
	}
}

Test(passwd, random_salt_is_new_each_time_and_verifies)
{
	char	a[YX_PASSWD_MAX], b[YX_PASSWD_MAX], again[YX_PASSWD_MAX];
	char	salt[YX_PASSWD_SALT + 1];

	cr_assert_eq(yx_passwd_hash("secret", 6, a, sizeof(a)), YX_OK);
	cr_assert_eq(yx_passwd_hash("secret", 6, b, sizeof(b)), YX_OK);
	cr_assert_eq(strncmp(a, "$6$", 3), 0);
	cr_assert_eq(strlen(a), 3 + YX_PASSWD_SALT + 1 + 86, "%s", a);
	cr_assert_str_neq(a, b);
	memcpy(salt, a + 3, YX_PASSWD_SALT);
	salt[YX_PASSWD_SALT] = '\0';
	cr_assert_eq(yx_passwd_sha512("secret", 6, salt, YX_PASSWD_ROUNDS, again,
			 sizeof(again)),
	    YX_OK);
	cr_assert_str_eq(again, a);
	cr_assert_eq(yx_passwd_sha512("secreT", 6, salt, YX_PASSWD_ROUNDS, again,
			 sizeof(again)),
	    YX_OK);
	cr_assert_str_neq(again, a);
}

Test(passwd, bad_arguments)
{
	char	out[YX_PASSWD_MAX], big[2000];

	memset(big, 'x', sizeof(big));
	cr_assert_eq(yx_passwd_sha512("x", 1, "s", 999, out, sizeof(out)),
	    YX_E_BAD_REQUEST);
	cr_assert_eq(yx_passwd_sha512(big, sizeof(big), "s", 5000, out, sizeof(out)),
	    YX_E_BAD_REQUEST);
	cr_assert_eq(yx_passwd_sha512("x", 1, "s", 5000, out, 10), YX_E_BAD_REQUEST);
}
