/*
 * gpushim_naming.h - how GPUSHIM_OUTPUT names a trace file, shared by the
 * shim (which creates the file) and `gpushim run` (which tells the user
 * where it went).
 *
 *   %p  the process id      %h  the host name      %%  a percent sign
 *
 * Any other character, a lone % included, stands for itself.
 */
#ifndef GPUSHIM_NAMING_H
#define GPUSHIM_NAMING_H

#include <stdio.h>
#include <string.h>

#define GS_DEFAULT_OUTPUT "gpushim.%p.trace"

/* Writes the name into out (outsz bytes). Returns 0, or -1 when it does not
 * fit or would be empty. */
static inline int gs_expand_output(const char *tmpl, long pid, const char *host, char *out,
                                   size_t outsz)
{
    size_t n = 0;
    for (const char *p = tmpl; *p; p++) {
        char num[32];
        const char *piece = p;
        size_t len = 1;
        if (p[0] == '%' && (p[1] == 'p' || p[1] == 'h' || p[1] == '%')) {
            p++;
            if (*p == 'p') {
                snprintf(num, sizeof num, "%ld", pid);
                piece = num;
            } else {
                piece = *p == 'h' ? host : "%";
            }
            len = strlen(piece);
        }
        if (n + len + 1 > outsz)
            return -1;
        memcpy(out + n, piece, len);
        n += len;
    }
    out[n] = 0;
    return n ? 0 : -1;
}

#endif
