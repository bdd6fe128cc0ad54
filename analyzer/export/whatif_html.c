/*
 * whatif_html.c - gpushim whatif --format=html: one self-contained page
 * (the report's style and sorting script, no network) with, per device and
 * card, a bar per setting of the peak it reserves against the card's line,
 * and the sortable table of the text answer.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "analyzer/util/bytes.h"
#include "analyzer/util/escape.h"
#include "analyzer/report/whatif_report.h"
#include "analyzer/export/export.h"
#include "analyzer/export/html.h"

struct card_ctx {
    const struct gs_wi_report *rep;
    const struct gs_wi_device *d;
    size_t card;
    char text[640];
};

static const struct gs_html_col cols[] = {
    {"setting", 0, NULL},      {"peak reserved", 1, NULL}, {"peak allocated", 1, NULL},
    {"unallocated at peak", 1, NULL}, {"cudaMalloc", 1, NULL}, {"cudaFree", 1, NULL},
    {"OOM retries", 1, NULL},  {"outcome", 0, NULL},
};

static void cell(void *ctx, size_t row, size_t col, struct gs_html_cell *out)
{
    struct card_ctx *cc = ctx;
    const struct gs_wi_answer *a = cc->rep->a;
    const struct gs_wi_outcome *o = gs_wi_outcome_of(a, cc->d, cc->card, row);
    uint64_t v = 0;
    switch (col) {
    case 0: out->text = a->q.settings[row].name; return;
    case 1: v = o->st.reserved_peak; break;
    case 2: v = o->st.allocated_peak; break;
    case 3: v = o->st.unallocated_at_peak; break;
    case 4: v = o->st.segment_allocs; break;
    case 5: v = o->st.segment_frees; break;
    case 6: v = o->st.oom_retries; break;
    default:
        gs_wi_outcome_text(cc->rep, cc->card, o, cc->text, sizeof cc->text);
        out->text = cc->text;
        return;
    }
    snprintf(out->key, sizeof out->key, "%" PRIu64, v);
    if (col <= 3)
        gs_human_bytes(v, cc->text, sizeof cc->text);
    else
        snprintf(cc->text, sizeof cc->text, "%" PRIu64, v);
    out->text = cc->text;
}

/* A bar per setting: its peak on the device (reserved plus memory outside
 * the allocator), red where it ran out, and the card's line. */
static void bars(FILE *out, const struct gs_wi_answer *a, const struct gs_wi_device *d, size_t c)
{
    uint64_t cap = gs_wi_card_bytes(a, d, c), top = cap;
    for (size_t s = 0; s < a->q.nsettings; s++) {
        const struct gs_wi_outcome *o = gs_wi_outcome_of(a, d, c, s);
        if (o->device_peak > top)
            top = o->device_peak;
    }
    if (!top)
        return;
    const unsigned w = 640, label = 300, row = 22;
    unsigned h = (unsigned)a->q.nsettings * row + 8;
    fprintf(out, "<svg width=\"%u\" height=\"%u\" role=\"img\" aria-label=\"peak per setting\">\n",
            w, h);
    for (size_t s = 0; s < a->q.nsettings; s++) {
        const struct gs_wi_outcome *o = gs_wi_outcome_of(a, d, c, s);
        double len = (double)o->device_peak / (double)top * (w - label - 90);
        char b[32];
        fprintf(out, "<text x=\"0\" y=\"%zu\" font-size=\"12\">", s * row + 16);
        gs_html_escape(out, a->q.settings[s].name);
        fprintf(out, "</text><rect x=\"%u\" y=\"%zu\" width=\"%.1f\" height=\"%u\" fill=\"%s\">"
                     "<title>%s</title></rect>",
                label, s * row + 4, len, row - 6, o->ran_out ? "#c0392b" : "#2e86c1",
                gs_human_bytes(o->device_peak, b, sizeof b));
        fprintf(out, "<text x=\"%.1f\" y=\"%zu\" font-size=\"12\">%s</text>\n", label + len + 4,
                s * row + 16, b);
    }
    if (cap) {
        double x = label + (double)cap / (double)top * (w - label - 90);
        fprintf(out, "<line x1=\"%.1f\" y1=\"0\" x2=\"%.1f\" y2=\"%u\" stroke=\"#000\" "
                     "stroke-dasharray=\"4 3\"><title>the card</title></line>\n", x, x, h);
    }
    fputs("</svg>\n", out);
}

void gs_export_whatif_html(FILE *out, const struct gs_wi_report *rep)
{
    const struct gs_wi_answer *a = rep->a;
    gs_html_page_begin(out, rep->path, "gpushim whatif");
    fputs("<p>", out);
    gs_html_escape(out, rep->path);
    fputs(": ", out);
    gs_html_escape(out, gs_wi_model_name(a));
    fputs(".<br>Tensors: ", out);
    gs_html_escape(out, gs_wi_source_text(a->source));
    fputs(".</p>\n", out);
    struct card_ctx cc = {.rep = rep};
    for (size_t i = 0; i <= GS_MAX_DEVICES; i++) {
        const struct gs_wi_device *d = gs_wi_answer_device(a, i);
        if (!d)
            continue;
        cc.d = d;
        for (size_t c = 0; c <= a->q.ncards; c++) {
            char title[200], b[32], id[48];
            uint64_t cap = gs_wi_card_bytes(a, d, c);
            if (c == a->q.ncards)
                snprintf(title, sizeof title, "Device %" PRId32 " with no limit", d->device);
            else
                snprintf(title, sizeof title, "Device %" PRId32 " on %s card (%s)", d->device,
                         a->q.cards[c].name, cap ? gs_human_bytes(cap, b, sizeof b) : "no limit");
            fputs("<h2>", out);
            gs_html_escape(out, title);
            fputs("</h2>\n", out);
            bars(out, a, d, c);
            size_t best = c < a->q.ncards ? gs_wi_best(a, d, c) : SIZE_MAX;
            if (c < a->q.ncards) {
                fputs("<p>Best: ", out);
                gs_html_escape(out, best == SIZE_MAX ? "none fits this card"
                                                     : a->q.settings[best].name);
                const char *cost = best == SIZE_MAX ? NULL
                                                    : gs_wi_costs_text(a->q.settings[best].costs);
                if (cost) {
                    fputs("; ", out);
                    gs_html_escape(out, cost);
                }
                fputs("</p>\n", out);
            }
            cc.card = c;
            snprintf(id, sizeof id, "d%zu-c%zu", i, c);
            gs_html_table(out, id, "Settings", cols, sizeof cols / sizeof cols[0],
                          a->q.nsettings, cell, &cc);
        }
    }
    int any = 0; /* as the text's "what the settings cost besides memory" */
    for (size_t s = 0; s < a->q.nsettings; s++) {
        const char *cost = gs_wi_costs_text(a->q.settings[s].costs);
        if (!cost)
            continue;
        if (!any++)
            fputs("<h2>What the settings cost besides memory</h2>\n<ul>\n", out);
        fputs("<li>", out);
        gs_html_escape(out, a->q.settings[s].name);
        fputs(": ", out);
        gs_html_escape(out, cost);
        fputs("</li>\n", out);
    }
    if (any)
        fputs("</ul>\n", out);
    gs_html_page_end(out);
}
