/*
 * plan_replay.c - owns gpushim plan's replay: each run's tensor-level
 * requests gathered by call site as the run loads (what the whatif replay
 * takes as tensors, analyzer/whatif/whatif.c), each site's mean request
 * fitted against the batch over the runs, and the reference run (the
 * largest batch) replayed at other batches with its requests scaled per
 * site, through the model of PyTorch's caching allocator on each card, to
 * find the largest batch that does not run out.
 *
 * A site's mean request is fitted as fixed + per_sample x batch by least
 * squares. A site missing from a run, or whose fitted mean moves by less
 * than half a byte over the batches given, is fixed: replayed at its
 * recorded sizes. A request of a scaled site is replayed at batch X as its
 * size x (fixed + per_sample x X) / (fixed + per_sample x b_ref), rounded
 * to a whole byte, at least 1 when it was. Memory outside the allocator
 * (the run's own cudaMalloc beside stream-ordered tensors) is not scaled.
 *
 * The search: each pass replays the reference once with up to GS_WI_CASES
 * (batch, card) pairs side by side. A card's first candidates are a
 * geometric grid from 1 to four times the straight line's answer; while
 * every candidate fits, the next go on by factors of four; once one runs
 * out, the candidates lie evenly between the largest that fits below the
 * smallest that runs out and that one, until they are adjacent.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analyzer/util/idmap.h"
#include "analyzer/cmd/across_runs.h"
#include "analyzer/cmd/plan_replay.h"

/* ---- one run's sites ---- */

struct stack_sum {
    uint32_t stack_id;
    uint64_t count, bytes; /* the requests that did not fail */
    size_t site;           /* after close: index in sites */
};

struct site_sum {
    char *key;
    uint64_t count, bytes;
};

struct gs_pr_sites {
    struct gs_whatif *w; /* while loading: decides what the tensors are */
    enum gs_wi_source source;
    struct gs_idmap *by_stack; /* stack id -> index in stacks */
    struct stack_sum *stacks;
    size_t nstacks, cap;
    struct site_sum *sites; /* sorted by key */
    size_t nsites;
    int nomem;
};

static void stacks_clear(struct gs_pr_sites *s)
{
    gs_idmap_free(s->by_stack);
    s->by_stack = gs_idmap_new();
    s->nstacks = 0;
    if (!s->by_stack)
        s->nomem = 1;
}

/* The gathering replay's tap: counts the request at its stack. What was
 * counted under an earlier source was not tensors (whatif.c starts over
 * when the source changes). */
static void gather(void *ctx, const struct gs_revent *e)
{
    struct gs_pr_sites *s = ctx;
    enum gs_wi_source src = gs_whatif_source(s->w);
    if (src != s->source) {
        s->source = src;
        stacks_clear(s);
    }
    if (s->nomem || e->type == GS_REC_ALLOC_FAILED)
        return;
    uint64_t i;
    if (gs_idmap_get(s->by_stack, e->stack_id, &i) != 0) {
        if (s->nstacks == s->cap) {
            size_t cap = s->cap ? s->cap * 2 : 64;
            struct stack_sum *n = realloc(s->stacks, cap * sizeof *n);
            if (!n) {
                s->nomem = 1;
                return;
            }
            s->stacks = n;
            s->cap = cap;
        }
        i = s->nstacks;
        if (gs_idmap_put(s->by_stack, e->stack_id, i) != 0) {
            s->nomem = 1;
            return;
        }
        s->stacks[s->nstacks++] = (struct stack_sum){.stack_id = e->stack_id};
    }
    s->stacks[i].count++;
    s->stacks[i].bytes += e->size;
}

struct gs_pr_sites *gs_pr_sites_new(void)
{
    struct gs_pr_sites *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    /* no case: no model runs, the replay only says what the tensors are */
    if (!(s->w = gs_whatif_new(NULL, 0, NULL, 0)) || !(s->by_stack = gs_idmap_new())) {
        gs_pr_sites_free(s);
        return NULL;
    }
    gs_whatif_set_tap(s->w, gather, s);
    return s;
}

void gs_pr_sites_free(struct gs_pr_sites *s)
{
    if (!s)
        return;
    gs_whatif_free(s->w);
    gs_idmap_free(s->by_stack);
    free(s->stacks);
    for (size_t i = 0; i < s->nsites; i++)
        free(s->sites[i].key);
    free(s->sites);
    free(s);
}

static void on_event(void *ctx, struct gs_loaded *l, const struct gs_revent *e)
{
    struct gs_pr_sites *s = ctx;
    (void)l;
    gs_whatif_event(s->w, e);
}

void gs_pr_sites_watch(struct gs_pr_sites *s, struct gs_event_watch *w)
{
    *w = (struct gs_event_watch){.ctx = s, .before = on_event};
}

static int by_key(const void *a, const void *b)
{
    return strcmp(((const struct site_sum *)a)->key, ((const struct site_sum *)b)->key);
}

/* The index of key in the run's sites, or SIZE_MAX. */
static size_t site_of(const struct gs_pr_sites *s, const char *key)
{
    size_t lo = 0, hi = s->nsites;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(s->sites[mid].key, key);
        if (!c)
            return mid;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return SIZE_MAX;
}

int gs_pr_sites_close(struct gs_pr_sites *s, struct gs_loaded *l)
{
    gs_whatif_finish(s->w);
    s->source = gs_whatif_source(s->w);
    gs_whatif_free(s->w);
    s->w = NULL;
    if (s->nomem)
        return -1;
    /* one entry per stack, then those of the same key merged */
    struct site_sum *all = s->nstacks ? calloc(s->nstacks, sizeof *all) : NULL;
    if (s->nstacks && !all)
        return -1;
    for (size_t i = 0; i < s->nstacks; i++) {
        all[i] = (struct site_sum){
            .key = gs_multi_site_key(&l->r, l->sym, GS_VIEW_MERGED, s->stacks[i].stack_id),
            .count = s->stacks[i].count,
            .bytes = s->stacks[i].bytes};
        if (!all[i].key) {
            for (size_t k = 0; k < i; k++)
                free(all[k].key);
            free(all);
            return -1;
        }
    }
    if (s->nstacks)
        qsort(all, s->nstacks, sizeof *all, by_key);
    size_t n = 0;
    for (size_t i = 0; i < s->nstacks; i++) {
        if (n && !strcmp(all[n - 1].key, all[i].key)) {
            all[n - 1].count += all[i].count;
            all[n - 1].bytes += all[i].bytes;
            free(all[i].key);
        } else {
            all[n++] = all[i];
        }
    }
    s->sites = all;
    s->nsites = n;
    /* each stack's site, by its key again (the sort moved them) */
    for (size_t i = 0; i < s->nstacks; i++) {
        char *key = gs_multi_site_key(&l->r, l->sym, GS_VIEW_MERGED, s->stacks[i].stack_id);
        if (!key)
            return -1;
        s->stacks[i].site = site_of(s, key);
        free(key);
    }
    return 0;
}

enum gs_wi_source gs_pr_sites_source(const struct gs_pr_sites *s) { return s->source; }

/* ---- the sites' fits ---- */

/* A scaled site's request at batch X is size x (a + b X). */
struct factor {
    long double a, b;
};

/* Fits the reference's site i over the runs: 1 and f set when it grows
 * with the batch, 0 when it is fixed. */
static int fit_site(const struct gs_pr_question *q, size_t i, struct factor *f)
{
    const struct gs_pr_sites *ref = q->runs[q->ref];
    long double n = (long double)q->nruns, sx = 0, sy = 0, sxx = 0, sxy = 0;
    uint64_t bmin = UINT64_MAX, bmax = 0;
    for (size_t r = 0; r < q->nruns; r++) {
        size_t j = r == q->ref ? i : site_of(q->runs[r], ref->sites[i].key);
        if (j == SIZE_MAX || !q->runs[r]->sites[j].count)
            return 0; /* not in every run */
        const struct site_sum *s = &q->runs[r]->sites[j];
        long double x = (long double)q->batch[r], y = (long double)s->bytes / (long double)s->count;
        sx += x;
        sy += y;
        sxx += x * x;
        sxy += x * y;
        bmin = q->batch[r] < bmin ? q->batch[r] : bmin;
        bmax = q->batch[r] > bmax ? q->batch[r] : bmax;
    }
    long double den = n * sxx - sx * sx;
    if (den <= 0)
        return 0;
    long double per = (n * sxy - sx * sy) / den, fixed = (sy - per * sx) / n;
    long double at_ref = fixed + per * (long double)q->batch[q->ref];
    if (per * (long double)(bmax - bmin) < 0.5L || at_ref <= 0)
        return 0; /* no growth over the batches seen */
    f->a = fixed / at_ref;
    f->b = per / at_ref;
    return 1;
}

/* ---- the passes ---- */

struct pass {
    const struct factor *f;        /* per site of the reference */
    const struct gs_idmap *scaled; /* stack id -> index in f, the scaled sites' only */
    uint64_t batch[GS_WI_CASES];   /* case k's batch */
};

static uint64_t scaled_size(void *ctx, size_t k, const struct gs_revent *e)
{
    const struct pass *p = ctx;
    uint64_t i;
    if (!e->size || gs_idmap_get(p->scaled, e->stack_id, &i) != 0)
        return e->size;
    long double v = (long double)e->size * (p->f[i].a + p->f[i].b * (long double)p->batch[k]);
    if (v < 1)
        return 1;
    if (v >= 18446744073709551615.0L / 2)
        return UINT64_MAX / 2; /* no card has it: the model runs out */
    return (uint64_t)llroundl(v);
}

/* A card's search (one per distinct capacity and total). */
struct search {
    uint64_t usable, total;
    long double linear;
    uint64_t lo, hi;  /* the largest batch known to fit (0: none yet), the smallest
                       * known to run out (GS_PR_MAX_BATCH + 1: none yet) */
    uint64_t lo_peak;
    int first;        /* no pass yet */
};

static int done(const struct search *s) { return s->hi - s->lo <= 1; }

/* Up to m candidates for the search, ascending, in out: how many. */
static size_t candidates(const struct search *s, uint64_t ref_batch, size_t m, uint64_t *out)
{
    size_t n = 0;
    if (s->first) { /* geometric from 1 to four times the line's answer */
        long double top = s->linear > 0 ? 4 * s->linear : 4 * (long double)ref_batch;
        if (top < 16)
            top = 16;
        if (top > GS_PR_MAX_BATCH)
            top = GS_PR_MAX_BATCH;
        for (size_t j = 0; j < m; j++) {
            long double x = m > 1 ? floorl(powl(top, (long double)j / (long double)(m - 1))) : top;
            uint64_t b = (uint64_t)x;
            if (n && b <= out[n - 1])
                b = out[n - 1] + 1;
            if (b > GS_PR_MAX_BATCH)
                break;
            out[n++] = b;
        }
    } else if (s->hi > GS_PR_MAX_BATCH) { /* all fit so far: on by factors of four */
        uint64_t b = s->lo ? s->lo : 1;
        for (size_t j = 0; j < m && b < GS_PR_MAX_BATCH; j++) {
            b = b > GS_PR_MAX_BATCH / 4 ? GS_PR_MAX_BATCH : b * 4;
            out[n++] = b;
        }
    } else { /* evenly between */
        uint64_t gap = s->hi - s->lo - 1;
        if (gap <= m) {
            for (uint64_t b = s->lo + 1; b < s->hi; b++)
                out[n++] = b;
        } else {
            for (size_t j = 1; j <= m; j++)
                out[n++] = s->lo + (uint64_t)((unsigned __int128)(s->hi - s->lo) * j / (m + 1));
        }
    }
    return n;
}

/* Whether case k fitted on every device, and its peak (the most of any). */
static int fitted(const struct gs_whatif *w, size_t k, uint64_t *peak)
{
    *peak = 0;
    for (size_t d = 0; d <= GS_MAX_DEVICES; d++) {
        const struct gs_wi_device *dev = gs_whatif_device(w, d);
        if (!dev)
            continue;
        if (dev->out[k].ran_out)
            return 0;
        if (dev->out[k].device_peak > *peak)
            *peak = dev->out[k].device_peak;
    }
    return 1;
}

/* One pass over the searches not done: 0, or -1 with why in err. */
static int one_pass(const struct gs_pr_question *q, struct pass *p, struct search *s, size_t ns,
                    char *err, size_t errsz)
{
    size_t open = 0, ncases = 0;
    for (size_t i = 0; i < ns; i++)
        open += !done(&s[i]);
    struct gs_wi_case cases[GS_WI_CASES];
    size_t owner[GS_WI_CASES];
    for (size_t i = 0, seen = 0; i < ns; i++) {
        if (done(&s[i]))
            continue;
        size_t m = GS_WI_CASES / open + (seen++ < GS_WI_CASES % open);
        uint64_t b[GS_WI_CASES];
        size_t n = candidates(&s[i], q->batch[q->ref], m, b);
        for (size_t j = 0; j < n; j++) {
            cases[ncases] =
                (struct gs_wi_case){.setting = 0, .capacity = s[i].usable, .total = s[i].total};
            p->batch[ncases] = b[j];
            owner[ncases++] = i;
        }
        s[i].first = 0;
    }
    struct gs_whatif *w = gs_whatif_new(&q->setting, 1, cases, ncases);
    if (!w) {
        snprintf(err, errsz, "out of memory");
        return -1;
    }
    gs_whatif_set_sizes(w, scaled_size, p);
    if (gs_whatif_replay(q->path, q->seen, w, err, errsz) != 0) {
        gs_whatif_free(w);
        return -1;
    }
    if (gs_whatif_nomem(w)) {
        snprintf(err, errsz, "out of memory while replaying");
        gs_whatif_free(w);
        return -1;
    }
    /* the smallest batch that ran out first, then the largest below it that fit */
    for (size_t k = 0; k < ncases; k++) {
        uint64_t peak;
        if (!fitted(w, k, &peak) && p->batch[k] < s[owner[k]].hi)
            s[owner[k]].hi = p->batch[k];
    }
    for (size_t k = 0; k < ncases; k++) {
        struct search *c = &s[owner[k]];
        uint64_t peak;
        if (p->batch[k] > c->lo && p->batch[k] < c->hi && fitted(w, k, &peak)) {
            c->lo = p->batch[k];
            c->lo_peak = peak;
        }
    }
    for (size_t i = 0; i < ns; i++)
        if (s[i].lo == GS_PR_MAX_BATCH)
            s[i].hi = GS_PR_MAX_BATCH + 1; /* done: any */
    gs_whatif_free(w);
    return 0;
}

int gs_pr_replay(const struct gs_pr_question *q, struct gs_pr_card *out, struct gs_pr_answer *a,
                 char *err, size_t errsz)
{
    memset(a, 0, sizeof *a);
    const struct gs_pr_sites *ref = q->runs[q->ref];
    struct factor *f = calloc(ref->nsites ? ref->nsites : 1, sizeof *f);
    int *grows = calloc(ref->nsites ? ref->nsites : 1, sizeof *grows);
    struct gs_idmap *scaled = gs_idmap_new();
    struct search *s = calloc(q->ncards ? q->ncards : 1, sizeof *s);
    size_t *card_search = calloc(q->ncards ? q->ncards : 1, sizeof *card_search);
    struct pass *p = calloc(1, sizeof *p);
    int rc = -1;
    if (!f || !grows || !scaled || !s || !card_search || !p) {
        snprintf(err, errsz, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < ref->nsites; i++) {
        grows[i] = fit_site(q, i, &f[i]);
        if (grows[i])
            a->sites_scaled++;
        else
            a->sites_fixed++;
    }
    for (size_t i = 0; i < ref->nstacks; i++) {
        size_t site = ref->stacks[i].site;
        if (site != SIZE_MAX && grows[site] &&
            gs_idmap_put(scaled, ref->stacks[i].stack_id, site) != 0) {
            snprintf(err, errsz, "out of memory");
            goto out;
        }
    }
    p->f = f;
    p->scaled = scaled;
    /* one search per distinct card */
    size_t ns = 0;
    for (size_t c = 0; c < q->ncards; c++) {
        size_t i;
        uint64_t total = q->total ? q->total[c] : 0;
        for (i = 0; i < ns && (s[i].usable != q->usable[c] || s[i].total != total); i++)
            ;
        if (i == ns)
            s[ns++] = (struct search){.usable = q->usable[c],
                                      .total = total,
                                      .linear = q->linear[c],
                                      .hi = GS_PR_MAX_BATCH + 1,
                                      .first = 1};
        card_search[c] = i;
    }
    for (size_t i = 0; i < ns; i++)
        if (!s[i].usable)
            s[i].hi = 1; /* no memory at all: not one sample (the engine takes 0 as no limit) */
    if (!a->sites_scaled) { /* the same replay at every batch: one batch tells */
        for (size_t i = 0; i < ns; i++)
            if (!done(&s[i])) {
                s[i].lo = GS_PR_MAX_BATCH - 1; /* a candidate between: the last batch */
                s[i].first = 0;
            }
    }
    for (;;) {
        size_t open = 0;
        for (size_t i = 0; i < ns; i++)
            open += !done(&s[i]);
        if (!open)
            break;
        if (one_pass(q, p, s, ns, err, errsz) != 0)
            goto out;
        a->passes++;
        if (!a->sites_scaled)
            for (size_t i = 0; i < ns; i++)
                if (s[i].lo != GS_PR_MAX_BATCH) { /* it ran out: at any batch */
                    s[i].lo = 0;
                    s[i].hi = 1;
                }
    }
    for (size_t c = 0; c < q->ncards; c++) {
        const struct search *x = &s[card_search[c]];
        out[c] = (struct gs_pr_card){.any = x->lo == GS_PR_MAX_BATCH,
                                     .batch = x->lo,
                                     .peak = x->lo ? x->lo_peak : 0};
    }
    rc = 0;
out:
    free(f);
    free(grows);
    gs_idmap_free(scaled);
    free(s);
    free(card_search);
    free(p);
    return rc;
}
