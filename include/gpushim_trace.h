/*
 * gpushim_trace.h - the trace file format: the one contract between the
 * recorder (shim/) and the analyzer (analyzer/). docs/trace-format.md is
 * the overview in prose; change both together and bump GS_TRACE_VERSION
 * when an old reader could no longer read what a new writer writes.
 *
 * All integers in fixed-size fields are little-endian.
 *
 * File
 *   preamble  8  magic "GPUSHIM\n"
 *             4  u32 format version (GS_TRACE_VERSION)
 *             4  u32 header length H (at most GS_MAX_HEADER)
 *   header    H  records (below): GS_REC_PROCESS, GS_REC_CMDLINE, ...
 *             4  u32 crc32 of the preamble and the header
 *   chunks    any number, each independent of the others:
 *             4  magic "GBLK" (GS_CHUNK_MAGIC)
 *             4  u32 compressed length C (at most GS_MAX_CHUNK)
 *             4  u32 raw length R (at most GS_MAX_CHUNK)
 *             4  u32 crc32 of the 12 bytes above and the C bytes below
 *             C  zlib (deflate) stream that inflates to exactly R bytes of records
 *
 * Any prefix of a file that ends on a chunk boundary is a valid trace. A
 * reader that meets a damaged chunk skips it (scanning for the next chunk
 * magic), counts it, and goes on.
 *
 * A chunk is a unit of the file only. "Block" in this format means the
 * program's own allocator's blocks (GS_REC_BLOCK_ALLOC, gpushim_block_alloc).
 *
 * Record: u8 type, varint payload length L, L bytes of payload. A reader
 * skips record types it does not know, and ignores payload bytes past the
 * fields it knows (so fields may be appended to a record type later).
 *
 * Varints are LEB128 (7 bits a byte, low first, at most 10 bytes). "zz" marks
 * a signed value in zigzag coding. Strings are a varint length and the bytes.
 *
 * Delta state restarts at every chunk: the first event of a chunk codes its
 * time against 0 and its address against 0, so every chunk decodes alone.
 * A chunk's allocations and frees may be held by column instead
 * (GS_REC_COLUMNS, version 3).
 * Times are nanoseconds of CLOCK_MONOTONIC since GS_REC_CLOCK's start_ns.
 * Stack, module and Python code ids are global to the file; a record names only ids
 * defined earlier in the file.
 */
#ifndef GPUSHIM_TRACE_H
#define GPUSHIM_TRACE_H

#include <stddef.h>
#include <stdint.h>

#define GS_TRACE_MAGIC "GPUSHIM\n"
#define GS_TRACE_MAGIC_LEN 8
/* 2: checkpoint records (GPUSHIM_MAX_BYTES), which a reader must not skip.
 * 3: allocations and frees by column (GS_REC_COLUMNS), which a reader must
 * not skip either. A reader of version 3 also reads versions 1 and 2. */
#define GS_TRACE_VERSION 3u
#define GS_TRACE_OLDEST_READABLE 1u
#define GS_PREAMBLE_LEN 16
#define GS_MAX_HEADER (1u << 20)

/* "GBLK" read as a little-endian u32: chunks were once called blocks, and
 * every trace already written starts its chunks with these bytes. */
#define GS_CHUNK_MAGIC 0x4b4c4247u
#define GS_CHUNK_HEADER_LEN 16
#define GS_MAX_CHUNK (16u << 20)

#define GS_MAX_FRAMES 256  /* deepest stack a writer may record */
#define GS_MAX_BUILD_ID 64 /* longest build id a writer may record */

enum gs_record_type {
    /* header records */
    GS_REC_PROCESS = 1, /* varint pid, varint ppid, string host, string shim version */
    GS_REC_CMDLINE = 2, /* varint argc, argc strings */
    GS_REC_CLOCK = 3,   /* varint start_ns (CLOCK_MONOTONIC), varint realtime_ns at start */
    GS_REC_CONFIG = 4,  /* varint stack_depth */
    GS_REC_RING = 5,    /* varint ring id, string ring file name (in the trace's
                         * directory): the events not yet in chunks are kept in
                         * that file (include/gpushim_ring.h) until the END record */
    GS_REC_SETTINGS = 6, /* varint n, n x (string name, string value): the allocator
                          * settings in the environment when the trace began (those
                          * of GS_ALLOCATOR_SETTINGS that were set) */
    GS_REC_JOB = 7,     /* varint rank + 1, varint local rank + 1, varint world size:
                         * where the process stands in a distributed job, from the
                         * environment when the trace began (include/
                         * gpushim_naming.h); 0 for each means unknown. Written
                         * by every trace, and again into TRACE.next when a
                         * bounded trace is rotated. Old readers skip it, as
                         * any unknown header record */

    /* chunk records */
    GS_REC_MODULE = 16, /* varint id, varint bias, varint lo, varint span (image
                         * occupies [lo, lo+span)), string path, string build id
                         * (raw bytes, may be empty) */
    GS_REC_STACK = 17,  /* varint id, varint n, n x zz pc delta (from the
                         * previous pc, the first from 0); innermost first */
    GS_REC_ALLOC = 18,  /* zz dt, varint tid, varint api, zz device, zz addr delta,
                         * varint size, varint stack id, varint stream, varint kind,
                         * varint space, varint parent (for a mapping: the handle
                         * of the physical memory it maps, which it holds a
                         * reference to; else 0), then, only when 1, varint
                         * all_free: it asked for exactly the free memory the
                         * thread's last cuMemGetInfo answered, with no attempt
                         * between (a probe's first guess) */
    GS_REC_FREE = 19,   /* zz dt, varint tid, varint api, zz device, zz addr delta,
                         * varint stream, varint space, varint size: one reference
                         * dropped (an allocation has one unless GS_REC_REF or a
                         * mapping added more); for a mapping, every mapping in
                         * [addr, addr+size) ends */
    GS_REC_FREE_FAILED = 20, /* zz dt, varint tid, varint api, zz device, zz addr delta,
                              * varint result, varint space: the FREE just before it
                              * for this address, space and thread did not happen */
    GS_REC_ALLOC_FAILED = 21, /* zz dt, varint tid, varint api, zz device, varint size,
                               * varint stack id, varint stream, varint result,
                               * varint free bytes, varint total bytes (both
                               * UINT64_MAX when the driver could not say) */
    GS_REC_END = 22,          /* varint events recorded, varint events lost, varint
                               * time of the end (ns since the start): the process
                               * finished the trace cleanly */
    GS_REC_REF = 23,          /* zz dt, varint tid, varint api, zz device, zz addr delta,
                               * varint space: one more reference to a live allocation
                               * (cuMemRetainAllocationHandle) */
    GS_REC_POOL = 24,         /* zz dt, varint tid, varint api, zz device, varint pool,
                               * varint reserved bytes, varint used bytes: a
                               * stream-ordered pool's state, sampled (both 0 once the
                               * pool is destroyed) */
    GS_REC_RING_POS = 25,     /* varint position: the ring entries below it are in
                               * this chunk or an earlier one (the last record of
                               * each chunk of a trace with a GS_REC_RING) */
    GS_REC_RESUMED = 26,      /* varint time (ns since the start): the END record before
                               * it did not end the trace (an exec that failed) */
    GS_REC_THREAD = 27,       /* varint tid, string name (at most GS_MAX_THREAD_NAME
                               * bytes): the thread's name as the program set it (the
                               * kernel's, PR_GET_NAME), before the thread's first event
                               * and again after it changed; the events of tid that
                               * follow are that thread's under this name. A checkpoint
                               * starts with one for every thread named so far. Old
                               * readers skip it */
    GS_REC_GRAPH_NODE = 28,   /* zz dt, varint tid, varint api, zz device, zz addr delta,
                               * varint size, varint stack id, varint graph, varint
                               * stream, varint what (0: an allocation node of size
                               * bytes at addr, 1: a free node of addr, size 0): a
                               * CUDA graph's memory node, added to graph
                               * (cuGraphAddMemAllocNode/FreeNode), or captured from
                               * a stream-ordered allocation or free on stream while
                               * it captured (graph 0: the one its capture ends in).
                               * Nothing is allocated or freed then: the graph does
                               * so each time it runs (docs/design.md "CUDA graphs"). Old
                               * readers skip it */
    GS_REC_GRAPH = 29,        /* zz dt, varint tid, varint api, zz device, varint op
                               * (enum gs_graph_op), varint graph, varint exec, varint
                               * stream, varint flags, varint result, varint stack id,
                               * varint sampled (0/1), varint graph pool reserved
                               * bytes, varint graph pool used bytes: a CUDA graph
                               * call, and after it (sampled 1) the device's graph
                               * memory pool (CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT,
                               * _USED_MEM_CURRENT). Old readers skip it */

    /* Checkpoint records (types GS_REC_CKPT_FIRST..GS_REC_CKPT_LAST; see the
     * note below the enum): the analyzer's replay state, in place of the
     * history a rotated trace no longer holds. A reader that does not load
     * checkpoints skips them like any unknown record. All values are
     * absolute (no chunk delta state), so each record decodes alone. */
    GS_REC_CKPT_BEGIN = 32,   /* varint events summarized, varint time (ns since the
                               * start: the last event's), varint allocations, varint
                               * frees, varint failed, varint frees of unknown
                               * addresses, varint frees undone, varint references,
                               * varint device live bytes, varint device peak bytes,
                               * varint peak time, varint peak epoch, varint pool
                               * reserved bytes, varint pool used bytes, varint pool
                               * reserved bytes at the peak, varint pool used bytes at
                               * the peak, varint failures dropped, varint threads
                               * hint; then (each group absent from older checkpoints)
                               * varint device bytes the page size added now, and at
                               * the peak; varint failures unrecovered, recovered,
                               * probes, refused, varint retries that succeeded,
                               * varint their ns, varint device bytes their threads
                               * freed first, varint their frees, varint probes'
                               * allocations, varint their bytes, varint the largest,
                               * varint its time: the totals; the replay state starts
                               * over (the modules, Python code objects and stacks
                               * stay) */
    GS_REC_CKPT_DEVICE = 33,  /* zz device (-1: unknown), varint present, varint live
                               * bytes, varint peak bytes, varint peak time, varint
                               * allocations */
    GS_REC_CKPT_KIND = 34,    /* varint kind, varint live bytes, varint peak bytes,
                               * varint allocations */
    GS_REC_CKPT_SITE = 35,    /* varint stack id, varint kind, varint api, varint
                               * allocations, varint bytes allocated, varint live
                               * bytes, varint live count, varint saved bytes, varint
                               * saved count, varint saved epoch (its figures the
                               * first time it changed in that peak epoch); then (since
                               * GS_REC_THREAD; absent from older checkpoints) the
                               * threads that allocated there: varint n (at most
                               * GS_CKPT_SITE_THREADS), n x (string thread name, varint
                               * allocations), varint allocations by other threads */
    GS_REC_CKPT_ALLOC = 36,   /* varint addr, varint size, varint time, varint stack
                               * id, varint kind, zz device, varint space, varint tid,
                               * varint references (at least 1), varint parent: a live
                               * allocation, of the site (stack id, kind) defined
                               * before it; live allocations come in the replay's
                               * order */
    GS_REC_CKPT_POOL = 37,    /* varint pool, zz device, varint reserved bytes, varint
                               * used bytes, varint peak reserved, varint peak used,
                               * varint peak unused, varint samples */
    GS_REC_CKPT_FAILURE = 38, /* varint time, varint api, varint result, zz device,
                               * varint requested bytes, varint free bytes, varint
                               * total bytes, varint process live bytes, varint stack
                               * id: a failed allocation, in the order they happened;
                               * then (since GS_REC_THREAD) string the name of its
                               * thread (empty: not known); then (since outcomes;
                               * without them it is unrecovered if its result was
                               * CUDA_ERROR_OUT_OF_MEMORY, else refused) varint
                               * outcome (0 pending, 1 unrecovered, 2 recovered, 3
                               * probe, 4 refused), varint the failure before it in its
                               * chain of retries (index + 1; 0: none; only a pending
                               * one names one, and an earlier pending one), varint ns
                               * and varint bytes of the allocation that succeeded
                               * after it, varint device bytes its thread freed before,
                               * varint in so many frees (pending: the chain's counts
                               * when it failed) */
    GS_REC_CKPT_RECENT_FREE = 39, /* varint age (0: the latest free, at most 255),
                                   * varint tid, varint what (0: it dropped a
                                   * reference, 1: it ended the allocation, 2: nothing
                                   * was live there), then the allocation as in
                                   * GS_REC_CKPT_ALLOC: a free a later FREE_FAILED
                                   * may undo */
    GS_REC_CKPT_END = 40,     /* varint sites, varint live allocations, varint pools,
                               * varint failures, varint recent frees, varint
                               * devices, varint kinds, then (absent from older
                               * checkpoints: none) varint chains: how many of each
                               * record the checkpoint holds, so that a reader knows
                               * it has them all */
    GS_REC_CKPT_CHAIN = 41,   /* varint tid, zz device, varint stack id (of its latest
                               * attempt), varint state (0: its latest attempt failed,
                               * 1: a probe's allocation is held apart), varint probe
                               * (0/1), varint its latest failure (index + 1 among the
                               * CKPT_FAILURE records, which come before; 0: none
                               * kept), varint its latest request's bytes, varint time
                               * of its first failure, varint failures in it, varint
                               * device bytes its thread freed since, varint in so many
                               * frees; then for state 1 the allocation held apart:
                               * varint addr, varint size, varint time, varint stack
                               * id, varint kind, zz device, varint space, varint api,
                               * varint parent, varint stream. A thread's chain of
                               * retries still open (analyzer/model/outcome.c). Older
                               * readers skip it */
    GS_REC_CKPT_GRAPH = 42,   /* varint what, then: 0, a device's graph pool: zz device,
                               * varint reserved bytes (as the replay holds them),
                               * varint bytes of graph allocations live, varint
                               * sampled reserved, varint sampled used, varint
                               * samples, varint peak reserved, varint launches,
                               * varint launches failed, varint stack id and varint
                               * api of the call that last grew it, varint reserved
                               * bytes then; 1, a graph, an executable or
                               * a capture: varint which (0 graph, 1 executable, 2 a
                               * capture under way), varint handle (the stream of a
                               * capture), varint graph (of an executable), varint
                               * flags, zz device, varint launches, varint n, n x
                               * (varint what, varint addr, varint size, varint stack
                               * id, varint api, zz device): its memory nodes in
                               * order; 2, a graph allocation live (after the
                               * CKPT_ALLOC of it): varint addr, zz device; 3, a
                               * launch that failed for memory whose failed
                               * allocation is still to come: varint tid, varint
                               * exec; 4, the totals: varint memory nodes recorded,
                               * varint executables instantiated
                               * (analyzer/model/graphs.c). Older readers skip it */

    /* Python stacks (types 48..51; 49..51 are reserved for them) */
    GS_REC_PYCODE = 48,       /* varint code id (1..GS_PY_MAX_CODE), string file,
                               * string function (qualified name), varint first
                               * line: a Python code object, which STACK records
                               * name through Python pcs (below); defined before
                               * any stack names it, like a module */

    /* What the program says through the public API (include/gpushim.h). */
    GS_REC_MARK = 52,         /* zz dt, varint tid, varint stack id, string label (at
                               * most GS_MAX_LABEL bytes): gpushim_mark(label); then,
                               * only when not 0, varint flags (enum gs_mark_flag).
                               * Old readers take every mark as one a step begins at */
    GS_REC_BLOCK_ALLOC = 53,  /* zz dt, varint tid, zz addr delta, varint size, varint
                               * stack id: the program's own allocator handed out
                               * [addr, addr+size), usually inside a driver allocation
                               * (gpushim_block_alloc) */
    GS_REC_BLOCK_FREE = 54,   /* zz dt, varint tid, zz addr delta: that block was given
                               * back (gpushim_block_free); then, only when not 0,
                               * varint span: every block that starts in [addr,
                               * addr+span) was given back (an NVTX heap reset or
                               * unregistered). Old readers free the block at addr */

    /* Checkpoint records of the marks and blocks (types GS_REC_CKPT_API_FIRST..
     * GS_REC_CKPT_API_LAST), between GS_REC_CKPT_BEGIN and GS_REC_CKPT_END like
     * the others, absolute values; written only for a run with marks or
     * blocks; labels before the marks and steps that name them, block sites
     * before their blocks, GS_REC_CKPT_API_END after all of them. */
    GS_REC_CKPT_MARK_LABEL = 55, /* varint index (the labels' order, from 0), string
                                  * label, varint stack id (of its first mark), varint
                                  * marks, varint steps, varint first mark time, varint
                                  * last mark time; the step open since: varint device
                                  * bytes at its start, varint device bytes made live and
                                  * varint ended in the run by then, varint its peak so
                                  * far; its completed steps: varint largest peak, varint
                                  * end of the step with it, varint bytes allocated,
                                  * varint bytes freed, zz growth, zz largest growth,
                                  * varint steps that grew; then, where written (old
                                  * writers did not: a step open since a mark), varint
                                  * the step open (enum gs_step_open), varint the thread
                                  * whose outermost range's pop ends it (0: none), varint
                                  * the id of the started range whose end ends it (0:
                                  * none), varint its marks that were ranges opening,
                                  * varint the open step's start, varint its first
                                  * step's start, varint its first step's end (0: not
                                  * ended), varint its last ended step's start, varint
                                  * its end */
    GS_REC_CKPT_API_ITEM = 56,   /* varint what, then: 0, a recent mark: varint its
                                  * number in the run (from 0), varint label index
                                  * (UINT32_MAX: a label not followed), varint time,
                                  * varint device bytes, varint block bytes, then, where
                                  * written (old writers did not: a mark), varint its kind
                                  * (0 a mark, 1 a step's end, 2 a range); 1, a recent
                                  * step: varint its number, varint label index, varint
                                  * start, varint end, varint peak bytes, varint bytes
                                  * allocated, varint bytes freed, zz growth; 2, the
                                  * fragmentation at a failure: varint the failure's
                                  * index (its CKPT_FAILURE's place), a fragmentation */
    GS_REC_CKPT_BLOCK_SITE = 57, /* varint stack id, varint blocks, varint bytes, varint
                                  * live bytes, varint live count, varint saved bytes,
                                  * varint saved count, varint saved epoch, then its
                                  * threads: a call site of gpushim_block_alloc, as
                                  * GS_REC_CKPT_SITE */
    GS_REC_CKPT_BLOCK = 58,      /* varint addr, varint size, varint time, varint stack
                                  * id, varint tid: a live block, of a block site */
    GS_REC_CKPT_API_END = 59,    /* varint marks, varint steps, varint marks of labels
                                  * not followed, varint device bytes made live and
                                  * varint ended in the run, varint the most device
                                  * bytes since the last mark, varint blocks given,
                                  * varint taken back, varint taken back unknown, varint
                                  * live block bytes, varint live blocks, varint block
                                  * peak bytes, varint its time, varint its epoch,
                                  * varint blocks seen (0/1), varint the device peak's
                                  * fragmentation still to take (0/1), the fragmentation
                                  * at the device peak; then how many came of: varint
                                  * labels, varint recent marks, varint recent steps,
                                  * varint failure fragmentations, varint block sites,
                                  * varint blocks.
                                  *
                                  * A fragmentation (docs/api.md "Fragmentation"):
                                  * varint present (0/1), varint time, zz device (-1:
                                  * all), varint segments holding blocks, varint their
                                  * bytes, varint bytes of them in blocks, varint the
                                  * largest free gap, varint bytes of blocks in no
                                  * segment */

    /* NVTX (shim/hooks/nvtx.c): what a program's NVTX calls said. Old readers
     * skip it. */
    GS_REC_RANGE = 60,           /* zz dt, varint tid, varint op (enum gs_range_op),
                                  * varint id, varint domain, varint flags (enum
                                  * gs_range_flag), string label: PUSH and POP (a
                                  * thread's nested ranges of a domain; a POP names no
                                  * label), START and END (a range of id that may end
                                  * on another thread; an END names no label), DOMAIN
                                  * (domain id is called label from now on). Domain 0
                                  * is NVTX's default domain; ids and domains are the
                                  * shim's, from 1 */

    /* Allocations and frees by column (version 3). A chunk may begin with
     * one GS_REC_COLUMNS record holding the fields of its ALLOC and FREE
     * events a column each (enum gs_column); each such event then stands in
     * the chunk's order as an empty GS_REC_COL_ALLOC or GS_REC_COL_FREE
     * record, and takes its fields from the columns in turn. Other records
     * are as above, in between. Like fields a column after another compress
     * far better than records do (docs/trace-format.md). */
    GS_REC_COLUMNS = 61,         /* varint K (columns, at least GS_COLUMNS; a reader
                                  * ignores those past the ones it knows), K x varint
                                  * column length, then the K columns' bytes in turn */
    GS_REC_COL_ALLOC = 62,       /* empty: the next allocation of the columns */
    GS_REC_COL_FREE = 63,        /* empty: the next free of the columns */
    GS_REC_STOPPED = 64,         /* varint errno, varint offset, varint time (ns since the
                                  * start): the trace could not be written past offset
                                  * then; varint events the program made, varint events
                                  * not in the file (lost), varint end time (0: the
                                  * process has not finished). Written by a shim
                                  * without a ring file, as the last chunk of its own
                                  * (GS_STOPPED_CHUNK_LEN bytes, stored, each varint
                                  * padded to 10 bytes), where the file was cut back to
                                  * its last whole chunk, and rewritten in place as
                                  * events are lost and at exit. */
};

/* The GS_REC_STOPPED chunk's size in the file: its 16-byte head, zlib's
 * 2-byte head, one stored block (5 bytes of head, the 62-byte record), and
 * the Adler-32. */
#define GS_STOPPED_RAW_LEN 62u
#define GS_STOPPED_CHUNK_LEN (16u + 2u + 5u + GS_STOPPED_RAW_LEN + 4u)

/* The columns of a GS_REC_COLUMNS record, in their order. "Both": a field
 * of every event of the columns; else only ALLOC's or FREE's have one. The
 * fields are GS_REC_ALLOC's and GS_REC_FREE's, but for three:
 *   - times are microseconds: the event's time is (t / 1000 + dt) * 1000,
 *     t the time of the record before it in the chunk (as for any record),
 *     or t itself when that is more: times never go backwards;
 *   - a free names the allocation it ends by its distance back among the
 *     chunk's column allocations (GS_COL_WHICH: 1 the latest), or by 0 when
 *     it is not among them (an earlier chunk's, or a record of its own),
 *     its address then in GS_COL_FREE_ADDR; addresses in GS_COL_ADDR and
 *     GS_COL_FREE_ADDR are deltas from the address of the event before in
 *     the columns, allocation or free (an allocator reuses what it freed);
 *   - an allocation's kind and all_free share a varint: kind * 2 + all_free.
 * Column deltas restart with every chunk, as record deltas do. */
enum gs_column {
    GS_COL_TIME,      /* both: zz dt, microseconds */
    GS_COL_TID,       /* both: varint tid */
    GS_COL_API,       /* both: varint api */
    GS_COL_DEVICE,    /* both: zz device */
    GS_COL_STREAM,    /* both: varint stream */
    GS_COL_SPACE,     /* both: varint space */
    GS_COL_SIZE,      /* both: varint size (a free's: as GS_REC_FREE's) */
    GS_COL_ADDR,      /* alloc: zz addr delta */
    GS_COL_STACK,     /* alloc: varint stack id */
    GS_COL_KIND,      /* alloc: varint kind * 2 + all_free */
    GS_COL_PARENT,    /* alloc: varint parent */
    GS_COL_WHICH,     /* free: varint distance back (0: see GS_COL_FREE_ADDR) */
    GS_COL_FREE_ADDR, /* free, when GS_COL_WHICH is 0: zz addr delta */
    GS_COLUMNS
};
/* Events a writer puts in one chunk's columns, at most (a reader takes any
 * number). */
#define GS_COLUMN_EVENTS 65536u

/* What a GS_REC_RANGE record says. */
enum gs_range_op {
    GS_RANGE_PUSH = 0,
    GS_RANGE_POP = 1,
    GS_RANGE_START = 2,
    GS_RANGE_END = 3,
    GS_RANGE_DOMAIN = 4,
    GS_RANGE_OP_COUNT
};
enum gs_range_flag {
    GS_RANGE_TOP = 1, /* PUSH, START: its thread had no range pushed then (of any
                       * domain): the analyzer also counts it as a mark of its label,
                       * a step beginning. POP: the range it ends was its thread's
                       * outermost (the thread has none pushed now): the step that
                       * range began ends (written from format 3's later shims) */
};

/* What a GS_REC_MARK record says besides its label. */
enum gs_mark_flag {
    GS_MARK_STEP_END = 1, /* the step of its label ends here (gpushim_step_end: a mark
                           * made after each step, as an optimizer's post-step hook
                           * is); without it a mark is where a step begins */
    GS_MARK_NVTX = 2,     /* made by nvtxMark: an annotation, not a step mark of the
                           * program's own (marks.h: gs_marks_step_label) */
};

/* The step of a label open (the checkpoint's record of a label). */
enum gs_step_open {
    GS_STEP_NONE = 0,  /* none: the label's outermost range ended, or no mark yet */
    GS_STEP_BEGUN = 1, /* since a mark or a range that begins one: a step, also when
                        * the run ends in it */
    GS_STEP_AFTER = 2, /* since the end of one (GS_MARK_STEP_END): a step only if
                        * another end ends it; the run's end does not */
};

#define GS_MAX_LABEL 255 /* longest mark label a writer records */
#define GS_MAX_THREAD_NAME 63 /* longest thread name a writer records (Linux keeps 15 bytes) */
#define GS_REC_CKPT_API_FIRST 55
#define GS_REC_CKPT_API_LAST 59

/* Checkpoints. When a trace reaches its size limit (GPUSHIM_MAX_BYTES) the
 * shim goes on in a new file that starts, in its first chunks, with a
 * checkpoint: the MODULE, PYCODE and STACK records of every module, Python
 * code object and stack known so far and a THREAD record of every thread
 * named so far (its latest name), then GS_REC_CKPT_BEGIN, the other checkpoint records in any
 * order except that a site comes before the live allocations and recent
 * frees of it, and GS_REC_CKPT_END; then events as usual. Replaying the
 * checkpoint and the events after it gives the same peak, sites, leaks,
 * devices, kinds, pools and failures as replaying the whole history.
 * Types GS_REC_CKPT_FIRST..GS_REC_CKPT_LAST are reserved for checkpoints. */
#define GS_REC_CKPT_FIRST 32
#define GS_REC_CKPT_LAST 47
#define GS_CKPT_SITE_THREADS 4 /* thread names a checkpointed site lists, at most */

/* The environment variables that decide what a framework's allocator sends
 * to the driver (README "What each framework setting lets it see"). */
#define GS_ALLOCATOR_SETTINGS                                                                      \
    "PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF", "PYTORCH_NO_CUDA_MEMORY_CACHING",             \
        "XLA_PYTHON_CLIENT_ALLOCATOR", "XLA_PYTHON_CLIENT_PREALLOCATE",                            \
        "XLA_PYTHON_CLIENT_MEM_FRACTION", "TF_GPU_ALLOCATOR", "TF_FORCE_GPU_ALLOW_GROWTH"
#define GS_MAX_SETTING 1024 /* longest value a writer records */

/* Python frames in stacks. A stack of a thread that held the GIL is its
 * native frames (innermost first) followed by its Python frames (innermost
 * first), each a "Python pc" in the kernel's half of the address space,
 * where no code of a process lies:
 *
 *   GS_PY_PC_BASE | code id << GS_PY_CODE_SHIFT | line
 *
 * with the code id of a GS_REC_PYCODE record and the line capped at
 * GS_PY_MAX_LINE. Code id 0 is a marker, not a frame: line 0 (GS_PY_PC_NO_GIL)
 * says the thread did not hold the GIL of the process's Python and no frame
 * of its could be read (its stack is native only); line 1 (GS_PY_PC_NO_FRAME)
 * says it held it with no Python code running; line 2 (GS_PY_PC_RELEASED),
 * before the Python pcs, says the thread did not hold the GIL and its frames
 * were read from memory (readers that do not know it skip it as a marker);
 * line 3 (GS_PY_PC_WAITER), before the Python pcs, says the thread ran no
 * Python and the pcs are those of the one thread that waited for it in a
 * hand-off (shim/record/handoff.c: PyTorch's backward), read from memory
 * (a reader that does not know it takes them as the thread's own).
 * A stack with no marker and no Python pcs comes from a process without
 * Python (or one whose frames the shim cannot read). A reader that knows
 * none of this sees addresses in no module. */
#define GS_PY_PC_BASE 0xffff800000000000ull
#define GS_PY_CODE_SHIFT 24
#define GS_PY_MAX_CODE 0x7fffffu
#define GS_PY_MAX_LINE 0xffffffu
#define GS_PY_PC_NO_GIL (GS_PY_PC_BASE | 0u)
#define GS_PY_PC_NO_FRAME (GS_PY_PC_BASE | 1u)
#define GS_PY_PC_RELEASED (GS_PY_PC_BASE | 2u)
#define GS_PY_PC_WAITER (GS_PY_PC_BASE | 3u)

static inline int gs_pc_is_python(uint64_t pc) { return (pc & GS_PY_PC_BASE) == GS_PY_PC_BASE; }
static inline uint64_t gs_py_pc(uint32_t code, uint32_t line)
{
    return GS_PY_PC_BASE | (uint64_t)(code & GS_PY_MAX_CODE) << GS_PY_CODE_SHIFT |
           (line < GS_PY_MAX_LINE ? line : GS_PY_MAX_LINE);
}
static inline uint32_t gs_py_pc_code(uint64_t pc)
{
    return (uint32_t)(pc >> GS_PY_CODE_SHIFT) & GS_PY_MAX_CODE;
}
static inline uint32_t gs_py_pc_line(uint64_t pc) { return (uint32_t)pc & GS_PY_MAX_LINE; }

/* The API the program called, as it appears in reports. */
enum gs_api {
    GS_API_UNKNOWN = 0,
    GS_API_cuMemAlloc_v2,
    GS_API_cuMemFree_v2,
    GS_API_cuMemAllocPitch_v2,
    GS_API_cuMemAllocManaged,
    GS_API_cuMemAllocAsync,
    GS_API_cuMemAllocAsync_ptsz,
    GS_API_cuMemFreeAsync,
    GS_API_cuMemFreeAsync_ptsz,
    GS_API_cuMemAllocFromPoolAsync,
    GS_API_cuMemAllocFromPoolAsync_ptsz,
    GS_API_cudaMalloc,
    GS_API_cudaFree,
    GS_API_cudaMallocPitch,
    GS_API_cudaMallocManaged,
    GS_API_cudaMallocAsync,
    GS_API_cudaMallocAsync_ptsz,
    GS_API_cudaFreeAsync,
    GS_API_cudaFreeAsync_ptsz,
    GS_API_cuMemCreate,
    GS_API_cuMemRelease,
    GS_API_cuMemRetainAllocationHandle,
    GS_API_cuMemImportFromShareableHandle,
    GS_API_cuMemMap,
    GS_API_cuMemUnmap,
    GS_API_cuMemAddressReserve,
    GS_API_cuMemAddressFree,
    GS_API_cuMemHostAlloc,
    GS_API_cuMemAllocHost_v2,
    GS_API_cuMemFreeHost,
    GS_API_cuMemHostRegister_v2,
    GS_API_cuMemHostUnregister,
    GS_API_cuArrayCreate_v2,
    GS_API_cuArray3DCreate_v2,
    GS_API_cuArrayDestroy,
    GS_API_cuMipmappedArrayCreate,
    GS_API_cuMipmappedArrayDestroy,
    GS_API_cuIpcOpenMemHandle_v2,
    GS_API_cuIpcCloseMemHandle,
    GS_API_cuMemPoolCreate,
    GS_API_cuMemPoolDestroy,
    GS_API_cudaMallocHost,
    GS_API_cudaHostAlloc,
    GS_API_cudaFreeHost,
    GS_API_cudaHostRegister,
    GS_API_cudaHostUnregister,
    GS_API_cudaMalloc3D,
    GS_API_cudaMallocArray,
    GS_API_cudaMalloc3DArray,
    GS_API_cudaFreeArray,
    GS_API_cudaMallocFromPoolAsync,
    GS_API_cudaMallocFromPoolAsync_ptsz,
    GS_API_cudaMemPoolCreate,
    GS_API_cudaMemPoolDestroy,
    GS_API_gpushim_torch_alloc, /* PyTorch's pluggable allocator, through the shim */
    GS_API_gpushim_torch_free,
    GS_API_cuMulticastCreate,
    GS_API_cuStreamBeginCapture_v2,
    GS_API_cuStreamBeginCapture_v2_ptsz,
    GS_API_cuStreamEndCapture,
    GS_API_cuStreamEndCapture_ptsz,
    GS_API_cuGraphAddMemAllocNode,
    GS_API_cuGraphAddMemFreeNode,
    GS_API_cuGraphInstantiateWithFlags,
    GS_API_cuGraphUpload,
    GS_API_cuGraphUpload_ptsz,
    GS_API_cuGraphLaunch,
    GS_API_cuGraphLaunch_ptsz,
    GS_API_cuGraphExecDestroy,
    GS_API_cuGraphDestroy,
    GS_API_cuDeviceGraphMemTrim,
    GS_API_COUNT
};

/* What kind of memory an allocation is: each is a category of its own in
 * reports; peak and leaks are about GS_KIND_DEVICE. */
enum gs_kind {
    GS_KIND_DEVICE = 0,        /* device memory: cuMemAlloc*, device-located cuMemCreate */
    GS_KIND_MANAGED = 1,       /* cuMemAllocManaged */
    GS_KIND_HOST_PINNED = 2,   /* cuMemHostAlloc, cuMemAllocHost, cuMemHostRegister,
                                * host-located cuMemCreate */
    GS_KIND_ARRAY = 3,         /* cuArrayCreate, cuArray3DCreate, cuMipmappedArrayCreate */
    GS_KIND_IMPORTED = 4,      /* another process's: cuIpcOpenMemHandle,
                                * cuMemImportFromShareableHandle (seen, not owned) */
    GS_KIND_ADDRESS_SPACE = 5, /* cuMemAddressReserve: addresses, not memory */
    GS_KIND_MAPPED = 6,        /* cuMemMap: a view of physical memory counted elsewhere */
    GS_KIND_MULTICAST = 7,     /* cuMulticastCreate (NCCL's NVLS): a handle, by size, that
                                * devices bind their own physical memory to; not memory
                                * of its own: what is bound is counted where it was made */
    GS_KIND_COUNT
};

/* What an allocation's "address" names. Values of different spaces may be
 * equal (a reservation and the first mapping in it start at one address). */
enum gs_space {
    GS_SPACE_ADDRESS = 0,     /* a device or host address */
    GS_SPACE_HANDLE = 1,      /* a CUmemGenericAllocationHandle (physical memory,
                               * or a multicast object) */
    GS_SPACE_RESERVATION = 2, /* the start of a reserved address range */
    GS_SPACE_MAPPING = 3,     /* the start of a mapped range */
    GS_SPACE_ARRAY = 4,       /* a CUarray or CUmipmappedArray */
    GS_SPACE_GRAPH_POOL = 5,  /* a device's CUDA graph memory pool, by device number:
                               * what it holds beyond its graphs' live allocations
                               * (the analyzer's own; no record carries it) */
    GS_SPACE_COUNT
};

/* What a GS_REC_GRAPH record says was done. */
enum gs_graph_op {
    GS_GRAPH_CAPTURE_BEGIN = 0, /* stream, flags: the capture mode */
    GS_GRAPH_CAPTURE_END = 1,   /* stream, graph: the graph captured */
    GS_GRAPH_INSTANTIATE = 2,   /* graph, exec, flags */
    GS_GRAPH_LAUNCH = 3,        /* exec, stream */
    GS_GRAPH_UPLOAD = 4,        /* exec, stream */
    GS_GRAPH_EXEC_DESTROY = 5,  /* exec */
    GS_GRAPH_DESTROY = 6,       /* graph */
    GS_GRAPH_TRIM = 7,          /* device */
    GS_GRAPH_OP_COUNT
};

#define GS_DEVICE_UNKNOWN (-1) /* also: host memory, address space */

/* ---- varints, shared by the writer and the reader ---- */

static inline uint64_t gs_zigzag(int64_t v) { return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63); }
static inline int64_t gs_unzigzag(uint64_t v) { return (int64_t)(v >> 1) ^ -(int64_t)(v & 1); }

/* Writes v at p (room for 10 bytes needed); returns the bytes written. */
static inline size_t gs_put_varint(uint8_t *p, uint64_t v)
{
    size_t n = 0;
    while (v >= 0x80) {
        p[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    p[n++] = (uint8_t)v;
    return n;
}

/* Writes v at p in exactly 10 bytes (redundant continuation bytes, which a
 * reader takes as any varint): a field rewritten in place keeps its size. */
static inline void gs_put_varint10(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 9; i++, v >>= 7)
        p[i] = (uint8_t)(v | 0x80);
    p[9] = (uint8_t)(v & 1);
}

/* Reads a varint from [*p, end). Returns 0 and advances *p, or -1 when the
 * input ends first or the value does not fit in 64 bits. */
static inline int gs_get_varint(const uint8_t **p, const uint8_t *end, uint64_t *out)
{
    uint64_t v = 0;
    for (unsigned shift = 0; shift < 64; shift += 7) {
        if (*p >= end)
            return -1;
        uint8_t b = *(*p)++;
        if (shift == 63 && b > 1)
            return -1;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *out = v;
            return 0;
        }
    }
    return -1;
}

static inline void gs_put_u32le(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}

static inline uint32_t gs_get_u32le(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

#endif
