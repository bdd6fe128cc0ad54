/*
 * options.c - what the commands' option parsing shares (cmd.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "analyzer/cmd/cmd.h"

int gs_opt_count(const char *cmd, const char *opt, const char *s, unsigned *out)
{
    char *end;
    errno = 0;
    unsigned long v = strtoul(s, &end, 10);
    if (errno || *end || !*s || *s == '-' || v == 0 || v > 1000000) {
        fprintf(stderr, "gpushim %s: %s needs a number from 1 to 1000000, not '%s'\n", cmd, opt, s);
        return -1;
    }
    *out = (unsigned)v;
    return 0;
}
