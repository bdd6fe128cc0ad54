/*
 * tape.c - a chunk's records, decoded on one thread and played to the
 * reader's callbacks on another: the reader's read-ahead thread inflates
 * and decodes (decode.c, its column reads are most of a record's cost)
 * while the thread that asked for the trace replays it.
 *
 * A tape is a byte buffer of entries, each 8-aligned. Most events carry
 * only the fields an allocation or a free has; those are kept as a 64-byte
 * COMPACT entry (a column event copied as decode.c hands it over, struct
 * gs_compact_event), and played as the struct gs_revent they stand for. Any
 * other record is kept whole with what its callback points at (a label,
 * frames, names, a checkpoint's payload) copied after it: a tape holds no
 * pointer into the chunk it came from, whose buffer the decoding thread
 * reuses at once.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "analyzer/read/tape.h"

enum tag { COMPACT = 1, EVENT, STACK, MODULE, PYCODE, THREAD, CHECKPOINT };

/* A COMPACT entry is a struct gs_compact_event, its tag COMPACT: an
 * allocation's or a free's event whose other fields are 0. */
_Static_assert(sizeof(struct gs_compact_event) == 64, "a COMPACT entry is 64 bytes");
_Static_assert(offsetof(struct gs_compact_event, tag) == 0, "its tag is an entry's first byte");

/* The head of every other entry; len: the whole entry's, a multiple of 8. */
struct head {
    uint8_t tag;
    uint8_t pad[3];
    uint32_t len;
};

struct stack {
    struct head h;
    uint32_t id, n;
    uint64_t pcs[];
};

struct module {
    struct head h;
    uint32_t id, path_len; /* with its NUL */
    uint64_t bias, lo, span, build_id_len;
    char data[]; /* the path, then the build id */
};

struct pycode {
    struct head h;
    uint32_t id, first_line, file_len, function_len; /* lengths with their NULs */
    char data[];
};

struct thread {
    struct head h;
    uint32_t tid, name_len; /* with its NUL */
    char name[];
};

struct checkpoint {
    struct head h;
    uint8_t type;
    uint8_t pad[7];
    uint64_t len;
    uint8_t payload[];
};

struct event {
    struct head h;      /* h.pad[0]: whether e.label was set */
    struct gs_revent e; /* e.label: NULL; the label's bytes follow */
    uint8_t label[];
};

static size_t round8(size_t n) { return (n + 7) & ~(size_t)7; }

/* room past its common case (the tape has it), out of line. */
static __attribute__((noinline)) void *grow(struct gs_tape_recorder *rec, size_t n)
{
    struct gs_tape *t = rec->tape;
    if (n > UINT32_MAX) {
        rec->lost++;
        return NULL;
    }
    size_t cap = t->cap ? t->cap : 64 * 1024;
    while (cap < t->len + n)
        cap *= 2;
    uint8_t *p = realloc(t->p, cap);
    if (!p) {
        rec->lost++;
        return NULL;
    }
    t->p = p;
    t->cap = cap;
    return t->p + t->len;
}

/* Room for an entry of n bytes (a multiple of 8) at the tape's end, or NULL
 * (the record is counted lost). */
static inline void *room(struct gs_tape_recorder *rec, size_t n)
{
    struct gs_tape *t = rec->tape;
    return n <= UINT32_MAX && n <= t->cap - t->len ? t->p + t->len : grow(rec, n);
}

/* The entry room() gave, n bytes, is written: it is on the tape. */
static void kept(struct gs_tape_recorder *rec, size_t n)
{
    rec->tape->len += n;
    if (rec->tape->len >= rec->full_at)
        rec->full(rec);
}

/* An entry other than COMPACT, zeroed, padding and all. */
static void *entry(struct gs_tape_recorder *rec, enum tag tag, size_t n)
{
    struct head *h = room(rec, n);
    if (h) {
        memset(h, 0, n);
        h->tag = (uint8_t)tag;
        h->len = (uint32_t)n;
    }
    return h;
}

static void record_compact(void *ctx, const struct gs_compact_event *e)
{
    struct gs_tape_recorder *rec = ctx;
    struct gs_compact_event *c = room(rec, sizeof *c);
    if (!c)
        return;
    *c = *e;
    c->tag = COMPACT;
    kept(rec, sizeof *c);
}

static void record_event(void *ctx, const struct gs_revent *e)
{
    struct gs_tape_recorder *rec = ctx;
    uint64_t rest = e->free_bytes | e->total_bytes | e->pool | e->reserved | e->used | e->graph |
                    e->exec | e->flags | e->label_len | (uint64_t)(uintptr_t)e->label |
                    e->result | e->op | (uint32_t)e->sampled;
    if (!rest && e->type <= UINT8_MAX && e->kind <= UINT8_MAX && e->space <= UINT8_MAX) {
        struct gs_compact_event c = {.type = (uint8_t)e->type,
                                     .kind = (uint8_t)e->kind,
                                     .space = (uint8_t)e->space,
                                     .api = e->api,
                                     .device = e->device,
                                     .tid = e->tid,
                                     .stack_id = e->stack_id,
                                     .all_free = e->all_free,
                                     .time_ns = e->time_ns,
                                     .addr = e->addr,
                                     .size = e->size,
                                     .stream = e->stream,
                                     .parent = e->parent};
        record_compact(rec, &c);
        return;
    }
    size_t n = round8(sizeof(struct event) + e->label_len);
    struct event *x = entry(rec, EVENT, n);
    if (!x)
        return;
    x->e = *e;
    x->e.label = NULL;
    x->h.pad[0] = e->label != NULL;
    if (e->label_len)
        memcpy(x->label, e->label, e->label_len);
    kept(rec, n);
}

static void record_stack(void *ctx, uint32_t id, const uint64_t *pcs, unsigned n)
{
    struct gs_tape_recorder *rec = ctx;
    size_t len = sizeof(struct stack) + (size_t)n * sizeof *pcs;
    struct stack *s = entry(rec, STACK, len);
    if (!s)
        return;
    s->id = id;
    s->n = n;
    if (n)
        memcpy(s->pcs, pcs, n * sizeof *pcs);
    kept(rec, len);
}

static void record_module(void *ctx, const struct gs_rmodule *m)
{
    struct gs_tape_recorder *rec = ctx;
    size_t path_len = strlen(m->path) + 1;
    size_t n = round8(sizeof(struct module) + path_len + m->build_id_len);
    struct module *x = entry(rec, MODULE, n);
    if (!x)
        return;
    x->id = m->id;
    x->path_len = (uint32_t)path_len;
    x->bias = m->bias;
    x->lo = m->lo;
    x->span = m->span;
    x->build_id_len = m->build_id_len;
    memcpy(x->data, m->path, path_len);
    if (m->build_id_len)
        memcpy(x->data + path_len, m->build_id, m->build_id_len);
    kept(rec, n);
}

static void record_pycode(void *ctx, const struct gs_rpycode *c)
{
    struct gs_tape_recorder *rec = ctx;
    size_t file_len = strlen(c->file) + 1, function_len = strlen(c->function) + 1;
    size_t n = round8(sizeof(struct pycode) + file_len + function_len);
    struct pycode *x = entry(rec, PYCODE, n);
    if (!x)
        return;
    x->id = c->id;
    x->first_line = c->first_line;
    x->file_len = (uint32_t)file_len;
    x->function_len = (uint32_t)function_len;
    memcpy(x->data, c->file, file_len);
    memcpy(x->data + file_len, c->function, function_len);
    kept(rec, n);
}

static void record_thread(void *ctx, uint32_t tid, const char *name)
{
    struct gs_tape_recorder *rec = ctx;
    size_t name_len = strlen(name) + 1;
    size_t n = round8(sizeof(struct thread) + name_len);
    struct thread *x = entry(rec, THREAD, n);
    if (!x)
        return;
    x->tid = tid;
    x->name_len = (uint32_t)name_len;
    memcpy(x->name, name, name_len);
    kept(rec, n);
}

static int record_checkpoint(void *ctx, uint8_t type, const uint8_t *payload, size_t len)
{
    struct gs_tape_recorder *rec = ctx;
    size_t n = round8(sizeof(struct checkpoint) + len);
    struct checkpoint *x = entry(rec, CHECKPOINT, n);
    if (!x)
        return 0; /* counted lost */
    x->type = type;
    x->len = len;
    if (len)
        memcpy(x->payload, payload, len);
    kept(rec, n);
    return 0; /* judged when played */
}

const struct gs_reader_ops gs_tape_ops = {
    .module = record_module,
    .stack = record_stack,
    .pycode = record_pycode,
    .event = record_event,
    .compact_event = record_compact,
    .checkpoint = record_checkpoint,
    .thread = record_thread,
};

void gs_tape_play(const struct gs_tape *t, const struct gs_reader_ops *ops, void *ctx,
                  struct gs_reader_stats *st)
{
    const uint8_t *p = t->p, *end = t->p + t->len;
    /* Every compact entry is played in this one event, zeroed once: each
     * sets the same fields, and the callbacks take it as const. */
    struct gs_revent compact = {0};
    while (p < end) {
        if (*p == COMPACT) {
            gs_compact_event_revent((const struct gs_compact_event *)p, &compact);
            if (ops->event)
                ops->event(ctx, &compact);
            p += sizeof(struct gs_compact_event);
            continue;
        }
        const struct head *h = (const struct head *)p;
        switch (h->tag) {
        case EVENT: {
            const struct event *x = (const struct event *)p;
            struct gs_revent e = x->e;
            e.label = x->h.pad[0] ? (const char *)x->label : NULL;
            if (ops->event)
                ops->event(ctx, &e);
            break;
        }
        case STACK: {
            const struct stack *x = (const struct stack *)p;
            if (ops->stack)
                ops->stack(ctx, x->id, x->pcs, x->n);
            break;
        }
        case MODULE: {
            const struct module *x = (const struct module *)p;
            struct gs_rmodule m = {.id = x->id,
                                   .bias = x->bias,
                                   .lo = x->lo,
                                   .span = x->span,
                                   .path = x->data,
                                   .build_id = (const uint8_t *)x->data + x->path_len,
                                   .build_id_len = x->build_id_len};
            if (ops->module)
                ops->module(ctx, &m);
            break;
        }
        case PYCODE: {
            const struct pycode *x = (const struct pycode *)p;
            struct gs_rpycode c = {.id = x->id,
                                   .file = x->data,
                                   .function = x->data + x->file_len,
                                   .first_line = x->first_line};
            if (ops->pycode)
                ops->pycode(ctx, &c);
            break;
        }
        case THREAD: {
            const struct thread *x = (const struct thread *)p;
            if (ops->thread)
                ops->thread(ctx, x->tid, x->name);
            break;
        }
        case CHECKPOINT: {
            const struct checkpoint *x = (const struct checkpoint *)p;
            if (ops->checkpoint && ops->checkpoint(ctx, x->type, x->payload, x->len) != 0)
                st->damaged_records++;
            break;
        }
        }
        p += h->len;
    }
}

void gs_tape_free(struct gs_tape *t)
{
    free(t->p);
    memset(t, 0, sizeof *t);
}
