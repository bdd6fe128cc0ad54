/*
 * diff.c - gpushim diff A B: what grew between two runs of a program, by
 * call site.
 *
 * Each trace is read whole (load.c) and its device sites ranked three ways
 * (gs_rank_sites: at the run's device peak, never freed, allocated over
 * the run). A site of A and a site of B are the same site when their
 * source frames are (across_runs.c's key: function, file and line of each frame,
 * as the ranking merges them), never by address or stack id, which differ
 * between runs. Sites are listed by how much more they held at B's peak
 * than at A's, largest growth first; a site of one run only is new (in B)
 * or gone (from A).
 */
#include <getopt.h> /* optind */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "analyzer/util/bytes.h"
#include "analyzer/util/idmap.h"
#include "analyzer/util/json.h"
#include "analyzer/util/reserve.h"
#include "analyzer/read/read.h"
#include "analyzer/symbols/symbols.h"
#include "analyzer/findings/found.h"
#include "analyzer/findings/gate.h"
#include "analyzer/report/report.h"
#include "analyzer/report/load.h"
#include "analyzer/cmd/cmd.h"
#include "analyzer/cmd/across_runs.h"

static const char usage_diff[] =
    "usage: gpushim diff [options] A.trace B.trace\n"
    "\n"
    "Compares two recorded runs of a program (before and after a change, a\n"
    "small and a large batch): for each call site, the device memory it held\n"
    "at each run's peak, what it never freed and all it allocated, in A and in\n"
    "B, and the change. Sites are matched by their source frames (function,\n"
    "file, line), not by address, and listed by the growth of their bytes at\n"
    "the peak, largest first; a site in one run only is new (B) or gone (A).\n"
    "\n";

static const char closing_diff[] =
    "Exit status: 0 when both traces were read, 1 when one could not be, 2\n"
    "for a usage error, 3 when a --fail-if limit was broken, 4 when a trace\n"
    "is incomplete.\n";

static const struct gs_command command = {.name = "diff", .usage = usage_diff,
                                          .closing = closing_diff, .reads_traces = 1};

struct side {
    int in;            /* the site is in this run */
    uint32_t stack_id; /* a representative stack, in this run */
    uint64_t peak, peak_count, unfreed, unfreed_count, allocated, allocs;
};

struct dsite {
    char *key;
    struct side s[2];
};

struct table {
    struct dsite *v;
    size_t n, cap;
    struct gs_idmap *by_hash; /* hash of the key (probed on) -> index */
};

static uint64_t hash_key(const char *s)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
    return h;
}

/* The site of key, made if missing: its index, or -1 on no memory (key is
 * the table's after this, or freed). */
static long find_or_add(struct table *t, char *key)
{
    uint64_t h = hash_key(key), at;
    for (;;) {
        if (gs_idmap_get(t->by_hash, h, &at) != 0)
            break;
        if (!strcmp(t->v[at].key, key)) {
            free(key);
            return (long)at;
        }
        h = h * 0x9e3779b97f4a7c15ull + 1; /* another site with that hash: probe on */
    }
    if (gs_reserve((void **)&t->v, &t->cap, t->n, sizeof *t->v) != 0 ||
        gs_idmap_put(t->by_hash, h, t->n) != 0) {
        free(key);
        return -1;
    }
    memset(&t->v[t->n], 0, sizeof t->v[t->n]);
    t->v[t->n].key = key;
    return (long)t->n++;
}

/* The sites of one run: allocated over the run (ranked here), at its peak
 * and never freed (its findings'). */
static int add_run(struct table *t, int side, struct gs_loaded *l, const struct gs_findings *f,
                   enum gs_stack_view view)
{
    static const enum gs_site_metric metrics[] = {GS_METRIC_ALLOCATED, GS_METRIC_PEAK,
                                                  GS_METRIC_LEAK};
    for (size_t m = 0; m < 3; m++) {
        struct gs_report_site *sites = NULL;
        size_t n = metrics[m] == GS_METRIC_PEAK ? f->npeak_sites
                   : metrics[m] == GS_METRIC_LEAK ? f->nleak_sites
                                                  : gs_rank_sites(&l->r, l->sym, view, metrics[m],
                                                                  &sites);
        const struct gs_report_site *ranked = metrics[m] == GS_METRIC_PEAK ? f->peak_sites
                                              : metrics[m] == GS_METRIC_LEAK ? f->leak_sites
                                                                             : sites;
        if (!ranked && metrics[m] == GS_METRIC_ALLOCATED)
            return -1;
        for (size_t i = 0; i < n; i++) {
            char *key = gs_multi_site_key(&l->r, l->sym, view, ranked[i].stack_id);
            long at = key ? find_or_add(t, key) : -1;
            if (at < 0) {
                free(sites);
                return -1;
            }
            struct side *s = &t->v[at].s[side];
            if (!s->in) {
                s->in = 1;
                s->stack_id = ranked[i].stack_id;
            }
            if (metrics[m] == GS_METRIC_ALLOCATED) {
                s->allocated += ranked[i].bytes;
                s->allocs += ranked[i].count;
            } else if (metrics[m] == GS_METRIC_PEAK) {
                s->peak += ranked[i].bytes;
                s->peak_count += ranked[i].count;
            } else {
                s->unfreed += ranked[i].bytes;
                s->unfreed_count += ranked[i].count;
            }
        }
        free(sites);
    }
    return 0;
}

static int64_t change(uint64_t a, uint64_t b) { return (int64_t)(b - a); }

static int by_growth(const void *x, const void *y)
{
    const struct dsite *a = x, *b = y;
    int64_t ga = change(a->s[0].peak, a->s[1].peak), gb = change(b->s[0].peak, b->s[1].peak);
    if (ga != gb)
        return ga < gb ? 1 : -1;
    ga = change(a->s[0].allocated, a->s[1].allocated);
    gb = change(b->s[0].allocated, b->s[1].allocated);
    if (ga != gb)
        return ga < gb ? 1 : -1;
    return strcmp(a->key, b->key);
}

static const char *status(const struct dsite *d)
{
    if (!d->s[0].in)
        return "new";
    if (!d->s[1].in)
        return "gone";
    return d->s[1].peak > d->s[0].peak ? "grew" : d->s[1].peak < d->s[0].peak ? "shrank" : "same";
}

struct diff {
    const char *path[2];
    struct gs_loaded l[2];
    struct gs_findings found[2]; /* each run's (findings/found.h) */
    struct table t;
    enum gs_stack_view view;
    unsigned top, frames;
};

static void run_json(struct gs_json *j, const char *key, const struct diff *d, int i)
{
    const struct gs_loaded *l = &d->l[i];
    const struct gs_findings *f = &d->found[i];
    gs_json_begin_object(j, key);
    gs_json_string(j, "path", d->path[i]);
    gs_json_uint(j, "pid", l->info.header.pid);
    gs_json_string(j, "host", gs_shown_host(&l->info));
    gs_json_uint(j, "peak_bytes", f->peak_bytes);
    gs_json_uint(j, "largest_device_peak_bytes", f->largest_device_peak);
    gs_json_uint(j, "unfreed_bytes", f->leak_bytes);
    gs_json_bool(j, "complete", gs_trace_complete(&l->st));
    gs_json_string(j, "ending", gs_trace_ending(&l->info, &l->st));
    gs_json_end_object(j);
}

static void side_json(struct gs_json *j, const char *key, const struct side *s)
{
    gs_json_begin_object(j, key);
    gs_json_uint(j, "peak_bytes", s->peak);
    gs_json_uint(j, "peak_count", s->peak_count);
    gs_json_uint(j, "unfreed_bytes", s->unfreed);
    gs_json_uint(j, "unfreed_count", s->unfreed_count);
    gs_json_uint(j, "allocated_bytes", s->allocated);
    gs_json_uint(j, "allocations", s->allocs);
    gs_json_end_object(j);
}

static void diff_json(FILE *out, const struct diff *d)
{
    struct gs_json j = {.out = out};
    gs_json_begin_object(&j, NULL);
    run_json(&j, "a", d, 0);
    run_json(&j, "b", d, 1);
    gs_json_int(&j, "peak_change_bytes", change(d->found[0].peak_bytes, d->found[1].peak_bytes));
    gs_json_uint(&j, "sites_total", d->t.n);
    gs_json_begin_array(&j, "sites");
    for (size_t i = 0; i < d->t.n && i < d->top; i++) {
        const struct dsite *s = &d->t.v[i];
        int rep = s->s[1].in ? 1 : 0; /* frames from B, or from A for a site gone */
        gs_json_begin_object(&j, NULL);
        gs_json_string(&j, "status", status(s));
        side_json(&j, "a", &s->s[0]);
        side_json(&j, "b", &s->s[1]);
        gs_json_begin_object(&j, "change");
        gs_json_int(&j, "peak_bytes", change(s->s[0].peak, s->s[1].peak));
        gs_json_int(&j, "unfreed_bytes", change(s->s[0].unfreed, s->s[1].unfreed));
        gs_json_int(&j, "allocated_bytes", change(s->s[0].allocated, s->s[1].allocated));
        gs_json_end_object(&j);
        gs_json_frames(&j, &d->l[rep].r, d->l[rep].sym, d->view, s->s[rep].stack_id);
        gs_json_end_object(&j);
    }
    gs_json_end_array(&j);
    gs_json_end_object(&j);
}

static const char *two(uint64_t a, uint64_t b, char *buf, size_t sz)
{
    char x[32], y[32];
    snprintf(buf, sz, "%s -> %s", gs_human_bytes(a, x, sizeof x), gs_human_bytes(b, y, sizeof y));
    return buf;
}

static void diff_text(FILE *out, const struct diff *d)
{
    char b1[80], b2[80], b3[80], b4[80];
    for (int i = 0; i < 2; i++) {
        const struct gs_loaded *l = &d->l[i];
        fprintf(out, "%s  %s  (pid %" PRIu64 " on %s): peak %s", i ? "B" : "A", d->path[i],
                l->info.header.pid, gs_shown_host(&l->info) ? l->info.header.host : "(left out)",
                gs_human_bytes(d->found[i].peak_bytes, b1, sizeof b1));
        if (!gs_trace_complete(&l->st))
            fprintf(out, ", trace incomplete (%s)", gs_trace_ending(&l->info, &l->st));
        fputc('\n', out);
    }
    uint64_t pa = d->found[0].peak_bytes, pb = d->found[1].peak_bytes;
    fprintf(out, "peak  %s, %s", two(pa, pb, b1, sizeof b1),
            gs_multi_signed_bytes(change(pa, pb), b2, sizeof b2));
    if (pa)
        fprintf(out, " (%+.1f%%)", 100.0 * ((double)pb - (double)pa) / (double)pa);
    fputc('\n', out);

    size_t shown = d->t.n < d->top ? d->t.n : d->top;
    fprintf(out, "\nCall sites by growth at the peak (%zu site%s", d->t.n, d->t.n == 1 ? "" : "s");
    if (shown < d->t.n)
        fprintf(out, ", %zu shown", shown);
    fputs("):\n", out);
    for (size_t i = 0; i < shown; i++) {
        const struct dsite *s = &d->t.v[i];
        int rep = s->s[1].in ? 1 : 0;
        fprintf(out, "  %12s  %-6s  peak %s   unfreed %s   allocated %s\n",
                gs_multi_signed_bytes(change(s->s[0].peak, s->s[1].peak), b1, sizeof b1),
                status(s), two(s->s[0].peak, s->s[1].peak, b2, sizeof b2),
                two(s->s[0].unfreed, s->s[1].unfreed, b3, sizeof b3),
                two(s->s[0].allocated, s->s[1].allocated, b4, sizeof b4));
        gs_multi_frames_text(out, &d->l[rep].r, d->l[rep].sym, d->view, s->s[rep].stack_id,
                             d->frames, "                        ");
    }
    if (!d->t.n)
        fputs("  none: neither run allocated device memory\n", out);
}

/* The site of the table whose figure (at B's peak, or never freed) grew
 * most, in words with its growth, into out ("" when none grew). */
static void grew_most(const struct diff *d, int unfreed, char *out, size_t sz)
{
    const struct dsite *best = NULL;
    int64_t most = 0;
    for (size_t i = 0; i < d->t.n; i++) {
        const struct dsite *s = &d->t.v[i];
        int64_t g = unfreed ? change(s->s[0].unfreed, s->s[1].unfreed)
                            : change(s->s[0].peak, s->s[1].peak);
        if (g > most) {
            most = g;
            best = s;
        }
    }
    out[0] = 0;
    if (!best)
        return;
    char where[200], b[32];
    int rep = best->s[1].in ? 1 : 0;
    gs_site_where(&d->l[rep].r, d->l[rep].sym, d->view, best->s[rep].stack_id, where,
                  sizeof where);
    snprintf(out, sz, "%s, %s", where, gs_multi_signed_bytes(most, b, sizeof b));
}

/* --fail-if: the limits checked against B and its change from A; how
 * many were broken. */
static size_t gate(const struct diff *d, const struct gs_gate_limit *limits, size_t n)
{
    static struct gs_gate_run run[2];
    char peak[256], unfreed[256];
    for (int i = 0; i < 2; i++)
        gs_gate_run_of(&d->l[i].r, d->l[i].sym, d->view, &d->found[i], &run[i]);
    grew_most(d, 0, peak, sizeof peak);
    grew_most(d, 1, unfreed, sizeof unfreed);
    const char *const grew[GS_GATE_METRICS] = {[GS_GATE_PEAK] = peak,
                                               [GS_GATE_UNFREED] = unfreed};
    return gs_gate_check(stderr, "gpushim diff", limits, n, &run[0], &run[1], grew);
}

int gs_cmd_diff(int argc, char **argv)
{
    struct diff d = {.view = GS_VIEW_MERGED, .frames = 6};
    const char *output = NULL;
    struct gs_gate_limit limits[GS_GATE_LIMITS];
    struct gs_opt_limits gates = {.v = limits, .two_runs = 1};
    int json = 0;
    const struct gs_opt opts[] = {
        GS_OPT_JSON(&json),
        {.name = "top", .arg = "N", .kind = GS_OPT_COUNT, .to = &d.top,
         .help = "call sites listed (default 10 for text, all for JSON)"},
        {.name = "frames", .arg = "N", .kind = GS_OPT_COUNT, .to = &d.frames,
         .help = "stack frames shown per call site in text (default 6)"},
        {.name = "native", .kind = GS_OPT_CALL, .to = &d.view, .fn = gs_opt_native,
         .help = "native stacks alone: sites matched by their native frames"},
        GS_OPT_SYMBOLS,
        {.name = "fail-if", .arg = "LIMIT", .kind = GS_OPT_CALL, .to = &gates,
         .fn = gs_opt_fail_if,
         .help = "exit 3, one line on stderr per limit broken, naming the call site that grew "
                 "most: 'peak>+5%' (B's peak over A's by more than 5%), 'peak>+1GiB' (by more "
                 "than 1 GiB), 'peak>20GiB' (B's own); the same for unfreed, leak (the fastest "
                 "leak suspect's growth per marked step) and unrecovered (failed allocations); "
                 "more than once"},
        GS_OPT_OUTPUT(&output),
    };
    int rc = gs_opt_parse(&command, opts, sizeof opts / sizeof opts[0], argc, argv);
    if (rc != GS_OPT_GO)
        return rc;
    if (argc - optind != 2) {
        fprintf(stderr, "gpushim diff: %s\nTry 'gpushim diff --help'.\n",
                argc - optind < 2 ? "two traces to compare (gpushim diff A.trace B.trace)"
                                  : "two traces, no more");
        return 2;
    }
    if (!d.top)
        d.top = json ? UINT32_MAX : 10;
    d.path[0] = argv[optind];
    d.path[1] = argv[optind + 1];
    if (gs_load("diff", d.path[0], &d.l[0]) != 0)
        return 1;
    if (gs_load("diff", d.path[1], &d.l[1]) != 0) {
        gs_loaded_free(&d.l[0]);
        return 1;
    }
    rc = 0;
    for (int i = 0; i < 2; i++)
        gs_findings_make(&d.found[i], &d.l[i].info, &d.l[i].st, &d.l[i].r, d.l[i].sym, d.view,
                         NULL);
    d.t.by_hash = gs_idmap_new();
    if (!d.t.by_hash || add_run(&d.t, 0, &d.l[0], &d.found[0], d.view) != 0 ||
        add_run(&d.t, 1, &d.l[1], &d.found[1], d.view) != 0) {
        fputs("gpushim diff: out of memory\n", stderr);
        rc = 1;
    } else {
        if (d.t.n)
            qsort(d.t.v, d.t.n, sizeof *d.t.v, by_growth);
        FILE *out = gs_cmd_open_output("diff", output);
        if (out && json)
            diff_json(out, &d);
        else if (out)
            diff_text(out, &d);
        rc = out ? gs_cmd_close_output("diff", out, output) : 1;
        if (gates.n && gate(&d, limits, gates.n) && !rc)
            rc = 3;
    }
    for (size_t i = 0; i < d.t.n; i++)
        free(d.t.v[i].key);
    free(d.t.v);
    gs_idmap_free(d.t.by_hash);
    gs_findings_free(&d.found[0]);
    gs_findings_free(&d.found[1]);
    gs_loaded_free(&d.l[0]);
    gs_loaded_free(&d.l[1]);
    return rc;
}
