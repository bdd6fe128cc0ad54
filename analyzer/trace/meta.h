/*
 * meta.h - the trace codec's records that say what a trace is rather than
 * what the program did (meta.c): the header's (include/gpushim_trace.h:
 * PROCESS, CMDLINE, CLOCK, CONFIG, JOB, SETTINGS, RING), each encoded and
 * decoded over one layout, and the writer's own in its chunks (RING_POS,
 * RESUMED, STOPPED), both ways too.
 *
 * Included by: meta.c and decode.c (the writer's records in a chunk), the
 * shim's trace file, writer and bound trace (shim/file/tracefile.c,
 * shim/writer/writer.c, shim/bound/bound.c), the analyzer's reader
 * (analyzer/read/read.h: a header's records), their unit tests.
 */
#ifndef GPUSHIM_TRACE_META_H
#define GPUSHIM_TRACE_META_H

#include <stddef.h>
#include <stdint.h>

#include "gpushim_trace.h"

/* ---- the header ---- */

/* The header's strings, in bytes: the most a writer records of each, and
 * a reader keeps (a C string of one more). */
#define GS_HEADER_HOST_MAX 255
#define GS_HEADER_VERSION_MAX 63
#define GS_HEADER_SETTING_NAME_MAX 63
#define GS_HEADER_RING_NAME_MAX 255
/* What a reader keeps of the rest: the first 255 bytes of a setting's value
 * (a writer records GS_MAX_SETTING), the first 4095 of the arguments joined
 * by spaces (a writer records each whole, as room allows). */
#define GS_HEADER_SETTING_VALUE_KEPT 255
#define GS_HEADER_COMMAND_KEPT 4095
/* The settings a header may hold: those of GS_ALLOCATOR_SETTINGS. */
#define GS_HEADER_SETTINGS 8

/* What the header says, as the shim gathered it (its strings are the
 * shim's, borrowed): gs_encode_header's input. */
struct gs_header_values {
    uint64_t pid, ppid;
    const char *host, *version;
    const char *args; /* the arguments kept, each NUL-terminated (/proc/self/cmdline) */
    size_t args_len;
    uint64_t start_ns, realtime_ns;
    unsigned stack_depth;
    uint64_t rank_1, local_rank_1, world_size; /* rank + 1, local rank + 1 (0: unknown) */
    const char *const *setting_names, *const *setting_values;
    size_t nsettings;
    uint64_t ring_id;
    const char *ring_name; /* NULL: no ring file */
};
/* The whole header (preamble, records, CRC-32) of v into out (out_len bytes;
 * GS_HEADER_MAX hold any), building each record's payload in scratch
 * (GS_HEADER_SCRATCH bytes); its length, 0 if it would not fit. */
#define GS_HEADER_MAX 32768u
#define GS_HEADER_SCRATCH 9000u
size_t gs_encode_header(const struct gs_header_values *v, uint8_t *out, size_t out_len,
                        uint8_t *scratch);

/* What the header says, as a reader decoded it (untrusted: each string cut
 * to what a reader keeps, control bytes shown as '?'). */
struct gs_header_info {
    uint64_t pid, ppid;                         /* PROCESS */
    char host[GS_HEADER_HOST_MAX + 1];
    char shim_version[GS_HEADER_VERSION_MAX + 1];
    char command[GS_HEADER_COMMAND_KEPT + 1];   /* CMDLINE: argv joined by spaces */
    uint64_t start_ns, realtime_ns;             /* CLOCK */
    uint64_t stack_depth;                       /* CONFIG */
    uint64_t ring_id;                           /* RING: the ring file that goes with the
                                                 * trace, or 0 */
    char ring_name[GS_HEADER_RING_NAME_MAX + 1];
    unsigned nsettings;                         /* SETTINGS: the allocator settings the
                                                 * process ran with */
    struct {
        char name[GS_HEADER_SETTING_NAME_MAX + 1], value[GS_HEADER_SETTING_VALUE_KEPT + 1];
    } settings[GS_HEADER_SETTINGS];
    /* JOB: where the process stood in a distributed job */
    int job_seen;             /* the record was there (traces from before it: 0) */
    int64_t rank, local_rank; /* -1: unknown */
    uint64_t world_size;      /* 0: unknown */
};
/* h as before any record: every field 0 or "", no rank known. */
void gs_header_info_init(struct gs_header_info *h);
/* One header record's payload (type, len bytes at payload) into h; a type
 * of no header record leaves h alone. 0, or -1 when the payload does not
 * parse (h keeps what did, but a JOB record's values are taken whole or not
 * at all, and a setting with its value or not at all). Never reads past
 * payload + len. */
int gs_decode_header_record(uint8_t type, const uint8_t *payload, size_t len,
                            struct gs_header_info *h);

/* ---- the writer's own records, in its chunks ---- */

/* A GS_REC_RING_POS record of pos into out (room: GS_RING_POS_MAX bytes);
 * its length. */
#define GS_RING_POS_MAX (2 + 10)
size_t gs_encode_ring_pos(uint64_t pos, uint8_t *out);
/* A GS_REC_RING_POS record's payload (len bytes) into *pos: 0, or -1 when
 * it does not parse. */
int gs_decode_ring_pos(const uint8_t *payload, size_t len, uint64_t *pos);
/* A GS_REC_RESUMED record of time_ns into out (room: 12 bytes); its length. */
size_t gs_encode_resumed(uint64_t time_ns, uint8_t *out);
/* A GS_REC_RESUMED record's payload (len bytes) into *time_ns: 0, or -1
 * when it does not parse. */
int gs_decode_resumed(const uint8_t *payload, size_t len, uint64_t *time_ns);

/* What a GS_REC_STOPPED record says: the trace could not be written past
 * offset (a shim without a ring file). */
struct gs_stopped {
    uint64_t err;     /* the errno of the write that failed (at most INT32_MAX) */
    uint64_t offset;  /* where the trace stops */
    uint64_t time_ns; /* when it stopped, since the start */
    uint64_t events;  /* the events the program made */
    uint64_t lost;    /* those not in the file */
    uint64_t end_ns;  /* when the process finished, since the start; 0: it has not */
};
/* The GS_REC_STOPPED record of s into out: GS_STOPPED_RAW_LEN bytes,
 * whatever the values. */
void gs_encode_stopped(const struct gs_stopped *s, uint8_t *out);
/* A GS_REC_STOPPED record's payload (len bytes) into s: 0, or -1 when it
 * does not parse or its errno is past INT32_MAX. */
int gs_decode_stopped(const uint8_t *payload, size_t len, struct gs_stopped *s);

#endif
