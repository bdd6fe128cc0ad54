/*
 * across_runs.h - what the commands over several traces share (across_runs.c): signed
 * byte counts, sizes from the command line, a call site named the same in
 * every run.
 *
 * Included by: analyzer/cmd's files (diff.c, plan.c, ranks.c, across_runs.c).
 */
#ifndef GPUSHIM_CMD_ACROSS_RUNS_H
#define GPUSHIM_CMD_ACROSS_RUNS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "analyzer/symbols/symbols.h"

struct gs_replay;
struct gs_symbolizer;

/* "+4.00 MiB", "-512 B", "0 B". Returns buf. */
const char *gs_multi_signed_bytes(int64_t v, char *buf, size_t sz);
/* A size from the command line: bytes, or N with K, M, G, T (powers of
 * 1024, "iB" or "B" may follow), or "NGB" (a card as sold: the memory that
 * card of gs_cards reports, else N GiB). 0, or -1 when it is none. */
int gs_multi_parse_size(const char *s, uint64_t *out);
/* A name for the site of stack_id that is the same in another run of the
 * program: its source frames as view shows them (function, file, line; a
 * frame without either: module file name and offset). Caller frees; NULL
 * on no memory. */
char *gs_multi_site_key(const struct gs_replay *r, struct gs_symbolizer *sym,
                        enum gs_stack_view view, uint32_t stack_id);
/* A site's frames in text, at most max, each line starting with lead. */
void gs_multi_frames_text(FILE *out, const struct gs_replay *r, struct gs_symbolizer *sym,
                          enum gs_stack_view view, uint32_t stack_id, unsigned max,
                          const char *lead);

#endif
