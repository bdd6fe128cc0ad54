/*
 * load.h - a trace read into all a report or an export needs (load.c):
 * read, replayed, its modules handed to a symbolizer; or its events handed
 * one by one, in order, to an export that follows them over time.
 *
 * Included by: the analyzer's layers from report up (report, export, cmd,
 * main.c).
 */
#ifndef GPUSHIM_REPORT_LOAD_H
#define GPUSHIM_REPORT_LOAD_H

#include "analyzer/model/model.h"
#include "analyzer/model/replay.h" /* struct gs_replay */
#include "analyzer/read/read.h"

struct gs_symbolizer;

/* ---- load.c: a trace read into all a report or an export needs ---- */
struct gs_loaded {
    const char *path; /* as given */
    struct gs_replay r;
    struct gs_trace_info info;
    struct gs_reader_stats st;
    struct gs_read_seen seen; /* what the read saw: a second read sees the same */
    struct gs_symbolizer *sym;
};
/* Reads path; on failure says why on stderr as "gpushim CMD: ..." and
 * returns -1. */
int gs_load(const char *cmd, const char *path, struct gs_loaded *l);
/* From now on, each trace loaded leaves its host and command line out of
 * every screen (--redact: gs_shown_host, gs_shown_command). */
void gs_load_redact(void);
/* Lets l go, its warnings noted for the command's end (incomplete.h). */
void gs_loaded_free(struct gs_loaded *l);

/* ---- load.c: the events of a trace in order, with the replay current ---- */
/* Called for each event: before, with the replay as it stood; after, once
 * the replay applied it (l->r.last_time_ns is then the latest time so far,
 * which never goes back). The symbolizer knows every module read so far.
 * Either may be NULL. */
struct gs_event_watch {
    void *ctx;
    void (*before)(void *ctx, struct gs_loaded *l, const struct gs_revent *e);
    void (*after)(void *ctx, struct gs_loaded *l, const struct gs_revent *e);
};
/* As gs_load, in the same one pass, calling w for every event. */
int gs_load_watch(const char *cmd, const char *path, struct gs_loaded *l,
                  const struct gs_event_watch *w);

#endif
