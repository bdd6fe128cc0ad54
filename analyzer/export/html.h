/*
 * html.h - what the HTML export's files share: the page's sortable tables
 * (export_html.c), its charts (svg.c) and its pictures of call sites
 * (svg_sites.c).
 *
 * Included by: analyzer/export/export_html.c, analyzer/export/svg.c,
 * analyzer/export/svg_sites.c, analyzer/export/whatif_html.c.
 */
#ifndef GPUSHIM_EXPORT_HTML_H
#define GPUSHIM_EXPORT_HTML_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct gs_replay;

/* ---- export_html.c: the page and its tables ---- */
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
void gs_html_table(FILE *out, const char *id, const char *title, const struct gs_html_col *cols,
                   size_t ncols, size_t nrows, gs_html_cell_fn cell, void *ctx);

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
