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

/* The lower layers' headers (issue 16), for the files that still include
 * this one. */
#include "analyzer/trace/trace.h"
#include "analyzer/util/cursor.h"
#include "analyzer/util/idmap.h"
#include "analyzer/util/ordmap.h"
#include "analyzer/util/reserve.h"
#include "analyzer/util/text.h"

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
/* gs_rmodule, gs_rpycode, gs_revent, gs_reader_ops: analyzer/trace/trace.h */

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

/* enum gs_ring_use, struct gs_reader_stats: analyzer/trace/trace.h */

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

/* The replay model (analyzer/model/model.h; model_int.h: what its files
 * share, included here for the files and tests that still include this
 * header), the checkpoint's loader and the analyses attached to the model. */
#include "analyzer/model/model.h"
#include "analyzer/model/model_int.h"
#include "analyzer/read/checkpoint_load.h"
#include "analyzer/findings/growth.h"
#include "analyzer/findings/oom.h"

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

/* timeline.c: analyzer/model/timeline.h */

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
