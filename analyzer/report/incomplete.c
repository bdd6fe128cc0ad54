/*
 * incomplete.c - the warnings of the traces a command read, said when it
 * ends, and its exit status then (incomplete.h).
 */
#include "analyzer/report/incomplete.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyzer/util/text.h"

#define NOTED 16 /* lines kept; past them, a count */

static struct {
    char *line[NOTED];
    size_t n, more;
} noted;

void gs_incomplete_note(const char *path, const struct gs_warnings *w)
{
    char shown[512];
    gs_text_copy(shown, sizeof shown, path ? path : "", path ? strlen(path) : 0);
    for (size_t i = 0; i < w->n; i++) {
        if (w->w[i].kind == GS_WARNING_MEMORY)
            continue; /* the process's: said once, at the end */
        size_t len = strlen(shown) + strlen(w->w[i].text) + 3;
        char *line = noted.n < NOTED ? malloc(len) : NULL;
        if (line == NULL) {
            noted.more++;
            continue;
        }
        snprintf(line, len, "%s: %s", shown, w->w[i].text);
        noted.line[noted.n++] = line;
    }
}

void gs_incomplete_forget(void)
{
    for (size_t i = 0; i < noted.n; i++)
        free(noted.line[i]);
    noted.n = noted.more = 0;
}

int gs_incomplete_exit(const char *cmd, int rc, int partial)
{
    struct gs_warnings own;
    gs_warnings_of(NULL, NULL, NULL, &own); /* the analyzer's memory alone */
    for (size_t i = 0; i < noted.n; i++) {
        fprintf(stderr, "gpushim %s: warning: %s\n", cmd, noted.line[i]);
        free(noted.line[i]);
    }
    if (noted.more)
        fprintf(stderr, "gpushim %s: warning: %zu more\n", cmd, noted.more);
    for (size_t i = 0; i < own.n; i++)
        fprintf(stderr, "gpushim %s: warning: %s\n", cmd, own.w[i].text);
    int any = noted.n + noted.more + own.n > 0;
    noted.n = noted.more = 0;
    if (!any || partial || rc != 0)
        return rc;
    fprintf(stderr, "gpushim %s: what was read is incomplete: exit status %d (--partial: 0)\n",
            cmd, GS_EXIT_INCOMPLETE);
    return GS_EXIT_INCOMPLETE;
}
