/*
 * html.h - what the HTML export's files share: the page and its sortable
 * tables (html_page.c), the tables of what the program told
 * (html_program.c), its charts (svg.c) and its pictures of call sites
 * (svg_sites.c).
 *
 * Included by: the files of analyzer/export that write HTML (export_html.c,
 * html_page.c, html_program.c, svg.c, svg_sites.c, whatif_html.c).
 */
#ifndef GPUSHIM_EXPORT_HTML_H
#define GPUSHIM_EXPORT_HTML_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct gs_replay;

/* ---- html_page.c: the page and its tables ---- */
/* A page's head (its style, title and heading) and end (the script that
 * sorts its tables). */
void gs_html_page_begin(FILE *out, const char *title, const char *heading);
void gs_html_page_end(FILE *out);
/* A sortable table: a header per column, a row per call of cell for each
 * column. A numeric column sorts by the cells' key (an integer, written
 * exactly as data-v); the others by their text. At most 1000 rows are
 * listed (a line says how many more there were); none: "none". */
struct gs_html_col {
    const char *name;
    int numeric;
    const char *cls; /* a class for the column's cells (a constant), or NULL */
};
struct gs_html_cell {
    const char *text; /* shown, escaped; NULL: empty. Valid until the next call */
    char key[32];     /* numeric columns: the figure it sorts by ("" for none) */
};
typedef void (*gs_html_cell_fn)(void *ctx, size_t row, size_t col, struct gs_html_cell *out);
/* A numeric cell's key. */
static inline void gs_html_key_u(struct gs_html_cell *c, uint64_t v)
{
    snprintf(c->key, sizeof c->key, "%llu", (unsigned long long)v);
}
static inline void gs_html_key_i(struct gs_html_cell *c, int64_t v)
{
    snprintf(c->key, sizeof c->key, "%lld", (long long)v);
}
void gs_html_table(FILE *out, const char *id, const char *title, const struct gs_html_col *cols,
                   size_t ncols, size_t nrows, gs_html_cell_fn cell, void *ctx);

/* ---- html_program.c: what the program told, on the page ---- */
struct gs_findings;
struct gs_report;
/* Its steps by label and its last steps (marks.c). */
void gs_html_steps(FILE *out, const struct gs_findings *fd);
/* Its NVTX ranges (ranges.c), a row each. */
void gs_html_ranges(FILE *out, const struct gs_findings *fd);
/* Fragmentation at the device peak and at each failure (blocks.c). */
void gs_html_fragmentation(FILE *out, const struct gs_findings *fd);
/* Memory of the other kinds, and the stream-ordered pools. */
void gs_html_other_memory(FILE *out, const struct gs_findings *fd);

/* ---- svg.c: the HTML export's charts ---- */
/* One device's memory over time (index as gs_findings.devices) as an
 * <svg>: its timeline aligned to width_ns and n buckets (the findings'
 * timeline_width_ns and timeline_n), from 0 to end_ns, with its peak, the
 * program's marks and the failures it did not get past. */
struct gs_findings;
void gs_svg_device_chart(FILE *out, const struct gs_findings *fd, unsigned device_index,
                         uint64_t width_ns, unsigned n, uint64_t end_ns);

/* ---- svg_sites.c: the pictures of call sites ---- */
struct gs_report;
/* Live device memory over the run, stacked by the call sites that held the
 * most (growth's samples), with its legend. */
void gs_svg_site_bands(FILE *out, const struct gs_report *rep);
/* The device memory live at the peak as a flame graph of its stacks. */
void gs_svg_peak_flame(FILE *out, const struct gs_report *rep);

#endif
