/*
 * export_html.c - gpushim export --format=html: a recorded run as one
 * self-contained HTML file (no network: inline CSS, inline SVG, a small
 * inline script), for people to open in a browser: the summary, a chart of
 * memory over time per device (svg.c), and sortable tables of the sites at
 * the peak, the sites never freed and the failed allocations: those the
 * program did not get past with their verdicts, then the others (outcome.c).
 *
 * Every string from the trace (command line, host, function and file names,
 * labels) is untrusted and goes through gs_html_escape. Tables are made by
 * gs_html_table from columns and a function that gives each cell: a
 * numeric cell carries its exact figure in data-v, which the script sorts
 * by (as a BigInt) and a reader of the file can check against the JSON.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "analyzer/report/roles_report.h"
#include "analyzer/util/bytes.h"
#include "analyzer/util/escape.h"
#include "analyzer/util/names.h"
#include "analyzer/trace/trace.h"
#include "analyzer/read/read.h"
#include "analyzer/model/model.h"
#include "analyzer/findings/growth.h"
#include "analyzer/findings/oom.h"
#include "analyzer/symbols/symbolize.h"
#include "analyzer/symbols/symbols.h"
#include "analyzer/findings/findings.h"
#include "analyzer/findings/warnings.h"
#include "analyzer/whatif/answer.h"
#include "analyzer/report/report.h"
#include "analyzer/export/export.h"
#include "analyzer/export/html.h"
#include "analyzer/util/text.h"

#define HTML_ROWS 1000   /* the most rows a table lists */
#define HTML_FRAMES 6    /* frames shown per call site */

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

/* ---- frames: a site's innermost frames, one a line ---- */

struct frame_text {
    char buf[2048];
    size_t len;
};

static void add_frame(void *ctx, const struct gs_frame *f, unsigned index)
{
    struct frame_text *ft = ctx;
    char line[512];
    const char *base = gs_basename(f->file);
    if (f->function && base)
        snprintf(line, sizeof line, "%s  %s:%d", f->function, base, f->line);
    else if (f->function)
        snprintf(line, sizeof line, "%s", f->function);
    else if (f->python)
        snprintf(line, sizeof line, "(Python code not in the trace)");
    else {
        const char *mod = f->module ? gs_basename(f->module) : "?";
        snprintf(line, sizeof line, "0x%" PRIx64 "  (%s)", f->pc, mod);
    }
    int n = snprintf(ft->buf + ft->len, sizeof ft->buf - ft->len, "%s%s", index ? "\n" : "", line);
    if (n > 0)
        ft->len += (size_t)n < sizeof ft->buf - ft->len ? (size_t)n : sizeof ft->buf - ft->len - 1;
}

static const char *frames_text(const struct gs_report *rep, uint32_t stack_id,
                               struct frame_text *ft)
{
    ft->len = 0;
    ft->buf[0] = 0;
    if (!gs_site_frames(rep->replay, rep->sym, stack_id, rep->opt->view, HTML_FRAMES, add_frame,
                        ft))
        snprintf(ft->buf, sizeof ft->buf, "(no frames)");
    return ft->buf;
}

static void key_u(struct gs_html_cell *c, uint64_t v)
{
    snprintf(c->key, sizeof c->key, "%" PRIu64, v);
}

static void key_i(struct gs_html_cell *c, int64_t v)
{
    snprintf(c->key, sizeof c->key, "%" PRId64, v);
}

/* ---- the tables ---- */

struct sites_ctx {
    const struct gs_report *rep;
    const struct gs_report_site *sites;
    char text[64];
    struct frame_text ft;
};

static const struct gs_html_col site_cols[] = {
    {"bytes", 1, NULL}, {"allocations", 1, NULL}, {"API", 0, NULL}, {"call site", 0, "frames"}};

static void site_cell(void *ctx, size_t row, size_t col, struct gs_html_cell *c)
{
    struct sites_ctx *s = ctx;
    const struct gs_report_site *site = &s->sites[row];
    switch (col) {
    case 0: key_u(c, site->bytes); c->text = gs_human_bytes(site->bytes, s->text, sizeof s->text); break;
    case 1:
        key_u(c, site->count);
        snprintf(s->text, sizeof s->text, "%" PRIu64, site->count);
        c->text = s->text;
        break;
    case 2: c->text = gs_api_name(site->api); break;
    default: c->text = frames_text(s->rep, site->stack_id, &s->ft); break;
    }
}

static void sites_table(FILE *out, const struct gs_report *rep, enum gs_site_metric metric,
                        const char *id, const char *title)
{
    struct sites_ctx *s = calloc(1, sizeof *s);
    struct gs_report_site *sites = NULL;
    size_t n = gs_rank_sites(rep->replay, rep->sym, rep->opt->view, metric, &sites);
    if (!s) {
        free(sites);
        return;
    }
    s->rep = rep;
    s->sites = sites;
    gs_html_table(out, id, title, site_cols, 4, n, site_cell, s);
    free(sites);
    free(s);
}

struct suspects_ctx {
    const struct gs_report *rep;
    const struct gs_suspect *sus;
    char text[64];
    struct frame_text ft;
};

static const struct gs_html_col suspect_cols[] = {
    {"growth", 1, NULL},          {"rate", 1, NULL},
    {"first allocated", 1, NULL}, {"live at the end", 1, NULL}, {"call site", 0, "frames"}};

static void suspect_cell(void *ctx, size_t row, size_t col, struct gs_html_cell *c)
{
    struct suspects_ctx *s = ctx;
    const struct gs_suspect *x = &s->sus[row];
    double rate;
    switch (col) {
    case 0:
        key_u(c, x->growth_bytes);
        c->text = gs_human_bytes(x->growth_bytes, s->text, sizeof s->text);
        return;
    case 1:
        rate = gs_suspect_rate_value(x);
        key_u(c, gs_whole_bytes(rate));
        c->text = gs_suspect_rate(
            x, gs_trace_duration_ns(s->rep->stats, s->rep->replay->last_time_ns), s->text,
            sizeof s->text);
        return;
    case 2:
        key_u(c, x->first_seen_ns);
        snprintf(s->text, sizeof s->text, "%.6f s", (double)x->first_seen_ns / 1e9);
        c->text = s->text;
        return;
    case 3:
        key_u(c, x->live_bytes);
        c->text = gs_human_bytes(x->live_bytes, s->text, sizeof s->text);
        return;
    default: c->text = frames_text(s->rep, x->stack_id, &s->ft); return;
    }
}

struct failures_ctx {
    const struct gs_report *rep;
    const struct gs_suspect *sus;
    size_t nsus;
    size_t *rows; /* the failures listed, by index */
    char text[64];
    struct gs_oom_verdict v;
    char verdict[512 + 16 + 400]; /* the verdict, and the allocator's (what-if) after it */
    struct frame_text ft;
};

static const struct gs_html_col failure_cols[] = {
    {"time", 1, NULL},        {"API", 0, NULL},        {"device", 1, NULL},
    {"requested", 1, NULL},   {"result", 0, NULL},     {"device free", 1, NULL},
    {"device total", 1, NULL}, {"held by the process", 1, NULL}, {"verdict", 0, "verdict"},
    {"call site", 0, "frames"}};

static void failure_cell(void *ctx, size_t row, size_t col, struct gs_html_cell *c)
{
    struct failures_ctx *s = ctx;
    row = s->rows[row];
    const struct gs_failure *f = &s->rep->replay->failures[row];
    uint64_t v;
    switch (col) {
    case 0:
        key_u(c, f->time_ns);
        snprintf(s->text, sizeof s->text, "%.6f s", (double)f->time_ns / 1e9);
        c->text = s->text;
        return;
    case 1: c->text = gs_api_name(f->api); return;
    case 2:
        key_i(c, f->device);
        snprintf(s->text, sizeof s->text, "%" PRId32, f->device);
        c->text = f->device >= 0 ? s->text : "?";
        return;
    case 3: v = f->requested; break;
    case 4: c->text = gs_result_name(f->result); return;
    case 5: v = f->free_bytes; break;
    case 6: v = f->total_bytes; break;
    case 7: v = f->process_live_bytes; break;
    case 8:
        gs_oom_verdict(s->rep->replay, row, s->sus, s->nsus, s->rep->sym, s->rep->opt->view,
                       &s->v);
        c->text = s->v.sentence;
        struct gs_wi_verdict wv; /* as the text report's "allocator:" line */
        if (s->rep->whatif && gs_wi_verdict(s->rep->whatif, f->device, f->time_ns, &wv) == 0) {
            snprintf(s->verdict, sizeof s->verdict, "%s Allocator: %s", s->v.sentence, wv.sentence);
            c->text = s->verdict;
        }
        return;
    default: c->text = frames_text(s->rep, f->stack_id, &s->ft); return;
    }
    if (v == UINT64_MAX && (col == 5 || col == 6)) {
        c->text = "unknown";
        return;
    }
    key_u(c, v);
    c->text = gs_human_bytes(v, s->text, sizeof s->text);
}

/* The failures the program got past: recovered, probes, refused. */
static const struct gs_html_col got_past_cols[] = {
    {"time", 1, NULL},      {"API", 0, NULL},       {"device", 1, NULL},
    {"requested", 1, NULL}, {"result", 0, NULL},    {"outcome", 0, NULL},
    {"then got", 1, NULL},  {"freed first", 1, NULL}, {"call site", 0, "frames"}};

static void got_past_cell(void *ctx, size_t row, size_t col, struct gs_html_cell *c)
{
    struct failures_ctx *s = ctx;
    const struct gs_failure *f = &s->rep->replay->failures[s->rows[row]];
    if (col < 5) { /* as in the failures' table */
        failure_cell(ctx, row, col, c);
        return;
    }
    int got = f->outcome == GS_OUTCOME_RECOVERED || f->outcome == GS_OUTCOME_PROBE;
    switch (col) {
    case 5: c->text = gs_outcome_name(f->outcome); return;
    case 6:
    case 7:
        if (!got)
            return;
        key_u(c, col == 6 ? f->retry_bytes : f->freed_bytes);
        c->text = gs_human_bytes(col == 6 ? f->retry_bytes : f->freed_bytes, s->text,
                                 sizeof s->text);
        return;
    default: c->text = frames_text(s->rep, f->stack_id, &s->ft); return;
    }
}

struct devices_ctx {
    const struct gs_replay *r;
    int index[GS_MAX_DEVICES + 1];
    char text[64];
};

static const struct gs_html_col device_cols[] = {{"device", 1, NULL},
                                                 {"peak", 1, NULL},
                                                 {"peak at", 1, NULL},
                                                 {"live at the end", 1, NULL},
                                                 {"allocations", 1, NULL}};

static void device_cell(void *ctx, size_t row, size_t col, struct gs_html_cell *c)
{
    struct devices_ctx *s = ctx;
    int d = s->index[row];
    const struct gs_device_usage *u = &s->r->devices[d];
    c->text = s->text;
    switch (col) {
    case 0:
        key_i(c, d < GS_MAX_DEVICES ? d : -1);
        if (d < GS_MAX_DEVICES)
            snprintf(s->text, sizeof s->text, "%d", d);
        else
            c->text = "?";
        break;
    case 1: key_u(c, u->peak_bytes); gs_human_bytes(u->peak_bytes, s->text, sizeof s->text); break;
    case 2:
        key_u(c, u->peak_time_ns);
        snprintf(s->text, sizeof s->text, "%.6f s", (double)u->peak_time_ns / 1e9);
        break;
    case 3: key_u(c, u->live_bytes); gs_human_bytes(u->live_bytes, s->text, sizeof s->text); break;
    default:
        key_u(c, u->allocs);
        snprintf(s->text, sizeof s->text, "%" PRIu64, u->allocs);
        break;
    }
}

/* ---- the summary ---- */

static const char *plural(uint64_t n) { return n == 1 ? "" : "s"; }

static void row_start(FILE *out, const char *id, const char *name)
{
    fprintf(out, "<tr><th>%s</th><td id=\"%s\"", name, id);
}

static void summary_text(FILE *out, const char *id, const char *name, const char *value)
{
    row_start(out, id, name);
    fputc('>', out);
    gs_html_escape(out, value);
    fputs("</td></tr>\n", out);
}

static void summary(FILE *out, const struct gs_report *rep, uint64_t duration,
                    const struct gs_fit *fit)
{
    const struct gs_replay *r = rep->replay;
    const struct gs_trace_info *info = rep->info;
    char buf[512], a[32], b[32];
    uint64_t count, leaked = gs_replay_leaks(r, &count);
    fputs("<table class=\"summary\">\n", out);
    const char *host = gs_shown_host(info), *command = gs_shown_command(info);
    snprintf(buf, sizeof buf, "%" PRIu64 " on %s", info->header.pid,
             host ? host : "(left out: --redact)");
    summary_text(out, "s-process", "process", buf);
    summary_text(out, "s-command", "command",
                 !command ? "(left out: --redact)" : command[0] ? command : "(not recorded)");
    time_t start = (time_t)(info->header.realtime_ns / 1000000000u);
    struct tm tm;
    if (gmtime_r(&start, &tm) && strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S UTC", &tm))
        summary_text(out, "s-started", "started", buf);
    row_start(out, "s-duration", "recorded");
    fprintf(out, " data-v=\"%" PRIu64 "\">%.3f s: %" PRIu64 " allocation%s, %" PRIu64
                 " free%s, %" PRIu64 " failed allocation%s",
            duration, (double)duration / 1e9, r->allocations, plural(r->allocations), r->frees,
            plural(r->frees), r->failed, plural(r->failed));
    if (gs_report_outcomes(r, buf, sizeof buf)) {
        fputs(" (", out);
        gs_html_escape(out, buf);
        fputc(')', out);
    }
    fputs("</td></tr>\n", out);
    snprintf(buf, sizeof buf, "%s; the trace is %s", gs_trace_ending(info, rep->stats),
             gs_trace_complete(rep->stats) ? "complete" : "incomplete (gpushim report says why)");
    summary_text(out, "s-ending", "ending", buf);
    for (size_t i = 0; rep->warnings && i < rep->warnings->n; i++)
        summary_text(out, "s-warning", "warning", rep->warnings->w[i].text);
    row_start(out, "s-peak", "peak");
    fprintf(out, " data-v=\"%" PRIu64 "\">%s of device memory at %.3f s</td></tr>\n",
            r->peak_bytes, gs_human_bytes(r->peak_bytes, a, sizeof a),
            (double)r->peak_time_ns / 1e9);
    gs_roles_peak_text(rep, buf, sizeof buf);
    summary_text(out, "s-roles", "by role at the peak", buf);
    row_start(out, "s-leaks", "never freed");
    fprintf(out, " data-v=\"%" PRIu64 "\">%s in %" PRIu64 " allocation%s</td></tr>\n", leaked,
            gs_human_bytes(leaked, b, sizeof b), count, plural(count));
    gs_fit_text(fit, buf, sizeof buf);
    summary_text(out, "s-fits", "fits on", buf);
    fputs("</table>\n", out);
}

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

/* Each device's CUDA graph pool (graphs.c), for a trace with graphs. */
static const struct gs_html_col graph_pool_cols[] = {{"device", 1, NULL},
                                                     {"reserved at the end", 1, NULL},
                                                     {"reserved at most", 1, NULL},
                                                     {"used by live graph allocations", 1, NULL},
                                                     {"launches", 1, NULL},
                                                     {"launches failed", 1, NULL}};

static void graph_pool_cell(void *ctx, size_t row, size_t col, struct gs_html_cell *c)
{
    struct devices_ctx *s = ctx;
    int d = s->index[row];
    const struct gs_graph_pool *p = &s->r->graphs.pools[d];
    const uint64_t v[] = {0, p->reserved, p->peak_reserved, p->live, p->launches,
                          p->launches_failed};
    c->text = s->text;
    if (col == 0) {
        device_cell(ctx, row, col, c);
    } else if (col <= 3) {
        key_u(c, v[col]);
        gs_human_bytes(v[col], s->text, sizeof s->text);
    } else {
        key_u(c, v[col]);
        snprintf(s->text, sizeof s->text, "%" PRIu64, v[col]);
    }
}

static void graph_pools(FILE *out, struct devices_ctx *dc)
{
    size_t n = 0;
    for (int d = 0; d <= GS_MAX_DEVICES; d++)
        if (dc->r->graphs.pools[d].seen)
            dc->index[n++] = d;
    if (dc->r->graphs.seen)
        gs_html_table(out, "graph-pools", "CUDA graph pools (graph memory, counted as device memory)",
                      graph_pool_cols, 6, n, graph_pool_cell, dc);
}

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

void gs_export_html(FILE *out, const struct gs_report *rep)
{
    const struct gs_replay *r = rep->replay;
    uint64_t duration = gs_trace_duration_ns(rep->stats, r->last_time_ns);
    const char *command = gs_shown_command(rep->info);
    gs_html_page_begin(out, command && command[0] ? command : rep->path, "gpushim report");
    struct gs_found local;
    const struct gs_found *found = gs_report_found(rep, &local);
    const struct gs_suspect *sus = found->suspects;
    size_t nsus = found->nsuspects;
    summary(out, rep, duration, &found->fit);

    struct devices_ctx *dc = calloc(1, sizeof *dc);
    size_t ndev = 0;
    if (dc) {
        dc->r = r;
        for (int d = 0; d <= GS_MAX_DEVICES; d++)
            if (r->devices[d].present)
                dc->index[ndev++] = d;
        gs_html_table(out, "devices", "Devices", device_cols, 5, ndev, device_cell, dc);
    }

    fputs("<h2>Device memory over time</h2>\n", out);
    fputs("<p class=\"legend\">The most live on the device in each span of the run; the dot is "
          "its peak, dashed lines are the program's marks, red dots the failed allocations it did "
          "not get past (at what the process held then).</p>\n",
          out);
    uint64_t width;
    unsigned n;
    gs_timeline_span(r, &width, &n);
    uint64_t end = (uint64_t)n * width > duration ? (uint64_t)n * width : duration;
    char a[32];
    for (size_t i = 0; dc && i < ndev; i++) {
        int d = dc->index[i];
        fputs("<figure>\n<figcaption>", out);
        if (d < GS_MAX_DEVICES)
            fprintf(out, "device %d", d);
        else
            fputs("unknown device", out);
        fprintf(out, ": peak %s at %.3f s</figcaption>\n",
                gs_human_bytes(r->devices[d].peak_bytes, a, sizeof a),
                (double)r->devices[d].peak_time_ns / 1e9);
        gs_svg_device_chart(out, r, (unsigned)d, width, n, end);
        fputs("</figure>\n", out);
    }
    if (!ndev)
        fputs("<p class=\"none\">no device memory was used</p>\n", out);
    if (dc)
        graph_pools(out, dc);
    free(dc);

    fputs("<h2>Live memory by call site</h2>\n", out);
    fputs("<p class=\"legend\">Device memory live at each sample of the run, stacked by the "
          "call sites that held the most: a leak is the band that keeps rising.</p>\n", out);
    gs_svg_site_bands(out, rep);
    fputs("<h2>The peak, by stack</h2>\n", out);
    fputs("<p class=\"legend\">The device memory live at the peak: each frame as wide as the "
          "bytes allocated under it, the outermost at the top; hover a frame for its bytes.</p>\n",
          out);
    gs_svg_peak_flame(out, rep);

    struct suspects_ctx *sc = calloc(1, sizeof *sc);
    if (sc) {
        sc->rep = rep;
        sc->sus = sus;
        gs_html_table(out, "suspects", "Leak suspects: live memory that kept rising",
                      suspect_cols, sizeof suspect_cols / sizeof *suspect_cols, nsus, suspect_cell, sc);
        free(sc);
    }
    sites_table(out, rep, GS_METRIC_PEAK, "peak-sites", "Live at the peak, by call site");
    sites_table(out, rep, GS_METRIC_LEAK, "leak-sites", "Never freed, by call site");
    /* the failures that mattered, with their verdicts; then those the
     * program got past (outcome.c) */
    struct failures_ctx *fc = calloc(1, sizeof *fc);
    size_t *rows = calloc(r->nfailures ? r->nfailures : 1, sizeof *rows);
    if (fc && rows) {
        fc->rep = rep;
        fc->sus = sus;
        fc->nsus = nsus;
        fc->rows = rows;
        size_t n = 0;
        for (size_t i = 0; i < r->nfailures; i++)
            if (r->failures[i].outcome == GS_OUTCOME_UNRECOVERED)
                rows[n++] = i;
        gs_html_table(out, "failures", "Failed allocations the program did not get past",
                      failure_cols, 10, n, failure_cell, fc);
        n = 0;
        for (size_t i = 0; i < r->nfailures; i++)
            if (r->failures[i].outcome != GS_OUTCOME_UNRECOVERED)
                rows[n++] = i;
        if (n)
            gs_html_table(out, "got-past",
                          "Failed allocations the program got past (recovered, probes, refused)",
                          got_past_cols, 9, n, got_past_cell, fc);
    }
    free(rows);
    free(fc);
    if (found == &local)
        gs_found_free(&local);
    gs_html_page_end(out);
}
