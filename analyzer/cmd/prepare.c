/*
 * prepare.c - what report and export work out once for the screens of one
 * trace (gs_report_prepare, cmd.h): the failures' what-if replay
 * (report/whatif_report.c), then the findings (findings/found.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyzer/findings/found.h"
#include "analyzer/report/report.h"
#include "analyzer/report/whatif_report.h"
#include "analyzer/cmd/cmd.h"

int gs_report_prepare(const char *cmd, struct gs_report *rep, struct gs_prepared *p, int whatif)
{
    memset(p, 0, sizeof *p);
    if (whatif) {
        p->whatif = malloc(sizeof *p->whatif); /* large: not on the stack */
        if (p->whatif &&
            !gs_report_whatif(rep->path, rep->seen, rep->info, rep->replay, p->whatif)) {
            free(p->whatif);
            p->whatif = NULL;
        }
    }
    p->found = malloc(sizeof *p->found);
    if (!p->found) {
        fprintf(stderr, "gpushim %s: out of memory for the findings of %s\n", cmd, rep->path);
        gs_prepared_free(p);
        return -1;
    }
    gs_findings_make(p->found, rep->info, rep->stats, rep->replay, rep->sym, rep->opt->view,
                     p->whatif);
    rep->found = p->found;
    return 0;
}

void gs_prepared_free(struct gs_prepared *p)
{
    if (p->found) {
        gs_findings_free(p->found);
        free(p->found);
    }
    if (p->whatif) {
        gs_wi_answer_free(p->whatif);
        free(p->whatif);
    }
    memset(p, 0, sizeof *p);
}
