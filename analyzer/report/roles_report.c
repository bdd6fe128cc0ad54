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
#include "analyzer/model/model.h"
#include "analyzer/report/report.h"
#include "analyzer/report/roles_report.h"
#include "analyzer/util/bytes.h"
#include "analyzer/util/json.h"

static const char *why_not(const struct gs_report *rep)
{
    return gs_roles_not_told(rep->info, rep->replay);
}

/* "41 % activations 8.00 MiB, 30 % optimizer state 6.00 MiB, ..." largest first. */
static void breakdown_text(const uint64_t by[GS_ROLE_COUNT], char *buf, size_t sz)
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
}

static void breakdown(FILE *out, const uint64_t by[GS_ROLE_COUNT])
{
    char buf[512];
    breakdown_text(by, buf, sizeof buf);
    fputs(buf, out);
}

void gs_roles_peak_text(const struct gs_report *rep, char *buf, size_t sz)
{
    const char *why = why_not(rep);
    if (why) {
        snprintf(buf, sz, "not told: %s", why);
        return;
    }
    uint64_t by[GS_ROLE_COUNT];
    gs_roles_at_peak(rep->replay, rep->sym, by, NULL);
    breakdown_text(by, buf, sz);
}

void gs_roles_text_peak(FILE *out, const struct gs_report *rep)
{
    const char *why = why_not(rep);
    if (why) {
        if (gs_roles_of(rep->replay) && rep->replay->peak_bytes)
            fprintf(out, "By role: not told: %s.\n", why);
        return;
    }
    uint64_t by[GS_ROLE_COUNT];
    gs_roles_at_peak(rep->replay, rep->sym, by, NULL);
    fprintf(out, "By role at the peak: ");
    breakdown(out, by);
    fputc('\n', out);
}

void gs_roles_text_failure(FILE *out, const struct gs_report *rep, size_t idx, const char *lead)
{
    uint64_t by[GS_ROLE_COUNT];
    if (why_not(rep) || !gs_roles_at_failure(rep->replay, rep->sym, idx, by))
        return;
    fprintf(out, "%sby role then: ", lead);
    breakdown(out, by);
    fputc('\n', out);
}

static void roles_object(struct gs_json *j, const char *key, const uint64_t by[GS_ROLE_COUNT])
{
    gs_json_begin_object(j, key);
    for (int k = 0; k < GS_ROLE_COUNT; k++)
        gs_json_uint(j, gs_role_key((enum gs_role)k), by[k]);
    gs_json_end_object(j);
}

void gs_roles_json(struct gs_json *j, const struct gs_report *rep)
{
    const char *why = why_not(rep);
    gs_json_begin_object(j, "roles");
    gs_json_string(j, "not_told", why);
    if (why) {
        gs_json_null(j, "at_peak");
    } else {
        uint64_t by[GS_ROLE_COUNT];
        gs_roles_at_peak(rep->replay, rep->sym, by, NULL);
        roles_object(j, "at_peak", by);
    }
    gs_json_end_object(j);
}

void gs_roles_json_failure(struct gs_json *j, const struct gs_report *rep, size_t idx)
{
    uint64_t by[GS_ROLE_COUNT];
    if (why_not(rep) || !gs_roles_at_failure(rep->replay, rep->sym, idx, by))
        gs_json_null(j, "roles");
    else
        roles_object(j, "roles", by);
}
