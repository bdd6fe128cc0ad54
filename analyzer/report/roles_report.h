/*
 * roles_report.h - memory by role in the report, text and JSON
 * (roles_report.c).
 *
 * Included by: analyzer/report (report_text.c, report_json.c), analyzer/export.
 */
#ifndef GPUSHIM_REPORT_ROLES_REPORT_H
#define GPUSHIM_REPORT_ROLES_REPORT_H

#include <stddef.h>
#include <stdio.h>

struct gs_report;
struct gs_json;
struct gs_findings;
struct gs_failure_found;

/* "41 % activations 8.00 MiB, 30 % optimizer state 6.00 MiB, ...", largest
 * first, into buf; returns buf. */
const char *gs_roles_breakdown_text(const uint64_t by[], char *buf, size_t sz);
/* "By role at the peak: 41 % activations 8.00 MiB, ..." (or why not). */
void gs_roles_text_peak(FILE *out, const struct gs_report *rep);
/* The same words into buf ("not told: WHY" when roles are not told). */
void gs_roles_peak_text(const struct gs_report *rep, char *buf, size_t sz);
/* The same for a failure when its roles were kept, after lead. */
void gs_roles_text_failure(FILE *out, const struct gs_failure_found *x, const char *lead);
/* "roles": {"not_told", "basis", "at_peak": {ROLE: bytes}, "note"} */
void gs_roles_json(struct gs_json *j, const struct gs_findings *fd);
/* A failure's "roles": {ROLE: bytes}, or null. */
void gs_roles_json_failure(struct gs_json *j, const struct gs_failure_found *x);

#endif
