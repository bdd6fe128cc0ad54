/*
 * svg_sites.c - the HTML export's pictures of call sites, inline SVG: live
 * device memory over the run stacked by the call sites that held the most
 * (from growth's samples: a leak is the band that keeps rising), and the
 * device memory live at the peak as a flame graph of its stacks (root at
 * the top, each frame as wide as the bytes under it).
 *
 * Each band is a <path class="band"> with data-site (the site in words)
 * and data-bytes (its bytes at each sample, space-separated), the sample
 * times in the <svg>'s data-times-ns; each frame of the flame graph a <g
 * class="node"> with data-name and data-bytes, and a <title> to hover.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyzer/util/bytes.h"
#include "analyzer/util/escape.h"
#include "analyzer/util/idmap.h"
#include "analyzer/model/model.h"
#include "analyzer/symbols/symbolize.h"
#include "analyzer/symbols/symbols.h"
#include "analyzer/findings/growth.h"
#include "analyzer/report/report.h"
#include "analyzer/export/html.h"

#define BANDS 8 /* the sites drawn; the rest are one band, "other sites" */
#define W 960.0
#define LEFT 90.0
#define RIGHT 940.0
#define TOP 16.0
#define BOTTOM 236.0

static const char *const colours[BANDS + 1] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2",
                                               "#59a14f", "#edc948", "#b07aa1", "#ff9da7",
                                               "#bab0ac"};

/* A call site as the report merges them (its source frames), and its live
 * bytes at each sample. */
struct band {
    uint32_t stack_id;
    uint64_t v[GS_GROWTH_SAMPLES], most;
};

static int by_most(const void *a, const void *b)
{
    const struct band *x = a, *y = b;
    if (x->most != y->most)
        return x->most < y->most ? 1 : -1;
    return x->stack_id < y->stack_id ? -1 : x->stack_id > y->stack_id;
}

/* The device sites' samples merged by source frames, most first: how many
 * (into *out, caller frees), or 0. */
static size_t merged_bands(const struct gs_report *rep, const struct gs_growth *g,
                           struct band **out)
{
    const struct gs_replay *r = rep->replay; /* for names */
    const struct gs_findings *fd = rep->found;
    size_t nsites = fd->nsites < g->nsites ? fd->nsites : g->nsites, n = 0;
    struct band *b = calloc(nsites ? nsites : 1, sizeof *b);
    struct gs_idmap *by_key = gs_idmap_new();
    *out = NULL;
    if (!b || !by_key) {
        free(b);
        gs_idmap_free(by_key);
        return 0;
    }
    for (size_t s = 0; s < nsites; s++) {
        const struct gs_site *site = &fd->sites[s];
        if (site->kind != GS_KIND_DEVICE)
            continue;
        uint64_t key = gs_site_key(r, rep->sym, rep->opt->view, site->stack_id), at;
        if (gs_idmap_get(by_key, key, &at) != 0) {
            if (gs_idmap_put(by_key, key, n) != 0)
                continue;
            at = n++;
            b[at].stack_id = site->stack_id;
        }
        for (unsigned k = 0; k < g->n; k++)
            b[at].v[k] += g->live[s * GS_GROWTH_SAMPLES + k];
    }
    gs_idmap_free(by_key);
    for (size_t i = 0; i < n; i++)
        for (unsigned k = 0; k < g->n; k++)
            if (b[i].v[k] > b[i].most)
                b[i].most = b[i].v[k];
    qsort(b, n, sizeof *b, by_most);
    *out = b;
    return n;
}

void gs_svg_site_bands(FILE *out, const struct gs_report *rep)
{
    const struct gs_growth *g = rep->found->growth;
    struct band *b = NULL;
    size_t n = g && g->n >= 2 ? merged_bands(rep, g, &b) : 0;
    if (!n || !b[0].most) {
        fputs("<p class=\"none\">too few samples of the call sites</p>\n", out);
        free(b);
        return;
    }
    size_t shown = 0; /* the sites live at some sample, at most BANDS */
    while (shown < n && shown < BANDS && b[shown].most)
        shown++;
    /* the rest, one band */
    struct band other = {0};
    size_t others = 0; /* the rest that were live at some sample */
    for (size_t i = shown; i < n && b[i].most; i++, others++)
        for (unsigned k = 0; k < g->n; k++)
            other.v[k] += b[i].v[k];
    for (unsigned k = 0; k < g->n; k++)
        other.most = other.v[k] > other.most ? other.v[k] : other.most;
    uint64_t ymax = 1, t0 = g->time_ns[0], t1 = g->time_ns[g->n - 1];
    for (unsigned k = 0; k < g->n; k++) {
        uint64_t sum = other.v[k];
        for (size_t i = 0; i < shown; i++)
            sum += b[i].v[k];
        if (sum > ymax)
            ymax = sum;
    }
    double span = t1 > t0 ? (double)(t1 - t0) : 1.0;
    char a[32], c[32];
    fprintf(out, "<svg class=\"bands\" viewBox=\"0 0 %.0f %.0f\" width=\"%.0f\" height=\"%.0f\" "
                 "data-ymax-bytes=\"%" PRIu64 "\" data-times-ns=\"",
            W, BOTTOM + 24, W, BOTTOM + 24, ymax);
    for (unsigned k = 0; k < g->n; k++)
        fprintf(out, "%s%" PRIu64, k ? " " : "", g->time_ns[k]);
    fputs("\" role=\"img\" aria-label=\"live device memory by call site over the run\">\n", out);
    uint64_t base[GS_GROWTH_SAMPLES] = {0};
    for (size_t i = 0; i <= shown; i++) {
        const struct band *bi = i < shown ? &b[i] : &other;
        if (i == shown && !others)
            break;
        char where[200];
        if (i < shown)
            gs_site_where(rep->replay, rep->sym, rep->opt->view, bi->stack_id, where,
                          sizeof where);
        else
            snprintf(where, sizeof where, "%zu other site%s", others, others == 1 ? "" : "s");
        fprintf(out, "<path class=\"band\" fill=\"%s\" data-site=\"", colours[i]);
        gs_html_escape(out, where);
        fputs("\" data-bytes=\"", out);
        for (unsigned k = 0; k < g->n; k++)
            fprintf(out, "%s%" PRIu64, k ? " " : "", bi->v[k]);
        fputs("\" d=\"", out);
        for (unsigned k = 0; k < g->n; k++) /* its top, left to right */
            fprintf(out, "%c%.1f %.1f ", k ? 'L' : 'M',
                    LEFT + (RIGHT - LEFT) * (double)(g->time_ns[k] - t0) / span,
                    BOTTOM - (BOTTOM - TOP) * (double)(base[k] + bi->v[k]) / (double)ymax);
        for (unsigned k = g->n; k-- > 0;) /* its bottom, right to left */
            fprintf(out, "L%.1f %.1f ", LEFT + (RIGHT - LEFT) * (double)(g->time_ns[k] - t0) / span,
                    BOTTOM - (BOTTOM - TOP) * (double)base[k] / (double)ymax);
        fputs("Z\"><title>", out);
        gs_html_escape(out, where);
        fprintf(out, ": at most %s</title></path>\n", gs_human_bytes(bi->most, a, sizeof a));
        for (unsigned k = 0; k < g->n; k++)
            base[k] += bi->v[k];
    }
    fprintf(out, "<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"end\">%s</text>\n", LEFT - 6, TOP + 4,
            gs_human_bytes(ymax, a, sizeof a));
    fprintf(out, "<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"end\">0</text>\n", LEFT - 6, BOTTOM);
    fprintf(out, "<text x=\"%.0f\" y=\"%.0f\">%.3f s</text>\n", LEFT, BOTTOM + 18, (double)t0 / 1e9);
    fprintf(out, "<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"end\">%.3f s</text>\n", RIGHT,
            BOTTOM + 18, (double)t1 / 1e9);
    fputs("</svg>\n<ul class=\"bands-legend\">\n", out);
    for (size_t i = 0; i < shown; i++) {
        char where[200];
        gs_site_where(rep->replay, rep->sym, rep->opt->view, b[i].stack_id, where, sizeof where);
        fprintf(out, "<li><span class=\"swatch\" style=\"background:%s\"></span>", colours[i]);
        gs_html_escape(out, where);
        fprintf(out, ": at most %s, %s at the last sample</li>\n",
                gs_human_bytes(b[i].most, a, sizeof a), gs_human_bytes(b[i].v[g->n - 1], c, sizeof c));
    }
    if (others)
        fprintf(out, "<li><span class=\"swatch\" style=\"background:%s\"></span>%zu other "
                     "site%s</li>\n", colours[BANDS], others, others == 1 ? "" : "s");
    fputs("</ul>\n", out);
    free(b);
}

/* ---- the peak as a flame graph ---- */

#define FLAME_DEPTH 48
#define FLAME_ROW 18.0

struct node {
    char name[160];
    uint64_t bytes;
    size_t child, sibling; /* first child, next sibling: indexes + 1, 0 for none */
    size_t last, parent;   /* last child (index + 1, 0 for none), parent (index) */
};

struct flame {
    struct node *v;
    size_t n, cap;
    struct gs_idmap *by_name; /* name_key(parent, name) -> index + 1 */
    unsigned depth; /* the deepest row */
    /* the stack being added, root first */
    char names[FLAME_DEPTH][160];
    unsigned nnames;
};

static void collect(void *ctx, const struct gs_frame *f, unsigned index)
{
    struct flame *fl = ctx;
    (void)index;
    if (fl->nnames < FLAME_DEPTH)
        gs_frame_name(f, fl->names[fl->nnames++], sizeof fl->names[0]);
}

static uint64_t name_key(size_t parent, const char *name)
{
    uint64_t h = 1469598103934665603ull ^ (uint64_t)parent * 0x9e3779b97f4a7c15ull;
    for (const unsigned char *p = (const unsigned char *)name; *p; p++)
        h = (h ^ *p) * 1099511628211ull;
    return h;
}

/* The child named name of node parent (an index), made at the end of its
 * children (the largest sites come first): its index + 1, or 0 on no
 * memory. Found by its name's key, not by walking the siblings: a node
 * with many children (300 000 sites under main) made the page quadratic. */
static size_t child_of(struct flame *fl, size_t parent, const char *name)
{
    uint64_t key = name_key(parent, name), got;
    int known = gs_idmap_get(fl->by_name, key, &got) == 0;
    if (known && fl->v[got - 1].parent == parent && !strcmp(fl->v[got - 1].name, name))
        return (size_t)got;
    if (known) /* another name with the same key: the siblings, one by one */
        for (size_t c = fl->v[parent].child; c; c = fl->v[c - 1].sibling)
            if (!strcmp(fl->v[c - 1].name, name))
                return c;
    if (fl->n == fl->cap) {
        size_t cap = fl->cap * 2;
        struct node *v = realloc(fl->v, cap * sizeof *v);
        if (!v)
            return 0;
        fl->v = v;
        fl->cap = cap;
    }
    /* in the map before it is linked: no memory leaves neither */
    if (!known && gs_idmap_put(fl->by_name, key, fl->n + 1) != 0)
        return 0;
    struct node *x = &fl->v[fl->n++];
    memset(x, 0, sizeof *x);
    snprintf(x->name, sizeof x->name, "%s", name);
    x->parent = parent;
    size_t last = fl->v[parent].last;
    *(last ? &fl->v[last - 1].sibling : &fl->v[parent].child) = fl->n;
    fl->v[parent].last = fl->n;
    return fl->n;
}

static void draw(FILE *out, const struct flame *fl, size_t at, double x, double w, unsigned row,
                 double scale)
{
    const struct node *x0 = &fl->v[at - 1];
    char b[32];
    double y = row * FLAME_ROW;
    fprintf(out, "<g class=\"node\" data-name=\"");
    gs_html_escape(out, x0->name);
    fprintf(out, "\" data-bytes=\"%" PRIu64 "\"><title>", x0->bytes);
    gs_html_escape(out, x0->name);
    fprintf(out, ": %s</title><rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
                 "fill=\"hsl(%u,70%%,%u%%)\"/>",
            gs_human_bytes(x0->bytes, b, sizeof b), x, y, w > 0.5 ? w - 0.5 : w, FLAME_ROW - 1,
            20 + (unsigned)(at * 37 % 30), 60 + (unsigned)(row % 3) * 5);
    size_t fit = (size_t)(w / 7.0);
    if (fit > 3) {
        char label[160];
        snprintf(label, sizeof label, "%s", x0->name);
        if (strlen(label) > fit)
            snprintf(label + fit - 3, sizeof label - (fit - 3), "...");
        fprintf(out, "<text x=\"%.1f\" y=\"%.1f\">", x + 3, y + FLAME_ROW - 5);
        gs_html_escape(out, label);
        fputs("</text>", out);
    }
    fputs("</g>\n", out);
    double cx = x;
    for (size_t c = x0->child; c; c = fl->v[c - 1].sibling) {
        double cw = (double)fl->v[c - 1].bytes * scale;
        if (cw >= 0.5)
            draw(out, fl, c, cx, cw, row + 1, scale);
        cx += cw;
    }
}

void gs_svg_peak_flame(FILE *out, const struct gs_report *rep)
{
    const struct gs_replay *r = rep->replay;
    size_t n;
    const struct gs_report_site *sites = gs_found_sites(rep->found, 0, GS_METRIC_PEAK, &n);
    struct flame fl = {.cap = 64, .by_name = gs_idmap_new()};
    fl.v = calloc(fl.cap, sizeof *fl.v);
    if (!sites || !fl.v || !fl.by_name || !n) {
        fputs("<p class=\"none\">no device memory was live at the peak</p>\n", out);
        free(fl.v);
        gs_idmap_free(fl.by_name);
        return;
    }
    fl.n = 1; /* v[0]: all, the root */
    snprintf(fl.v[0].name, sizeof fl.v[0].name, "all");
    for (size_t i = 0; i < n; i++) {
        fl.nnames = 0;
        gs_site_frames(r, rep->sym, sites[i].stack_id, rep->opt->view, FLAME_DEPTH, collect, &fl);
        fl.v[0].bytes += sites[i].bytes;
        size_t at = 1;
        for (unsigned k = fl.nnames; k-- > 0;) { /* outermost first */
            size_t c = child_of(&fl, at - 1, fl.names[k]);
            if (!c)
                break;
            fl.v[c - 1].bytes += sites[i].bytes;
            at = c;
        }
        if (fl.nnames > fl.depth)
            fl.depth = fl.nnames;
    }
    double height = (fl.depth + 1) * FLAME_ROW;
    fprintf(out, "<svg class=\"flame\" viewBox=\"0 0 %.0f %.0f\" width=\"%.0f\" height=\"%.0f\" "
                 "role=\"img\" aria-label=\"device memory live at the peak, by stack\">\n",
            W, height, W, height);
    draw(out, &fl, 1, 0, W, 0, fl.v[0].bytes ? W / (double)fl.v[0].bytes : 0);
    fputs("</svg>\n", out);
    free(fl.v);
    gs_idmap_free(fl.by_name);
}
