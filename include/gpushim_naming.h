/*
 * gpushim_naming.h - how GPUSHIM_OUTPUT names a trace file, shared by the
 * shim (which creates the file) and `gpushim run` (which tells the user
 * where it went).
 *
 *   %p  the process id           %h  the host name
 *   %r  the rank: RANK, OMPI_COMM_WORLD_RANK, SLURM_PROCID or PMI_RANK (0 if none)
 *   %l  the local rank: LOCAL_RANK, OMPI_COMM_WORLD_LOCAL_RANK or SLURM_LOCALID (0 if none)
 *   %t  when the trace began, UTC: 20261202-153000
 *   %%  a percent sign
 *
 * Any other character, a lone % included, stands for itself.
 */
#ifndef GPUSHIM_NAMING_H
#define GPUSHIM_NAMING_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GS_DEFAULT_OUTPUT "gpushim.%p.trace"

struct gs_name_values {
    long pid;
    const char *host;
    const char *rank;
    const char *local_rank;
    const char *start; /* for %t */
};

/* The variables a launcher (torchrun, Open MPI, Slurm, PMI) sets, first
 * match wins. */
#define GS_RANK_VARS "RANK", "OMPI_COMM_WORLD_RANK", "SLURM_PROCID", "PMI_RANK"
#define GS_LOCAL_RANK_VARS "LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID"
#define GS_WORLD_SIZE_VARS "WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "SLURM_NTASKS", "PMI_SIZE"

/* The first of the variables that is set (not empty), else NULL. */
static inline const char *gs_env_set(const char *const *names)
{
    for (; *names; names++) {
        const char *v = getenv(*names);
        if (v && *v)
            return v;
    }
    return NULL;
}

/* The first of the variables that is set, else "0". */
static inline const char *gs_first_env(const char *const *names)
{
    const char *v = gs_env_set(names);
    return v ? v : "0";
}

static inline const char *gs_rank(void)
{
    static const char *const names[] = {GS_RANK_VARS, NULL};
    return gs_first_env(names);
}

static inline const char *gs_local_rank(void)
{
    static const char *const names[] = {GS_LOCAL_RANK_VARS, NULL};
    return gs_first_env(names);
}

/* A job figure from the first of the variables set, plus one (0: none set,
 * or not a decimal number below 2^32): the GS_REC_JOB coding of a rank. */
static inline unsigned long long gs_env_number_plus1(const char *const *names)
{
    const char *v = gs_env_set(names);
    char *end;
    if (!v || *v < '0' || *v > '9')
        return 0;
    unsigned long long n = strtoull(v, &end, 10);
    return *end || n >= 0xffffffffull ? 0 : n + 1;
}

/* Writes the name into out (outsz bytes). Returns 0, or -1 when it does not
 * fit or would be empty. */
static inline int gs_expand_output(const char *tmpl, const struct gs_name_values *v, char *out,
                                   size_t outsz)
{
    size_t n = 0;
    for (const char *p = tmpl; *p; p++) {
        char num[32];
        const char *piece = p;
        size_t len = 1;
        if (p[0] == '%' && p[1] && strchr("phrlt%", p[1])) {
            switch (*++p) {
            case 'p':
                snprintf(num, sizeof num, "%ld", v->pid);
                piece = num;
                break;
            case 'h': piece = v->host; break;
            case 'r': piece = v->rank; break;
            case 'l': piece = v->local_rank; break;
            case 't': piece = v->start; break;
            default: piece = "%"; break;
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
