/*
 * read.h - a trace file read (reader.c: its header, then its chunks,
 * checked, inflated and decoded ahead on a second thread), and a dead
 * process's ring file (recover.c: the events no chunk holds).
 *
 * Included by: the analyzer's layers from read up (read, symbols, findings,
 * report, export, cmd, main.c). Never the shim.
 */
#ifndef GPUSHIM_READ_READ_H
#define GPUSHIM_READ_READ_H

#include <stddef.h>
#include <stdint.h>

#include "gpushim_ring.h"
#include "analyzer/trace/trace.h"
#include "analyzer/trace/meta.h"

/* A trace's header as read: what its records say of the process, as the
 * codec decodes them (analyzer/trace/meta.h), and its preamble's format
 * version; and whether the screens show its host and command line. */
struct gs_trace_info {
    struct gs_header_info header;
    uint32_t version;
    int redacted; /* --redact: the host and command left out of every screen */
};

/* The host and the command line as every screen shows them: NULL where
 * --redact left them out (report/load.c), or "" where the trace has none. */
static inline const char *gs_shown_host(const struct gs_trace_info *i)
{
    return i->redacted ? NULL : i->header.host;
}
static inline const char *gs_shown_command(const struct gs_trace_info *i)
{
    return i->redacted ? NULL : i->header.command;
}

/* ---- reader.c ---- */
/* Reads the whole trace, calling ops in file order. Returns 0 (the stats
 * say how complete it was), or -1 with a one-line message in err naming the
 * file and offset when not even the header can be read. */
int gs_read_trace(const char *path, const struct gs_reader_ops *ops, void *ctx,
                  struct gs_trace_info *info, struct gs_reader_stats *st, char *err,
                  size_t errsz);
/* What a read saw, for a second read of the same trace that must see the
 * same records (a what-if replay after the report's): the file (device and
 * inode), how many of its bytes were read, and the copy of its ring file
 * played after them (NULL: none). A live process's trace grows, and its
 * ring moves on, between two reads; the second reads the first's bytes and
 * plays the first's copy. */
struct gs_read_seen {
    uint64_t dev, ino, size;
    struct gs_ring_snapshot *snap;
};
/* As gs_read_trace, keeping what it saw in *seen (gs_read_seen_free it). */
int gs_read_trace_seen(const char *path, const struct gs_reader_ops *ops, void *ctx,
                       struct gs_trace_info *info, struct gs_reader_stats *st,
                       struct gs_read_seen *seen, char *err, size_t errsz);
/* Reads the trace again as seen: -1, saying so, when the file at path is
 * not the one read (another inode) or is shorter than it was. */
int gs_read_trace_again(const char *path, const struct gs_read_seen *seen,
                        const struct gs_reader_ops *ops, void *ctx, struct gs_trace_info *info,
                        struct gs_reader_stats *st, char *err, size_t errsz);
void gs_read_seen_free(struct gs_read_seen *seen);
/* Traces whose chunks take at least this many bytes are read on two
 * threads (one inflates and decodes ahead, onto tapes the other plays to
 * the callbacks) where the process may keep two CPUs busy; smaller ones,
 * or any on one CPU, on one. 2 MiB; the fuzz targets lower it so both ways
 * are fuzzed. */
extern uint64_t gs_read_ahead_from;
/* The CPUs a read may keep busy: 0 (as it starts), as many as
 * gs_cpus_usable says; a test sets it to read one way whatever the
 * machine. */
extern unsigned gs_read_cpus;
/* How many bytes of decoded records a tape holds before it is handed on:
 * 256 KiB; a test lowers it to hand on every record. */
extern size_t gs_read_tape_bytes;
/* The trace is complete: every event the process recorded was read (from
 * its chunks, or its ring after a death) and nothing was damaged. */
int gs_trace_complete(const struct gs_reader_stats *st);
/* How the recording ended: "finished" (the END record), "live" (the process
 * is still running), "died" (neither: it was killed or crashed). */
const char *gs_trace_ending(const struct gs_trace_info *info, const struct gs_reader_stats *st);

/* ---- cpus.c: how many CPUs the process may keep busy at once ---- */
/* Those its affinity allows, fewer where its cgroup's CPU quota allows less
 * (rounded up); at least 1. */
unsigned gs_cpus_usable(void);
/* The least CPU quota, in CPUs, of the cgroups that proc_cgroup (the text of
 * /proc/self/cgroup) names and each one above them, cgroup v2's and v1's
 * "cpu" controller's, their files under root (where the cgroup filesystems
 * are mounted: /sys/fs/cgroup); 0 when none sets one. */
double gs_cgroup_cpu_quota(const char *proc_cgroup, const char *root);
/* cpus allowed by affinity within a quota of CPUs (0: none), rounded up;
 * at least 1. */
unsigned gs_cpus_within(unsigned cpus, double quota);

/* ---- recover.c: the ring file of a trace without an END record ---- */
/* A copy of a ring file's entries not yet in the trace: [tail, head). */
struct gs_ring_snapshot {
    enum gs_ring_use use; /* READ when the copy was made, else why not */
    char path[4096 + 8];  /* the ring file read (or looked for) */
    char problem[256];
    uint64_t tail, head;
    uint8_t *data;        /* head - tail bytes */
    struct gs_ring_header hdr;
};
/* Copies the ring file of the trace at trace_path (info from its header);
 * taken before the trace's chunks are read. */
void gs_ring_snapshot_take(const char *trace_path, const struct gs_trace_info *info,
                           struct gs_ring_snapshot *snap);
/* Hands the snapshot's entries from st->ring_pos on to ops as records, and
 * fills the ring fields of st: for a trace without an END record. */
void gs_ring_snapshot_replay(const struct gs_ring_snapshot *snap, const struct gs_reader_ops *ops,
                             void *ctx, struct gs_reader_stats *st);
void gs_ring_snapshot_free(struct gs_ring_snapshot *snap);
/* The process that writes the trace is still running (on this host). */
int gs_trace_live(const struct gs_trace_info *info, const struct gs_reader_stats *st);
/* From the first event to the END record, or to the last event without one. */
uint64_t gs_trace_duration_ns(const struct gs_reader_stats *st, uint64_t last_event_ns);

#endif
