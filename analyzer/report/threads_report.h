/*
 * threads_report.h - a site's threads in words (threads_report.c), as the
 * text report's line under a site and the HTML page's "threads" cell say
 * them.
 *
 * Included by: analyzer/report (report_text.c), analyzer/export
 * (export_html.c).
 */
#ifndef GPUSHIM_REPORT_THREADS_REPORT_H
#define GPUSHIM_REPORT_THREADS_REPORT_H

#include <stddef.h>
#include <stdint.h>

struct gs_report;
struct gs_thread_tally;

/* "threads loader-3 (2 allocations), pinner (1): backward of mul", or
 * "thread pt_autograd_0: backward of mul, for the thread that waited in
 * _engine_run_backward (its Python lines)", into buf: the names of the
 * threads that allocated at the site (those Python's threading gave
 * included), the backward PyTorch's autograd ran there, and whose Python
 * lines the site has when they are a waiting thread's; NULL (buf empty)
 * when there is none of these, the threads all named as the main thread is. */
const char *gs_site_threads_text(const struct gs_report *rep, uint32_t stack_id,
                                 const struct gs_thread_tally *t, char *buf, size_t sz);

#endif
