/*
 * tutil.c - small helpers shared by the Criterion tests (tutil.h).
 */
#include "config.h"

#include <sys/stat.h>

#include <ftw.h>
#include <stdio.h>

#include "tutil.h"

static int
rm_cb(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	(void)remove(p);
	return 0;
}

void
tutil_rmtree(const char *path)
{
	(void)nftw(path, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
}
