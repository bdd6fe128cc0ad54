/*
 * found.c - the judgements of one trace's report that every screen gives
 * (report.h, struct gs_found): the leak suspects (findings/suspects.c) and
 * the cards the run fits on (findings/cards.c), worked out once.
 */
#include <stdlib.h>
#include <string.h>

#include "analyzer/findings/growth.h"
#include "analyzer/report/report.h"

void gs_report_find(const struct gs_report *rep, struct gs_found *f)
{
    memset(f, 0, sizeof *f);
    f->nsuspects = gs_growth_suspects(rep->replay, rep->sym, rep->opt->view, &f->suspects);
    gs_card_fit(rep->replay, f->nsuspects, &f->fit);
}

void gs_found_free(struct gs_found *f)
{
    free(f->suspects);
    f->suspects = NULL;
    f->nsuspects = 0;
}

const struct gs_found *gs_report_found(const struct gs_report *rep, struct gs_found *local)
{
    if (rep->found)
        return rep->found;
    gs_report_find(rep, local);
    return local;
}
