/*
 * test_graphs.c - analyzer/model/graphs.c: CUDA graph memory as the driver holds
 * it, on a schedule of GRAPH_NODE and GRAPH events with known figures:
 * nothing at capture, the nodes run at each launch (an allocation left live
 * by the graph, AUTO_FREE_ON_LAUNCH freeing it at the next), the pool's
 * reserve beyond its live allocations held at the call site of the launch
 * that grew it, a free outside the graph returning bytes to the pool, trim,
 * a launch that failed for memory tied to the node that did not fit; the
 * records decode as encode.c writes them (analyzer/trace/encode.c, decode.c); and a
 * checkpoint (GS_REC_CKPT_GRAPH) taken after every event, loaded into a
 * fresh replay and fed the rest, agrees with the whole history.
 */
#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>

#include "analyzer/trace/encode.h"
#include "gpushim_trace.h"
#include "analyzer/trace/trace.h"
#include "analyzer/model/model.h"
#include "analyzer/model/replay.h"
#include "ckpt_bytes.h"
#include "gpushim_cuda.h"
#include "gpushim_ring.h"

#define MB (1ull << 20)
#define ASSERT_U64(got, want, ...) cr_assert_eq((uint64_t)(got), (uint64_t)(want), __VA_ARGS__)

#define MAX_EV 64
struct seq {
    struct gs_revent ev[MAX_EV];
    size_t n;
    uint64_t t;
};

static struct gs_revent *add(struct seq *s, enum gs_record_type type)
{
    cr_assert_lt(s->n, MAX_EV);
    struct gs_revent *e = &s->ev[s->n++];
    memset(e, 0, sizeof *e);
    e->type = type;
    e->time_ns = s->t += 1000;
    e->tid = 1;
    return e;
}

static void node(struct seq *s, uint64_t graph, uint64_t stream, uint64_t addr, uint64_t size,
                 uint32_t stack, int is_free)
{
    struct gs_revent *e = add(s, GS_REC_GRAPH_NODE);
    e->api = is_free ? GS_API_cudaFreeAsync : GS_API_cudaMallocAsync;
    e->graph = graph;
    e->stream = stream;
    e->addr = addr;
    e->size = size;
    e->stack_id = stack;
    e->op = (uint32_t)is_free;
}

/* A graph call; reserved (with used) UINT64_MAX: not sampled. */
static void op(struct seq *s, enum gs_graph_op o, uint64_t graph, uint64_t exec, uint64_t stream,
               uint64_t flags, uint32_t result, uint32_t stack, uint64_t reserved, uint64_t used)
{
    struct gs_revent *e = add(s, GS_REC_GRAPH);
    e->api = o == GS_GRAPH_LAUNCH ? GS_API_cuGraphLaunch : GS_API_cuGraphInstantiateWithFlags;
    e->op = o;
    e->graph = graph;
    e->exec = exec;
    e->stream = stream;
    e->flags = flags;
    e->result = result;
    e->stack_id = stack;
    e->sampled = reserved != UINT64_MAX;
    e->reserved = e->sampled ? reserved : 0;
    e->used = e->sampled ? used : 0;
}

static void dev(struct seq *s, uint64_t addr, uint64_t size, uint32_t stack)
{
    struct gs_revent *e = add(s, GS_REC_ALLOC);
    e->api = GS_API_cudaMalloc;
    e->addr = addr;
    e->size = size;
    e->stack_id = stack;
}

static void dev_free(struct seq *s, uint64_t addr)
{
    struct gs_revent *e = add(s, GS_REC_FREE);
    e->api = GS_API_cudaFree;
    e->addr = addr;
}

enum { S_WEIGHTS = 1, S_T1, S_T2, S_OUT, S_LAUNCH, S_BIG, S_LAUNCH2 };
#define G 0x9000 /* the captured graph */
#define X 0x9100 /* its executable */
#define G2 0x9200
#define X2 0x9300
#define STREAM 0x77

/* Capture t1 4, t2 6, free t1, out 2, free t2; launch twice (auto-free);
 * out freed outside; trim; a second graph whose 40 MB does not fit. */
static void schedule(struct seq *s)
{
    memset(s, 0, sizeof *s);
    dev(s, 0x1000, 8 * MB, S_WEIGHTS);
    op(s, GS_GRAPH_CAPTURE_BEGIN, 0, 0, STREAM, 0, 0, 0, UINT64_MAX, 0);
    node(s, 0, STREAM, 0xa000, 4 * MB, S_T1, 0);
    node(s, 0, STREAM, 0xb000, 6 * MB, S_T2, 0);
    node(s, 0, STREAM, 0xa000, 0, 0, 1);
    node(s, 0, STREAM, 0xc000, 2 * MB, S_OUT, 0);
    node(s, 0, STREAM, 0xb000, 0, 0, 1);
    op(s, GS_GRAPH_CAPTURE_END, G, 0, STREAM, 0, 0, 0, UINT64_MAX, 0);
    op(s, GS_GRAPH_INSTANTIATE, G, X, 0, GS_CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH, 0, 0,
       UINT64_MAX, 0);
    op(s, GS_GRAPH_DESTROY, G, 0, 0, 0, 0, 0, 0, 0);
    op(s, GS_GRAPH_LAUNCH, 0, X, STREAM, 0, 0, S_LAUNCH, 10 * MB, 2 * MB);
    op(s, GS_GRAPH_LAUNCH, 0, X, STREAM, 0, 0, S_LAUNCH, 10 * MB, 2 * MB);
    dev_free(s, 0xc000); /* out, freed outside the graph: back to the pool */
    op(s, GS_GRAPH_EXEC_DESTROY, 0, X, 0, 0, 0, 0, 10 * MB, 0);
    op(s, GS_GRAPH_TRIM, 0, 0, 0, 0, 0, 0, 0, 0);
    node(s, G2, 0, 0xd000, 40 * MB, S_BIG, 0);
    node(s, G2, 0, 0xd000, 0, 0, 1);
    op(s, GS_GRAPH_INSTANTIATE, G2, X2, 0, 0, 0, 0, UINT64_MAX, 0);
    op(s, GS_GRAPH_LAUNCH, 0, X2, STREAM, 0, GS_CUDA_ERROR_OUT_OF_MEMORY, S_LAUNCH2, 0, 0);
    struct gs_revent *f = add(s, GS_REC_ALLOC_FAILED);
    f->api = GS_API_cuGraphLaunch;
    f->result = GS_CUDA_ERROR_OUT_OF_MEMORY;
    f->free_bytes = 30 * MB;
    f->total_bytes = 64 * MB;
    f->stack_id = S_LAUNCH2;
}

static void replay(struct gs_replay *r, const struct seq *s, size_t from, size_t to)
{
    for (size_t i = from; i < to; i++)
        gs_replay_event(r, &s->ev[i]);
}

static uint64_t site_peak(const struct gs_replay *r, uint32_t stack)
{
    uint64_t count;
    const struct gs_site *st = gs_replay_site((struct gs_replay *)r, stack, GS_KIND_DEVICE, 0);
    return st ? gs_site_peak_bytes(r, st, &count) : 0;
}

Test(graphs, the_schedule_is_accounted_as_the_driver_holds_it)
{
    static struct seq s;
    struct gs_replay r;
    schedule(&s);
    gs_replay_init(&r);
    replay(&r, &s, 0, 8); /* through the capture's end */
    ASSERT_U64(r.live_bytes, 8 * MB, "nothing at capture");
    ASSERT_U64(r.graphs.nodes, 5, "the nodes kept");
    replay(&r, &s, 8, 11); /* the first launch */
    ASSERT_U64(r.live_bytes, 18 * MB, "the weights and the pool's 10 MB");
    ASSERT_U64(r.peak_bytes, 18 * MB, "t1 and t2 at once, then t2 and out on t1's bytes");
    ASSERT_U64(r.graphs.pools[0].reserved, 10 * MB, "reserved");
    ASSERT_U64(r.graphs.pools[0].live, 2 * MB, "out lives on");
    cr_assert_not_null(gs_replay_find_live(&r, GS_SPACE_ADDRESS, 0xc000), "out is live");
    ASSERT_U64(site_peak(&r, S_T2), 6 * MB, "t2 at the peak");
    ASSERT_U64(site_peak(&r, S_T1), 4 * MB, "t1 at the peak");
    const struct gs_live_alloc *held = gs_replay_find_live(&r, GS_SPACE_GRAPH_POOL, 0);
    cr_assert_not_null(held, "the reserve beyond use");
    ASSERT_U64(held->size, 8 * MB, "10 reserved, 2 used");
    ASSERT_U64(r.sites[held->site].stack_id, S_LAUNCH, "held at the launch");
    replay(&r, &s, 11, 12); /* the second launch frees out first */
    ASSERT_U64(r.live_bytes, 18 * MB, "the same");
    ASSERT_U64(r.peak_bytes, 18 * MB, "no higher");
    replay(&r, &s, 12, 13);
    ASSERT_U64(r.live_bytes, 18 * MB, "a free returns bytes to the pool, not the device");
    ASSERT_U64(r.graphs.pools[0].live, 0, "none used");
    replay(&r, &s, 13, 15);
    ASSERT_U64(r.live_bytes, 8 * MB, "trimmed");
    cr_assert_null(gs_replay_find_live(&r, GS_SPACE_GRAPH_POOL, 0), "nothing held");
    replay(&r, &s, 15, s.n);
    ASSERT_U64(r.nfailures, 1, "the launch's failure");
    ASSERT_U64(r.failures[0].requested, 40 * MB, "the node that did not fit");
    ASSERT_U64(r.failures[0].stack_id, S_BIG, "at its call site");
    ASSERT_U64(r.graphs.pools[0].launches, 2, "launches");
    ASSERT_U64(r.graphs.pools[0].launches_failed, 1, "failed");
    ASSERT_U64(r.graphs.execs_made, 2, "instantiated");
    ASSERT_U64(gs_graphs_count(&r.graphs, GS_GRAPH_OBJ_EXEC), 1, "X2 alive");
    ASSERT_U64(gs_graphs_count(&r.graphs, GS_GRAPH_OBJ_GRAPH), 1, "G2 alive");
    gs_replay_finish(&r);
    gs_replay_free(&r);
}

/* The ring bodies the shim makes, encoded and decoded, give the events. */
static struct gs_revent decoded;
static void keep(void *ctx, const struct gs_revent *e)
{
    (void)ctx;
    decoded = *e;
}

Test(graphs, records_decode_as_encoded)
{
    struct gs_ev n = {.type = GS_REC_GRAPH_NODE, .api = GS_API_cudaMallocAsync, .kind = 1,
                      .device = 2, .tid = 7, .stack_id = 9, .time_ns = 500, .addr = 0xabc000,
                      .size = 0, .stream = 0x77, .parent = 0x9000};
    struct gs_ev g = {.type = GS_REC_GRAPH, .api = GS_API_cuGraphLaunch, .kind = GS_GRAPH_LAUNCH,
                      .space = 1, .device = 0, .tid = 7, .stack_id = 4, .result = 2,
                      .time_ns = 900, .addr = 0x9000, .parent = 0x9100, .stream = 0x77,
                      .size = 9, .free_bytes = 10 * MB, .total_bytes = 2 * MB};
    struct gs_reader_ops ops = {.event = keep};
    struct gs_reader_stats st;
    uint8_t rec[GS_MAX_RECORD];
    struct gs_encoder enc;
    gs_encoder_reset(&enc);
    memset(&st, 0, sizeof st);
    size_t len = gs_encode(&enc, &n, sizeof n, rec);
    cr_assert_gt(len, 0);
    gs_encoder_reset(&enc);
    gs_decode_chunk(rec, len, &ops, NULL, &st);
    cr_assert(decoded.type == GS_REC_GRAPH_NODE && decoded.addr == 0xabc000 &&
              decoded.op == 1 && decoded.graph == 0x9000 && decoded.stream == 0x77 &&
              decoded.stack_id == 9 && decoded.device == 2 && decoded.time_ns == 500);
    len = gs_encode(&enc, &g, sizeof g, rec);
    gs_decode_chunk(rec, len, &ops, NULL, &st);
    cr_assert(decoded.type == GS_REC_GRAPH && decoded.op == GS_GRAPH_LAUNCH &&
              decoded.graph == 0x9000 && decoded.exec == 0x9100 && decoded.stream == 0x77 &&
              decoded.flags == 9 && decoded.result == 2 && decoded.stack_id == 4 &&
              decoded.sampled && decoded.reserved == 10 * MB && decoded.used == 2 * MB);
    ASSERT_U64(st.damaged_records, 0, "nothing damaged");
}

static void agree(const struct gs_replay *x, const struct gs_replay *y, size_t cut)
{
    ASSERT_U64(x->peak_bytes, y->peak_bytes, "cut %zu: peak", cut);
    ASSERT_U64(x->peak_time_ns, y->peak_time_ns, "cut %zu: peak time", cut);
    ASSERT_U64(x->live_bytes, y->live_bytes, "cut %zu: live", cut);
    ASSERT_U64(x->allocations, y->allocations, "cut %zu: allocations", cut);
    ASSERT_U64(x->frees, y->frees, "cut %zu: frees", cut);
    const uint32_t stacks[] = {S_WEIGHTS, S_T1, S_T2, S_OUT, S_LAUNCH, S_BIG};
    for (size_t i = 0; i < sizeof stacks / sizeof stacks[0]; i++)
        ASSERT_U64(site_peak(x, stacks[i]), site_peak(y, stacks[i]), "cut %zu: site %u", cut,
                   stacks[i]);
    const struct gs_graph_pool *a = &x->graphs.pools[0], *b = &y->graphs.pools[0];
    const uint64_t fa[] = {a->reserved, a->live, a->sampled_reserved, a->sampled_used,
                           a->samples, a->peak_reserved, a->launches, a->launches_failed,
                           a->stack_id};
    const uint64_t fb[] = {b->reserved, b->live, b->sampled_reserved, b->sampled_used,
                           b->samples, b->peak_reserved, b->launches, b->launches_failed,
                           b->stack_id};
    for (size_t i = 0; i < sizeof fa / sizeof fa[0]; i++)
        ASSERT_U64(fa[i], fb[i], "cut %zu: pool figure %zu", cut, i);
    ASSERT_U64(x->graphs.nobjs, y->graphs.nobjs, "cut %zu: graphs", cut);
    ASSERT_U64(x->graphs.nodes, y->graphs.nodes, "cut %zu: nodes", cut);
    ASSERT_U64(x->graphs.execs_made, y->graphs.execs_made, "cut %zu: instantiated", cut);
    ASSERT_U64(x->nfailures, y->nfailures, "cut %zu: failures", cut);
    for (size_t i = 0; i < x->nfailures; i++) {
        ASSERT_U64(x->failures[i].requested, y->failures[i].requested, "cut %zu", cut);
        ASSERT_U64(x->failures[i].stack_id, y->failures[i].stack_id, "cut %zu", cut);
    }
}

Test(graphs, cut_at_every_event_agrees_with_the_whole_history)
{
    static struct seq s;
    schedule(&s);
    struct gs_replay whole;
    gs_replay_init(&whole);
    replay(&whole, &s, 0, s.n);
    gs_replay_finish(&whole);
    for (size_t cut = 0; cut <= s.n; cut++) {
        struct gs_replay a, b;
        gs_replay_init(&a);
        replay(&a, &s, 0, cut);
        struct buf ck = checkpoint(&a);
        gs_replay_init(&b);
        ASSERT_U64(load(&b, ck.p, ck.n), 0, "cut %zu: the checkpoint loads whole", cut);
        replay(&b, &s, cut, s.n);
        gs_replay_finish(&b);
        agree(&whole, &b, cut);
        free(ck.p);
        gs_replay_free(&a);
        gs_replay_free(&b);
    }
    gs_replay_free(&whole);
}

/* The start of the last record of b (a checkpoint's END). */
static size_t last_record(const struct buf *b)
{
    size_t at = 0, last = 0;
    while (at < b->n) {
        const uint8_t *q = b->p + at + 1;
        uint64_t len = 0;
        cr_assert_eq(gs_get_varint(&q, b->p + b->n, &len), 0);
        last = at;
        at = (size_t)(q - b->p) + (size_t)len;
    }
    return last;
}

static struct seq rest;

/* What follows a loaded checkpoint: the whole schedule again, on whatever
 * state it left (it must not crash, under SAN=1 too). */
static void use(struct gs_replay *r)
{
    replay(r, &rest, 0, rest.n);
    gs_replay_finish(r);
}

Test(graphs, hostile_graph_checkpoint_records_are_refused)
{
    schedule(&rest);
    struct gs_replay a;
    gs_replay_init(&a);
    replay(&a, &rest, 0, 11); /* after a launch: a pool, an executable, a live allocation */
    struct buf good = checkpoint(&a);
    gs_replay_free(&a);
    size_t end_at = last_record(&good);
    uint8_t bad[4][64];
    size_t len[4] = {
        REC(bad[0], GS_REC_CKPT_GRAPH, 1, 9, 1, 0, 0, 0, 0, 0),   /* which out of range */
        REC(bad[1], GS_REC_CKPT_GRAPH, 1, 1, X, 0, 0, 0, 0, 100), /* more nodes than bytes */
        REC(bad[2], GS_REC_CKPT_GRAPH, 2, 0x5000, 0),           /* no such live allocation */
        REC(bad[3], GS_REC_CKPT_GRAPH, 0, 0, 1),                /* a pool cut short */
    };
    for (size_t i = 0; i < 4; i++) {
        uint8_t *p = malloc(good.n + len[i]);
        cr_assert_not_null(p);
        memcpy(p, good.p, end_at);
        memcpy(p + end_at, bad[i], len[i]);
        memcpy(p + end_at + len[i], good.p + end_at, good.n - end_at);
        struct gs_replay r;
        gs_replay_init(&r);
        ASSERT_U64(damaged(&r, p, good.n + len[i]), 1, "record %zu refused, the rest loaded", i);
        use(&r);
        gs_replay_free(&r);
        free(p);
    }
    free(good.p);
}

/* A CKPT_GRAPH record of random fields, sometimes cut inside one. */
static size_t random_graph_record(uint8_t *out, uint64_t *seed)
{
    uint8_t payload[256];
    size_t len = gs_put_varint(payload, rnd(seed) % 4), nf = rnd(seed) % 24;
    for (size_t f = 0; f < nf; f++)
        len += gs_put_varint(payload + len, field(seed));
    if (rnd(seed) % 4 == 0)
        len = rnd(seed) % (len + 1);
    return record(out, GS_REC_CKPT_GRAPH, payload, len);
}

Test(graphs, random_graph_records_after_a_real_checkpoint)
{
    schedule(&rest);
    struct gs_replay a;
    gs_replay_init(&a);
    replay(&a, &rest, 0, 11);
    struct buf good = checkpoint(&a);
    gs_replay_free(&a);
    random_rounds(&good, 7, 200, random_graph_record, 1, use);
    free(good.p);
}
