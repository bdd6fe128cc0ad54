/*
 * gate.c - owns the regression gate (gate.h): a limit read from
 * --fail-if, a run's figures for it with the call site behind each, and
 * the check, one line per limit broken. The figures are what the events
 * say (bytes and counts, never times), so the same traces always give the
 * same answer.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gpushim_size.h"
#include "analyzer/model/model.h"
#include "analyzer/util/bytes.h"
#include "analyzer/findings/findings.h"
#include "analyzer/findings/found.h"
#include "analyzer/findings/gate.h"
#include "analyzer/findings/roles.h"

static const char *metric_name(enum gs_gate_metric m)
{
    static const char *const names[GS_GATE_ROLE] = {"peak", "unfreed", "leak", "unrecovered"};
    return m < GS_GATE_ROLE ? names[m] : gs_role_key((enum gs_role)(m - GS_GATE_ROLE));
}

/* What a limit's site is, in a few words, by metric. */
static const char *site_words(enum gs_gate_metric m)
{
    static const char *const words[GS_GATE_ROLE] = {"most at the peak", "most never freed",
                                                    "fastest growth", "first failed at"};
    return m < GS_GATE_ROLE ? words[m] : "most of it at the peak";
}

_Static_assert(GS_GATE_METRICS - GS_GATE_ROLE == GS_ROLE_COUNT, "a metric for each role");

int gs_gate_parse(const char *text, struct gs_gate_limit *l, char *err, size_t errsz)
{
    memset(l, 0, sizeof *l);
    char s[64];
    size_t n = 0;
    for (const char *p = text; *p; p++) /* "peak > 20GiB" as "peak>20GiB" */
        if (*p != ' ') {
            if (n + 1 == sizeof s) {
                snprintf(err, errsz, "too long");
                return -1;
            }
            s[n++] = *p;
        }
    s[n] = 0;
    snprintf(l->text, sizeof l->text, "%s", s);
    char *gt = strchr(s, '>');
    if (!gt) {
        snprintf(err, errsz, "a limit is METRIC>VALUE, e.g. 'peak>20GiB' or 'peak>+5%%'");
        return -1;
    }
    *gt = 0;
    int m;
    for (m = 0; m < GS_GATE_METRICS; m++)
        if (!strcmp(s, metric_name((enum gs_gate_metric)m)))
            break;
    if (m == GS_GATE_METRICS) {
        char roles[256];
        size_t n = 0;
        for (int k = 0; k < GS_ROLE_COUNT && n < sizeof roles; k++)
            n += (size_t)snprintf(roles + n, sizeof roles - n, "%s%s", k ? ", " : "",
                                  gs_role_key((enum gs_role)k));
        snprintf(err, errsz, "no metric '%s' (peak, unfreed, leak, unrecovered, or a role: %s)", s,
                 roles);
        return -1;
    }
    l->metric = (enum gs_gate_metric)m;
    char *v = gt + 1;
    if (*v == '+') {
        l->change = 1;
        v++;
    }
    size_t vl = strlen(v);
    if (vl > 1 && v[vl - 1] == '%') {
        if (!l->change) {
            snprintf(err, errsz, "a percentage is a change: '%s>+%s'", s, v);
            return -1;
        }
        v[vl - 1] = 0;
        char *end;
        l->value = strtod(v, &end);
        l->percent = 1;
        if (*end || end == v || !(l->value >= 0) || isinf(l->value)) {
            snprintf(err, errsz, "'%s%%' is not a percentage", v);
            return -1;
        }
        return 0;
    }
    uint64_t x;
    if (l->metric == GS_GATE_UNRECOVERED) {
        char *end;
        unsigned long long c = *v >= '0' && *v <= '9' ? strtoull(v, &end, 10) : 0;
        if (!(*v >= '0' && *v <= '9') || *end) {
            snprintf(err, errsz, "unrecovered takes a count, not '%s'", v);
            return -1;
        }
        x = c;
    } else {
        /* a size, its number maybe with a fraction: "15.5GiB" */
        char *unit = v, one[16] = "1";
        while ((*unit >= '0' && *unit <= '9') || *unit == '.')
            unit++;
        char *end;
        double num = strtod(v, &end);
        if (unit == v || end != unit || strlen(unit) + 2 > sizeof one ||
            gs_parse_size(strcat(one, unit), &x) != 0 || !(num * (double)x < 0x1p64)) {
            snprintf(err, errsz, "'%s' is not a size (20GiB, 1.5G, 512M, bytes)", v);
            return -1;
        }
        l->value = num * (double)x;
        return 0;
    }
    l->value = (double)x;
    return 0;
}

int gs_gate_add(const char *cmd, const char *text, int two_runs, struct gs_gate_limit *limits,
                size_t *n)
{
    char err[160];
    if (*n == GS_GATE_LIMITS) {
        fprintf(stderr, "gpushim %s: at most %d --fail-if limits\n", cmd, GS_GATE_LIMITS);
        return -1;
    }
    if (gs_gate_parse(text, &limits[*n], err, sizeof err) != 0) {
        fprintf(stderr, "gpushim %s: --fail-if '%s': %s\n", cmd, text, err);
        return -1;
    }
    if (limits[*n].change && !two_runs) {
        fprintf(stderr, "gpushim %s: --fail-if '%s': a change needs two runs (gpushim diff "
                        "--fail-if '%s' A B)\n", cmd, text, text);
        return -1;
    }
    (*n)++;
    return 0;
}

/* site's words: "f (a.c:3) from g (a.c:9), 8.00 GiB" (bytes 0: no figure). */
static void site_of(const struct gs_replay *r, struct gs_symbolizer *sym, enum gs_stack_view view,
                    uint32_t stack_id, uint64_t bytes, char *out, size_t sz)
{
    char where[200], b[32];
    gs_site_where(r, sym, view, stack_id, where, sizeof where);
    if (bytes)
        snprintf(out, sz, "%s, %s", where, gs_human_bytes(bytes, b, sizeof b));
    else
        snprintf(out, sz, "%s", where);
}

/* The first of the sites ranked, into out ("" when none). */
static void top_site(const struct gs_replay *r, struct gs_symbolizer *sym, enum gs_stack_view view,
                     const struct gs_report_site *sites, size_t n, char *out, size_t sz)
{
    out[0] = 0;
    if (n && sites[0].bytes)
        site_of(r, sym, view, sites[0].stack_id, sites[0].bytes, out, sz);
}

/* Each role's bytes at the peak, and the site holding most of each then. */
static void roles_of(const struct gs_findings *f, const struct gs_replay *r,
                     struct gs_symbolizer *sym, enum gs_stack_view view, struct gs_gate_run *g)
{
    if (f->roles_not_told) {
        for (int k = 0; k < GS_ROLE_COUNT; k++)
            g->unknown_why[GS_GATE_ROLE + k] = f->roles_not_told;
        return;
    }
    for (int k = 0; k < GS_ROLE_COUNT; k++) {
        g->v[GS_GATE_ROLE + k] = f->roles_at_peak[k];
        g->known[GS_GATE_ROLE + k] =
            gs_role_told(r, (enum gs_role)k, &g->unknown_why[GS_GATE_ROLE + k]);
        size_t u = f->roles_largest[k];
        if (u != SIZE_MAX) {
            uint64_t count, most = gs_site_peak_bytes(r, &f->sites[u], &count);
            site_of(r, sym, view, f->sites[u].stack_id, most, g->site[GS_GATE_ROLE + k],
                    sizeof g->site[0]);
        }
    }
}

void gs_gate_run_of(const struct gs_replay *r, struct gs_symbolizer *sym, enum gs_stack_view view,
                    const struct gs_findings *f, struct gs_gate_run *g)
{
    memset(g, 0, sizeof *g);
    roles_of(f, r, sym, view, g);
    g->v[GS_GATE_PEAK] = f->peak_bytes;
    g->v[GS_GATE_UNFREED] = f->leak_bytes;
    g->v[GS_GATE_UNRECOVERED] = f->unrecovered;
    g->known[GS_GATE_PEAK] = g->known[GS_GATE_UNFREED] = g->known[GS_GATE_UNRECOVERED] = 1;
    top_site(r, sym, view, f->peak_sites, f->npeak_sites, g->site[GS_GATE_PEAK],
             sizeof g->site[0]);
    top_site(r, sym, view, f->leak_sites, f->nleak_sites, g->site[GS_GATE_UNFREED],
             sizeof g->site[0]);
    for (size_t i = 0; i < f->nfailures; i++)
        if (f->failures[i].f->outcome == GS_OUTCOME_UNRECOVERED) {
            site_of(r, sym, view, f->failures[i].f->stack_id, 0, g->site[GS_GATE_UNRECOVERED],
                    sizeof g->site[0]);
            break;
        }
    /* The leak: the suspect growing fastest against the steps; none
     * growing is 0, steps marked or not. */
    g->known[GS_GATE_LEAK] = 1;
    const struct gs_suspect *fastest = NULL;
    for (size_t i = 0; i < f->nsuspects; i++) {
        const struct gs_suspect *s = &f->suspects[i];
        if (s->bytes_per_step < 0)
            g->known[GS_GATE_LEAK] = 0; /* no steps marked */
        else if (!fastest || s->bytes_per_step > fastest->bytes_per_step)
            fastest = s;
    }
    if (g->known[GS_GATE_LEAK] && fastest && fastest->bytes_per_step >= 1.0) {
        g->v[GS_GATE_LEAK] = gs_whole_bytes(fastest->bytes_per_step);
        char where[200], b[32];
        gs_site_where(r, sym, view, fastest->stack_id, where, sizeof where);
        snprintf(g->site[GS_GATE_LEAK], sizeof g->site[0], "%s, %s a step", where,
                 gs_human_bytes(g->v[GS_GATE_LEAK], b, sizeof b));
    }
}

/* A figure as the metric says it: bytes, or a count. */
static const char *figure(enum gs_gate_metric m, uint64_t v, char *buf, size_t sz)
{
    if (m == GS_GATE_UNRECOVERED)
        snprintf(buf, sz, "%llu", (unsigned long long)v);
    else
        gs_human_bytes(v, buf, sz);
    return buf;
}

size_t gs_gate_check(FILE *out, const char *cmd, const struct gs_gate_limit *l, size_t n,
                     const struct gs_gate_run *a, const struct gs_gate_run *b,
                     const char *const grew[GS_GATE_METRICS])
{
    size_t broken = 0;
    for (size_t i = 0; i < n; i++) {
        enum gs_gate_metric m = l[i].metric;
        const char *name = metric_name(m);
        char what[160], x[32], y[32], lim[32];
        if ((l[i].change && !a) || !b->known[m] || (l[i].change && !a->known[m])) {
            fprintf(out, "%s: --fail-if '%s' cannot be checked: %s\n", cmd, l[i].text,
                    l[i].change && !a   ? "a change needs two runs (gpushim diff A B)"
                    : m >= GS_GATE_ROLE ? (b->unknown_why[m] ? b->unknown_why[m]
                                           : a && a->unknown_why[m] ? a->unknown_why[m]
                                                                    : "not told")
                                        : "no steps marked (gpushim_mark)");
            broken++;
            continue;
        }
        uint64_t vb = b->v[m];
        int over;
        if (!l[i].change) {
            over = (double)vb > l[i].value;
            snprintf(what, sizeof what, "%s %s, over %s", name, figure(m, vb, x, sizeof x),
                     figure(m, (uint64_t)l[i].value, lim, sizeof lim));
        } else {
            uint64_t va = a->v[m];
            double d = (double)vb - (double)va;
            over = l[i].percent ? (va ? 100.0 * d / (double)va > l[i].value : d > 0)
                                : d > l[i].value;
            char by[40];
            if (l[i].percent && va)
                snprintf(by, sizeof by, "%+.1f%%", 100.0 * d / (double)va);
            else if (l[i].percent)
                snprintf(by, sizeof by, "%s", d > 0 ? "from none" : "none");
            else
                snprintf(by, sizeof by, "%c%s", d < 0 ? '-' : '+',
                         figure(m, (uint64_t)fabs(d), lim, sizeof lim));
            if (l[i].percent)
                snprintf(lim, sizeof lim, "%g%%", l[i].value);
            else
                figure(m, (uint64_t)l[i].value, lim, sizeof lim);
            snprintf(what, sizeof what, "%s %s -> %s (%s), over +%s", name,
                     figure(m, va, x, sizeof x), figure(m, vb, y, sizeof y), by, lim);
        }
        if (!over)
            continue;
        broken++;
        const char *site = grew && grew[m] && grew[m][0] ? grew[m] : b->site[m];
        if (site[0])
            fprintf(out, "%s: --fail-if '%s' broken: %s; %s: %s\n", cmd, l[i].text, what,
                    grew && grew[m] && grew[m][0] ? "grew most" : site_words(m), site);
        else
            fprintf(out, "%s: --fail-if '%s' broken: %s\n", cmd, l[i].text, what);
    }
    return broken;
}
