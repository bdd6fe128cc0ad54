/*
 * analyzer.h - the interfaces between the parts of the gpushim command.
 *
 *   main.c          command line: run, report
 *   run.c           the launcher: preloads the shim into a command
 *   reader.c        the trace file, untrusted: header, blocks (inflated ahead)
 *   decode.c        one block's records -> callbacks (also the shim's bounded model)
 *   replay.c        one streaming pass: live set, peak, sites, leaks, failures
 *   marks.c         the program's marks (include/gpushim.h): steps between them
 *   growth.c        every site's live bytes, sampled at steps or windows
 *   suspects.c      leak suspects: the sites whose live bytes keep rising
 *   outcome.c       failed allocations: recovered, probe, refused or unrecovered;
 *                   probes' allocations held apart from the live set
 *   oom.c           failed allocations: what the process held then, what grew before
 *   verdict.c       failed allocations: why, in one sentence with its evidence
 *   blocks.c        the program's own allocator's blocks; fragmentation
 *   ordmap.c        an ordered map (segments and blocks by address)
 *   checkpoint.c    the replay state as trace records, and back (rotated traces)
 *   sites.c         stacks -> trimmed, symbolized call sites (symbolize.c)
 *   pyframes.c      Python frames in call sites, in place of the interpreter's
 *   autograd.c      PyTorch's autograd frames in the user's terms ("backward of mul")
 *   report_text.c   the report for people
 *   report_json.c   the report for programs (json.c writes the syntax)
 *   export.c        gpushim export (export_pprof.c and protobuf.c: pprof;
 *                   export_html.c and svg.c: the HTML report; perfetto.c;
 *                   torch_snapshot.c and pickle.c: PyTorch's memory snapshot)
 *   diff.c          gpushim diff: what grew between two runs, by call site
 *   ranks.c         gpushim report over several traces: the ranks of a job
 *   plan.c          gpushim plan: memory against batch size, the largest that fits
 *   multi.c         what the commands over several traces share
 *   names.c, reserve.c, bytes.c, escape.c   helpers the others share: the names
 *                   of APIs, kinds and results; growing arrays; "1.50 GiB"; HTML text
 */
#ifndef GPUSHIM_ANALYZER_H
#define GPUSHIM_ANALYZER_H

#include <stdint.h>
#include <stdio.h>

#include "gpushim_ring.h"
#include "gpushim_trace.h"

/* A record's payload as it is read (reader.c, checkpoint.c): a field past
 * its end, or a varint that does not fit, marks it bad and reads as 0. */
struct gs_cursor {
    const uint8_t *p, *end;
    int bad;
};
static inline uint64_t gs_cursor_u(struct gs_cursor *c)
{
    uint64_t v = 0;
    if (!c->bad && gs_get_varint(&c->p, c->end, &v) != 0)
        c->bad = 1;
    return c->bad ? 0 : v;
}
/* A string field: its bytes, in the payload (NULL and *len 0 when bad). */
static inline const uint8_t *gs_cursor_bytes(struct gs_cursor *c, size_t *len)
{
    uint64_t n = gs_cursor_u(c);
    if (c->bad || n > (uint64_t)(c->end - c->p)) {
        c->bad = 1;
        *len = 0;
        return NULL;
    }
    const uint8_t *b = c->p;
    c->p += n;
    *len = (size_t)n;
    return b;
}

/* Text from a trace as the analyzer shows it: len bytes of in copied into
 * out (at most outsz - 1 of them, then a NUL), control bytes as '?' so that
 * none reaches a terminal. */
static inline void gs_text_copy(char *out, size_t outsz, const void *in, size_t len)
{
    const uint8_t *b = in;
    if (len >= outsz)
        len = outsz - 1;
    for (size_t i = 0; i < len; i++)
        out[i] = b[i] < 0x20 || b[i] == 0x7f ? '?' : (char)b[i];
    out[len] = 0;
}

/* A string field, as gs_text_copy makes it; "" when bad. */
static inline void gs_cursor_text(struct gs_cursor *c, char *out, size_t outsz)
{
    size_t len;
    const uint8_t *b = gs_cursor_bytes(c, &len);
    gs_text_copy(out, outsz, b, b ? len : 0);
}

/* ---- names.c ---- */
const char *gs_api_name(uint32_t api);     /* "cuMemAlloc_v2"; "unknown" */
const char *gs_kind_name(uint32_t kind);   /* "device", "host_pinned"; "?" */
const char *gs_result_name(uint32_t result); /* "CUDA_ERROR_OUT_OF_MEMORY" */

/* ---- reserve.c ---- */
/* Grows an array of n elements of size sz to hold one more: 0, or -1. */
int gs_reserve(void **arr, size_t *cap, size_t n, size_t sz);

/* ---- bytes.c ---- */
/* "1.50 GiB", "512 B" */
const char *gs_human_bytes(uint64_t b, char *buf, size_t sz);

/* ---- escape.c ---- */
/* Writes s (untrusted: from the trace) as HTML text or attribute value:
 * & < > " ' as references, control bytes but tab and newline as '?'. */
void gs_html_escape(FILE *out, const char *s);

/* ---- reader.c ---- */
struct gs_rmodule {
    uint32_t id;
    uint64_t bias, lo, span;
    const char *path; /* NUL-terminated copy, valid during the callback */
    const uint8_t *build_id;
    size_t build_id_len;
};

/* A Python code object (GS_REC_PYCODE). */
struct gs_rpycode {
    uint32_t id;        /* 1..GS_PY_MAX_CODE */
    const char *file;   /* NUL-terminated copies, valid during the callback */
    const char *function;
    uint32_t first_line;
};

struct gs_revent {
    enum gs_record_type type; /* ALLOC, FREE, FREE_FAILED, ALLOC_FAILED, REF, POOL,
                               * MARK, BLOCK_ALLOC, BLOCK_FREE, GRAPH_NODE, GRAPH */
    uint64_t time_ns;         /* since the trace's start */
    uint32_t tid;
    uint32_t api;
    int32_t device;
    uint64_t addr, size, stream;
    uint32_t stack_id;
    uint32_t kind;  /* enum gs_kind */
    uint32_t space; /* enum gs_space: what addr names */
    uint32_t result;
    uint64_t free_bytes, total_bytes;
    uint64_t pool, reserved, used; /* POOL */
    uint64_t parent;               /* ALLOC of a mapping: the handle it maps */
    int all_free;                  /* ALLOC: it asked for all the free memory its thread's
                                    * last cuMemGetInfo answered (a probe's first guess) */
    /* GRAPH_NODE (op: what), GRAPH (op: enum gs_graph_op; reserved, used:
     * the graph pool's, when sampled) */
    uint64_t graph, exec, flags;
    uint32_t op;
    int sampled;
    const char *label;             /* MARK: its label's bytes (not NUL-terminated, any
                                    * bytes), valid during the callback */
    size_t label_len;
};

struct gs_reader_ops {
    void (*module)(void *ctx, const struct gs_rmodule *m);
    void (*stack)(void *ctx, uint32_t id, const uint64_t *pcs, unsigned n);
    void (*pycode)(void *ctx, const struct gs_rpycode *c); /* may be NULL: skipped */
    void (*event)(void *ctx, const struct gs_revent *e);
    /* A checkpoint record (GS_REC_CKPT_FIRST..GS_REC_CKPT_LAST), its payload
     * as it stands in the trace. Returns 0, or -1 when it is damaged (the
     * reader counts it in damaged_records). May be NULL: skipped. */
    int (*checkpoint)(void *ctx, uint8_t type, const uint8_t *payload, size_t len);
    /* A thread's name (GS_REC_THREAD): NUL-terminated, valid during the
     * callback. May be NULL: skipped. */
    void (*thread)(void *ctx, uint32_t tid, const char *name);
};

struct gs_trace_info {
    uint64_t pid, ppid;
    char host[256];
    char shim_version[64];
    char command[4096]; /* argv joined by spaces */
    uint64_t start_ns, realtime_ns;
    uint64_t stack_depth;
    uint32_t version;
    uint64_t ring_id;    /* GS_REC_RING: the ring file that goes with the trace, or 0 */
    unsigned nsettings;  /* GS_REC_SETTINGS: the allocator settings the process ran with */
    struct {
        char name[64], value[256];
    } settings[8];
    char ring_name[256];
    /* GS_REC_JOB: where the process stood in a distributed job */
    int job_seen;                /* the record was there (traces from before it: 0) */
    int64_t rank, local_rank;    /* -1: unknown */
    uint64_t world_size;         /* 0: unknown */
};

enum gs_ring_use {
    GS_RING_NONE = 0,    /* none was needed: no ring record, or the END record was read */
    GS_RING_READ,        /* its entries past the trace's blocks were read */
    GS_RING_MISSING,     /* the trace names one, but it is not there */
    GS_RING_UNUSABLE,    /* it is there but cannot be read (ring_problem says why) */
};

struct gs_reader_stats {
    uint64_t blocks;          /* blocks read whole */
    uint64_t damaged_blocks;  /* skipped: bad checksum, bad length, bad compression */
    uint64_t damaged_records; /* records whose payload did not parse */
    uint64_t bytes;           /* file size */
    uint64_t truncated_at;    /* offset of an unfinished last block, 0 if none */
    int end_seen;             /* the END record: the process finished cleanly */
    uint64_t end_events;      /* events the END record says were recorded */
    uint64_t end_lost;
    uint64_t end_time_ns;     /* when the process finished the trace */
    /* The ring file (recover.c): what it added to a trace without an END. */
    uint64_t ring_pos;          /* the largest GS_REC_RING_POS in the blocks */
    enum gs_ring_use ring_use;
    char ring_path[4096 + 8];   /* the ring file read (or looked for) */
    char ring_problem[256];     /* GS_RING_MISSING, GS_RING_UNUSABLE: why */
    uint64_t recovered_events;  /* events read from the ring */
    uint64_t ring_lost;         /* events the ring had no room for */
    uint64_t ring_gap;          /* ring bytes between the trace's end and the ring's tail */
    int write_failed;           /* the shim could not write the trace past fail_offset */
    int fail_errno;
    uint64_t fail_offset, fail_time_ns;
};

/* Reads the whole trace, calling ops in file order. Returns 0 (the stats
 * say how complete it was), or -1 with a one-line message in err naming the
 * file and offset when not even the header can be read. */
int gs_read_trace(const char *path, const struct gs_reader_ops *ops, void *ctx,
                  struct gs_trace_info *info, struct gs_reader_stats *st, char *err,
                  size_t errsz);
/* Traces whose blocks take at least this many bytes are read on two
 * threads (one inflates ahead while the other decodes); smaller ones on
 * one. 2 MiB; the fuzz targets lower it so both ways are fuzzed. */
extern uint64_t gs_read_ahead_from;
/* The trace is complete: every event the process recorded was read (from
 * its blocks, or its ring after a death) and nothing was damaged. */
int gs_trace_complete(const struct gs_reader_stats *st);
/* How the recording ended: "finished" (the END record), "live" (the process
 * is still running), "died" (neither: it was killed or crashed). */
const char *gs_trace_ending(const struct gs_trace_info *info, const struct gs_reader_stats *st);
/* ---- recover.c ---- */
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
 * taken before the trace's blocks are read. */
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

/* ---- decode.c ---- */
/* Decodes one inflated block's records, in order, into ops; counts in st
 * the damaged records, END, RESUMED and the largest RING_POS. Returns the
 * records framed. */
uint64_t gs_decode_block(const uint8_t *raw, size_t len, const struct gs_reader_ops *ops,
                         void *ctx, struct gs_reader_stats *st);

/* ---- replay.c ---- */
#define GS_MAX_DEVICES 64
#define GS_RECENT_FREES 256 /* frees a FREE_FAILED may still undo */
#define GS_MAX_FAILURES 10000 /* failed allocations kept with their details */

#define GS_SITE_THREADS GS_CKPT_SITE_THREADS /* thread names a site counts apart */

struct gs_site {
    uint32_t stack_id;
    uint32_t kind;
    uint32_t api; /* of its first allocation */
    uint64_t allocs, alloc_bytes;
    uint64_t live_bytes, live_count;  /* now (at the end: unfreed) */
    uint64_t peak_bytes, peak_count;  /* at the process's device peak */
    uint64_t saved_bytes, saved_count;
    uint64_t saved_epoch;
    /* the threads that allocated there, by name: the first GS_SITE_THREADS
     * names, each with its allocations, then those of any other name;
     * allocations of threads the trace never named are not counted */
    uint32_t thread[GS_SITE_THREADS]; /* a name (gs_replay_thread_name); 0: none */
    uint64_t thread_allocs[GS_SITE_THREADS];
    uint64_t other_thread_allocs;
};

/* What became of a failed allocation (outcome.c, docs/commands.md
 * "Failed allocations: what became of each"). */
enum gs_outcome {
    GS_OUTCOME_PENDING = 0, /* not decided yet: its thread may still retry */
    GS_OUTCOME_UNRECOVERED, /* nothing like it succeeded afterwards */
    GS_OUTCOME_RECOVERED,   /* its call site got the memory afterwards */
    GS_OUTCOME_PROBE,       /* a request made to learn what fits */
    GS_OUTCOME_REFUSED,     /* not a shortage: any result but CUDA_ERROR_OUT_OF_MEMORY */
    GS_OUTCOME_COUNT
};

struct gs_failure {
    uint64_t time_ns;
    uint32_t api, result;
    int32_t device;
    uint64_t requested, free_bytes, total_bytes;
    uint64_t process_live_bytes; /* device bytes this process held then, on that device */
    uint32_t stack_id;
    uint32_t thread; /* the name of its thread (gs_replay_thread_name); 0: not known */
    uint32_t outcome;    /* enum gs_outcome */
    uint32_t chain_prev; /* pending: the failure before it in its chain of retries
                          * (index + 1; 0: none kept) */
    /* recovered, probe: what it took */
    uint64_t retry_ns;    /* from it to the allocation that succeeded */
    uint64_t retry_bytes; /* the size that succeeded */
    uint64_t freed_bytes, frees; /* device bytes its thread freed from it to then, in so
                                  * many frees (pending: the chain's counts when it failed) */
    uint32_t postmortem;  /* its slot in gs_replay.postmortems + 1; 0: none (oom.c) */
};

/* A thread's failed allocations whose outcome waits on its next attempt
 * (outcome.c): the chain of its retries so far. */
#define GS_MAX_CHAINS 256 /* threads with a chain open at once; a failure past them is
                           * decided at once */
enum gs_chain_state {
    GS_CHAIN_OPEN = 0, /* its latest attempt failed */
    GS_CHAIN_HELD,     /* a probe's allocation succeeded and is held apart, until the
                        * thread's next event says whether it is freed at once */
};
struct gs_chain {
    uint32_t tid;
    int32_t device;
    uint32_t stack_id;   /* of its latest attempt */
    uint32_t state;      /* enum gs_chain_state */
    uint32_t probe;      /* its first failure asked for all the device's free memory or
                          * more, and each attempt since for at most half the one before */
    uint32_t last;       /* its latest failure kept: index + 1 in failures; 0: none kept */
    uint64_t last_size;  /* its latest attempt's request */
    uint64_t first_ns;   /* its first failure */
    uint64_t failures;   /* failures in it, kept or not */
    uint64_t freed_bytes, frees; /* device bytes its thread freed since its first failure */
    struct gs_revent held; /* GS_CHAIN_HELD: the allocation held apart (label NULL) */
};

/* The outcomes, all failures counted (those past GS_MAX_FAILURES too). */
struct gs_outcomes {
    uint64_t count[GS_OUTCOME_COUNT]; /* [PENDING] unused: a failure is counted once decided */
    uint64_t retries;                 /* recovered chains: retries that succeeded */
    uint64_t retry_ns;                /* from each one's first failure to its success */
    uint64_t retry_freed_bytes, retry_frees; /* what their threads freed before succeeding */
    uint64_t probes;                  /* probes' allocations, held apart */
    uint64_t probe_bytes;             /* all of them together */
    uint64_t probe_largest, probe_largest_ns; /* the largest, and when */
};

struct gs_device_usage {
    int present;
    uint64_t live_bytes, peak_bytes, peak_time_ns;
    uint64_t allocs;
};

struct gs_kind_usage {
    uint64_t live_bytes, peak_bytes, allocs;
};

/* A stream-ordered pool, from its samples. */
struct gs_pool_usage {
    uint64_t pool;
    int32_t device;
    uint64_t reserved, used;           /* at its last sample */
    uint64_t peak_reserved, peak_used; /* the largest sampled */
    uint64_t peak_unused;              /* the most it held beyond use */
    uint64_t samples;
};

struct gs_stack {
    uint32_t id;
    unsigned n;
    uint64_t *pcs;
};

struct gs_module {
    uint32_t id;
    uint64_t bias, lo, span;
    char *path;
    uint8_t build_id[GS_MAX_BUILD_ID];
    size_t build_id_len;
    int is_runtime; /* the shim or a CUDA library: trimmed from call sites */
};

/* A thread the trace named (GS_REC_THREAD), with its latest name. */
struct gs_thread {
    uint32_t tid;
    uint32_t name; /* gs_replay_thread_name */
};

/* A Python code object the stacks name (GS_REC_PYCODE). */
struct gs_pycode {
    uint32_t id;
    uint32_t first_line;
    char *file, *function;
};

/* ---- graphs.c: CUDA graphs (docs/design.md "CUDA graphs") ---- */
/* A memory node, as recorded. */
struct gs_graph_node {
    uint64_t addr, size; /* size: allocation nodes */
    uint32_t stack_id, api;
    int32_t device;
    uint32_t is_free;
};
enum gs_graph_which { GS_GRAPH_OBJ_GRAPH = 0, GS_GRAPH_OBJ_EXEC, GS_GRAPH_OBJ_CAPTURE };
/* A graph, an executable (with the nodes of its graph when instantiated) or
 * a capture under way (by its stream). */
struct gs_graph_obj {
    uint32_t which;   /* enum gs_graph_which */
    uint64_t handle;  /* CUgraph, CUgraphExec, or the capturing stream */
    uint64_t graph;   /* an executable's graph */
    uint64_t flags;   /* an executable's instantiation flags */
    int32_t device;   /* of its first node (-1: none) */
    uint64_t launches;
    struct gs_graph_node *nodes;
    size_t n, cap;
};
/* A device's graph memory pool (index GS_MAX_DEVICES: an unknown device). */
struct gs_graph_pool {
    int seen;
    uint64_t reserved;    /* what it holds, as the replay follows it */
    uint64_t live;        /* bytes of graph allocations live */
    uint64_t sampled_reserved, sampled_used, samples; /* the driver's, at the last sample */
    uint64_t peak_reserved;
    uint64_t launches, launches_failed;
    uint32_t stack_id, api; /* the call that last grew it (its reserve is held there) */
    uint64_t prev_reserved; /* reserved when the reserve was last set */
};
struct gs_graphs {
    int seen; /* any graph record */
    struct gs_graph_obj *objs;
    size_t nobjs, objs_cap;
    struct gs_graph_pool pools[GS_MAX_DEVICES + 1];
    struct gs_idmap *live; /* graph allocation address -> device + 1 */
    uint64_t nodes;        /* memory nodes recorded */
    uint64_t execs_made;   /* executables instantiated */
    /* a launch that failed for memory, whose failed allocation comes next */
    int pending;
    uint32_t pending_tid;
    uint64_t pending_exec;
};

/* A live allocation. */
struct gs_live_alloc {
    uint64_t addr, size, time_ns;
    uint32_t site; /* index in gs_replay.sites */
    int32_t device;
    uint32_t kind;
    uint32_t space;
    uint32_t tid;
    uint32_t refs;   /* a FREE drops one; the allocation ends at 0 */
    uint64_t parent; /* a mapping's physical memory (a handle), which it holds a reference to */
};

/* A FREE that a FREE_FAILED may undo: the allocation it ended (removed), the
 * reference it dropped from one that lives on, or nothing (the address was
 * not live: a double free, whose refusal must not revive an older one). */
struct gs_recent_free {
    struct gs_live_alloc a;
    uint32_t tid;
    int valid, removed, nothing;
};

/* ---- marks.c: the program's marks, and the steps between them ---- */
#define GS_MARK_LABELS 256  /* distinct labels followed; further ones are counted only */
#define GS_MARKS_KEPT 1000  /* the most recent marks kept, with their figures */
#define GS_STEPS_KEPT 1000  /* the most recent steps kept, with their figures */
#define GS_MARK_OTHER UINT32_MAX /* the label of a mark past the GS_MARK_LABELS limit */

/* A label, and the steps between its consecutive marks. Device bytes are
 * the process's live device memory (as the peak counts it). */
struct gs_mark_label {
    char label[GS_MAX_LABEL + 1]; /* NUL-terminated, control bytes as '?' */
    uint32_t stack_id;            /* of its first mark */
    uint64_t marks, steps;
    uint64_t first_ns, last_ns;   /* its first and last mark */
    /* the step open since its last mark */
    uint64_t start_bytes;         /* device bytes at its start */
    uint64_t start_in, start_out; /* gs_marks.bytes_in and bytes_out then */
    uint64_t step_peak;           /* the most device bytes in it so far */
    /* its completed steps */
    uint64_t max_peak, max_peak_end_ns; /* the largest peak of one, and when that step ended */
    uint64_t allocated, freed;          /* device bytes made live and ended in them */
    int64_t growth;                     /* the device bytes they added, all together */
    int64_t max_growth;                 /* the most one step added */
    uint64_t growing;                   /* steps that ended with more than they began with */
};

struct gs_mark_item {
    uint32_t label;        /* index in gs_marks.labels, or GS_MARK_OTHER */
    uint64_t time_ns;
    uint64_t device_bytes; /* live then */
    uint64_t block_bytes;  /* in live blocks then */
};

/* From one mark to the next mark of the same label. */
struct gs_step {
    uint32_t label;
    uint64_t start_ns, end_ns;
    uint64_t peak_bytes;      /* the most device bytes live during it */
    uint64_t allocated_bytes; /* device bytes that became live during it */
    uint64_t freed_bytes;     /* device bytes that stopped being live during it */
    int64_t growth_bytes;     /* device bytes at its end less at its start */
};

struct gs_marks {
    struct gs_mark_label *labels; /* room for GS_MARK_LABELS, made on the first mark */
    size_t nlabels;
    struct gs_mark_item *recent;  /* the last GS_MARKS_KEPT marks, a ring */
    struct gs_step *steps;        /* the last GS_STEPS_KEPT steps, a ring */
    uint64_t marks, nsteps;       /* all of them: the next ring slot is the count's */
    uint64_t labels_dropped;      /* marks whose label came past GS_MARK_LABELS */
    uint64_t bytes_in, bytes_out; /* device bytes made live and ended, the whole run */
    uint64_t since_peak;          /* the most device bytes live since the last mark */
};

/* ---- blocks.c: the program's own allocator's blocks, and fragmentation ---- */

/* Fragmentation inside driver allocations at one moment (docs/api.md
 * "Fragmentation"). A segment is a live device allocation at an address
 * (cuMemAlloc*, stream-ordered, the pluggable allocator's); a block is in
 * the segment that holds its first byte. */
struct gs_frag {
    int present;              /* the run had given blocks by then */
    uint64_t time_ns;
    int32_t device;           /* the device it is about; -1: all of them */
    uint64_t segments;        /* segments that hold at least one block */
    uint64_t segment_bytes;   /* their bytes */
    uint64_t block_bytes;     /* their bytes inside blocks (overlaps counted once) */
    uint64_t largest_free;    /* the largest run of their bytes outside blocks */
    uint64_t outside_bytes;   /* bytes of blocks that start in no segment */
};

/* A live block. */
struct gs_block {
    uint64_t addr, size, time_ns;
    uint32_t site; /* index in gs_blocks.sites */
    uint32_t tid;
};

/* A segment as the fragmentation figures keep it (blocks.c). */
struct gs_seg;

struct gs_blocks {
    int seen;                        /* a block event came */
    struct gs_block *blocks;         /* the live blocks, free slots threaded through addr */
    size_t nblocks, blocks_cap, free_slot;
    struct gs_idmap *by_addr;        /* addr -> index in blocks */
    struct gs_site *sites;           /* by call site of gpushim_block_alloc (kind 0) */
    size_t nsites, sites_cap;
    struct gs_idmap *sites_by_stack; /* stack id -> index in sites */
    uint64_t allocs, frees, frees_unknown;
    uint64_t live_bytes, live_count;
    uint64_t peak_bytes, peak_time_ns, peak_epoch;
    /* fragmentation: at the device peak, and at each failure kept */
    int peak_pending;                /* the device peak's figures are still to be taken */
    struct gs_frag at_peak;
    struct gs_frag *at_failure;      /* one per gs_replay.failures entry */
    size_t at_failure_cap;
    /* a cache of the segments and blocks in address order, built when first
     * needed (never checkpointed: it is made again from the live sets) */
    int indexed;
    struct gs_ordmap *seg_map;       /* start -> index in segs */
    struct gs_ordmap *block_map;     /* addr -> index in blocks */
    struct gs_seg *segs;
    size_t nsegs, segs_cap, seg_free;
    uint32_t *dirty;                 /* segments whose blocks changed */
    size_t ndirty, dirty_cap;
    uint64_t sum_bytes, sum_covered, sum_inside, sum_segments; /* segments with blocks */
    uint64_t max_gap;
    size_t max_gap_seg;
    int max_valid;
};

/* The checkpoint a rotated trace starts with (checkpoint.c). */
struct gs_checkpoint_state {
    int present;             /* one was loaded: the history before it is summarized */
    int open;                /* its BEGIN record was read, its END and events not yet */
    uint64_t time_ns;        /* the time it was taken (its last event's) */
    uint64_t events;         /* events it summarizes */
    uint64_t loaded[GS_REC_CKPT_LAST - GS_REC_CKPT_FIRST + 1]; /* records, by type */
    uint64_t api_loaded[GS_REC_CKPT_API_LAST - GS_REC_CKPT_API_FIRST + 1]; /* the same, of
                                                                            * marks and blocks */
    uint64_t api_items[3]; /* CKPT_API_ITEM records: recent marks, steps, failure figures */
};

/* timeline.c: device memory over time (all devices), in buckets that widen
 * as the run goes on. */
#define GS_TIMELINE_BUCKETS 64
struct gs_timeline {
    uint64_t width_ns;                /* of a bucket; 0 before the first change */
    unsigned n;                       /* buckets in use */
    uint64_t hi[GS_TIMELINE_BUCKETS];  /* the most live in each */
    uint64_t end[GS_TIMELINE_BUCKETS]; /* live after its last change */
};
void gs_timeline_note(struct gs_timeline *t, uint64_t time_ns, uint64_t live_bytes);

/* An analysis that follows the replay: attached with gs_replay_attach (the
 * analyzer's growth and oom attach theirs, analyzer/findings/; the shim's
 * bounded model attaches none). Each callback may be NULL; ctx is the one
 * given to gs_replay_attach. Called in the order attached. */
struct gs_replay;
struct gs_replay_hook {
    /* before and after each event the replay applies (a probe's held apart too) */
    void (*before_event)(void *ctx, struct gs_replay *r, uint64_t time_ns);
    void (*after_event)(void *ctx, struct gs_replay *r, uint64_t time_ns);
    /* a device allocation at sites[site], before it joins the live set */
    void (*on_alloc)(void *ctx, struct gs_replay *r, size_t site, uint64_t time_ns);
    /* a mark of label (index in gs_marks.labels, or GS_MARK_OTHER), once marks.c counted it */
    void (*on_mark)(void *ctx, struct gs_replay *r, uint32_t label, uint64_t time_ns);
    /* failures[idx] was added (its outcome and fragmentation taken) */
    void (*on_failure)(void *ctx, struct gs_replay *r, size_t idx);
    /* failures[idx] was decided recovered or a probe: what was kept for it may go */
    void (*on_settled)(void *ctx, struct gs_replay *r, size_t idx);
    /* the last event is in (gs_replay_finish) */
    void (*finish)(void *ctx, struct gs_replay *r);
    /* the replay's state starts over (gs_replay_reset: a checkpoint loaded) */
    void (*reset)(void *ctx, struct gs_replay *r);
    /* the replay is freed: ctx's memory may go */
    void (*free)(void *ctx);
};
#define GS_REPLAY_HOOKS 8

struct gs_replay {
    /* what the trace holds */
    struct gs_module *modules;
    size_t nmodules, modules_cap;
    struct gs_idmap *modules_by_id; /* id -> index in modules */
    struct gs_idmap *stacks_by_id; /* id -> index in stacks */
    struct gs_stack *stacks;
    size_t nstacks, stacks_cap;
    struct gs_idmap *pycodes_by_id; /* id -> index in pycodes */
    struct gs_pycode *pycodes;
    size_t npycodes, pycodes_cap;
    char **thread_names;            /* each distinct name once, in the order first seen */
    size_t nthread_names, thread_names_cap;
    struct gs_idmap *thread_names_by_hash; /* a name's hash -> index in thread_names */
    struct gs_thread *threads;      /* every thread named, by its latest name */
    size_t nthreads, threads_cap;
    struct gs_idmap *threads_by_tid; /* tid -> index in threads */
    uint32_t last_tid, last_tid_name; /* the replay's latest lookup, while no name changes */
    int last_tid_valid;

    /* the live set and the sites */
    struct gs_idmap *live[GS_SPACE_COUNT]; /* address (handle, ...) -> index in allocs */
    struct gs_live_alloc *allocs;
    size_t nallocs, allocs_cap, free_slot;
    struct gs_idmap *sites_by_key;
    struct gs_site *sites;
    size_t nsites, sites_cap;
    struct gs_recent_free *recent; /* for FREE_FAILED */
    size_t recent_next;

    /* totals */
    uint64_t allocations, frees, failed, frees_unknown, frees_undone, refs;
    uint64_t last_time_ns;
    uint64_t live_bytes, peak_bytes, peak_time_ns, peak_epoch;
    uint64_t rounding_live, rounding_at_peak; /* device bytes lost to the page size (below) */
    uint64_t nthreads_hint;
    struct gs_device_usage devices[GS_MAX_DEVICES + 1]; /* [GS_MAX_DEVICES]: unknown */
    struct gs_kind_usage kinds[GS_KIND_COUNT];
    struct gs_idmap *pools_by_id;
    struct gs_pool_usage *pools;
    size_t npools, pools_cap;
    uint64_t pool_reserved, pool_used;           /* all pools, at their last samples */
    uint64_t peak_pool_reserved, peak_pool_used; /* the same at the device peak */
    struct gs_failure *failures;
    size_t nfailures, failures_cap;
    uint64_t failures_dropped;
    struct gs_chain *chains; /* outcome.c: the chains open, one per thread at most */
    size_t nchains, chains_cap;
    struct gs_outcomes outcomes;
    uint64_t events; /* events replayed, with those a checkpoint summarizes */
    struct gs_checkpoint_state checkpoint;
    struct gs_marks marks;   /* marks.c */
    struct gs_blocks blocks; /* blocks.c */
    struct gs_timeline timeline; /* timeline.c: device memory over time */
    struct gs_timeline *device_timelines[GS_MAX_DEVICES + 1]; /* the same per device, made
                                                              * on its first change */
    struct gs_graphs graphs; /* graphs.c: CUDA graphs */
    /* the analyses attached (gs_replay_attach): kept across gs_replay_reset */
    const struct gs_replay_hook *hook[GS_REPLAY_HOOKS];
    void *hook_ctx[GS_REPLAY_HOOKS];
    unsigned nhooks;
};

/* Attaches an analysis: h's callbacks are called with ctx from now on. h
 * must outlive r. Returns 0, or -1 when GS_REPLAY_HOOKS are attached. */
int gs_replay_attach(struct gs_replay *r, const struct gs_replay_hook *h, void *ctx);
/* The context attached with h, or NULL (an analysis finds its state). */
void *gs_replay_hook_ctx(const struct gs_replay *r, const struct gs_replay_hook *h);
/* The hooks' callback cb, for each hook that has one: a loop over a few. */
#define GS_REPLAY_HOOKS_CALL(r, cb, ...)                                             \
    do {                                                                             \
        for (unsigned gs_h_ = 0; gs_h_ < (r)->nhooks; gs_h_++)                       \
            if ((r)->hook[gs_h_]->cb)                                                \
                (r)->hook[gs_h_]->cb((r)->hook_ctx[gs_h_], (r), __VA_ARGS__);        \
    } while (0)

/* What the device's page size adds to an allocation of size bytes: the
 * driver maps device memory in 2 MiB pages, so one of 2 MiB or more takes
 * whole pages; smaller ones share pages and count nothing (docs/api.md,
 * "Fragmentation"). */
#define GS_DEVICE_PAGE (2ull << 20)
static inline uint64_t gs_rounding_waste(uint64_t size)
{
    return size < GS_DEVICE_PAGE ? 0 : (GS_DEVICE_PAGE - size % GS_DEVICE_PAGE) % GS_DEVICE_PAGE;
}

void gs_replay_init(struct gs_replay *r);
void gs_replay_free(struct gs_replay *r);
/* The replay's reader callbacks, less checkpoints (the shim's bounded
 * model; the analyzer's gs_replay_ops adds the loader): ctx: struct gs_replay *. */
extern const struct gs_reader_ops gs_model_ops;
void gs_replay_on_module(void *ctx, const struct gs_rmodule *m);
void gs_replay_on_stack(void *ctx, uint32_t id, const uint64_t *pcs, unsigned n);
void gs_replay_on_pycode(void *ctx, const struct gs_rpycode *c);
void gs_replay_on_event(void *ctx, const struct gs_revent *e);
void gs_replay_on_thread(void *ctx, uint32_t tid, const char *name);
/* Applies one event (exposed for tests; gs_replay_ops calls it). */
void gs_replay_event(struct gs_replay *r, const struct gs_revent *e);
/* Bytes a site held at the process's device peak (valid at any point). */
uint64_t gs_site_peak_bytes(const struct gs_replay *r, const struct gs_site *s, uint64_t *count);
/* Device bytes and allocations live now (at the end of the trace: unfreed). */
uint64_t gs_replay_leaks(const struct gs_replay *r, uint64_t *count);
const struct gs_stack *gs_replay_stack(const struct gs_replay *r, uint32_t id);
const struct gs_module *gs_replay_module_at(const struct gs_replay *r, uint64_t pc);
const struct gs_pycode *gs_replay_pycode(const struct gs_replay *r, uint32_t id);
/* Thread names. A name is a number from 1 (0: none), the same for every
 * thread that had it; gs_replay_thread_name gives its text (NULL for 0 or
 * an unknown number). */
const char *gs_replay_thread_name(const struct gs_replay *r, uint32_t name);
/* The name of thread tid now (0: the trace never named it). */
uint32_t gs_replay_thread_of(const struct gs_replay *r, uint32_t tid);
/* The name text (at most GS_MAX_THREAD_NAME bytes are kept), made if new: 0
 * when memory ran out. */
uint32_t gs_replay_thread_intern(struct gs_replay *r, const char *text);
/* Thread tid has the name text from now on. */
void gs_replay_thread_named(struct gs_replay *r, uint32_t tid, const char *text);
/* One more allocation at site s by a thread of that name (0: ignored). */
void gs_site_count_thread(struct gs_site *s, uint32_t name);

/* The parts of replay.c that checkpoint.c builds a replay state with. */
/* Forgets the live set, the sites, the totals, pools, failures and recent
 * frees; keeps the modules, stacks and Python code objects. */
void gs_replay_reset(struct gs_replay *r);
/* The site (stack_id, kind); made (zeroed) when make is set and there is
 * none. NULL: none, or no memory. kind must be below GS_KIND_COUNT. */
struct gs_site *gs_replay_site(struct gs_replay *r, uint32_t stack_id, uint32_t kind, int make);
/* The live allocation at addr in space (below GS_SPACE_COUNT), or NULL. */
struct gs_live_alloc *gs_replay_find_live(const struct gs_replay *r, uint32_t space,
                                          uint64_t addr);
/* Whether allocs[idx] holds a live allocation (not a free slot). */
int gs_replay_slot_live(const struct gs_replay *r, size_t idx);
/* Adds a to the live set as is, touching no totals: 0, or -1 on no memory. */
int gs_replay_insert(struct gs_replay *r, const struct gs_live_alloc *a);
/* The pool with this id; made (zeroed but for its id and device) when make
 * is set and there is none. NULL: none, or no memory. */
struct gs_pool_usage *gs_replay_pool(struct gs_replay *r, uint64_t pool, int32_t device, int make);

/* Takes what a report reads that is still pending (the fragmentation at
 * the device peak): call once the last event is in, before reporting. */
void gs_replay_finish(struct gs_replay *r);

/* ---- marks.c and blocks.c, called by replay.c ---- */
void gs_marks_init(struct gs_marks *m);
void gs_marks_free(struct gs_marks *m);
void gs_marks_on_mark(struct gs_replay *r, const struct gs_revent *e);
/* The process's device bytes changed by delta (after the change). */
void gs_marks_device_added(struct gs_replay *r, uint64_t size);
void gs_marks_device_removed(struct gs_replay *r, uint64_t size);
/* A label's index, made if make and there is room; GS_MARK_OTHER if none. */
uint32_t gs_marks_label(struct gs_marks *m, const char *label, size_t len, int make);

void gs_blocks_init(struct gs_blocks *b);
void gs_blocks_free(struct gs_blocks *b);
void gs_blocks_on_alloc(struct gs_replay *r, const struct gs_revent *e);
void gs_blocks_on_free(struct gs_replay *r, const struct gs_revent *e);
/* A live allocation a is about to be added (new_peak: it makes a device
 * peak) or has just been removed: segments and the peak's figures. */
void gs_blocks_before_add(struct gs_replay *r, const struct gs_live_alloc *a, int new_peak);
void gs_blocks_after_add(struct gs_replay *r, const struct gs_live_alloc *a);
void gs_blocks_before_remove(struct gs_replay *r, const struct gs_live_alloc *a);
void gs_blocks_after_remove(struct gs_replay *r, const struct gs_live_alloc *a);
/* A new device peak: its fragmentation is taken at the next change. */
void gs_blocks_new_peak(struct gs_replay *r);
/* Builds the address-ordered cache of segments and blocks from the live
 * sets, if it is not there: 0, or -1 on no memory. */
int gs_blocks_index(struct gs_replay *r);
/* The fragmentation now, on device (-1: all devices). */
void gs_blocks_fragmentation(struct gs_replay *r, int32_t device, struct gs_frag *out);
/* After failures[idx] was added: its fragmentation. */
void gs_blocks_on_failure(struct gs_replay *r, size_t idx);
/* Room for at_failure[idx] (new entries zeroed): 0, or -1 on no memory. */
int gs_blocks_failure_room(struct gs_blocks *b, size_t idx);
void gs_blocks_finish(struct gs_replay *r);
/* The block site of a stack; made (zeroed) when make. NULL: none, or no memory. */
struct gs_site *gs_blocks_site(struct gs_blocks *b, uint32_t stack_id, int make);
/* Bytes a block site held at the block peak. */
uint64_t gs_block_site_peak_bytes(const struct gs_blocks *b, const struct gs_site *s,
                                  uint64_t *count);
/* Adds a live block as it is (checkpoint.c): 0, or -1 on no memory or a
 * block already live at its address. */
int gs_blocks_insert(struct gs_blocks *b, const struct gs_block *blk);
/* Whether blocks[idx] holds a live block. */
int gs_blocks_slot_live(const struct gs_blocks *b, size_t idx);

/* ---- checkpoint.c ---- */
/* Writes the whole of r as complete trace records (u8 type, varint payload
 * length, payload; each at most GS_MAX_RECORD bytes), one put call each:
 * the MODULE, PYCODE and STACK records of every module, Python code object
 * and stack r knows, then the
 * checkpoint records (include/gpushim_trace.h). Replaying them into a fresh
 * replay, then the events that follow, reports what replaying every event
 * would. put returns 0, or -1 to stop. Returns 0, or -1 when put failed. */
int gs_checkpoint_write(const struct gs_replay *r,
                        int (*put)(void *ctx, const uint8_t *rec, size_t len), void *ctx);
#include "analyzer/read/checkpoint_load.h" /* the loader: the analyzer's alone */

#include "analyzer/findings/growth.h"
#include "analyzer/findings/oom.h"

/* ---- outcome.c ---- */
/* Before the replay applies e: ends a chain e shows the outcome of. Returns
 * 1 when the replay must not apply e (a probe's allocation, held apart; the
 * free of one), else 0. */
int gs_outcome_event(struct gs_replay *r, const struct gs_revent *e);
/* A failed allocation e, kept as failures[idx] (SIZE_MAX: dropped past the
 * cap): refused at once, or a link of its thread's chain. */
void gs_outcome_on_failure(struct gs_replay *r, const struct gs_revent *e, size_t idx);
/* Thread tid's FREE ended bytes of device memory. */
void gs_outcome_on_freed(struct gs_replay *r, uint32_t tid, uint64_t bytes);
/* The end of the events: every chain open is decided. */
void gs_outcome_finish(struct gs_replay *r);
/* Whether stacks a and b are one call site for a retry: the same, or of the
 * same depth and different in one frame alone. */
int gs_outcome_same_site(const struct gs_replay *r, uint32_t a, uint32_t b);
const char *gs_outcome_name(uint32_t outcome);
/* Failures that were not recovered from: all failed allocations less the
 * recovered, probes and refused (so a trace from before outcomes counts
 * them all). */
uint64_t gs_outcome_unrecovered(const struct gs_replay *r);
/* The replay's own handling of an allocation (replay.c), for one held apart. */
void gs_replay_apply_alloc(struct gs_replay *r, const struct gs_revent *e);
/* And of a free (for a graph's free node). */
void gs_replay_apply_free(struct gs_replay *r, const struct gs_revent *e);
/* Sets the analyzer's own device allocation at (space, addr) to size bytes
 * at site (0 bytes: ends it), counted in no allocation total: a graph
 * pool's reserve beyond its live allocations. */
void gs_replay_set_held(struct gs_replay *r, uint32_t space, uint64_t addr, uint64_t size,
                        uint32_t site, int32_t device, uint64_t now);

/* ---- graphs.c ---- */
void gs_graphs_init(struct gs_graphs *g);
void gs_graphs_free(struct gs_graphs *g);
/* A GS_REC_GRAPH_NODE or GS_REC_GRAPH event. */
void gs_graphs_event(struct gs_replay *r, const struct gs_revent *e);
/* A failed allocation: that of a launch that failed for memory is tied to
 * the graph's allocation node that did not fit (*out, returned), else e. */
const struct gs_revent *gs_graphs_failure(struct gs_replay *r, const struct gs_revent *e,
                                          struct gs_revent *out);
/* Around a free of a device address: a graph allocation's bytes go back to
 * its pool (taken before the free, returned after it). */
int gs_graphs_take(struct gs_replay *r, uint64_t addr, int32_t *device);
void gs_graphs_returned(struct gs_replay *r, int32_t device, uint64_t size, uint64_t now);
/* A GS_REC_CKPT_GRAPH record (checkpoint.c writes them): 0, or -1 if bad. */
int gs_graphs_load(struct gs_replay *r, struct gs_cursor *c);
/* The number of graphs, executables alive. */
size_t gs_graphs_count(const struct gs_graphs *g, enum gs_graph_which which);

/* ---- pyframes.c: Python frames in call sites ---- */
struct gs_symbolizer;
struct gs_frame;

/* What a stack says of Python (include/gpushim_trace.h, Python pcs). */
enum gs_py_state {
    GS_PY_NONE = 0, /* nothing: no Python in the process, or its frames unreadable */
    GS_PY_FRAMES,   /* the thread held the GIL: Python frames follow the native ones */
    GS_PY_NO_GIL,   /* the thread did not hold the GIL: native frames only */
    GS_PY_NO_FRAME, /* it held the GIL with no Python code running */
    GS_PY_RELEASED, /* it did not hold the GIL: its Python frames were read from memory */
};
enum gs_py_state gs_py_stack_state(const uint64_t *pcs, unsigned n);
/* Whether f is a frame of CPython's interpreter (see pyframes.c). */
int gs_py_interpreter_frame(const struct gs_frame *f);
/* The frame of Python pc pc: function, file and line from its code object,
 * or NULL function and file when the trace does not define it. */
void gs_py_frame(const struct gs_replay *r, uint64_t pc, struct gs_frame *out);
/* Merges a stack's native source frames (nn, innermost first) and Python
 * frames (np, innermost first) into out (room for nn + np): the Python
 * frames in place of the interpreter's. Returns the frames in out; *before:
 * how many native frames come before the first Python one. */
size_t gs_py_merge(const struct gs_frame *native, size_t nn, const struct gs_frame *py,
                   size_t np, struct gs_frame *out, size_t *before);

/* ---- autograd.c ---- */
/* Whether function (a symbolized name, mangled or not) is the apply of one
 * of PyTorch's generated backward nodes: 1 and its operator's name in out
 * ("torch::autograd::generated::MulBackward0::apply(...)" -> "mul"), or 0
 * (also when out cannot hold it). */
int gs_autograd_backward_of(const char *function, char *out, size_t outsz);

/* ---- sites.c ---- */
/* How a report shows stacks. */
enum gs_stack_view {
    GS_VIEW_MERGED = 0, /* Python frames in place of the interpreter's */
    GS_VIEW_NATIVE,     /* native frames alone (report --native) */
};

/* The threads that allocated at a reported site, by name (merged from the
 * raw sites it stands for): most allocations first once sorted. */
#define GS_TALLY_THREADS 8
struct gs_thread_tally {
    unsigned n;
    uint32_t name[GS_TALLY_THREADS]; /* gs_replay_thread_name */
    uint64_t allocs[GS_TALLY_THREADS];
    uint64_t other; /* allocations by threads of other names */
};
/* Adds a raw site's threads; the name of one thread (1 allocation). */
void gs_tally_add_site(struct gs_thread_tally *t, const struct gs_site *s);
void gs_tally_add(struct gs_thread_tally *t, uint32_t name, uint64_t allocs);
/* Most allocations first (then the name first seen in the trace). */
void gs_tally_sort(struct gs_thread_tally *t);

/* A call site as reported: sites whose stacks are the same after trimming
 * the shim's and the CUDA libraries' frames are merged. */
struct gs_report_site {
    uint64_t bytes, count;
    uint32_t stack_id; /* a representative stack */
    uint32_t api;      /* the API its first allocation was made with */
    struct gs_thread_tally threads; /* sorted */
};

/* What a site is ranked by: what it held at the peak, what it never freed,
 * or all it allocated over the run. */
enum gs_site_metric { GS_METRIC_PEAK, GS_METRIC_LEAK, GS_METRIC_ALLOCATED };

/* The device-kind sites ranked by metric, largest first, merged by their
 * source frames. Returns how many are in *out (caller frees). */
size_t gs_rank_sites(const struct gs_replay *r, struct gs_symbolizer *sym,
                     enum gs_stack_view view, enum gs_site_metric metric,
                     struct gs_report_site **out);

/* The same for the blocks of the program's own allocator (blocks.c): by the
 * call sites of gpushim_block_alloc, at the blocks' peak or at the end. */
size_t gs_rank_block_sites(const struct gs_replay *r, struct gs_symbolizer *sym,
                           enum gs_stack_view view, enum gs_site_metric metric,
                           struct gs_report_site **out);

/* Calls fn for each source frame of a stack as view shows it, innermost
 * first, starting at the program's own call site, at most max frames.
 * Returns how many it called fn for. */
typedef void (*gs_frame_fn)(void *ctx, const struct gs_frame *f, unsigned index);
unsigned gs_site_frames(const struct gs_replay *r, struct gs_symbolizer *sym, uint32_t stack_id,
                        enum gs_stack_view view, unsigned max, gs_frame_fn fn, void *ctx);
/* What the stack says of Python (GS_PY_NONE for an unknown stack). */
enum gs_py_state gs_site_python(const struct gs_replay *r, uint32_t stack_id);
/* What gs_rank_sites merges sites by: stacks with the same key are one site
 * (their source frames). */
uint64_t gs_site_key(const struct gs_replay *r, struct gs_symbolizer *sym,
                     enum gs_stack_view view, uint32_t stack_id);
/* A frame in a few words: "function (file.c:12)", "function", or
 * "0x1234 (module path)" when the function is unknown. */
void gs_frame_name(const struct gs_frame *f, char *buf, size_t sz);
/* The operator whose backward the stack was running in PyTorch's autograd
 * (autograd.c), from its innermost native frame that says: 1 and the
 * operator's name in out ("mul"), or 0. */
int gs_site_backward_of(const struct gs_replay *r, struct gs_symbolizer *sym, uint32_t stack_id,
                        char *out, size_t outsz);
/* A site in a few words: its innermost two frames as gs_frame_name says
 * them, "f (a.c:3) from g (a.c:9)". */
void gs_site_where(const struct gs_replay *r, struct gs_symbolizer *sym, enum gs_stack_view view,
                   uint32_t stack_id, char *buf, size_t sz);

/* ---- reports ---- */
struct gs_report_options {
    unsigned top;    /* sites listed per section */
    unsigned frames; /* frames shown per site in the text report */
    int color;
    enum gs_stack_view view; /* --native: GS_VIEW_NATIVE */
};

/* ---- modes.c ---- */
enum { GS_FW_PYTORCH = 1, GS_FW_JAX = 2, GS_FW_TENSORFLOW = 4 };
struct gs_alloc_mode {
    unsigned frameworks; /* GS_FW_*: found among the modules loaded */
    int per_tensor;      /* each tensor (buffer) is a driver allocation: 1, 0, or -1 (no
                          * framework known) */
    char note[768];      /* what the sizes are, one sentence per framework; "" if none */
};
void gs_allocator_mode(const struct gs_trace_info *info, const struct gs_replay *r,
                       struct gs_alloc_mode *m);

struct gs_report {
    const char *path;
    const struct gs_trace_info *info;
    const struct gs_reader_stats *stats;
    const struct gs_replay *replay;
    struct gs_symbolizer *sym;
    const struct gs_report_options *opt;
};

void gs_report_text(FILE *out, const struct gs_report *rep);
/* What became of the failed allocations, in a few words ("1 unrecovered;
 * 2 recovered, 1 probe"), when they were not all unrecovered: 1 and the
 * words in buf (report_text.c), else 0 and "". */
int gs_report_outcomes(const struct gs_replay *r, char *buf, size_t sz);

/* ---- suspects.c ---- */
/* A reported site whose live device bytes keep rising. */
struct gs_suspect {
    uint32_t site, stack_id;   /* a representative raw site and its stack */
    uint64_t growth_bytes;     /* live bytes at the end less the lowest sampled */
    uint64_t live_bytes, live_count; /* at the end */
    uint64_t first_seen_ns;    /* its first allocation */
    uint64_t from_ns;          /* when it held the least */
    double bytes_per_second;   /* least-squares slope over the second half */
    double bytes_per_step;     /* the same against steps; -1 without marks */
    unsigned rising, intervals; /* of the second half's intervals, how many rose */
    unsigned npoints;          /* its live bytes at each sample, then at the end */
    uint64_t v[GS_GROWTH_SAMPLES + 1];
    struct gs_thread_tally threads; /* sorted */
};
/* The suspects, most growth first (caller frees *out). */
size_t gs_growth_suspects(const struct gs_replay *r, struct gs_symbolizer *sym,
                          enum gs_stack_view view, struct gs_suspect **out);

/* ---- verdict.c ---- */
enum gs_oom_cause {
    GS_OOM_UNKNOWN = 0,   /* the device's memory figures are unknown */
    GS_OOM_FRAGMENTATION, /* the request would have fit in free memory the process held */
    GS_OOM_LEAK,          /* without the growth of leak suspects it would have fit */
    GS_OOM_OTHER_PROCESS, /* without what others held it would have fit */
    GS_OOM_TOO_LARGE,     /* the process alone needs more than the device has */
};
struct gs_oom_verdict {
    enum gs_oom_cause cause;
    int known;                 /* the device's free and total memory then are known */
    uint64_t shortfall;        /* requested - free (0 if it was free, or unknown) */
    int64_t other_bytes;       /* total - free - held: other processes and the CUDA context */
    uint64_t held_free;        /* free bytes inside what the process held: blocks' segments, pools */
    uint64_t largest_free;     /* the largest free piece of those (blocks' segments) */
    uint64_t leak_growth;      /* what the suspects live then had grown (since their low) */
    uint32_t leak_stack;       /* the suspect that grew most: its stack (0: none) */
    uint64_t leak_site_growth;
    char sentence[512];        /* the verdict, in one sentence */
};
const char *gs_oom_cause_name(enum gs_oom_cause c);
/* The verdict on failures[idx], given the suspects (may be none). */
void gs_oom_verdict(const struct gs_replay *r, size_t idx, const struct gs_suspect *sus,
                    size_t nsus, struct gs_symbolizer *sym, enum gs_stack_view view,
                    struct gs_oom_verdict *v);

/* ---- capacity.c ---- */
#define GS_NCARDS 6
struct gs_card {
    const char *name; /* as sold: "80 GB" */
    uint64_t bytes;   /* as it reports to CUDA */
};
extern const struct gs_card gs_cards[GS_NCARDS];
/* The largest peak of device memory on one device (0 if none). */
uint64_t gs_largest_device_peak(const struct gs_replay *r);

/* ---- load.c: a trace read into all a report or an export needs ---- */
struct gs_loaded {
    struct gs_replay r;
    struct gs_trace_info info;
    struct gs_reader_stats st;
    struct gs_symbolizer *sym;
};
/* Reads path; on failure says why on stderr as "gpushim CMD: ..." and
 * returns -1. */
int gs_load(const char *cmd, const char *path, struct gs_loaded *l);
void gs_loaded_free(struct gs_loaded *l);

/* ---- export.c: gpushim export ---- */
int gs_cmd_export(int argc, char **argv);
/* Folded stacks (flamegraph.pl, inferno, speedscope): one line a site,
 * "outermost;...;innermost bytes". */
void gs_export_folded(FILE *out, const struct gs_report *rep, enum gs_site_metric metric);
void gs_report_json(FILE *out, const struct gs_report *rep);
/* A site's "frames" and "gil", as in the report's SITE (report_json.c). */
struct gs_json;
void gs_json_frames(struct gs_json *j, const struct gs_replay *r, struct gs_symbolizer *sym,
                    enum gs_stack_view view, uint32_t stack_id);

/* ---- json.c ---- */
struct gs_json {
    FILE *out;
    int depth;
    int need_comma[64];
    int indent;
};
void gs_json_begin_object(struct gs_json *j, const char *key);
void gs_json_end_object(struct gs_json *j);
void gs_json_begin_array(struct gs_json *j, const char *key);
void gs_json_end_array(struct gs_json *j);
void gs_json_string(struct gs_json *j, const char *key, const char *value); /* NULL -> null */
void gs_json_uint(struct gs_json *j, const char *key, uint64_t value);
void gs_json_int(struct gs_json *j, const char *key, int64_t value);
void gs_json_bool(struct gs_json *j, const char *key, int value);
void gs_json_null(struct gs_json *j, const char *key);
void gs_json_double(struct gs_json *j, const char *key, double value); /* 6 decimals */

/* ---- run.c ---- */
int gs_cmd_run(int argc, char **argv);

/* ---- ordmap.c: u64 key -> u64 value, in key order (a treap) ---- */
struct gs_ordmap;
struct gs_ordmap *gs_ordmap_new(void);
void gs_ordmap_free(struct gs_ordmap *m);
int gs_ordmap_put(struct gs_ordmap *m, uint64_t key, uint64_t value); /* 0, or -1 on no memory */
int gs_ordmap_del(struct gs_ordmap *m, uint64_t key);                 /* 0 when it was there */
/* The entry of the largest key <= key (floor) or smallest >= key (ceil):
 * 0 and *k, *v set; -1 when there is none. */
int gs_ordmap_floor(const struct gs_ordmap *m, uint64_t key, uint64_t *k, uint64_t *v);
int gs_ordmap_ceil(const struct gs_ordmap *m, uint64_t key, uint64_t *k, uint64_t *v);
size_t gs_ordmap_count(const struct gs_ordmap *m);

/* ---- idmap (replay.c): u64 key -> u64 value, open addressing ---- */
struct gs_idmap;
struct gs_idmap *gs_idmap_new(void);
void gs_idmap_free(struct gs_idmap *m);
/* 0 and sets *value when found; -1 otherwise. */
int gs_idmap_get(const struct gs_idmap *m, uint64_t key, uint64_t *value);
int gs_idmap_put(struct gs_idmap *m, uint64_t key, uint64_t value); /* 0, or -1 on no memory */
int gs_idmap_del(struct gs_idmap *m, uint64_t key);                 /* 0 when it was there */
size_t gs_idmap_count(const struct gs_idmap *m);

/* ---- protobuf.c: the protocol buffer wire format, written ---- */
struct gs_pb {
    uint8_t *buf;
    size_t len, cap;
    int failed; /* memory ran out: the rest was not written */
};
/* A bare varint (the elements of a packed run). */
void gs_pb_varint(struct gs_pb *b, uint64_t v);
/* Scalar fields (wire type 0), left out when 0 (proto3's default). */
void gs_pb_uint(struct gs_pb *b, unsigned field, uint64_t v);
void gs_pb_int(struct gs_pb *b, unsigned field, int64_t v);
void gs_pb_bool(struct gs_pb *b, unsigned field, int v);
/* Length-delimited fields (wire type 2), always written, empty ones too. */
void gs_pb_bytes(struct gs_pb *b, unsigned field, const void *data, size_t len);
void gs_pb_string(struct gs_pb *b, unsigned field, const char *s); /* NULL: "" */
/* A nested message or a packed repeated field: begin writes its key and
 * returns where its contents start; end puts their length in front. */
size_t gs_pb_begin(struct gs_pb *b, unsigned field);
void gs_pb_end(struct gs_pb *b, size_t start);
void gs_pb_free(struct gs_pb *b);

/* ---- export_pprof.c: gpushim export --format=pprof ---- */
/* What inuse_space and inuse_objects count. */
enum gs_pprof_inuse {
    GS_PPROF_INUSE_END = 0, /* live at the end of the trace: never freed (default) */
    GS_PPROF_INUSE_PEAK,    /* live at the process's device peak */
};
/* Writes the device call sites as a gzipped pprof profile (profile.proto)
 * to out. Returns 0, or -1 with a one-line message in err when memory ran
 * out or zlib failed (nothing written then). */
int gs_export_pprof(FILE *out, const struct gs_report *rep, enum gs_pprof_inuse inuse,
                    char *err, size_t errsz);

/* ---- timeline.c: per device, and as charts read it ---- */
/* Device memory of one device (index as gs_replay.devices) changed: its
 * timeline, made on the first change (none if there is no memory). */
void gs_timeline_device_note(struct gs_replay *r, unsigned device_index, uint64_t time_ns,
                             uint64_t live_bytes);
void gs_timelines_free(struct gs_replay *r);
/* The common bucket width and count of a report: the widest timeline's. */
void gs_timeline_span(const struct gs_replay *r, uint64_t *width_ns, unsigned *n);
/* src's buckets merged up to width_ns (a power-of-two multiple of its own)
 * and carried to n buckets with the value its last change left; a NULL src
 * reads as no memory at any time. */
void gs_timeline_aligned(const struct gs_timeline *src, uint64_t width_ns, unsigned n,
                         struct gs_timeline *out);

/* ---- export_html.c: gpushim export --format=html ---- */
void gs_export_html(FILE *out, const struct gs_report *rep);
/* A sortable table: a header per column, a row per call of cell for each
 * column. A numeric column sorts by the cells' key (an integer, written
 * exactly as data-v); the others by their text. At most 1000 rows are
 * listed (a line says how many more there were); none: "none". */
struct gs_html_col {
    const char *name;
    int numeric;
    const char *cls; /* a class for the column's cells (a constant), or NULL */
};
struct gs_html_cell {
    const char *text; /* shown, escaped; NULL: empty. Valid until the next call */
    char key[32];     /* numeric columns: the figure it sorts by ("" for none) */
};
typedef void (*gs_html_cell_fn)(void *ctx, size_t row, size_t col, struct gs_html_cell *out);
void gs_html_table(FILE *out, const char *id, const char *title, const struct gs_html_col *cols,
                   size_t ncols, size_t nrows, gs_html_cell_fn cell, void *ctx);

/* ---- svg.c: the HTML export's charts ---- */
/* One device's memory over time (index as gs_replay.devices) as an <svg>:
 * its timeline aligned to width_ns and n buckets (gs_timeline_span), from
 * 0 to end_ns. */
void gs_svg_device_chart(FILE *out, const struct gs_replay *r, unsigned device_index,
                         uint64_t width_ns, unsigned n, uint64_t end_ns);

/* ---- multi.c: what the commands over several traces share ---- */
/* "+4.00 MiB", "-512 B", "0 B". Returns buf. */
const char *gs_multi_signed_bytes(int64_t v, char *buf, size_t sz);
/* A size from the command line: bytes, or N with K, M, G, T (powers of
 * 1024, "iB" or "B" may follow), or "NGB" (a card as sold: the memory that
 * card of gs_cards reports, else N GiB). 0, or -1 when it is none. */
int gs_multi_parse_size(const char *s, uint64_t *out);
/* A name for the site of stack_id that is the same in another run of the
 * program: its source frames as view shows them (function, file, line; a
 * frame without either: module file name and offset). Caller frees; NULL
 * on no memory. */
char *gs_multi_site_key(const struct gs_replay *r, struct gs_symbolizer *sym,
                        enum gs_stack_view view, uint32_t stack_id);
/* A site's frames in text, at most max, each line starting with lead. */
void gs_multi_frames_text(FILE *out, const struct gs_replay *r, struct gs_symbolizer *sym,
                          enum gs_stack_view view, uint32_t stack_id, unsigned max,
                          const char *lead);

/* ---- diff.c: gpushim diff ---- */
int gs_cmd_diff(int argc, char **argv);

/* ---- ranks.c: gpushim report over the traces of a job's ranks ---- */
/* Reads each trace and prints the table of ranks; the exit status. */
int gs_report_ranks(char **paths, size_t n, int json);

/* ---- plan.c: gpushim plan ---- */
int gs_cmd_plan(int argc, char **argv);

/* ---- pickle.c: Python pickles (protocol 4) of plain values, streamed ---- */
#define GS_PICKLE_BATCH 1000 /* a container's items between a MARK and its APPENDS/SETITEMS */
#define GS_PICKLE_DEPTH 16
struct gs_pickle_level {
    int dict;
    int want_value; /* a dict whose key was written, its value not yet */
    unsigned items; /* in the open batch */
};
struct gs_pickle {
    FILE *out;
    int depth;
    unsigned overflow; /* containers opened past GS_PICKLE_DEPTH */
    struct gs_pickle_level level[GS_PICKLE_DEPTH];
};
/* PROTO 4. Then exactly one value (a dict or list holding the rest), then
 * gs_pickle_finish (ends what is open, STOP). In a dict, a key (a value
 * like any other) and its value alternate. */
void gs_pickle_begin(struct gs_pickle *p, FILE *out);
void gs_pickle_finish(struct gs_pickle *p);
/* Without PROTO: a part of a pickle (values to be put in one with
 * gs_pickle_raw); gs_pickle_end each container, never gs_pickle_finish. */
void gs_pickle_begin_part(struct gs_pickle *p, FILE *out);
/* One whole value, its n bytes written by a part; with NULL bytes the
 * caller writes them to p->out next. */
void gs_pickle_raw(struct gs_pickle *p, const void *bytes, size_t n);
void gs_pickle_dict(struct gs_pickle *p); /* opens one; gs_pickle_end ends it */
void gs_pickle_list(struct gs_pickle *p);
void gs_pickle_end(struct gs_pickle *p);
void gs_pickle_none(struct gs_pickle *p);
void gs_pickle_bool(struct gs_pickle *p, int v);
void gs_pickle_int(struct gs_pickle *p, int64_t v);
void gs_pickle_uint(struct gs_pickle *p, uint64_t v); /* above INT64_MAX: INT64_MAX */
void gs_pickle_float(struct gs_pickle *p, double v);
void gs_pickle_str(struct gs_pickle *p, const char *s); /* NULL: None */
void gs_pickle_bytes_str(struct gs_pickle *p, const char *s, size_t n); /* as UTF-8 */

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

/* ---- json.c, for writers of their own JSON ---- */
/* s as a JSON string: quoted, escaped, valid UTF-8. */
void gs_json_quoted(FILE *out, const char *s);

/* ---- perfetto.c: export --format=perfetto ---- */
/* Chrome's trace-event JSON of the trace at path; "gpushim export: ..." on
 * stderr and -1 when it cannot be read or written. */
int gs_export_perfetto(FILE *out, const char *path);

/* ---- torch_snapshot.c: export --format=torch-snapshot ---- */
/* PyTorch's memory snapshot (a pickle), for memory_viz, with each device's
 * last max_entries events (0: all); as above. */
#define GS_TORCH_MAX_ENTRIES 100000
int gs_export_torch_snapshot(FILE *out, const char *path, enum gs_stack_view view,
                             uint64_t max_entries);

#endif
