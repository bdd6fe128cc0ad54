/*
 * load.c - a trace read into all that a report or an export needs: the
 * replay of its events, what its header says, how complete it was, and a
 * symbolizer that knows its modules.
 */
#include <stdio.h>

#include "analyzer.h"
#include "symbolize.h"

int gs_load(const char *cmd, const char *path, struct gs_loaded *l)
{
    char err[512];
    gs_replay_init(&l->r);
    l->r.growth.enabled = 1; /* leak suspects and post-mortems: the analyzer's alone */
    l->sym = NULL;
    if (gs_read_trace(path, &gs_replay_ops, &l->r, &l->info, &l->st, err, sizeof err) != 0) {
        fprintf(stderr, "gpushim %s: %s\n", cmd, err);
        gs_replay_free(&l->r);
        return -1;
    }
    gs_replay_finish(&l->r);
    l->sym = gs_sym_new();
    gs_sites_register_modules(&l->r, l->sym);
    return 0;
}

void gs_loaded_free(struct gs_loaded *l)
{
    gs_sym_free(l->sym);
    gs_replay_free(&l->r);
}
