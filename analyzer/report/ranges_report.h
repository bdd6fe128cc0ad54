/*
 * ranges_report.h - memory by NVTX range in the report, text and JSON
 * (ranges_report.c).
 *
 * Included by: analyzer/report (report_text.c, report_json.c),
 * analyzer/export/export_html.c.
 */
#ifndef GPUSHIM_REPORT_RANGES_REPORT_H
#define GPUSHIM_REPORT_RANGES_REPORT_H

#include <stddef.h>
#include <stdio.h>

struct gs_report;
struct gs_json;

/* The section "NVTX ranges" (nothing for a run without ranges). */
void gs_ranges_text(FILE *out, const struct gs_report *rep);
/* The object "ranges" (null for a run without ranges). */
void gs_ranges_json(struct gs_json *j, const struct gs_report *rep);
/* The path of the innermost range open on failure idx's thread when it
 * failed, into out: 1, or 0 when none was. */
int gs_ranges_failure_path(const struct gs_report *rep, size_t idx, char *out, size_t outsz);

#endif
