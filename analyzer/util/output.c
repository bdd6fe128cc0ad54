/*
 * output.c - the files the analyzer writes for the user: an export or an
 * answer holds what the trace holds (the command line, the host, the call
 * sites), so a new one is made readable by its owner alone, as the shim
 * makes the trace (docs/limits.md), whatever the umask. A file that is
 * already there keeps the mode its owner gave it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "analyzer/util/output.h"

FILE *gs_open_output(const char *path)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOCTTY, 0600);
    if (fd < 0)
        return NULL;
    FILE *f = fdopen(fd, "w");
    if (!f) {
        int e = errno;
        close(fd);
        errno = e;
    }
    return f;
}
