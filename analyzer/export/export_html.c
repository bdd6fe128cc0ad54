/*
 * export_html.c - gpushim export --format=html: a recorded run as one
 * self-contained HTML file (no network: inline CSS, inline SVG, a small
 * inline script), for people to open in a browser: the summary, a chart of
 * memory over time per device (svg.c), the pictures of call sites
 * (svg_sites.c), and sortable tables of the sites at the peak, the sites
 * never freed and the failed allocations: those the program did not get
 * past with their verdicts, then the others (outcome.c); then what the
 * program told and the other memory (html_program.c). Every figure and
 * sentence is the findings' (findings/found.h), as the text says it.
 *
 * Every string from the trace (command line, host, function and file names,
 * labels) is untrusted and goes through gs_html_escape. Tables are made by
 * gs_html_table (html_page.c) from columns and a function that gives each
 * cell: a numeric cell carries its exact figure in data-v, which the script
 * sorts by (as a BigInt) and a reader of the file can check against the
 * JSON.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "analyzer/report/roles_report.h"
#include "analyzer/report/ranges_report.h"
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
#include "analyzer/report/threads_report.h"
#include "analyzer/export/export.h"
#include "analyzer/export/html.h"
#include "analyzer/util/text.h"

#define HTML_FRAMES 6    /* frames shown per call site */


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

/* ---- the tables ---- */

struct sites_ctx {
    const struct gs_report *rep;
    const struct gs_report_site *sites;
    int blocks; /* the program's own blocks' sites */
    char text[1024];
    struct frame_text ft;
};

static const struct gs_html_col site_cols[] = {
    {"bytes", 1, NULL},         {"allocations", 1, NULL}, {"API", 0, NULL},
    {"call site", 0, "frames"}, {"threads", 0, NULL}};

static void site_cell(void *ctx, size_t row, size_t col, struct gs_html_cell *c)
{
    struct sites_ctx *s = ctx;
    const struct gs_report_site *site = &s->sites[row];
    switch (col) {
    case 0: gs_html_key_u(c, site->bytes); c->text = gs_human_bytes(site->bytes, s->text, sizeof s->text); break;
    case 1:
        gs_html_key_u(c, site->count);
        snprintf(s->text, sizeof s->text, "%" PRIu64, site->count);
        c->text = s->text;
        break;
    case 2: c->text = s->blocks ? "gpushim_block_alloc" : gs_api_name(site->api); break;
    case 3: c->text = frames_text(s->rep, site->stack_id, &s->ft); break;
    default:
        c->text = gs_site_threads_text(s->rep, site->stack_id, &site->threads, s->text,
                                       sizeof s->text);
        if (!c->text)
            c->text = "";
        break;
    }
}

/* The device allocations' sites, or the program's blocks' (blocks set). */
static void sites_table(FILE *out, const struct gs_report *rep, int blocks,
                        enum gs_site_metric metric, const char *id, const char *title)
{
    struct sites_ctx *s = calloc(1, sizeof *s);
    if (!s)
        return;
    size_t n;
    s->rep = rep;
    s->sites = gs_found_sites(rep->found, blocks, metric, &n);
    s->blocks = blocks;
    gs_html_table(out, id, title, site_cols, 5, n, site_cell, s);
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
        gs_html_key_u(c, x->growth_bytes);
        c->text = gs_human_bytes(x->growth_bytes, s->text, sizeof s->text);
        return;
    case 1:
        rate = gs_suspect_rate_value(x);
        gs_html_key_u(c, gs_whole_bytes(rate));
        c->text = gs_suspect_rate(x, s->rep->found->duration_ns, s->text, sizeof s->text);
        return;
    case 2:
        gs_html_key_u(c, x->first_seen_ns);
        snprintf(s->text, sizeof s->text, "%.6f s", (double)x->first_seen_ns / 1e9);
        c->text = s->text;
        return;
    case 3:
        gs_html_key_u(c, x->live_bytes);
        c->text = gs_human_bytes(x->live_bytes, s->text, sizeof s->text);
        return;
    default: c->text = frames_text(s->rep, x->stack_id, &s->ft); return;
    }
}

struct failures_ctx {
    const struct gs_report *rep;
    size_t *rows; /* the failures listed, by index */
    char text[64];
    char verdict[512 + 16 + 400]; /* the verdict, and the allocator's (what-if) after it */
    struct frame_text ft;
};

static const struct gs_html_col failure_cols[] = {
    {"time", 1, NULL},        {"API", 0, NULL},        {"device", 1, NULL},
    {"requested", 1, NULL},   {"result", 0, NULL},     {"device free", 1, NULL},
    {"device total", 1, NULL}, {"held by the process", 1, NULL}, {"verdict", 0, "verdict"},
    {"inside NVTX range", 0, NULL}, {"by role then", 0, NULL}, {"call site", 0, "frames"}};

static void failure_cell(void *ctx, size_t row, size_t col, struct gs_html_cell *c)
{
    struct failures_ctx *s = ctx;
    const struct gs_failure_found *x = &s->rep->found->failures[s->rows[row]];
    const struct gs_failure *f = x->f;
    uint64_t v;
    switch (col) {
    case 0:
        gs_html_key_u(c, f->time_ns);
        snprintf(s->text, sizeof s->text, "%.6f s", (double)f->time_ns / 1e9);
        c->text = s->text;
        return;
    case 1: c->text = gs_api_name(f->api); return;
    case 2:
        gs_html_key_i(c, f->device);
        snprintf(s->text, sizeof s->text, "%" PRId32, f->device);
        c->text = f->device >= 0 ? s->text : "?";
        return;
    case 3: v = f->requested; break;
    case 4: c->text = gs_result_name(f->result); return;
    case 5: v = f->free_bytes; break;
    case 6: v = f->total_bytes; break;
    case 7: v = f->process_live_bytes; break;
    case 8:
        c->text = x->cause.sentence;
        if (x->has_allocator) { /* as the text report's "allocator:" line */
            snprintf(s->verdict, sizeof s->verdict, "%s Allocator: %s", x->cause.sentence,
                     x->allocator.sentence);
            c->text = s->verdict;
        }
        return;
    case 9:
        if (gs_ranges_failure_path(s->rep, x->index, s->verdict, sizeof s->verdict))
            c->text = s->verdict;
        return;
    case 10:
        if (x->has_roles)
            c->text = gs_roles_breakdown_text(x->roles, s->verdict, sizeof s->verdict);
        return;
    default: c->text = frames_text(s->rep, f->stack_id, &s->ft); return;
    }
    if (v == UINT64_MAX && (col == 5 || col == 6)) {
        c->text = "unknown";
        return;
    }
    gs_html_key_u(c, v);
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
    const struct gs_failure *f = s->rep->found->failures[s->rows[row]].f;
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
        gs_html_key_u(c, col == 6 ? f->retry_bytes : f->freed_bytes);
        c->text = gs_human_bytes(col == 6 ? f->retry_bytes : f->freed_bytes, s->text,
                                 sizeof s->text);
        return;
    default: c->text = frames_text(s->rep, f->stack_id, &s->ft); return;
    }
}

struct devices_ctx {
    const struct gs_findings *fd;
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
    const struct gs_device_usage *u = &s->fd->devices[d];
    c->text = s->text;
    switch (col) {
    case 0:
        gs_html_key_i(c, d < GS_MAX_DEVICES ? d : -1);
        if (d < GS_MAX_DEVICES)
            snprintf(s->text, sizeof s->text, "%d", d);
        else
            c->text = "?";
        break;
    case 1: gs_html_key_u(c, u->peak_bytes); gs_human_bytes(u->peak_bytes, s->text, sizeof s->text); break;
    case 2:
        gs_html_key_u(c, u->peak_time_ns);
        snprintf(s->text, sizeof s->text, "%.6f s", (double)u->peak_time_ns / 1e9);
        break;
    case 3: gs_html_key_u(c, u->live_bytes); gs_human_bytes(u->live_bytes, s->text, sizeof s->text); break;
    default:
        gs_html_key_u(c, u->allocs);
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

static void summary(FILE *out, const struct gs_report *rep)
{
    const struct gs_findings *fd = rep->found;
    const struct gs_trace_info *info = rep->info;
    uint64_t duration = fd->duration_ns;
    char buf[512], a[32], b[32];
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
            duration, (double)duration / 1e9, fd->allocations, plural(fd->allocations), fd->frees,
            plural(fd->frees), fd->failed, plural(fd->failed));
    if (fd->outcomes[0]) {
        fputs(" (", out);
        gs_html_escape(out, fd->outcomes);
        fputc(')', out);
    }
    fputs("</td></tr>\n", out);
    snprintf(buf, sizeof buf, "%s; the trace is %s", gs_trace_ending(info, rep->stats),
             gs_trace_complete(rep->stats) ? "complete" : "incomplete (gpushim report says why)");
    summary_text(out, "s-ending", "ending", buf);
    for (size_t i = 0; i < fd->warnings.n; i++)
        summary_text(out, "s-warning", "warning", fd->warnings.w[i].text);
    row_start(out, "s-peak", "peak");
    fprintf(out, " data-v=\"%" PRIu64 "\">%s of device memory at %.3f s</td></tr>\n",
            fd->peak_bytes, gs_human_bytes(fd->peak_bytes, a, sizeof a),
            (double)fd->peak_time_ns / 1e9);
    gs_roles_peak_text(rep, buf, sizeof buf);
    summary_text(out, "s-roles", "by role at the peak", buf);
    row_start(out, "s-leaks", "never freed");
    fprintf(out, " data-v=\"%" PRIu64 "\">%s in %" PRIu64 " allocation%s</td></tr>\n",
            fd->leak_bytes, gs_human_bytes(fd->leak_bytes, b, sizeof b), fd->leak_count,
            plural(fd->leak_count));
    summary_text(out, "s-fits", "fits on", fd->fit_text);
    if (fd->rounding_at_peak) { /* as the text report's "pages" line */
        snprintf(buf, sizeof buf, "%s more at the peak: sizes rounded up to whole %s pages",
                 gs_human_bytes(fd->rounding_at_peak, a, sizeof a),
                 gs_human_bytes(GS_DEVICE_PAGE, b, sizeof b));
        summary_text(out, "s-pages", "pages", buf);
    }
    fputs("</table>\n", out);
}


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
    const struct gs_graph_pool *p = &s->fd->graphs->pools[d];
    const uint64_t v[] = {0, p->reserved, p->peak_reserved, p->live, p->launches,
                          p->launches_failed};
    c->text = s->text;
    if (col == 0) {
        device_cell(ctx, row, col, c);
    } else if (col <= 3) {
        gs_html_key_u(c, v[col]);
        gs_human_bytes(v[col], s->text, sizeof s->text);
    } else {
        gs_html_key_u(c, v[col]);
        snprintf(s->text, sizeof s->text, "%" PRIu64, v[col]);
    }
}

static void graph_pools(FILE *out, struct devices_ctx *dc)
{
    size_t n = 0;
    for (int d = 0; d <= GS_MAX_DEVICES; d++)
        if (dc->fd->graphs->pools[d].seen)
            dc->index[n++] = d;
    if (dc->fd->graphs->seen)
        gs_html_table(out, "graph-pools", "CUDA graph pools (graph memory, counted as device memory)",
                      graph_pool_cols, 6, n, graph_pool_cell, dc);
}

/* The program's own allocator's blocks: what it gave and took back, their
 * peak, and their call sites then and at the end, as the text says them. */
static void blocks(FILE *out, const struct gs_report *rep)
{
    const struct gs_blocks *b = rep->found->blocks;
    char line[256], a[32], c[32];
    if (!b->seen)
        return;
    fputs("<h2>Blocks of the program's own allocator</h2>\n<p id=\"blocks\">", out);
    int n = snprintf(line, sizeof line, "%" PRIu64 " given, %" PRIu64 " taken back", b->allocs,
                     b->frees);
    if (b->frees_unknown && n > 0 && (size_t)n < sizeof line)
        snprintf(line + n, sizeof line - (size_t)n, ", %" PRIu64 " taken back that %s never given",
                 b->frees_unknown, b->frees_unknown == 1 ? "was" : "were");
    gs_html_escape(out, line);
    snprintf(line, sizeof line, ". Block peak: %s at %.3f s. %s",
             gs_human_bytes(b->peak_bytes, a, sizeof a), (double)b->peak_time_ns / 1e9,
             b->live_count ? "" : "Every block was taken back.");
    gs_html_escape(out, line);
    if (b->live_count) {
        snprintf(line, sizeof line, "Blocks never taken back: %s in %" PRIu64 " block%s.",
                 gs_human_bytes(b->live_bytes, c, sizeof c), b->live_count,
                 plural(b->live_count));
        gs_html_escape(out, line);
    }
    fputs("</p>\n", out);
    sites_table(out, rep, 1, GS_METRIC_PEAK, "block-peak-sites",
                "Blocks live at their peak, by call site");
    sites_table(out, rep, 1, GS_METRIC_LEAK, "block-leak-sites",
                "Blocks never taken back, by call site");
}


void gs_export_html(FILE *out, const struct gs_report *rep)
{
    const struct gs_findings *fd = rep->found;
    uint64_t duration = fd->duration_ns;
    const char *command = gs_shown_command(rep->info);
    gs_html_page_begin(out, command && command[0] ? command : rep->path, "gpushim report");
    summary(out, rep);

    struct devices_ctx *dc = calloc(1, sizeof *dc);
    size_t ndev = 0;
    if (dc) {
        dc->fd = fd;
        for (int d = 0; d <= GS_MAX_DEVICES; d++)
            if (fd->devices[d].present)
                dc->index[ndev++] = d;
        gs_html_table(out, "devices", "Devices", device_cols, 5, ndev, device_cell, dc);
    }

    fputs("<h2>Device memory over time</h2>\n", out);
    fputs("<p class=\"legend\">The most live on the device in each span of the run; the dot is "
          "its peak, dashed lines are the program's marks, red dots the failed allocations it did "
          "not get past (at what the process held then).</p>\n",
          out);
    uint64_t width = fd->timeline_width_ns;
    unsigned n = fd->timeline_n;
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
                gs_human_bytes(fd->devices[d].peak_bytes, a, sizeof a),
                (double)fd->devices[d].peak_time_ns / 1e9);
        gs_svg_device_chart(out, fd, (unsigned)d, width, n, end);
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
        sc->sus = fd->suspects;
        gs_html_table(out, "suspects", "Leak suspects: live memory that kept rising",
                      suspect_cols, sizeof suspect_cols / sizeof *suspect_cols, fd->nsuspects,
                      suspect_cell, sc);
        free(sc);
    }
    sites_table(out, rep, 0, GS_METRIC_PEAK, "peak-sites", "Live at the peak, by call site");
    sites_table(out, rep, 0, GS_METRIC_LEAK, "leak-sites", "Never freed, by call site");
    /* the failures that mattered, with their verdicts; then those the
     * program got past (outcome.c) */
    struct failures_ctx *fc = calloc(1, sizeof *fc);
    size_t *rows = calloc(fd->nfailures ? fd->nfailures : 1, sizeof *rows);
    if (fc && rows) {
        fc->rep = rep;
        fc->rows = rows;
        size_t n = 0;
        for (size_t i = 0; i < fd->nfailures; i++)
            if (fd->failures[i].f->outcome == GS_OUTCOME_UNRECOVERED)
                rows[n++] = i;
        gs_html_table(out, "failures", "Failed allocations the program did not get past",
                      failure_cols, 12, n, failure_cell, fc);
        n = 0;
        for (size_t i = 0; i < fd->nfailures; i++)
            if (fd->failures[i].f->outcome != GS_OUTCOME_UNRECOVERED)
                rows[n++] = i;
        if (n)
            gs_html_table(out, "got-past",
                          "Failed allocations the program got past (recovered, probes, refused)",
                          got_past_cols, 9, n, got_past_cell, fc);
    }
    free(rows);
    free(fc);
    gs_html_fragmentation(out, fd);
    blocks(out, rep);
    gs_html_steps(out, fd);
    gs_html_ranges(out, fd);
    gs_html_other_memory(out, fd);
    gs_html_page_end(out);
}
