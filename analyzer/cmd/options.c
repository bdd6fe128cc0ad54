/*
 * options.c - what the commands' option parsing shares (cmd.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include <string.h>

#include "analyzer/util/output.h"
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

FILE *gs_cmd_open_output(const char *cmd, const char *path)
{
    if (path == NULL)
        return stdout;
    FILE *out = gs_open_output(path);
    if (out == NULL)
        fprintf(stderr, "gpushim %s: cannot write %s: %s\n", cmd, path, strerror(errno));
    return out;
}

int gs_cmd_close_output(const char *cmd, FILE *out, const char *path)
{
    int failed = ferror(out) | (path ? fclose(out) : fflush(out));
    if (failed)
        fprintf(stderr, "gpushim %s: cannot write %s\n", cmd, path ? path : "the output");
    return failed ? 1 : 0;
}
