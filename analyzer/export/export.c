/*
 * export.c - gpushim export: a recorded run in the formats other tools
 * read. json is the report's JSON; folded is one line per call site,
 * "outermost;...;innermost bytes", which flamegraph.pl, inferno and
 * speedscope draw as a flame graph of what held memory at the peak, what
 * was never freed, or what was allocated over the run (--metric); pprof
 * is a gzipped profile.proto (export_pprof.c); html is a page for a
 * browser (export_html.c). The formats of the events over time have files
 * of their own: perfetto (perfetto.c) and torch-snapshot (torch_snapshot.c).
 * The command, its options and the choice of format: analyzer/cmd/export.c.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyzer/symbols/symbolize.h"
#include "analyzer/symbols/symbols.h"
#include "analyzer/report/report.h"
#include "analyzer/export/export.h"


struct frames {
    char **names;
    unsigned n, cap;
};

/* A frame's name in a folded line: gs_frame_name's, never with a ';' or a
 * line break, which the format reserves. */
static char *frame_name(const struct gs_frame *f)
{
    char buf[1024];
    gs_frame_name(f, buf, sizeof buf);
    for (char *p = buf; *p; p++)
        if (*p == ';' || *p == '\n' || *p == '\r')
            *p = ':';
    return strdup(buf);
}

static void collect(void *ctx, const struct gs_frame *f, unsigned index)
{
    (void)index;
    struct frames *fr = ctx;
    if (fr->n == fr->cap) {
        unsigned cap = fr->cap ? fr->cap * 2 : 32;
        char **names = realloc(fr->names, cap * sizeof *names);
        if (!names)
            return;
        fr->names = names;
        fr->cap = cap;
    }
    char *name = frame_name(f);
    if (name)
        fr->names[fr->n++] = name;
}

const struct gs_report_site *gs_export_sites(const struct gs_report *rep,
                                             enum gs_site_metric metric, size_t *n,
                                             struct gs_report_site **made)
{
    *made = NULL;
    if (metric != GS_METRIC_ALLOCATED)
        return gs_found_sites(rep->found, 0, metric, n);
    *n = gs_rank_sites(rep->replay, rep->sym, rep->opt->view, metric, made);
    return *made;
}

void gs_export_folded(FILE *out, const struct gs_report *rep, enum gs_site_metric metric)
{
    size_t n;
    struct gs_report_site *sites;
    const struct gs_report_site *ranked = gs_export_sites(rep, metric, &n, &sites);
    for (size_t i = 0; i < n; i++) {
        struct frames fr = {0};
        gs_site_frames(rep->replay, rep->sym, ranked[i].stack_id, rep->opt->view, UINT32_MAX,
                       collect, &fr);
        if (!fr.n)
            fputs("[unknown]", out);
        for (unsigned k = fr.n; k-- > 0;) /* outermost first */
            fprintf(out, "%s%s", fr.names[k], k ? ";" : "");
        fprintf(out, " %" PRIu64 "\n", ranked[i].bytes);
        for (unsigned k = 0; k < fr.n; k++)
            free(fr.names[k]);
        free(fr.names);
    }
    free(sites);
}
