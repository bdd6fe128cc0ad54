/*
 * prepare.c - what report and export work out once for the screens of one
 * trace (gs_report_prepare, cmd.h): the failures' what-if replay
 * (report/whatif_report.c), the suspects and the fit (report/found.c), the
 * warnings (findings/warnings.c).
 */
#include <stdlib.h>
#include <string.h>

#include "analyzer/findings/warnings.h"
#include "analyzer/report/report.h"
#include "analyzer/report/whatif_report.h"
#include "analyzer/cmd/cmd.h"

void gs_report_prepare(struct gs_report *rep, struct gs_found *f, int judgements)
{
    memset(f, 0, sizeof *f);
    if (judgements) {
        f->whatif = malloc(sizeof *f->whatif); /* large: not on the stack */
        if (f->whatif && gs_report_whatif(rep->path, rep->info, rep->replay, f->whatif)) {
            rep->whatif = f->whatif;
        } else {
            free(f->whatif);
            f->whatif = NULL;
        }
        gs_report_find(rep, f);
        rep->found = f;
    }
    gs_warnings_of(rep->info, rep->stats, rep->replay, &f->warnings);
    rep->warnings = &f->warnings;
}
