/*
 * roles_report.c - memory by role in the report (analyzer/findings/
 * roles.c): a line at the peak and one under each failure kept, in text;
 * in JSON, the object "roles" and each failure's "roles". A run whose
 * driver allocations are a caching allocator's segments gets no roles (a
 * segment holds tensors of every role), and is told why.
 */
#include <inttypes.h>
#include <string.h>

#include "analyzer/findings/roles.h"
#include "analyzer/report/report.h"
#include "analyzer/report/roles_report.h"
#include "analyzer/util/bytes.h"
#include "analyzer/util/json.h"

const char *gs_roles_breakdown_text(const uint64_t by[], char *buf, size_t sz)
{
    uint64_t all = 0;
    int done[GS_ROLE_COUNT] = {0};
    size_t len = 0;
    buf[0] = 0;
    for (int k = 0; k < GS_ROLE_COUNT; k++)
        all += by[k];
    for (int n = 0; n < GS_ROLE_COUNT && len < sz; n++) {
        int best = -1;
        for (int k = 0; k < GS_ROLE_COUNT; k++)
            if (!done[k] && by[k] && (best < 0 || by[k] > by[best]))
                best = k;
        if (best < 0)
            break;
        done[best] = 1;
        char b[32];
        int w = snprintf(buf + len, sz - len, "%s%.0f %% %s %s", n ? ", " : "",
                         100.0 * (double)by[best] / (double)all,
                         gs_role_name((enum gs_role)best), gs_human_bytes(by[best], b, sizeof b));
        len = w < 0 ? sz : len + (size_t)w;
    }
    return buf;
}

static void breakdown(FILE *out, const uint64_t by[GS_ROLE_COUNT])
{
    char buf[512];
    gs_roles_breakdown_text(by, buf, sizeof buf);
    fputs(buf, out);
}

void gs_roles_peak_text(const struct gs_report *rep, char *buf, size_t sz)
{
    const struct gs_findings *fd = rep->found;
    if (fd->roles_not_told) {
        snprintf(buf, sz, "not told: %s", fd->roles_not_told);
        return;
    }
    gs_roles_breakdown_text(fd->roles_at_peak, buf, sz);
    size_t len = strlen(buf);
    if (fd->roles_note[0] && len + 2 < sz)
        snprintf(buf + len, sz - len, "; %s", fd->roles_note);
}

void gs_roles_text_peak(FILE *out, const struct gs_report *rep)
{
    const struct gs_findings *fd = rep->found;
    if (fd->roles_not_told) {
        if (fd->roles_attached && fd->peak_bytes)
            fprintf(out, "By role: not told: %s.\n", fd->roles_not_told);
        return;
    }
    fprintf(out, "By role at the peak: ");
    breakdown(out, fd->roles_at_peak);
    fputc('\n', out);
    if (fd->roles_note[0])
        fprintf(out, "  (%s)\n", fd->roles_note);
}

void gs_roles_text_failure(FILE *out, const struct gs_failure_found *x, const char *lead)
{
    if (!x->has_roles)
        return;
    fprintf(out, "%sby role then: ", lead);
    breakdown(out, x->roles);
    fputc('\n', out);
}

static void roles_object(struct gs_json *j, const char *key, const uint64_t by[GS_ROLE_COUNT])
{
    gs_json_begin_object(j, key);
    for (int k = 0; k < GS_ROLE_COUNT; k++)
        gs_json_uint(j, gs_role_key((enum gs_role)k), by[k]);
    gs_json_end_object(j);
}

void gs_roles_json(struct gs_json *j, const struct gs_findings *fd)
{
    static const char *const bases[] = {"phases", "lifetimes", "none"};
    gs_json_begin_object(j, "roles");
    gs_json_string(j, "not_told", fd->roles_not_told);
    if (fd->roles_not_told) {
        gs_json_null(j, "basis");
        gs_json_null(j, "at_peak");
        gs_json_null(j, "note");
    } else {
        gs_json_string(j, "basis", bases[fd->roles_basis]);
        roles_object(j, "at_peak", fd->roles_at_peak);
        gs_json_string(j, "note", fd->roles_note[0] ? fd->roles_note : NULL);
    }
    gs_json_end_object(j);
}

void gs_roles_json_failure(struct gs_json *j, const struct gs_failure_found *x)
{
    if (!x->has_roles)
        gs_json_null(j, "roles");
    else
        roles_object(j, "roles", x->roles);
}
