/* SPDX-License-Identifier: MIT */
/*
 * conffix.h - the fixture of the configuration file tests (tests/common,
 * tests/daemon): a file yuxi-sandbox.conf in a fresh temporary directory,
 * read under an environment without YUXI_*.
 */
#ifndef TESTS_LIB_CONFFIX_H
#define TESTS_LIB_CONFFIX_H

/* The file's path, set by conffix_setup. */
extern char	conffix_path[];

/* Drop every YUXI_* variable, make /tmp/yx-conffix-XXXXXX and name the
 * file in it (not created yet). Failures are Criterion assertions. */
void	conffix_setup(void);
/* Remove the file and the directory. */
void	conffix_teardown(void);
/* Write text as the whole file. */
void	conffix_write(const char *text);

#endif
