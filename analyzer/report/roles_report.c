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
#include "analyzer/symbols/symbols.h"
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

/* What the breakdown at the peak rests on and leaves open, in a sentence:
 * roles told from lifetimes alone, and the largest site left unclassified
 * and why; "" when neither. */
static void peak_note(const struct gs_report *rep, const uint64_t by[GS_ROLE_COUNT],
                      const size_t largest[GS_ROLE_COUNT], char *buf, size_t sz)
{
    const struct gs_replay *r = rep->replay;
    size_t len = 0;
    buf[0] = 0;
    if (gs_roles_basis(r) == GS_BASIS_LIFETIMES) {
        const char *why = NULL;
        gs_role_told(r, GS_ROLE_ACTIVATIONS, &why);
        len = (size_t)snprintf(buf, sz, "told from lifetimes alone: %s", why ? why : "");
    }
    size_t u = largest[GS_ROLE_UNCLASSIFIED];
    if (u == SIZE_MAX || len >= sz)
        return;
    char where[200], a[32], b[32], part[48];
    gs_site_where(r, rep->sym, rep->opt->view, r->sites[u].stack_id, where, sizeof where);
    uint64_t count, at = gs_site_peak_bytes(r, &r->sites[u], &count);
    if (at == by[GS_ROLE_UNCLASSIFIED])
        snprintf(part, sizeof part, "all of it");
    else
        snprintf(part, sizeof part, "%s of it", gs_human_bytes(at, b, sizeof b));
    snprintf(buf + len, sz - len, "%sunclassified %s, %s at %s: %s", len ? "; " : "",
             gs_human_bytes(by[GS_ROLE_UNCLASSIFIED], a, sizeof a), part, where,
             gs_role_why_text(gs_site_role_why(r, rep->sym, u)));
}

void gs_roles_peak_text(const struct gs_report *rep, char *buf, size_t sz)
{
    const char *why = why_not(rep);
    if (why) {
        snprintf(buf, sz, "not told: %s", why);
        return;
    }
    uint64_t by[GS_ROLE_COUNT];
    size_t largest[GS_ROLE_COUNT];
    gs_roles_at_peak(rep->replay, rep->sym, by, largest);
    breakdown_text(by, buf, sz);
    size_t len = strlen(buf);
    if (len + 2 < sz) {
        peak_note(rep, by, largest, buf + len + 2, sz - len - 2);
        if (buf[len + 2])
            memcpy(buf + len, "; ", 2);
    }
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
    size_t largest[GS_ROLE_COUNT];
    gs_roles_at_peak(rep->replay, rep->sym, by, largest);
    fprintf(out, "By role at the peak: ");
    breakdown(out, by);
    fputc('\n', out);
    char note[1024];
    peak_note(rep, by, largest, note, sizeof note);
    if (note[0])
        fprintf(out, "  (%s)\n", note);
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
    static const char *const bases[] = {"phases", "lifetimes", "none"};
    const char *why = why_not(rep);
    gs_json_begin_object(j, "roles");
    gs_json_string(j, "not_told", why);
    if (why) {
        gs_json_null(j, "basis");
        gs_json_null(j, "at_peak");
        gs_json_null(j, "note");
    } else {
        uint64_t by[GS_ROLE_COUNT];
        size_t largest[GS_ROLE_COUNT];
        gs_roles_at_peak(rep->replay, rep->sym, by, largest);
        gs_json_string(j, "basis", bases[gs_roles_basis(rep->replay)]);
        roles_object(j, "at_peak", by);
        char note[1024];
        peak_note(rep, by, largest, note, sizeof note);
        gs_json_string(j, "note", note[0] ? note : NULL);
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
