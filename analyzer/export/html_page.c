/*
 * html_page.c - what every HTML page of gpushim is made of (html.h): its
 * head (the style) and end (the script that sorts its tables), and its
 * sortable tables, a row per call of a cell function, each numeric cell's
 * exact figure in data-v. The report's page (export_html.c), its tables of
 * what the program told (html_program.c) and whatif's page
 * (whatif_html.c) are made with them.
 */
#include <stdio.h>

#include "analyzer/util/escape.h"
#include "analyzer/export/html.h"

#define HTML_ROWS 1000 /* the most rows a table lists */

static const char style[] =
    "body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222;max-width:1100px}\n"
    "h1{font-size:22px;margin:0 0 12px}h2{font-size:17px;margin:28px 0 8px}\n"
    "table{border-collapse:collapse;margin:4px 0}\n"
    "th,td{padding:3px 10px;border-bottom:1px solid #ddd;text-align:left;vertical-align:top}\n"
    "table.summary th{color:#555;font-weight:normal;padding-left:0}\n"
    "table.sortable th{cursor:pointer;background:#f2f4f7;user-select:none}\n"
    "table.sortable th[aria-sort=ascending]::after{content:' \\25B2'}\n"
    "table.sortable th[aria-sort=descending]::after{content:' \\25BC'}\n"
    "td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}\n"
    "td.frames{white-space:pre-line;font:12px/1.35 ui-monospace,monospace}\n"
    "td.verdict{max-width:28em;font-size:13px}\n"
    "figure{margin:8px 0 18px}figcaption{color:#444;margin-bottom:2px}\n"
    "svg.chart{display:block;max-width:100%;height:auto}\n"
    "svg .area{fill:#cfe0f5}svg .line{fill:none;stroke:#2b6cb0;stroke-width:1.5}\n"
    "svg .grid{stroke:#e6e6e6}svg .frame,svg .tick{stroke:#888}\n"
    "svg text{font:11px system-ui,sans-serif;fill:#555}svg .ylabel{text-anchor:end}\n"
    "svg .xlabel{text-anchor:middle}svg .peak{fill:#2b6cb0;stroke:#fff}\n"
    "svg .peaklabel{fill:#1a365d;font-weight:600}\n"
    "svg .mark{stroke:#888;stroke-width:1;stroke-dasharray:3 3}\n"
    "svg .failure{fill:#d00;stroke:#fff}\n"
    "svg.bands,svg.flame{display:block;max-width:100%;height:auto}\n"
    "svg.flame text{fill:#222}\n"
    ".bands-legend{list-style:none;padding-left:0;margin:4px 0;font-size:13px}\n"
    ".swatch{display:inline-block;width:10px;height:10px;margin-right:6px}\n"
    ".none,.more,.legend{color:#777}\n";

/* Click a header to sort by it; again to reverse. Numbers by data-v. */
static const char script[] =
    "document.querySelectorAll('table.sortable').forEach(function (t) {\n"
    "  var ths = t.tHead.rows[0].cells;\n"
    "  Array.prototype.forEach.call(ths, function (th, i) {\n"
    "    th.addEventListener('click', function () {\n"
    "      var asc = th.getAttribute('aria-sort') !== 'ascending';\n"
    "      Array.prototype.forEach.call(ths, function (o) { o.removeAttribute('aria-sort'); });\n"
    "      var num = th.classList.contains('num'), body = t.tBodies[0];\n"
    "      var rows = Array.prototype.slice.call(body.rows);\n"
    "      rows.sort(function (a, b) {\n"
    "        var x = a.cells[i], y = b.cells[i], r;\n"
    "        if (num) {\n"
    "          var p = BigInt(x.dataset.v || '-1'), q = BigInt(y.dataset.v || '-1');\n"
    "          r = p < q ? -1 : p > q ? 1 : 0;\n"
    "        } else {\n"
    "          r = x.textContent.localeCompare(y.textContent);\n"
    "        }\n"
    "        return asc ? r : -r;\n"
    "      });\n"
    "      rows.forEach(function (row) { body.appendChild(row); });\n"
    "      th.setAttribute('aria-sort', asc ? 'ascending' : 'descending');\n"
    "    });\n"
    "  });\n"
    "});\n";

void gs_html_page_begin(FILE *out, const char *title, const char *heading)
{
    fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n", out);
    fputs("<meta name=\"generator\" content=\"gpushim\">\n", out);
    fputs("<title>gpushim: ", out);
    gs_html_escape(out, title);
    fprintf(out, "</title>\n<style>\n%s</style>\n</head>\n<body>\n<h1>", style);
    gs_html_escape(out, heading);
    fputs("</h1>\n", out);
}

void gs_html_page_end(FILE *out) { fprintf(out, "<script>\n%s</script>\n</body>\n</html>\n", script); }

void gs_html_table(FILE *out, const char *id, const char *title, const struct gs_html_col *cols,
                   size_t ncols, size_t nrows, gs_html_cell_fn cell, void *ctx)
{
    fprintf(out, "<h2>");
    gs_html_escape(out, title);
    fprintf(out, "</h2>\n");
    if (!nrows) {
        fputs("<p class=\"none\">none</p>\n", out);
        return;
    }
    fputs("<table class=\"sortable\" id=\"", out);
    gs_html_escape(out, id);
    fputs("\">\n<thead><tr>", out);
    for (size_t c = 0; c < ncols; c++) {
        fprintf(out, "<th%s title=\"click to sort\">", cols[c].numeric ? " class=\"num\"" : "");
        gs_html_escape(out, cols[c].name);
        fputs("</th>", out);
    }
    fputs("</tr></thead>\n<tbody>\n", out);
    size_t shown = nrows < HTML_ROWS ? nrows : HTML_ROWS;
    for (size_t r = 0; r < shown; r++) {
        fputs("<tr>", out);
        for (size_t c = 0; c < ncols; c++) {
            struct gs_html_cell v = {0};
            cell(ctx, r, c, &v);
            fputs("<td", out);
            if (cols[c].numeric)
                fputs(" class=\"num\"", out);
            else if (cols[c].cls)
                fprintf(out, " class=\"%s\"", cols[c].cls);
            if (cols[c].numeric && v.key[0]) {
                fputs(" data-v=\"", out);
                gs_html_escape(out, v.key);
                fputc('"', out);
            }
            fputc('>', out);
            gs_html_escape(out, v.text);
            fputs("</td>", out);
        }
        fputs("</tr>\n", out);
    }
    fputs("</tbody></table>\n", out);
    if (shown < nrows)
        fprintf(out, "<p class=\"more\">%zu more not listed (gpushim report --json lists all)</p>\n",
                nrows - shown);
}
