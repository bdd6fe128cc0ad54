/*
 * suspects.c - leak suspects by growth: the call sites whose live device
 * bytes keep rising, judged from growth.c's samples once the pass is done.
 *
 * A site's points are its samples, then its live bytes at the end. It is a
 * suspect when it held the most late in the run (at a point in the last
 * quarter) and, from the start to that point, its live bytes rose in at
 * least half of the second half's intervals and reached above the most it
 * held in the first half: still rising, not levelling off as weights,
 * optimizer state or a cache that fills do. Up to its most, not to the
 * end, so that a leak the program's teardown frees is still one (docs/commands.md,
 * "Leak suspects"). Sites are judged as the report merges them (sites.c),
 * their samples summed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpushim_trace.h"
#include "analyzer/util/bytes.h"
#include "analyzer/util/idmap.h"
#include "analyzer/model/model.h"
#include "analyzer/model/replay.h"
#include "analyzer/findings/growth.h"
#include "analyzer/symbols/symbols.h"
#include "analyzer/findings/findings.h"

/* A reported site's points: its samples summed over the raw sites it
 * merges, then its live bytes at the end. */
struct series {
    uint64_t key;
    uint64_t v[GS_GROWTH_SAMPLES + 1];
    uint64_t first_ns;
    uint32_t stack_id, site;
    uint64_t live_bytes, live_count;
    struct gs_thread_tally threads;
};

static int by_growth(const void *a, const void *b)
{
    const struct gs_suspect *x = a, *y = b;
    if (x->growth_bytes != y->growth_bytes)
        return x->growth_bytes < y->growth_bytes ? 1 : -1;
    return x->stack_id < y->stack_id ? -1 : x->stack_id > y->stack_id;
}

/* Least squares slope of v against x over points [from, to). */
static double slope(const double *x, const uint64_t *v, unsigned from, unsigned to)
{
    double sx = 0, sv = 0, sxx = 0, sxv = 0, m = to - from;
    for (unsigned k = from; k < to; k++) {
        sx += x[k];
        sv += (double)v[k];
        sxx += x[k] * x[k];
        sxv += x[k] * (double)v[k];
    }
    double d = m * sxx - sx * sx;
    return m >= 2 && d > 0 ? (m * sxv - sx * sv) / d : 0;
}

/* Judges one site's points (n of them: the samples, then the end). */
static int judge(const struct series *s, unsigned n, const uint64_t *time_ns,
                 const uint64_t *step, int by_steps, struct gs_suspect *out)
{
    /* the end is a point of its own only where the site changed after the
     * last sample: a repeat would count as an interval it did not rise in,
     * and as one more point by which its most came early (in a short run
     * one point is a step) */
    unsigned m = n >= 2 && s->v[n - 1] == s->v[n - 2] ? n - 1 : n;
    /* up to the point where it first held its most, which must be late in
     * the run: what it held after is no interval of its rise, and a leak
     * freed at the end (the program's teardown) is still a leak */
    unsigned top = 0;
    for (unsigned k = 0; k < m; k++)
        if (s->v[k] > s->v[top])
            top = k;
    unsigned p = top + 1, half = p / 2;
    if (p < 3 || 4 * top < 3 * (m - 1))
        return 0;
    uint64_t first_max = 0, low = UINT64_MAX;
    unsigned low_at = 0, rising = 0, intervals = 0;
    for (unsigned k = 0; k < half; k++)
        if (s->v[k] > first_max)
            first_max = s->v[k];
    for (unsigned k = 0; k < p; k++)
        if (s->v[k] < low) {
            low = s->v[k];
            low_at = k;
        }
    for (unsigned k = half; k + 1 < p; k++) {
        intervals++;
        rising += s->v[k + 1] > s->v[k];
    }
    if (s->v[top] <= first_max || 2 * rising < intervals || !intervals)
        return 0;
    /* the slopes over the second half: per step without the end (step
     * UINT64_MAX), over two points at least */
    double secs[GS_GROWTH_SAMPLES + 1], steps[GS_GROWTH_SAMPLES + 1];
    for (unsigned k = 0; k < n; k++) {
        secs[k] = (double)time_ns[k] / 1e9;
        steps[k] = (double)step[k];
    }
    unsigned step_to = p == n && step[n - 1] == UINT64_MAX ? p - 1 : p;
    unsigned step_from = step_to - half >= 2 ? half : step_to >= 2 ? step_to - 2 : 0;
    *out = (struct gs_suspect){
        .site = s->site,
        .stack_id = s->stack_id,
        .growth_bytes = s->v[top] - low,
        .live_bytes = s->live_bytes,
        .live_count = s->live_count,
        .first_seen_ns = s->first_ns == UINT64_MAX ? 0 : s->first_ns,
        .from_ns = time_ns[low_at],
        .bytes_per_second = slope(secs, s->v, half, p),
        .bytes_per_step = by_steps ? slope(steps, s->v, step_from, step_to) : -1,
        .rising = rising,
        .intervals = intervals,
        .npoints = n,
        .threads = s->threads,
    };
    gs_tally_sort(&out->threads);
    memcpy(out->v, s->v, n * sizeof *s->v);
    return 1;
}

size_t gs_growth_suspects(const struct gs_replay *r, struct gs_symbolizer *sym,
                          enum gs_stack_view view, struct gs_suspect **out)
{
    const struct gs_growth *g = gs_growth_of(r);
    *out = NULL;
    if (!g->n) /* growth not attached, or nothing sampled */
        return 0;
    struct series *ser = calloc(r->nsites ? r->nsites : 1, sizeof *ser);
    struct gs_idmap *by_key = gs_idmap_new();
    size_t nser = 0;
    if (!ser || !by_key) {
        free(ser);
        gs_idmap_free(by_key);
        return 0;
    }
    for (size_t i = 0; i < r->nsites && i < g->nsites; i++) {
        const struct gs_site *site = &r->sites[i];
        if (site->kind != GS_KIND_DEVICE || !site->allocs)
            continue; /* no allocation of its own: a CUDA graph pool's reserve (graphs.c) */
        uint64_t key = gs_site_key(r, sym, view, site->stack_id), idx;
        if (gs_idmap_get(by_key, key, &idx) != 0) {
            idx = nser++;
            ser[idx] = (struct series){.key = key, .first_ns = UINT64_MAX,
                                       .stack_id = site->stack_id, .site = (uint32_t)i};
            gs_idmap_put(by_key, key, idx);
        }
        struct series *s = &ser[idx];
        const uint64_t *v = g->live + i * GS_GROWTH_SAMPLES;
        for (unsigned k = 0; k < g->n; k++)
            s->v[k] += v[k];
        s->v[g->n] += site->live_bytes;
        s->live_bytes += site->live_bytes;
        s->live_count += site->live_count;
        gs_tally_add_site(&s->threads, site);
        if (g->first_ns[i] < s->first_ns)
            s->first_ns = g->first_ns[i];
    }
    uint64_t time_ns[GS_GROWTH_SAMPLES + 1], step[GS_GROWTH_SAMPLES + 1];
    memcpy(time_ns, g->time_ns, g->n * sizeof *time_ns);
    memcpy(step, g->step, g->n * sizeof *step);
    time_ns[g->n] = r->last_time_ns;
    /* the end: no step's end, even where it ends the last step (often one a
     * failure cut short), so the slopes per step leave it out */
    step[g->n] = UINT64_MAX;
    struct gs_suspect *sus = calloc(nser ? nser : 1, sizeof *sus);
    size_t n = 0;
    for (size_t i = 0; sus && i < nser; i++)
        n += judge(&ser[i], g->n + 1, time_ns, step, g->by_steps, &sus[n]);
    free(ser);
    gs_idmap_free(by_key);
    if (sus)
        qsort(sus, n, sizeof *sus, by_growth);
    *out = sus;
    return sus ? n : 0;
}

const char *gs_suspect_rate(const struct gs_suspect *s, uint64_t run_ns, char *buf, size_t sz)
{
    char b[32];
    double v = gs_suspect_rate_value(s);
    uint64_t whole = gs_whole_bytes(v);
    if (s->bytes_per_step >= 0)
        snprintf(buf, sz, "%s a step", gs_human_bytes(whole, b, sizeof b));
    else if (run_ns < 1000000000ull)
        snprintf(buf, sz, "in a run of %.3f s", (double)run_ns / 1e9);
    else
        snprintf(buf, sz, "%s/s", gs_human_bytes(whole, b, sizeof b));
    return buf;
}

double gs_suspect_rate_value(const struct gs_suspect *s)
{
    return s->bytes_per_step >= 0 ? s->bytes_per_step : s->bytes_per_second;
}
