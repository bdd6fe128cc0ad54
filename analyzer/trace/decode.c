/*
 * decode.c - the records of one chunk (include/gpushim_trace.h), inflated,
 * handed in order to callbacks: the analyzer's reader (reader.c) and ring
 * recovery (recover.c) decode with it, and so does the shim's model of a
 * bounded trace (shim/bound/bound.c), so all three see the same events.
 *
 * A chunk's payload is untrusted: a record whose fields do not parse is
 * counted damaged and skipped, and the chunk's delta state moves only with
 * a record that parsed whole; a length that cannot frame the rest ends the
 * chunk. A chunk of format 3 may hold its allocations and frees in
 * columns (columns.c): its first record says where each column lies, and
 * each event's record, empty, says when to take the next from them.
 */
#include <stdint.h>
#include <string.h>

#include "gpushim_trace.h"
#include "analyzer/util/cursor.h"
#include "analyzer/trace/trace.h"
#include "analyzer/trace/columns.h"
#include "analyzer/trace/meta.h"

/* ---- fields of a record payload ---- */

static uint64_t u(struct gs_cursor *c) { return gs_cursor_u(c); }

static int64_t s(struct gs_cursor *c) { return gs_unzigzag(u(c)); }

/* ---- chunk records ---- */

struct chunk_state {
    uint64_t time, addr;
};

static int32_t device(struct gs_cursor *c)
{
    int64_t d = s(c);
    return d < -1 || d >= GS_MAX_DEVICES ? GS_DEVICE_UNKNOWN : (int32_t)d;
}

/* Decodes an event; the chunk's delta state moves only if all of it parses. */
static int event(struct gs_cursor *c, struct chunk_state *cs, uint8_t type, struct gs_revent *e)
{
    memset(e, 0, sizeof *e);
    e->type = (enum gs_record_type)type;
    e->time_ns = cs->time + (uint64_t)s(c);
    e->tid = (uint32_t)u(c);
    e->api = (uint32_t)u(c);
    e->device = device(c);
    uint64_t addr = cs->addr;
    if (type != GS_REC_ALLOC_FAILED && type != GS_REC_POOL && type != GS_REC_GRAPH) {
        addr += (uint64_t)s(c);
        e->addr = addr;
    }
    switch (type) {
    case GS_REC_ALLOC:
        e->size = u(c);
        e->stack_id = (uint32_t)u(c);
        e->stream = u(c);
        e->kind = (uint32_t)u(c);
        e->space = (uint32_t)u(c);
        e->parent = u(c);
        e->all_free = c->p < c->end && u(c) == 1; /* appended later: absent in old traces */
        break;
    case GS_REC_FREE:
        e->stream = u(c);
        e->space = (uint32_t)u(c);
        e->size = u(c);
        break;
    case GS_REC_FREE_FAILED:
        e->result = (uint32_t)u(c);
        e->space = (uint32_t)u(c);
        break;
    case GS_REC_REF:
        e->space = (uint32_t)u(c);
        break;
    case GS_REC_POOL:
        e->pool = u(c);
        e->reserved = u(c);
        e->used = u(c);
        break;
    case GS_REC_GRAPH_NODE:
        e->size = u(c);
        e->stack_id = (uint32_t)u(c);
        e->graph = u(c);
        e->stream = u(c);
        e->op = (uint32_t)u(c);
        break;
    case GS_REC_GRAPH:
        e->op = (uint32_t)u(c);
        e->graph = u(c);
        e->exec = u(c);
        e->stream = u(c);
        e->flags = u(c);
        e->result = (uint32_t)u(c);
        e->stack_id = (uint32_t)u(c);
        e->sampled = u(c) != 0;
        e->reserved = u(c);
        e->used = u(c);
        break;
    default:
        e->size = u(c);
        e->stack_id = (uint32_t)u(c);
        e->stream = u(c);
        e->result = (uint32_t)u(c);
        e->free_bytes = u(c);
        e->total_bytes = u(c);
        break;
    }
    if (c->bad)
        return -1;
    cs->time = e->time_ns;
    cs->addr = addr;
    return 0;
}

/* The public API's records (include/gpushim.h): marks and the blocks of the
 * program's own allocator. They share the chunk's delta state with the
 * events. */
static int api_event(struct gs_cursor *c, struct chunk_state *cs, uint8_t type,
                     struct gs_revent *e)
{
    memset(e, 0, sizeof *e);
    e->type = (enum gs_record_type)type;
    e->time_ns = cs->time + (uint64_t)s(c);
    e->tid = (uint32_t)u(c);
    e->device = GS_DEVICE_UNKNOWN;
    uint64_t addr = cs->addr;
    if (type == GS_REC_MARK) {
        e->stack_id = (uint32_t)u(c);
        e->label = (const char *)gs_cursor_bytes(c, &e->label_len);
        if (c->p < c->end)
            e->flags = u(c); /* enum gs_mark_flag; an old writer's mark has none */
    } else if (type == GS_REC_RANGE) {
        e->op = (uint32_t)u(c);
        e->addr = u(c);   /* its id */
        e->stream = u(c); /* its domain */
        e->flags = u(c);
        e->label = (const char *)gs_cursor_bytes(c, &e->label_len);
    } else {
        addr += (uint64_t)s(c);
        e->addr = addr;
        if (type == GS_REC_BLOCK_ALLOC) {
            e->size = u(c);
            e->stack_id = (uint32_t)u(c);
        } else if (c->p < c->end) {
            e->size = u(c); /* BLOCK_FREE's span */
        }
    }
    if (c->bad)
        return -1;
    cs->time = e->time_ns;
    cs->addr = addr;
    return 0;
}

static int stack(struct gs_cursor *c, const struct gs_reader_ops *ops, void *ctx)
{
    uint64_t pcs[GS_MAX_FRAMES];
    uint64_t id = u(c), n = u(c), pc = 0;
    if (c->bad || n > GS_MAX_FRAMES || id == 0 || id > UINT32_MAX)
        return -1;
    for (uint64_t i = 0; i < n; i++) {
        pc += (uint64_t)s(c);
        pcs[i] = pc;
    }
    if (c->bad)
        return -1;
    if (ops->stack)
        ops->stack(ctx, (uint32_t)id, pcs, (unsigned)n);
    return 0;
}

static int module(struct gs_cursor *c, const struct gs_reader_ops *ops, void *ctx)
{
    char path[4096];
    struct gs_rmodule m;
    uint64_t id = u(c);
    m.bias = u(c);
    m.lo = u(c);
    m.span = u(c);
    gs_cursor_text(c, path, sizeof path);
    m.build_id = gs_cursor_bytes(c, &m.build_id_len);
    if (c->bad || id == 0 || id > UINT32_MAX || m.build_id_len > GS_MAX_BUILD_ID)
        return -1;
    m.id = (uint32_t)id;
    m.path = path;
    if (ops->module)
        ops->module(ctx, &m);
    return 0;
}

static int pycode(struct gs_cursor *c, const struct gs_reader_ops *ops, void *ctx)
{
    char file[4096], function[1024];
    uint64_t id = u(c);
    gs_cursor_text(c, file, sizeof file);
    gs_cursor_text(c, function, sizeof function);
    uint64_t first_line = u(c);
    if (c->bad || id == 0 || id > GS_PY_MAX_CODE)
        return -1;
    struct gs_rpycode pc = {.id = (uint32_t)id,
                            .file = file,
                            .function = function,
                            .first_line = first_line > UINT32_MAX ? 0 : (uint32_t)first_line};
    if (ops->pycode)
        ops->pycode(ctx, &pc);
    return 0;
}

/* A thread's name: a longer name than a writer records is cut, control
 * bytes shown as '?' (gs_text_copy). */
static int thread(struct gs_cursor *c, const struct gs_reader_ops *ops, void *ctx)
{
    char name[GS_MAX_THREAD_NAME + 1];
    uint64_t tid = u(c);
    gs_cursor_text(c, name, sizeof name);
    if (c->bad || tid > UINT32_MAX)
        return -1;
    if (ops->thread)
        ops->thread(ctx, (uint32_t)tid, name);
    return 0;
}

/* The trace took no more (a shim without a ring file): where, why, what
 * was lost, and the end, if the process got there. */
static int stopped_record(const uint8_t *payload, size_t len, struct gs_reader_stats *st)
{
    struct gs_stopped s;
    if (gs_decode_stopped(payload, len, &s) != 0)
        return -1;
    st->write_failed = 1;
    st->fail_errno = (int)s.err;
    st->fail_offset = s.offset;
    st->fail_time_ns = s.time_ns;
    st->end_events = s.events;
    st->end_lost = s.lost;
    st->end_seen = s.end_ns != 0;
    st->end_time_ns = s.end_ns;
    return 0;
}

static int end_record(struct gs_cursor *c, struct gs_reader_stats *st)
{
    uint64_t events = u(c), lost = u(c), time_ns = u(c);
    if (c->bad)
        return -1;
    st->end_seen = 1;
    st->end_events = events;
    st->end_lost = lost;
    st->end_time_ns = time_ns;
    return 0;
}

/* A GS_REC_COL_ALLOC or GS_REC_COL_FREE: its event from the columns, handed
 * to compact_event, or whole (in col, reused) to event. Returns whether it
 * was damaged. */
static inline int column_event(struct gs_column_reader *cols, struct chunk_state *cs, uint8_t type,
                               struct gs_revent *col, const struct gs_reader_ops *ops, void *ctx)
{
    struct gs_compact_event ce;
    int got = gs_columns_event(cols, &cs->time, type, &ce);
    if (got == 0 && ops->compact_event) {
        ops->compact_event(ctx, &ce);
    } else if (got >= 0 && ops->event) {
        gs_compact_event_revent(&ce, col);
        if (got == 1) { /* a kind or space past a byte */
            col->kind = cols->wide_kind;
            col->space = cols->wide_space;
        }
        ops->event(ctx, col);
    }
    return got < 0;
}

uint64_t gs_decode_chunk(const uint8_t *raw, size_t len, const struct gs_reader_ops *ops,
                         void *ctx, struct gs_reader_stats *st)
{
    struct chunk_state cs = {0, 0};
    struct gs_column_reader cols = {0};
    struct gs_revent col = {0}; /* every column event, in turn: only its fields change */
    const uint8_t *p = raw, *end = raw + len;
    uint64_t records = 0;
    while (p < end) {
        uint8_t type = *p++;
        if ((type == GS_REC_COL_ALLOC || type == GS_REC_COL_FREE) && p < end && *p == 0) {
            p++; /* most records of a chunk: empty, their fields in the columns */
            if (column_event(&cols, &cs, type, &col, ops, ctx))
                st->damaged_records++;
            records++;
            continue;
        }
        uint64_t plen;
        if (gs_get_varint(&p, end, &plen) != 0 || plen > (uint64_t)(end - p)) {
            st->damaged_records++; /* the rest of the chunk cannot be framed */
            break;
        }
        struct gs_cursor c = {p, p + plen, 0};
        struct gs_revent e;
        int bad = 0;
        switch (type) {
        case GS_REC_ALLOC:
        case GS_REC_FREE:
        case GS_REC_FREE_FAILED:
        case GS_REC_ALLOC_FAILED:
        case GS_REC_REF:
        case GS_REC_POOL:
        case GS_REC_GRAPH_NODE:
        case GS_REC_GRAPH:
            bad = event(&c, &cs, type, &e);
            if (!bad && ops->event)
                ops->event(ctx, &e);
            break;
        case GS_REC_MARK:
        case GS_REC_RANGE:
        case GS_REC_BLOCK_ALLOC:
        case GS_REC_BLOCK_FREE:
            bad = api_event(&c, &cs, type, &e);
            if (!bad && ops->event)
                ops->event(ctx, &e);
            break;
        case GS_REC_COL_ALLOC: /* with a payload: a newer writer's */
        case GS_REC_COL_FREE:
            bad = column_event(&cols, &cs, type, &col, ops, ctx);
            break;
        case GS_REC_COLUMNS: /* one a chunk, before its events */
            bad = cols.open || records || gs_columns_open(&cols, c.p, plen) != 0;
            break;
        case GS_REC_STACK:
            bad = stack(&c, ops, ctx);
            break;
        case GS_REC_MODULE:
            bad = module(&c, ops, ctx);
            break;
        case GS_REC_PYCODE:
            bad = pycode(&c, ops, ctx);
            break;
        case GS_REC_END:
            bad = end_record(&c, st);
            break;
        case GS_REC_STOPPED:
            bad = stopped_record(c.p, plen, st);
            break;
        case GS_REC_THREAD:
            bad = thread(&c, ops, ctx);
            break;
        case GS_REC_RESUMED: { /* an exec failed after finishing the trace: it goes on */
            uint64_t since; /* when: not needed */
            bad = gs_decode_resumed(c.p, plen, &since) != 0;
            if (!bad) {
                st->end_seen = 0;
                st->end_events = st->end_lost = st->end_time_ns = 0;
            }
            break;
        }
        case GS_REC_RING_POS: {
            uint64_t pos;
            bad = gs_decode_ring_pos(c.p, plen, &pos) != 0;
            if (!bad && pos > st->ring_pos)
                st->ring_pos = pos;
            break;
        }
        default:
            if (((type >= GS_REC_CKPT_FIRST && type <= GS_REC_CKPT_LAST) ||
                 (type >= GS_REC_CKPT_API_FIRST && type <= GS_REC_CKPT_API_LAST)) &&
                ops->checkpoint)
                bad = ops->checkpoint(ctx, type, c.p, plen) != 0; /* the replay's to judge */
            break; /* else a record type from a newer writer */
        }
        if (bad)
            st->damaged_records++;
        records++;
        p += plen;
    }
    gs_columns_close(&cols);
    return records;
}
