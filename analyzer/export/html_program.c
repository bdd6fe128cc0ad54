/*
 * html_program.c - the HTML export's tables of what the program told and
 * of the memory beside its device memory, from the findings (found.h), as
 * the text report says them: its steps by label and its last steps, its
 * NVTX ranges, the fragmentation of its own allocator's segments at the
 * device peak and at each failure, the other kinds of memory and the
 * stream-ordered pools.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "analyzer/util/bytes.h"
#include "analyzer/util/escape.h"
#include "analyzer/util/names.h"
#include "analyzer/trace/trace.h"
#include "analyzer/model/model.h"
#include "analyzer/findings/found.h"
#include "analyzer/findings/ranges.h"
#include "analyzer/export/html.h"

/* The text of a cell, kept until the next. */
struct cell_text {
    const struct gs_findings *fd;
    char text[GS_MAX_LABEL + 1024];
    size_t *rows; /* what each row is, where the rows are not all the things */
};

static void bytes_cell(struct cell_text *t, struct gs_html_cell *c, uint64_t v)
{
    gs_html_key_u(c, v);
    c->text = gs_human_bytes(v, t->text, sizeof t->text);
}

/* A change ("+1.00 MiB"), or with plus 0 a figure that may be below 0
 * ("-1.00 MiB"), as the text says each. */
static void signed_cell(struct cell_text *t, struct gs_html_cell *c, int64_t v, int plus)
{
    gs_html_key_i(c, v);
    c->text = plus ? gs_signed_bytes(v, t->text, sizeof t->text)
                   : gs_int_bytes(v, t->text, sizeof t->text);
}

static void count_cell(struct cell_text *t, struct gs_html_cell *c, uint64_t v)
{
    gs_html_key_u(c, v);
    snprintf(t->text, sizeof t->text, "%" PRIu64, v);
    c->text = t->text;
}

static void seconds_cell(struct cell_text *t, struct gs_html_cell *c, uint64_t ns)
{
    gs_html_key_u(c, ns);
    snprintf(t->text, sizeof t->text, "%.6f s", (double)ns / 1e9);
    c->text = t->text;
}

/* ---- steps ---- */

static const struct gs_html_col label_cols[] = {
    {"label", 0, NULL},         {"marks", 1, NULL},          {"steps", 1, NULL},
    {"largest step peak", 1, NULL}, {"that step ended", 1, NULL}, {"a step on average", 1, NULL},
    {"most in one step", 1, NULL}, {"steps that grew", 1, NULL}};

static void label_cell(void *ctx, size_t row, size_t col, struct gs_html_cell *c)
{
    struct cell_text *t = ctx;
    const struct gs_marks *m = t->fd->marks;
    const struct gs_mark_label *l = &m->labels[row];
    int64_t avg;
    int whole = gs_label_step_growth(l, &avg);
    switch (col) {
    case 0: c->text = gs_mark_label_text(m, (uint32_t)row); return;
    case 1: count_cell(t, c, l->marks); return;
    case 2: count_cell(t, c, l->steps); return;
    case 3: if (l->steps) bytes_cell(t, c, l->max_peak); return;
    case 4: if (l->steps) seconds_cell(t, c, l->max_peak_end_ns); return;
    case 5: if (whole) signed_cell(t, c, avg, 1); return;
    case 6: if (whole) signed_cell(t, c, l->max_growth, 1); return;
    default: if (whole) count_cell(t, c, l->growing); return;
    }
}

static const struct gs_html_col step_cols[] = {
    {"label", 0, NULL}, {"from", 1, NULL},     {"to", 1, NULL},    {"peak", 1, NULL},
    {"allocated", 1, NULL}, {"freed", 1, NULL}, {"growth", 1, NULL}};

static void step_cell(void *ctx, size_t row, size_t col, struct gs_html_cell *c)
{
    struct cell_text *t = ctx;
    const struct gs_marks *m = t->fd->marks;
    uint64_t first = m->nsteps > GS_STEPS_KEPT ? m->nsteps - GS_STEPS_KEPT : 0;
    const struct gs_step *s = &m->steps[(first + row) % GS_STEPS_KEPT];
    switch (col) {
    case 0: c->text = gs_mark_label_text(m, s->label); return;
    case 1: seconds_cell(t, c, s->start_ns); return;
    case 2: seconds_cell(t, c, s->end_ns); return;
    case 3: bytes_cell(t, c, s->peak_bytes); return;
    case 4: bytes_cell(t, c, s->allocated_bytes); return;
    case 5: bytes_cell(t, c, s->freed_bytes); return;
    default: signed_cell(t, c, s->growth_bytes, 1); return;
    }
}

void gs_html_steps(FILE *out, const struct gs_findings *fd)
{
    const struct gs_marks *m = fd->marks;
    if (!m->marks)
        return;
    struct cell_text *t = calloc(1, sizeof *t);
    if (!t)
        return;
    t->fd = fd;
    gs_html_table(out, "mark-labels",
                  "Marks and steps, by label (a step runs from a mark to the next of its label)",
                  label_cols, sizeof label_cols / sizeof *label_cols, m->nlabels, label_cell, t);
    uint64_t kept = m->nsteps < GS_STEPS_KEPT ? m->nsteps : GS_STEPS_KEPT;
    if (m->steps && kept)
        gs_html_table(out, "steps", "The last steps", step_cols,
                      sizeof step_cols / sizeof *step_cols, (size_t)kept, step_cell, t);
    free(t);
}

/* ---- NVTX ranges ---- */

static const struct gs_html_col range_cols[] = {
    {"range", 0, NULL},      {"ended", 1, NULL},      {"peak inside", 1, NULL},
    {"which", 1, NULL},      {"made in one", 1, NULL}, {"kept: last", 1, NULL},
    {"kept: most", 1, NULL}, {"kept in", 1, NULL}};

static void range_cell(void *ctx, size_t row, size_t col, struct gs_html_cell *c)
{
    struct cell_text *t = ctx;
    const struct gs_ranges *g = t->fd->ranges;
    const struct gs_range_node *n = &g->nodes[row];
    switch (col) {
    case 0:
        gs_range_path(g, (uint32_t)row, t->text, sizeof t->text);
        c->text = t->text;
        return;
    case 1: count_cell(t, c, n->ended); return;
    case 2: if (n->ended) bytes_cell(t, c, n->peak_max); return;
    case 3: if (n->ended) count_cell(t, c, n->peak_nth); return;
    case 4: bytes_cell(t, c, n->allocated_max); return;
    case 5: signed_cell(t, c, n->kept_last, 0); return;
    case 6: signed_cell(t, c, n->kept_max, 0); return;
    default: count_cell(t, c, n->kept_nonzero); return;
    }
}

void gs_html_ranges(FILE *out, const struct gs_findings *fd)
{
    const struct gs_ranges *g = fd->ranges;
    if (!g->pushes && !g->starts)
        return;
    struct cell_text *t = calloc(1, sizeof *t);
    if (!t)
        return;
    t->fd = fd;
    gs_html_table(out, "ranges", "NVTX ranges: device memory inside each", range_cols,
                  sizeof range_cols / sizeof *range_cols, g->nnodes, range_cell, t);
    free(t);
}

/* ---- fragmentation ---- */

static const struct gs_html_col frag_cols[] = {
    {"failed at", 1, NULL}, {"requested", 1, NULL}, {"inside its segments", 0, NULL},
    {"so the request would", 0, NULL}};

static void frag_cell(void *ctx, size_t row, size_t col, struct gs_html_cell *c)
{
    struct cell_text *t = ctx;
    const struct gs_failure_found *x = &t->fd->failures[t->rows[row]];
    switch (col) {
    case 0: seconds_cell(t, c, x->f->time_ns); return;
    case 1: bytes_cell(t, c, x->f->requested); return;
    case 2: c->text = gs_frag_text(x->frag, t->text, sizeof t->text); return;
    default: c->text = gs_gap_text(x->gap); return;
    }
}

void gs_html_fragmentation(FILE *out, const struct gs_findings *fd)
{
    const struct gs_blocks *b = fd->blocks;
    if (!b->seen)
        return;
    struct cell_text *t = calloc(1, sizeof *t);
    size_t *rows = calloc(fd->nfailures ? fd->nfailures : 1, sizeof *rows);
    if (t && rows) {
        t->fd = fd;
        t->rows = rows;
        if (b->at_peak.present) {
            fprintf(out, "<h2>Fragmentation at the device peak (%.3f s)</h2>\n<p id=\"frag-peak\">",
                    (double)b->at_peak.time_ns / 1e9);
            gs_html_escape(out, gs_frag_text(&b->at_peak, t->text, sizeof t->text));
            fputs("</p>\n", out);
        }
        size_t n = 0;
        for (size_t i = 0; i < fd->nfailures; i++)
            if (fd->failures[i].frag && fd->failures[i].f->outcome == GS_OUTCOME_UNRECOVERED)
                rows[n++] = i;
        if (n)
            gs_html_table(out, "frag-failures",
                          "Fragmentation at the failures the program did not get past", frag_cols,
                          sizeof frag_cols / sizeof *frag_cols, n, frag_cell, t);
    }
    free(rows);
    free(t);
}

/* ---- other memory ---- */

static const struct gs_html_col kind_cols[] = {
    {"memory", 0, NULL}, {"peak", 1, NULL}, {"live at the end", 1, NULL}, {"allocations", 1, NULL}};

static void kind_cell(void *ctx, size_t row, size_t col, struct gs_html_cell *c)
{
    struct cell_text *t = ctx;
    uint32_t k = (uint32_t)t->rows[row];
    const struct gs_kind_usage *u = &t->fd->kinds[k];
    switch (col) {
    case 0: c->text = gs_kind_label(k); return;
    case 1: bytes_cell(t, c, u->peak_bytes); return;
    case 2: bytes_cell(t, c, u->live_bytes); return;
    default: count_cell(t, c, u->allocs); return;
    }
}

static const struct gs_html_col pool_cols[] = {
    {"pool", 0, NULL},         {"device", 1, NULL},          {"reserved up to", 1, NULL},
    {"used up to", 1, NULL}, {"held beyond use, up to", 1, NULL}};

static void pool_cell(void *ctx, size_t row, size_t col, struct gs_html_cell *c)
{
    struct cell_text *t = ctx;
    const struct gs_pool_usage *p = &t->fd->pools[row];
    switch (col) {
    case 0:
        snprintf(t->text, sizeof t->text, "0x%" PRIx64, p->pool);
        c->text = t->text;
        return;
    case 1:
        gs_html_key_i(c, p->device);
        snprintf(t->text, sizeof t->text, "%" PRId32, p->device);
        c->text = t->text;
        return;
    case 2: bytes_cell(t, c, p->peak_reserved); return;
    case 3: bytes_cell(t, c, p->peak_used); return;
    default: bytes_cell(t, c, p->peak_unused); return;
    }
}

void gs_html_other_memory(FILE *out, const struct gs_findings *fd)
{
    struct cell_text *t = calloc(1, sizeof *t);
    size_t rows[GS_KIND_COUNT], n = 0;
    if (!t)
        return;
    t->fd = fd;
    t->rows = rows;
    for (uint32_t k = GS_KIND_DEVICE + 1; k < GS_KIND_COUNT; k++)
        if (fd->kinds[k].allocs)
            rows[n++] = k;
    if (n)
        gs_html_table(out, "kinds", "Other memory than the devices'", kind_cols,
                      sizeof kind_cols / sizeof *kind_cols, n, kind_cell, t);
    if (fd->npools)
        gs_html_table(out, "pools", "Stream-ordered pools", pool_cols,
                      sizeof pool_cols / sizeof *pool_cols, fd->npools, pool_cell, t);
    free(t);
}
