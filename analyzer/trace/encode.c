/*
 * encode.c - ring bodies to trace records (include/gpushim_trace.h): the
 * trace codec's encoding half (decode.c is the other). The shim's writer
 * encodes with it, and the analyzer (analyzer/read/recover.c) turns a dead
 * process's ring entries into records with it. The header's records and
 * the writer's own (ring position, resumed, stopped) are meta.c's.
 *
 * Runs on the writer's side, off the program's threads: the hooks copy a
 * fixed-size struct into the ring, and the varint and delta coding happens
 * here. The delta state restarts with every chunk (gs_encoder_reset, or
 * gs_encoder_new_chunk for the writer's encoder with columns), so each chunk
 * decodes on its own. The writer's allocations and frees go into columns
 * (columns.c); recovery's records stay whole.
 */
#include <string.h>

#include "analyzer/trace/encode.h"
#include "gpushim_ring.h"
#include "analyzer/trace/columns.h"

static uint8_t *varint(uint8_t *p, uint64_t v) { return p + gs_put_varint(p, v); }
static uint8_t *svarint(uint8_t *p, int64_t v) { return p + gs_put_varint(p, gs_zigzag(v)); }

static uint8_t *bytes(uint8_t *p, const void *src, size_t len)
{
    p = varint(p, len);
    memcpy(p, src, len);
    return p + len;
}

void gs_encoder_reset(struct gs_encoder *e) { memset(e, 0, sizeof *e); }  /* no columns */

static uint8_t *event_head(struct gs_encoder *e, const struct gs_ev *ev, uint8_t *p)
{
    p = svarint(p, (int64_t)(ev->time_ns - e->last_time));
    e->last_time = ev->time_ns;
    p = varint(p, ev->tid);
    p = varint(p, ev->api);
    return svarint(p, ev->device);
}

static uint8_t *addr_delta(struct gs_encoder *e, uint64_t addr, uint8_t *p)
{
    p = svarint(p, (int64_t)(addr - e->last_addr));
    e->last_addr = addr;
    return p;
}

static uint8_t *encode_event(struct gs_encoder *e, const struct gs_ev *ev, uint8_t *p)
{
    p = event_head(e, ev, p);
    switch (ev->type) {
    case GS_REC_ALLOC:
        p = addr_delta(e, ev->addr, p);
        p = varint(p, ev->size);
        p = varint(p, ev->stack_id);
        p = varint(p, ev->stream);
        p = varint(p, ev->kind);
        p = varint(p, ev->space);
        p = varint(p, ev->parent);
        return ev->free_bytes ? varint(p, 1) : p; /* appended: absent when 0 */
    case GS_REC_FREE:
        p = addr_delta(e, ev->addr, p);
        p = varint(p, ev->stream);
        p = varint(p, ev->space);
        return varint(p, ev->size);
    case GS_REC_FREE_FAILED:
        p = addr_delta(e, ev->addr, p);
        p = varint(p, (uint64_t)(uint32_t)ev->result);
        return varint(p, ev->space);
    case GS_REC_REF:
        p = addr_delta(e, ev->addr, p);
        return varint(p, ev->space);
    case GS_REC_POOL:
        p = varint(p, ev->addr);
        p = varint(p, ev->size);
        return varint(p, ev->free_bytes);
    case GS_REC_GRAPH_NODE: /* kind: what; parent: the graph */
        p = addr_delta(e, ev->addr, p);
        p = varint(p, ev->size);
        p = varint(p, ev->stack_id);
        p = varint(p, ev->parent);
        p = varint(p, ev->stream);
        return varint(p, ev->kind);
    case GS_REC_GRAPH: /* kind: op; addr: graph; parent: exec; size: flags; space:
                        * sampled; free_bytes, total_bytes: reserved, used */
        p = varint(p, ev->kind);
        p = varint(p, ev->addr);
        p = varint(p, ev->parent);
        p = varint(p, ev->stream);
        p = varint(p, ev->size);
        p = varint(p, (uint64_t)(uint32_t)ev->result);
        p = varint(p, ev->stack_id);
        p = varint(p, ev->space);
        p = varint(p, ev->free_bytes);
        return varint(p, ev->total_bytes);
    default: /* GS_REC_ALLOC_FAILED */
        p = varint(p, ev->size);
        p = varint(p, ev->stack_id);
        p = varint(p, ev->stream);
        p = varint(p, (uint64_t)(uint32_t)ev->result);
        p = varint(p, ev->free_bytes);
        return varint(p, ev->total_bytes);
    }
}

/* The public API's records (and NVTX's): no api or device, as they are
 * the program's own words, not a driver call. Each starts with its time
 * and thread. */
static uint8_t *api_head(struct gs_encoder *e, const struct gs_ev *ev, uint8_t *p)
{
    p = svarint(p, (int64_t)(ev->time_ns - e->last_time));
    e->last_time = ev->time_ns;
    return varint(p, ev->tid);
}

static uint8_t *encode_block(struct gs_encoder *e, const struct gs_ev *ev, uint8_t *p)
{
    p = api_head(e, ev, p);
    p = addr_delta(e, ev->addr, p);
    if (ev->type == GS_REC_BLOCK_FREE)
        return ev->size ? varint(p, ev->size) : p; /* a span: only when there is one */
    p = varint(p, ev->size);
    return varint(p, ev->stack_id);
}

static uint8_t *encode_mark(struct gs_encoder *e, const struct gs_mark_body *m, uint8_t *p)
{
    p = api_head(e, &m->ev, p);
    p = varint(p, m->ev.stack_id);
    p = bytes(p, m->label, m->label_len);
    return m->ev.space ? varint(p, m->ev.space) : p; /* its flags, when any */
}

static uint8_t *encode_range(struct gs_encoder *e, const struct gs_mark_body *m, uint8_t *p)
{
    p = api_head(e, &m->ev, p);
    p = varint(p, m->ev.kind);
    p = varint(p, m->ev.addr);
    p = varint(p, m->ev.stream);
    p = varint(p, m->ev.space);
    return bytes(p, m->label, m->label_len);
}

static uint8_t *encode_stack(const struct gs_stack_body *s, uint8_t *p)
{
    p = varint(p, s->id);
    p = varint(p, s->n);
    uint64_t prev = 0;
    for (uint32_t i = 0; i < s->n; i++) {
        p = svarint(p, (int64_t)(s->pcs[i] - prev));
        prev = s->pcs[i];
    }
    return p;
}

static uint8_t *encode_module(const struct gs_module_body *m, uint8_t *p)
{
    p = varint(p, m->id);
    p = varint(p, m->bias);
    p = varint(p, m->lo);
    p = varint(p, m->span);
    p = bytes(p, m->data, m->path_len);
    return bytes(p, m->data + m->path_len, m->build_id_len);
}

static uint8_t *encode_pycode(const struct gs_pycode_body *c, uint8_t *p)
{
    p = varint(p, c->id);
    p = bytes(p, c->data, c->file_len);
    p = bytes(p, c->data + c->file_len, c->name_len);
    return varint(p, c->first_line);
}

static uint8_t *encode_thread(const struct gs_thread_body *t, uint8_t *p)
{
    p = varint(p, t->tid);
    return bytes(p, t->name, t->name_len);
}

static uint8_t *encode_end(const struct gs_end_body *b, uint8_t *p)
{
    p = varint(p, b->events);
    p = varint(p, b->lost);
    return varint(p, b->time_ns);
}

/* Is the body long enough for what its type says it holds? */
static int well_formed(const uint8_t *body, uint32_t len)
{
    switch (body[0]) {
    case GS_REC_ALLOC:
    case GS_REC_FREE:
    case GS_REC_FREE_FAILED:
    case GS_REC_ALLOC_FAILED:
    case GS_REC_REF:
    case GS_REC_POOL:
    case GS_REC_GRAPH_NODE:
    case GS_REC_GRAPH:
        return len == sizeof(struct gs_ev);
    case GS_REC_STACK: {
        const struct gs_stack_body *s = (const void *)body;
        return len >= sizeof *s && s->n <= GS_MAX_FRAMES && len == sizeof *s + s->n * 8u;
    }
    case GS_REC_MODULE: {
        const struct gs_module_body *m = (const void *)body;
        return len >= sizeof *m && len == sizeof *m + m->path_len + m->build_id_len &&
               m->path_len < 4096 && m->build_id_len <= GS_MAX_BUILD_ID;
    }
    case GS_REC_PYCODE: {
        const struct gs_pycode_body *c = (const void *)body;
        return len >= sizeof *c && len == sizeof *c + c->file_len + c->name_len &&
               c->file_len <= GS_PY_MAX_FILE && c->name_len <= GS_PY_MAX_NAME;
    }
    case GS_REC_END:
        return len == sizeof(struct gs_end_body);
    case GS_REC_THREAD: {
        const struct gs_thread_body *t = (const void *)body;
        return len >= sizeof *t && t->name_len <= GS_MAX_THREAD_NAME &&
               len == sizeof *t + t->name_len;
    }
    case GS_REC_BLOCK_ALLOC:
    case GS_REC_BLOCK_FREE:
        return len == sizeof(struct gs_ev);
    case GS_REC_MARK:
    case GS_REC_RANGE: {
        const struct gs_mark_body *m = (const void *)body;
        return len >= sizeof *m && m->label_len <= GS_MAX_LABEL &&
               len == sizeof *m + m->label_len;
    }
    default:
        return 0;
    }
}

size_t gs_encode(struct gs_encoder *e, const void *body, uint32_t len, uint8_t *out)
{
    const uint8_t *b = body;
    if (!len || !well_formed(b, len))
        return 0;
    uint8_t payload[GS_MAX_RECORD];
    uint8_t *end;
    switch (b[0]) {
    case GS_REC_STACK:
        end = encode_stack(body, payload);
        break;
    case GS_REC_MODULE:
        end = encode_module(body, payload);
        break;
    case GS_REC_PYCODE:
        end = encode_pycode(body, payload);
        break;
    case GS_REC_END:
        end = encode_end(body, payload);
        break;
    case GS_REC_THREAD:
        end = encode_thread(body, payload);
        break;
    case GS_REC_BLOCK_ALLOC:
    case GS_REC_BLOCK_FREE:
        end = encode_block(e, body, payload);
        break;
    case GS_REC_MARK:
        end = encode_mark(e, body, payload);
        break;
    case GS_REC_RANGE:
        end = encode_range(e, body, payload);
        break;
    default:
        if (gs_columns_put(e, body) == 0) {
            out[0] = b[0] == GS_REC_ALLOC ? GS_REC_COL_ALLOC : GS_REC_COL_FREE;
            out[1] = 0; /* empty: its fields are in the columns */
            return 2;
        }
        end = encode_event(e, body, payload);
        break;
    }
    size_t plen = (size_t)(end - payload);
    uint8_t *p = out;
    *p++ = b[0];
    p = varint(p, plen);
    memcpy(p, payload, plen);
    return (size_t)(p - out) + plen;
}
