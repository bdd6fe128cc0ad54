/*
 * found.c - the judgements of one trace's report that every screen gives
 * (report.h, struct gs_found): the leak suspects (findings/suspects.c) and
 * the cards the run fits on (findings/cards.c), worked out once; the rest of
 * struct gs_found (the what-if replay, the warnings) is filled by
 * gs_report_prepare (analyzer/cmd/prepare.c).
 */
#include <stdlib.h>
#include <string.h>

#include "analyzer/findings/growth.h"
#include "analyzer/report/report.h"
#include "analyzer/whatif/answer.h"

void gs_report_find(const struct gs_report *rep, struct gs_found *f)
{
    f->nsuspects = gs_growth_suspects(rep->replay, rep->sym, rep->opt->view, &f->suspects);
    gs_card_fit(rep->replay, f->nsuspects, &f->fit);
}

void gs_found_free(struct gs_found *f)
{
    free(f->suspects);
    f->suspects = NULL;
    f->nsuspects = 0;
    if (f->whatif) {
        gs_wi_answer_free(f->whatif);
        free(f->whatif);
        f->whatif = NULL;
    }
}

const struct gs_found *gs_report_found(const struct gs_report *rep, struct gs_found *local)
{
    if (rep->found)
        return rep->found;
    memset(local, 0, sizeof *local);
    gs_report_find(rep, local);
    return local;
}
