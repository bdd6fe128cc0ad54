/*
 * incomplete.h - what every command does when what it read is incomplete
 * (incomplete.c): each trace's warnings (findings/warnings.h) are noted as
 * it is let go (gs_loaded_free), and when the command ends they are said on
 * stderr, once each, with the analyzer's own shortage of memory, and the
 * command exits GS_EXIT_INCOMPLETE unless told --partial
 * (docs/commands.md, "Exit status").
 *
 * Included by: report/load.c, main.c.
 */
#ifndef GPUSHIM_REPORT_INCOMPLETE_H
#define GPUSHIM_REPORT_INCOMPLETE_H

#include "analyzer/findings/warnings.h"

#define GS_EXIT_INCOMPLETE 4

/* Notes the warnings of the trace at path (those of its trace and values:
 * a shortage of memory is the process's, said once at the end). */
void gs_incomplete_note(const char *path, const struct gs_warnings *w);

/* At the end of command cmd, which returns rc: says what was noted, and
 * the analyzer's shortage of memory, on stderr ("gpushim CMD: warning:
 * ..."), and returns the exit status: rc, or GS_EXIT_INCOMPLETE in place
 * of 0 where anything was said and partial is 0. */
int gs_incomplete_exit(const char *cmd, int rc, int partial);

/* Lets go of what was noted, unsaid (a fuzz target between inputs). */
void gs_incomplete_forget(void);

#endif
