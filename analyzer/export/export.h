/*
 * export.h - gpushim export (export.c) and the formats it writes: folded
 * stacks (export.c), pprof (export_pprof.c), a page of HTML
 * (export_html.c), Perfetto's trace-event JSON (perfetto.c), PyTorch's
 * memory snapshot (torch_snapshot.c).
 *
 * Included by: analyzer/export, analyzer/cmd, analyzer/main.c.
 */
#ifndef GPUSHIM_EXPORT_EXPORT_H
#define GPUSHIM_EXPORT_EXPORT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "analyzer/symbols/symbols.h"

struct gs_report;

/* ---- export.c: gpushim export ---- */
/* The device sites ranked by metric: the findings' at the peak and the
 * end; all allocated (no finding of the report's) ranked here, into *made
 * (the caller frees it; NULL otherwise). Their count in *n. */
const struct gs_report_site *gs_export_sites(const struct gs_report *rep,
                                             enum gs_site_metric metric, size_t *n,
                                             struct gs_report_site **made);
/* Folded stacks (flamegraph.pl, inferno, speedscope): one line a site,
 * "outermost;...;innermost bytes". */
void gs_export_folded(FILE *out, const struct gs_report *rep, enum gs_site_metric metric);

/* ---- export_pprof.c: gpushim export --format=pprof ---- */
/* What inuse_space and inuse_objects count. */
enum gs_pprof_inuse {
    GS_PPROF_INUSE_END = 0, /* live at the end of the trace: never freed (default) */
    GS_PPROF_INUSE_PEAK,    /* live at the process's device peak */
};
/* Writes the device call sites as a gzipped pprof profile (profile.proto)
 * to out. Returns 0, or -1 with a one-line message in err when memory ran
 * out or zlib failed (nothing written then). */
int gs_export_pprof(FILE *out, const struct gs_report *rep, enum gs_pprof_inuse inuse,
                    char *err, size_t errsz);

/* ---- export_html.c: gpushim export --format=html ---- */
void gs_export_html(FILE *out, const struct gs_report *rep);

/* ---- whatif_html.c: gpushim whatif --format=html ---- */
struct gs_wi_report;
void gs_export_whatif_html(FILE *out, const struct gs_wi_report *rep);

/* ---- perfetto.c: export --format=perfetto ---- */
/* Chrome's trace-event JSON of the trace at path; "gpushim export: ..." on
 * stderr and -1 when it cannot be read or written. */
int gs_export_perfetto(FILE *out, const char *path);

/* ---- torch_snapshot.c: export --format=torch-snapshot ---- */
/* PyTorch's memory snapshot (a pickle), for memory_viz, with each device's
 * last max_entries events (0: all); as above. */
#define GS_TORCH_MAX_ENTRIES 100000
int gs_export_torch_snapshot(FILE *out, const char *path, enum gs_stack_view view,
                             uint64_t max_entries);

#endif
