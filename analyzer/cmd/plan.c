/*
 * plan.c - gpushim plan: from runs that differ in batch size, how the peak
 * grows with the batch, and the largest batch that fits a card.
 *
 * The peak of a run is the largest peak of device memory on one device
 * (analyzer/findings/cards.c). Over the runs, peak = fixed + per_sample x batch is fitted
 * by least squares (exact integer sums, then one division). The largest
 * batch on a card is the largest whole batch whose predicted peak is at
 * most the card's memory less what the CUDA context takes (--context,
 * default 512 MiB: the peak never counts the context, which takes a few
 * hundred MiB of a real card).
 *
 * How sure: with three runs or more, the residual standard error s of the
 * fit; the range of batches is those whose predicted peak plus s, and
 * minus s, fits. With two runs the line goes through both points, and
 * what is known of their error is what varies within each run: the spread
 * of its per-step peaks (marks.c: the label with the most steps; the
 * largest peak of one step less the smallest among the steps kept). The
 * range is then given by the steepest and the flattest lines through the
 * ends of those spreads; without marked steps, none can be given.
 *
 * When the runs are tensor-level, the largest batch on each card is also
 * searched by replaying the run of the largest batch through the model of
 * PyTorch's caching allocator with its requests scaled per call site
 * (plan_replay.c): that answer counts the allocator's rounding and
 * fragmentation, and is set beside the straight line's.
 */
#include <errno.h>
#include <getopt.h> /* optind */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gpushim_trace.h"
#include "analyzer/util/bytes.h"
#include "analyzer/util/json.h"
#include "analyzer/model/model.h"
#include "analyzer/findings/found.h"
#include "analyzer/report/load.h"
#include "analyzer/cmd/cmd.h"
#include "analyzer/cmd/across_runs.h"
#include "analyzer/cmd/plan_replay.h"

#define DEFAULT_CONTEXT (512ull << 20)
#define MAX_CARDS 16
#define MAX_RUNS 4096 /* keeps the least-squares sums in 128 bits */

static const char usage_plan[] =
    "usage: gpushim plan [options] TRACE[:BATCH] TRACE[:BATCH] ...\n"
    "\n"
    "From two or more runs of a program that differ in batch size, fits the\n"
    "peak of device memory (on one device) as fixed + per_sample x batch, and\n"
    "says the largest batch that fits each card, with a range where the runs\n"
    "allow one (docs/commands.md says how it is estimated).\n"
    "\n"
    "A run's batch size is given after its trace (run.trace:64), or read from\n"
    "its marks: a mark labelled batch=N or batch_size=N (gpushim_mark).\n"
    "\n";

static const char closing_plan[] =
    "Exit status: 0 when planned, 1 when a trace could not be read or the runs\n"
    "cannot give a plan (no batch size, fewer than two batch sizes), 2 for a\n"
    "usage error, 4 when a trace is incomplete.\n";

static const struct gs_command command = {.name = "plan", .usage = usage_plan,
                                          .closing = closing_plan, .reads_traces = 1};

struct run {
    char *path;
    struct gs_read_seen seen; /* what its read saw: the replays read the same */
    uint64_t batch;
    int batch_from_mark;
    char mark[GS_MAX_LABEL + 1]; /* the label it came from */
    uint64_t peak;
    char step_label[GS_MAX_LABEL + 1];
    uint64_t steps;  /* of that label, kept */
    int has_spread;  /* at least two steps */
    uint64_t spread; /* the largest step peak less the smallest */
    int jax;         /* a JAX run (its modules say): XLA's allocator replays it */
};

struct card {
    const char *name;
    uint64_t bytes;
};

struct plan {
    struct run *runs;
    size_t n;
    long double fixed, per_sample;
    int residual;                 /* n >= 3 */
    long double sigma;            /* residual standard error */
    int have_u;                   /* a range can be given */
    long double u;                /* the peak's uncertainty: sigma, or the largest spread */
    long double steep[2], flat[2]; /* two runs: fixed, per_sample of the lines of the range */
    struct card cards[MAX_CARDS];
    size_t ncards;
    uint64_t context;
    /* the replay (plan_replay.c) */
    struct gs_pr_sites **sites;   /* each run's */
    struct gs_wi_setting setting;
    int setting_given; /* --setting: the allocator it names stands */
    int replayed;                 /* 0: why says why not */
    char why[600];
    size_t ref;                   /* the reference run */
    struct gs_pr_answer ra;
    struct gs_pr_card replay[MAX_CARDS];
};

/* "TRACE:N": the batch, and the path without it; 0 when there is none. */
static uint64_t split_batch(const char *arg, char **path)
{
    const char *colon = strrchr(arg, ':');
    *path = NULL;
    if (colon && colon[1]) {
        const char *p = colon + 1;
        while (*p >= '0' && *p <= '9')
            p++;
        if (!*p && colon > arg) {
            errno = 0;
            unsigned long long v = strtoull(colon + 1, NULL, 10);
            *path = strndup(arg, (size_t)(colon - arg));
            return errno || !v || v > UINT32_MAX ? UINT64_MAX : v; /* UINT64_MAX: out of range */
        }
    }
    *path = strdup(arg);
    return 0;
}

/* A batch label: "batch=N" or "batch_size=N". */
static int batch_label(const char *label, uint64_t *out)
{
    const char *v = !strncmp(label, "batch=", 6)        ? label + 6
                    : !strncmp(label, "batch_size=", 11) ? label + 11
                                                         : NULL;
    if (!v || *v < '0' || *v > '9')
        return 0;
    char *end;
    errno = 0;
    unsigned long long n = strtoull(v, &end, 10);
    if (errno || *end || n == 0 || n > UINT32_MAX)
        return 0;
    *out = n;
    return 1;
}

/* The run's figures from its findings: 0, or -1 after saying why. */
static int take_run(struct run *run, const struct gs_findings *f)
{
    const struct gs_marks *m = f->marks;
    run->jax = gs_alloc_mode_jax(&f->mode);
    run->peak = f->largest_device_peak;
    if (!run->batch) {
        for (size_t i = 0; i < m->nlabels; i++) {
            uint64_t b;
            if (!batch_label(m->labels[i].label, &b))
                continue;
            if (run->batch && b != run->batch) {
                fprintf(stderr,
                        "gpushim plan: %s: its marks give two batch sizes (%" PRIu64 " and %" PRIu64
                        "); give the one meant as %s:N\n",
                        run->path, run->batch, b, run->path);
                return -1;
            }
            run->batch = b;
            run->batch_from_mark = 1;
            snprintf(run->mark, sizeof run->mark, "%s", m->labels[i].label);
        }
        if (!run->batch) {
            fprintf(stderr,
                    "gpushim plan: %s: no batch size: give it as %s:N, or mark batch=N in the "
                    "run (gpushim_mark)\n",
                    run->path, run->path);
            return -1;
        }
    }
    /* the steps: of the label with the most steps, not a batch label */
    size_t best = SIZE_MAX;
    for (size_t i = 0; i < m->nlabels; i++) {
        uint64_t b;
        if (batch_label(m->labels[i].label, &b) || !m->labels[i].steps)
            continue;
        if (best == SIZE_MAX || m->labels[i].steps > m->labels[best].steps)
            best = i;
    }
    if (best == SIZE_MAX || !m->steps)
        return 0;
    snprintf(run->step_label, sizeof run->step_label, "%s", m->labels[best].label);
    uint64_t kept = m->nsteps < GS_STEPS_KEPT ? m->nsteps : GS_STEPS_KEPT, lo = UINT64_MAX, hi = 0;
    for (uint64_t k = 0; k < kept; k++) {
        const struct gs_step *s = &m->steps[k];
        if (s->label != best)
            continue;
        run->steps++;
        lo = s->peak_bytes < lo ? s->peak_bytes : lo;
        hi = s->peak_bytes > hi ? s->peak_bytes : hi;
    }
    if (m->labels[best].max_peak > hi)
        hi = m->labels[best].max_peak; /* the largest of all its steps, kept or not */
    if (run->steps >= 2) {
        run->has_spread = 1;
        run->spread = hi - lo;
    }
    return 0;
}

/* Least squares over the runs: 0, or -1 when the batches do not differ. */
static int fit(struct plan *p)
{
    __int128 n = (__int128)p->n, sx = 0, sy = 0, sxx = 0, sxy = 0;
    for (size_t i = 0; i < p->n; i++) {
        __int128 x = p->runs[i].batch, y = p->runs[i].peak;
        sx += x;
        sy += y;
        sxx += x * x;
        sxy += x * y;
    }
    __int128 den = n * sxx - sx * sx;
    if (den == 0)
        return -1;
    p->per_sample = (long double)(n * sxy - sx * sy) / (long double)den;
    p->fixed = ((long double)sy - p->per_sample * (long double)sx) / (long double)n;
    if (p->n >= 3) {
        long double ssr = 0;
        for (size_t i = 0; i < p->n; i++) {
            long double e = (long double)p->runs[i].peak -
                            (p->fixed + p->per_sample * (long double)p->runs[i].batch);
            ssr += e * e;
        }
        p->residual = 1;
        p->sigma = sqrtl(ssr / (long double)(p->n - 2));
        p->have_u = 1;
        p->u = p->sigma;
        return 0;
    }
    /* two runs: the ends of their steps' spreads */
    const struct run *a = &p->runs[0], *b = &p->runs[1];
    if (a->batch > b->batch) {
        const struct run *t = a;
        a = b;
        b = t;
    }
    if (!a->has_spread && !b->has_spread)
        return 0;
    long double u = (long double)(a->spread > b->spread ? a->spread : b->spread);
    long double dx = (long double)(b->batch - a->batch), ya = (long double)a->peak,
                yb = (long double)b->peak, xa = (long double)a->batch;
    p->have_u = 1;
    p->u = u;
    p->steep[1] = (yb + u - (ya - u)) / dx;
    p->steep[0] = ya - u - p->steep[1] * xa;
    p->flat[1] = (yb - u - (ya + u)) / dx;
    p->flat[0] = ya + u - p->flat[1] * xa;
    return 0;
}

/* The largest whole batch with fixed + per_sample x batch <= avail: -1 for
 * no limit (the peak does not grow), 0 when not even one sample fits. */
static long double largest(long double fixed, long double per_sample, long double avail)
{
    if (per_sample <= 0)
        return avail >= fixed ? -1 : 0;
    long double b = floorl((avail - fixed) / per_sample);
    return b < 0 ? 0 : b > 9007199254740992.0L ? 9007199254740992.0L : b;
}

struct answer {
    long double usable, best, lo, hi;
    int range;
};

static void answer(const struct plan *p, const struct card *c, struct answer *a)
{
    a->usable = c->bytes > p->context ? (long double)(c->bytes - p->context) : 0;
    a->best = largest(p->fixed, p->per_sample, a->usable);
    a->range = p->have_u;
    if (!a->range)
        return;
    if (p->residual) {
        a->lo = largest(p->fixed, p->per_sample, a->usable - p->u);
        a->hi = largest(p->fixed, p->per_sample, a->usable + p->u);
    } else {
        a->lo = largest(p->steep[0], p->steep[1], a->usable);
        a->hi = largest(p->flat[0], p->flat[1], a->usable);
    }
}

/* The replay, when every run is tensor-level: p->replayed, or p->why
 * says why not. The reference is the run of the largest batch. */
static void replay(struct plan *p)
{
    p->ref = 0;
    for (size_t i = 1; i < p->n; i++)
        if (p->runs[i].batch > p->runs[p->ref].batch)
            p->ref = i;
    char err[512];
    if (!p->setting_given && p->runs[p->ref].jax &&
        gs_wi_parse_xla("default", &p->setting, err, sizeof err) != 0) {
        snprintf(p->why, sizeof p->why, "%s", err);
        return;
    }
    for (size_t k = 0; k < p->n; k++) {
        size_t i = k == 0 ? p->ref : k == p->ref ? 0 : k; /* the reference first */
        if (gs_pr_sites_source(p->sites[i]) == GS_WI_SRC_NONE) {
            snprintf(p->why, sizeof p->why,
                     "%s has no tensor-level allocation to replay: record the runs with gpushim "
                     "run --per-tensor to have the largest batch with the caching allocator's "
                     "rounding and fragmentation", p->runs[i].path);
            return;
        }
    }
    uint64_t *batch = calloc(p->n, sizeof *batch);
    const struct gs_pr_sites **runs = calloc(p->n, sizeof *runs);
    if (!batch || !runs) {
        snprintf(p->why, sizeof p->why, "out of memory");
        free(batch);
        free(runs);
        return;
    }
    uint64_t usable[MAX_CARDS], total[MAX_CARDS];
    long double linear[MAX_CARDS];
    for (size_t i = 0; i < p->n; i++) {
        batch[i] = p->runs[i].batch;
        runs[i] = p->sites[i];
    }
    for (size_t c = 0; c < p->ncards; c++) {
        struct answer a;
        answer(p, &p->cards[c], &a);
        usable[c] = (uint64_t)a.usable;
        total[c] = p->cards[c].bytes; /* the allocators' fractions are of the whole card */
        linear[c] = a.best;
    }
    struct gs_pr_question q = {.path = p->runs[p->ref].path,
                               .seen = &p->runs[p->ref].seen,
                               .runs = runs,
                               .batch = batch,
                               .nruns = p->n,
                               .ref = p->ref,
                               .total = total,
                               .setting = p->setting,
                               .usable = usable,
                               .linear = linear,
                               .ncards = p->ncards};
    if (gs_pr_replay(&q, p->replay, &p->ra, err, sizeof err) == 0)
        p->replayed = 1;
    else
        snprintf(p->why, sizeof p->why, "replaying %s: %s", p->runs[p->ref].path, err);
    free(batch);
    free(runs);
}

/* The straight line's answer less the replay's: 0 when either is "any". */
static int off_by(long double linear, const struct gs_pr_card *r, int64_t *off)
{
    if (linear < 0 || r->any)
        return 0;
    *off = (int64_t)linear - (int64_t)r->batch;
    return 1;
}

static void batch_json(struct gs_json *j, const char *key, long double b)
{
    if (b < 0)
        gs_json_null(j, key); /* no limit */
    else
        gs_json_uint(j, key, (uint64_t)b);
}

static void plan_json(FILE *out, const struct plan *p)
{
    struct gs_json j = {.out = out};
    gs_json_begin_object(&j, NULL);
    gs_json_begin_array(&j, "runs");
    for (size_t i = 0; i < p->n; i++) {
        const struct run *r = &p->runs[i];
        gs_json_begin_object(&j, NULL);
        gs_json_string(&j, "path", r->path);
        gs_json_uint(&j, "batch", r->batch);
        gs_json_string(&j, "batch_from", r->batch_from_mark ? "mark" : "argument");
        gs_json_uint(&j, "peak_bytes", r->peak);
        gs_json_string(&j, "step_label", r->step_label[0] ? r->step_label : NULL);
        gs_json_uint(&j, "steps", r->steps);
        if (r->has_spread)
            gs_json_uint(&j, "step_peak_spread_bytes", r->spread);
        else
            gs_json_null(&j, "step_peak_spread_bytes");
        gs_json_end_object(&j);
    }
    gs_json_end_array(&j);
    gs_json_begin_object(&j, "fit");
    gs_json_double(&j, "fixed_bytes", (double)p->fixed);
    gs_json_double(&j, "per_sample_bytes", (double)p->per_sample);
    gs_json_uint(&j, "runs", p->n);
    if (p->residual)
        gs_json_double(&j, "residual_std_error_bytes", (double)p->sigma);
    else
        gs_json_null(&j, "residual_std_error_bytes");
    gs_json_string(&j, "uncertainty_from",
                   !p->have_u ? NULL : p->residual ? "residuals" : "step_spread");
    if (p->have_u)
        gs_json_double(&j, "peak_uncertainty_bytes", (double)p->u);
    else
        gs_json_null(&j, "peak_uncertainty_bytes");
    gs_json_end_object(&j);
    gs_json_uint(&j, "context_bytes", p->context);
    gs_json_begin_array(&j, "cards");
    for (size_t i = 0; i < p->ncards; i++) {
        struct answer a;
        answer(p, &p->cards[i], &a);
        gs_json_begin_object(&j, NULL);
        gs_json_string(&j, "name", p->cards[i].name);
        gs_json_uint(&j, "bytes", p->cards[i].bytes);
        gs_json_uint(&j, "usable_bytes", (uint64_t)a.usable);
        batch_json(&j, "largest_batch", a.best);
        if (a.range) {
            batch_json(&j, "largest_batch_low", a.lo);
            batch_json(&j, "largest_batch_high", a.hi);
        } else {
            gs_json_null(&j, "largest_batch_low");
            gs_json_null(&j, "largest_batch_high");
        }
        if (p->replayed) {
            const struct gs_pr_card *r = &p->replay[i];
            int64_t off;
            gs_json_begin_object(&j, "replayed");
            if (r->any)
                gs_json_null(&j, "batch");
            else
                gs_json_uint(&j, "batch", r->batch);
            if (r->batch)
                gs_json_uint(&j, "peak_bytes", r->peak);
            else
                gs_json_null(&j, "peak_bytes");
            gs_json_string(&j, "setting", p->setting.name);
            batch_json(&j, "linear_batch", a.best);
            if (off_by(a.best, r, &off)) {
                gs_json_int(&j, "linear_off_by", off);
                if (r->batch)
                    gs_json_double(&j, "linear_off_by_percent",
                                   100.0 * (double)off / (double)r->batch);
                else
                    gs_json_null(&j, "linear_off_by_percent");
            } else {
                gs_json_null(&j, "linear_off_by");
                gs_json_null(&j, "linear_off_by_percent");
            }
            gs_json_end_object(&j);
        } else {
            gs_json_null(&j, "replayed");
        }
        gs_json_end_object(&j);
    }
    gs_json_end_array(&j);
    if (p->replayed) {
        gs_json_begin_object(&j, "replay");
        gs_json_string(&j, "reference", p->runs[p->ref].path);
        gs_json_uint(&j, "reference_batch", p->runs[p->ref].batch);
        gs_json_string(&j, "allocator", p->setting.allocator == GS_WI_XLA ? "xla" : "torch");
        gs_json_string(&j, "setting", p->setting.name);
        gs_json_uint(&j, "sites_scaled", p->ra.sites_scaled);
        gs_json_uint(&j, "sites_fixed", p->ra.sites_fixed);
        gs_json_uint(&j, "passes", p->ra.passes);
        gs_json_end_object(&j);
        gs_json_null(&j, "replay_unavailable");
    } else {
        gs_json_null(&j, "replay");
        gs_json_string(&j, "replay_unavailable", p->why);
    }
    gs_json_end_object(&j);
}

static const char *bytes_ld(long double v, char *buf, size_t sz)
{
    if (v < 0) {
        char b[48];
        snprintf(buf, sz, "-%s", gs_human_bytes(gs_whole_bytes(-v), b, sizeof b));
        return buf;
    }
    return gs_human_bytes(gs_whole_bytes(v), buf, sz);
}

static const char *batch_text(long double b, char *buf, size_t sz)
{
    if (b < 0)
        snprintf(buf, sz, "any");
    else
        snprintf(buf, sz, "%" PRIu64, (uint64_t)b);
    return buf;
}

static const char *allocator_name(const struct plan *p)
{
    return p->setting.allocator == GS_WI_XLA ? "XLA's BFC allocator" : "PyTorch's caching allocator";
}

/* A card's replayed answer, under its line. */
static void replay_text(FILE *out, const struct plan *p, const struct gs_pr_card *r,
                        long double linear)
{
    char b1[64], b2[64];
    fprintf(out, "    with %s (%s): ", allocator_name(p), p->setting.name);
    if (r->any)
        fputs("any batch fits", out);
    else if (!r->batch)
        fputs("not one sample fits", out);
    else
        fprintf(out, "largest batch %" PRIu64 ", peak %s", r->batch,
                gs_human_bytes(r->peak, b1, sizeof b1));
    fprintf(out, "; the straight line said %s", batch_text(linear, b2, sizeof b2));
    int64_t off;
    if (off_by(linear, r, &off)) {
        fprintf(out, ": off by %+" PRId64, off);
        if (r->batch) { /* two figures at least */
            double pct = 100.0 * (double)off / (double)r->batch, mag = fabs(pct);
            fprintf(out, " (%+.*f %%)", mag >= 10 ? 0 : mag >= 1 ? 1 : 2, pct);
        }
    }
    fputc('\n', out);
}

static void plan_text(FILE *out, const struct plan *p)
{
    char b1[64], b2[64], b3[64];
    fputs("Runs (peak: the largest peak of device memory on one device):\n", out);
    for (size_t i = 0; i < p->n; i++) {
        const struct run *r = &p->runs[i];
        fprintf(out, "  batch %6" PRIu64 "  peak %12s", r->batch, gs_human_bytes(r->peak, b1, sizeof b1));
        if (r->has_spread)
            fprintf(out, "  %" PRIu64 " '%s' steps, their peaks %s apart", r->steps, r->step_label,
                    gs_human_bytes(r->spread, b1, sizeof b1));
        fprintf(out, "  %s", r->path);
        if (r->batch_from_mark)
            fprintf(out, " (marked %s)", r->mark);
        fputc('\n', out);
    }
    fprintf(out, "\nFit  peak = %s + %s x batch  (%zu runs%s)\n", bytes_ld(p->fixed, b1, sizeof b1),
            bytes_ld(p->per_sample, b2, sizeof b2), p->n,
            p->n == 2 ? ": the line through both" : ", least squares");
    if (p->residual)
        fprintf(out, "Uncertainty  residual standard error %s: the range is the batches whose "
                     "peak fits with that added, and with it taken off\n",
                bytes_ld(p->sigma, b1, sizeof b1));
    else if (p->have_u)
        fprintf(out, "Uncertainty  a run's step peaks vary by up to %s: the range is given by the "
                     "steepest and flattest lines through the ends of those spreads\n",
                bytes_ld(p->u, b1, sizeof b1));
    else
        fputs("Uncertainty  none can be estimated from two points (neither run marks two steps "
              "or more with gpushim_mark); a third run gives one\n", out);
    if (p->per_sample <= 0)
        fputs("The peak does not grow with the batch size: any batch fits where the largest "
              "run did.\n", out);
    if (p->replayed)
        fprintf(out, "Replay  the batch %" PRIu64 " run (%s) through %s "
                     "(%s), its requests scaled per call site: %zu site%s grow%s with the batch, "
                     "%zu fixed; %zu pass%s\n",
                p->runs[p->ref].batch, p->runs[p->ref].path, allocator_name(p), p->setting.name,
                p->ra.sites_scaled,
                p->ra.sites_scaled == 1 ? "" : "s", p->ra.sites_scaled == 1 ? "s" : "",
                p->ra.sites_fixed, p->ra.passes, p->ra.passes == 1 ? "" : "es");
    else
        fprintf(out, "Replay  none: %s\n", p->why);
    fprintf(out, "\nLargest batch that fits (%s kept for the CUDA context):\n",
            gs_human_bytes(p->context, b1, sizeof b1));
    fprintf(out, "  %-10s %12s  %13s  %s\n", "card", "usable", "largest batch",
            p->have_u ? "range" : "");
    for (size_t i = 0; i < p->ncards; i++) {
        struct answer a;
        answer(p, &p->cards[i], &a);
        fprintf(out, "  %-10s %12s  %13s", p->cards[i].name,
                bytes_ld(a.usable, b1, sizeof b1), batch_text(a.best, b2, sizeof b2));
        if (a.range)
            fprintf(out, "  %s .. %s", batch_text(a.lo, b1, sizeof b1),
                    batch_text(a.hi, b3, sizeof b3));
        fputc('\n', out);
        if (p->replayed)
            replay_text(out, p, &p->replay[i], a.best);
    }
}

/* --card SIZE (to: the plan): one more card. */
static int take_card(void *to, const char *cmd, const char *arg)
{
    struct plan *p = to;
    if (p->ncards == MAX_CARDS) {
        fprintf(stderr, "gpushim %s: at most %d cards\n", cmd, MAX_CARDS);
        return -1;
    }
    if (gs_multi_parse_size(arg, &p->cards[p->ncards].bytes) != 0 || !p->cards[p->ncards].bytes) {
        fprintf(stderr, "gpushim %s: --card needs a size (80GB, 81920M, bytes), not '%s'\n", cmd,
                arg);
        return -1;
    }
    p->cards[p->ncards++].name = arg;
    return 0;
}

/* --context SIZE (to: a uint64_t). */
static int take_context(void *to, const char *cmd, const char *arg)
{
    if (gs_multi_parse_size(arg, to) == 0)
        return 0;
    fprintf(stderr, "gpushim %s: --context needs a size (512M, bytes), not '%s'\n", cmd, arg);
    return -1;
}

int gs_cmd_plan(int argc, char **argv)
{
    const char *output = NULL;
    static struct plan p; /* large: not on the stack */
    memset(&p, 0, sizeof p);
    p.context = DEFAULT_CONTEXT;
    const char *settings[1];
    size_t nsettings = 0;
    int json = 0;
    const struct gs_opt opts[] = {
        {.name = "card", .arg = "SIZE", .kind = GS_OPT_CALL, .to = &p, .fn = take_card,
         .help = "a card to fit: 80GB (a card as sold: what it reports to CUDA), or bytes with "
                 "K, M, G, T (powers of 1024); may be given more than once (default: 24, 40, "
                 "48, 80, 96, 141 GB)"},
        {.name = "context", .arg = "SIZE", .kind = GS_OPT_CALL, .to = &p.context,
         .fn = take_context,
         .help = "memory kept for the CUDA context on each card (default 512M; 0 for none)"},
        {.name = "setting", .arg = "CONF", .kind = GS_OPT_LIST, .to = settings,
         .n = &nsettings, .max = 1, .full = "one --setting at a time",
         .help = "the PYTORCH_CUDA_ALLOC_CONF value the replay's allocator runs with "
                 "(default: PyTorch's defaults); the replay is made when the runs are "
                 "tensor-level (gpushim run --per-tensor)"},
        GS_OPT_JSON(&json),
        GS_OPT_OUTPUT(&output),
    };
    int rc = gs_opt_parse(&command, opts, sizeof opts / sizeof opts[0], argc, argv);
    if (rc != GS_OPT_GO)
        return rc;
    const char *setting = nsettings ? settings[0] : NULL;
    if (argc - optind > MAX_RUNS) {
        fprintf(stderr, "gpushim plan: at most %d runs\n", MAX_RUNS);
        return 2;
    }
    if (argc - optind < 2) {
        fprintf(stderr, "gpushim plan: two runs or more, of different batch sizes "
                        "(gpushim plan A.trace:32 B.trace:64)\nTry 'gpushim plan --help'.\n");
        return 2;
    }
    /* The setting's words say its allocator (JAX's are NAME=VALUE); without
     * one, the reference run's framework says it, once the runs are read. */
    p.setting_given = setting != NULL;
    {
        char err[512];
        if (gs_wi_parse(setting ? setting : "default", gs_wi_allocator_of(setting),
                        GS_TC_TORCH_NEWEST, &p.setting, err, sizeof err) != 0) {
            fprintf(stderr, "gpushim plan: --setting '%s': %s\n", setting, err);
            return 2;
        }
    }
    if (!p.ncards)
        for (int i = 0; i < GS_NCARDS; i++)
            p.cards[p.ncards++] = (struct card){gs_cards[i].name, gs_cards[i].bytes};
    p.n = (size_t)(argc - optind);
    p.runs = calloc(p.n, sizeof *p.runs);
    p.sites = calloc(p.n, sizeof *p.sites);
    rc = p.runs && p.sites ? 0 : 1;
    if (rc)
        fputs("gpushim plan: out of memory\n", stderr);
    for (size_t i = 0; i < p.n && !rc; i++) {
        struct run *r = &p.runs[i];
        r->batch = split_batch(argv[optind + (int)i], &r->path);
        if (!r->path) {
            fputs("gpushim plan: out of memory\n", stderr);
            rc = 1;
            break;
        }
        if (r->batch == UINT64_MAX) {
            fprintf(stderr, "gpushim plan: %s: a batch size is 1 to 4294967295\n",
                    argv[optind + (int)i]);
            rc = 2;
            break;
        }
        struct gs_loaded l;
        struct gs_event_watch watch;
        if (!(p.sites[i] = gs_pr_sites_new())) {
            fputs("gpushim plan: out of memory\n", stderr);
            rc = 1;
            break;
        }
        gs_pr_sites_watch(p.sites[i], &watch);
        if (gs_load_watch("plan", r->path, &l, &watch) != 0) {
            rc = 1;
            break;
        }
        struct gs_findings f; /* its figures: the plan needs no names of them */
        gs_findings_figures(&f, &l.info, &l.st, &l.r);
        rc = take_run(r, &f) != 0;
        gs_findings_free(&f);
        if (!rc && gs_pr_sites_close(p.sites[i], &l) != 0) {
            fputs("gpushim plan: out of memory\n", stderr);
            rc = 1;
        }
        r->seen = l.seen; /* kept for the replays */
        memset(&l.seen, 0, sizeof l.seen);
        gs_loaded_free(&l);
    }
    if (!rc && fit(&p) != 0) {
        fprintf(stderr, "gpushim plan: every run has batch size %" PRIu64
                        ": runs of two batch sizes or more are needed\n", p.runs[0].batch);
        rc = 1;
    }
    if (!rc)
        replay(&p);
    if (!rc) {
        FILE *out = gs_cmd_open_output("plan", output);
        if (out && json)
            plan_json(out, &p);
        else if (out)
            plan_text(out, &p);
        rc = out ? gs_cmd_close_output("plan", out, output) : 1;
    }
    for (size_t i = 0; p.runs && i < p.n; i++) {
        free(p.runs[i].path);
        gs_read_seen_free(&p.runs[i].seen);
    }
    for (size_t i = 0; p.sites && i < p.n; i++)
        gs_pr_sites_free(p.sites[i]);
    free(p.runs);
    free(p.sites);
    return rc;
}
