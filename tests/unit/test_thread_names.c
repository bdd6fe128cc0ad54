/*
 * test_thread_names.c - threads' names (GS_REC_THREAD) in the replay and
 * through a checkpoint: each allocation counts at its site under the name
 * its thread had then (a rename and a reused tid midway, more names than a
 * site keeps apart, a failure's thread, a block site's), and a checkpoint
 * taken between any two steps, loaded into a fresh replay and fed the
 * steps that follow, names every site's threads, every failure's thread and
 * every thread as the whole history does: events after the checkpoint come
 * from threads named only before it. Also the layout a checkpoint gives
 * the names (THREAD records before BEGIN, a site's threads after its
 * fields, a failure's after its own), byte for byte, and hostile ones.
 */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpushim_trace.h"
#include "analyzer/util/cursor.h"
#include "analyzer/trace/trace.h"
#include "analyzer/model/model.h"
#include "analyzer/model/replay.h"
#include "analyzer/read/checkpoint_load.h"
#include "ckpt_bytes.h"

#define ASSERT_U64(got, want, ...) cr_assert_eq((uint64_t)(got), (uint64_t)(want), __VA_ARGS__)

/* ---- a script: names and events in order ---- */

enum op_kind { NAME, ALLOC, FAIL, BLOCK };
struct op {
    enum op_kind kind;
    uint32_t tid;
    const char *name; /* NAME */
    uint32_t stack;   /* ALLOC, FAIL, BLOCK */
};

static const struct op script[] = {
    {NAME, 10, "pt_autograd_0", 0},
    {NAME, 11, "pt_autograd_1", 0},
    {NAME, 1, "train", 0},
    {ALLOC, 10, NULL, 1},
    {ALLOC, 11, NULL, 1},
    {ALLOC, 1, NULL, 2},
    {ALLOC, 99, NULL, 1}, /* a thread the trace never named: not counted */
    {NAME, 11, "renamed_1", 0},
    {ALLOC, 11, NULL, 1},
    {FAIL, 10, NULL, 1},
    {BLOCK, 11, NULL, 3},
    {NAME, 12, "w2", 0},
    {NAME, 13, "w3", 0},
    {ALLOC, 12, NULL, 1}, /* the fourth name at stack 1 */
    {ALLOC, 13, NULL, 1}, /* the fifth: "other" */
    {NAME, 12, "w3", 0},  /* two threads of one name */
    {ALLOC, 12, NULL, 1},
    {NAME, 11, "reused", 0}, /* thread 11 is gone; a new one has its tid */
    {ALLOC, 11, NULL, 2},
    {ALLOC, 10, NULL, 1},
    {FAIL, 11, NULL, 2},
    {BLOCK, 10, NULL, 3},
};
#define NOPS (sizeof script / sizeof script[0])

static void step(struct gs_replay *r, const struct op *o, uint64_t *addr)
{
    if (o->kind == NAME) {
        gs_replay_ops.thread(r, o->tid, o->name);
        return;
    }
    struct gs_revent e = {.tid = o->tid, .api = GS_API_cuMemAlloc_v2, .stack_id = o->stack,
                          .size = 4096, .addr = (*addr += 0x10000), .time_ns = *addr,
                          .device = 0};
    e.type = o->kind == ALLOC ? GS_REC_ALLOC : o->kind == FAIL ? GS_REC_ALLOC_FAILED
                                                                : GS_REC_BLOCK_ALLOC;
    gs_replay_ops.event(r, &e);
}

static void define(struct gs_replay *r)
{
    for (uint32_t id = 1; id <= 3; id++) {
        uint64_t pc = 0x400000 + id;
        gs_replay_ops.stack(r, id, &pc, 1);
    }
}

static void run(struct gs_replay *r, size_t from, size_t to, uint64_t *addr)
{
    for (size_t i = from; i < to; i++)
        step(r, &script[i], addr);
}

/* A site's threads as text: "name:allocs,...|other". */
static void site_text(const struct gs_replay *r, const struct gs_site *s, char *out, size_t sz)
{
    size_t n = 0;
    out[0] = 0;
    for (int i = 0; i < GS_SITE_THREADS && s->thread[i]; i++)
        n += (size_t)snprintf(out + n, sz - n, "%s:%llu,", gs_replay_thread_name(r, s->thread[i]),
                              (unsigned long long)s->thread_allocs[i]);
    snprintf(out + n, sz - n, "|%llu", (unsigned long long)s->other_thread_allocs);
}

static const struct gs_site *device_site(struct gs_replay *r, uint32_t stack)
{
    const struct gs_site *s = gs_replay_site(r, stack, GS_KIND_DEVICE, 0);
    cr_assert_not_null(s, "the site of stack %u", stack);
    return s;
}

static void check_whole(struct gs_replay *r, const char *when)
{
    char t[256];
    site_text(r, device_site(r, 1), t, sizeof t);
    cr_assert_str_eq(t, "pt_autograd_0:2,pt_autograd_1:1,renamed_1:1,w2:1,|2", "%s: stack 1",
                     when);
    site_text(r, device_site(r, 2), t, sizeof t);
    cr_assert_str_eq(t, "train:1,reused:1,|0", "%s: stack 2", when);
    const struct gs_site *b = gs_blocks_site(&r->blocks, 3, 0);
    cr_assert_not_null(b);
    site_text(r, b, t, sizeof t);
    cr_assert_str_eq(t, "renamed_1:1,pt_autograd_0:1,|0", "%s: the block site", when);
    cr_assert_eq(r->nfailures, 2);
    cr_assert_str_eq(gs_replay_thread_name(r, r->failures[0].thread), "pt_autograd_0", "%s", when);
    cr_assert_str_eq(gs_replay_thread_name(r, r->failures[1].thread), "reused", "%s", when);
    cr_assert_str_eq(gs_replay_thread_name(r, gs_replay_thread_of(r, 11)), "reused", "%s", when);
    cr_assert_str_eq(gs_replay_thread_name(r, gs_replay_thread_of(r, 12)), "w3", "%s", when);
    cr_assert_eq(gs_replay_thread_of(r, 99), 0, "%s: never named", when);
}

Test(thread_names, each_allocation_counts_under_its_threads_name_then)
{
    struct gs_replay r;
    gs_replay_init(&r);
    define(&r);
    uint64_t addr = 0;
    run(&r, 0, NOPS, &addr);
    check_whole(&r, "the whole history");
    ASSERT_U64(device_site(&r, 1)->allocs, 8, "every allocation counts at its site");
    ASSERT_U64(r.trace.nthread_names, 7, "each distinct name once");
    gs_replay_free(&r);
}

Test(thread_names, a_checkpoint_between_any_two_steps_keeps_them)
{
    for (size_t cut = 0; cut <= NOPS; cut++) {
        struct gs_replay a, b;
        gs_replay_init(&a);
        define(&a);
        uint64_t addr = 0;
        run(&a, 0, cut, &addr);
        struct buf ck = checkpoint(&a);
        gs_replay_init(&b);
        ASSERT_U64(load(&b, ck.p, ck.n), 0, "cut %zu: nothing damaged", cut);
        cr_assert(b.checkpoint.present && !b.checkpoint.open, "cut %zu: loaded whole", cut);
        run(&b, cut, NOPS, &addr);
        char when[32];
        snprintf(when, sizeof when, "cut at %zu", cut);
        check_whole(&b, when);
        /* and a checkpoint of that, taken at the end */
        struct buf again = checkpoint(&b);
        struct gs_replay c;
        gs_replay_init(&c);
        ASSERT_U64(load(&c, again.p, again.n), 0, "cut %zu: the second checkpoint", cut);
        check_whole(&c, "a checkpoint of a checkpoint");
        gs_replay_free(&a);
        gs_replay_free(&b);
        gs_replay_free(&c);
        free(ck.p);
        free(again.p);
    }
}

/* The records of a checkpoint of type, in order, into out (payloads). */
static size_t records_of(const struct buf *b, uint8_t type, const uint8_t **payload,
                         size_t *len, size_t max)
{
    size_t n = 0, at = 0;
    while (at < b->n) {
        uint8_t t = b->p[at];
        const uint8_t *q = b->p + at + 1;
        uint64_t plen = 0;
        cr_assert_eq(gs_get_varint(&q, b->p + b->n, &plen), 0);
        if (t == type && n < max) {
            payload[n] = q;
            len[n++] = (size_t)plen;
        }
        at = (size_t)(q - b->p) + (size_t)plen;
    }
    return n;
}

Test(thread_names, where_the_format_says)
{
    struct gs_replay r;
    gs_replay_init(&r);
    define(&r);
    gs_replay_ops.thread(&r, 300, "ab");
    uint64_t addr = 0;
    static const struct op one[] = {{ALLOC, 300, NULL, 1}, {ALLOC, 300, NULL, 1},
                                    {FAIL, 300, NULL, 2}, {ALLOC, 301, NULL, 2}};
    for (size_t i = 0; i < 4; i++)
        step(&r, &one[i], &addr);
    struct buf b = checkpoint(&r);
    /* the THREAD record, before BEGIN */
    const uint8_t *p[4];
    size_t len[4];
    cr_assert_eq(records_of(&b, GS_REC_THREAD, p, len, 4), 1);
    static const uint8_t thread[] = {0xac, 0x02, 2, 'a', 'b'}; /* tid 300, "ab" */
    cr_assert_eq(len[0], sizeof thread);
    cr_assert_eq(memcmp(p[0], thread, sizeof thread), 0);
    const uint8_t *begin[1];
    size_t blen[1];
    cr_assert_eq(records_of(&b, GS_REC_CKPT_BEGIN, begin, blen, 1), 1);
    cr_assert_lt(p[0], begin[0], "names come before BEGIN");
    /* a site: its ten fields, then 1 name, "ab", 2 allocations, 0 others; a
     * site no named thread allocated at has nothing after its fields */
    cr_assert_eq(records_of(&b, GS_REC_CKPT_SITE, p, len, 4), 2);
    static const uint8_t site_tail[] = {1, 2, 'a', 'b', 2, 0};
    cr_assert_geq(len[0], sizeof site_tail);
    cr_assert_eq(memcmp(p[0] + len[0] - sizeof site_tail, site_tail, sizeof site_tail), 0);
    struct gs_cursor c = {p[1], p[1] + len[1], 0};
    for (int i = 0; i < 10; i++)
        gs_cursor_u(&c);
    cr_assert(!c.bad && c.p == c.end, "stack 2's site: its ten fields alone");
    /* a failure: its nine fields, then its thread's name, then its outcome's
     * six (refused: its result, 0, is no shortage of memory) */
    cr_assert_eq(records_of(&b, GS_REC_CKPT_FAILURE, p, len, 4), 1);
    c = (struct gs_cursor){p[0], p[0] + len[0], 0};
    for (int i = 0; i < 9; i++)
        gs_cursor_u(&c);
    cr_assert_eq(memcmp(c.p, "\x02" "ab", 3), 0);
    c.p += 3;
    cr_assert_eq(gs_cursor_u(&c), GS_OUTCOME_REFUSED);
    for (int i = 0; i < 5; i++)
        gs_cursor_u(&c);
    cr_assert(!c.bad && c.p == c.end, "nothing after them");
    gs_replay_free(&r);
    free(b.p);
}

/* ---- hostile ---- */

static uint64_t load_site_with(const uint8_t *tail, size_t tail_len, struct gs_replay *r)
{
    uint8_t b[1024], payload[512];
    size_t n = 0, pn = 0;
    n += REC(b + n, GS_REC_CKPT_BEGIN, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17,
             18);
    static const uint64_t fields[] = {7, 0, 3, 301, 302, 303, 304, 305, 306, 307};
    for (size_t i = 0; i < 10; i++)
        pn += gs_put_varint(payload + pn, fields[i]);
    memcpy(payload + pn, tail, tail_len);
    n += record(b + n, GS_REC_CKPT_SITE, payload, pn + tail_len);
    n += REC(b + n, GS_REC_CKPT_END, 1, 0, 0, 0, 0, 0, 0);
    gs_replay_init(r);
    return damaged(r, b, n);
}

Test(thread_names, hostile_site_threads_are_refused)
{
    struct gs_replay r;
    static const uint8_t good[] = {2, 1, 'x', 5, 1, 'y', 6, 7};
    ASSERT_U64(load_site_with(good, sizeof good, &r), 0, "two names, and others");
    char t[128];
    site_text(&r, &r.sites[0], t, sizeof t);
    cr_assert_str_eq(t, "x:5,y:6,|7");
    gs_replay_free(&r);

    static const uint8_t too_many[] = {5, 1, 'a', 1, 1, 'b', 1, 1, 'c', 1, 1, 'd', 1, 1, 'e', 1, 0};
    static const uint8_t twice[] = {2, 1, 'x', 5, 1, 'x', 6, 0};
    static const uint8_t cut[] = {2, 1, 'x', 5, 1};
    static const uint8_t no_other[] = {1, 1, 'x', 5};
    uint8_t long_name[GS_MAX_THREAD_NAME + 8];
    long_name[0] = 1;
    long_name[1] = GS_MAX_THREAD_NAME + 1;
    memset(long_name + 2, 'n', GS_MAX_THREAD_NAME + 1);
    long_name[GS_MAX_THREAD_NAME + 3] = 1;
    long_name[GS_MAX_THREAD_NAME + 4] = 0;
    const struct {
        const uint8_t *p;
        size_t n;
        const char *what;
    } bad[] = {{too_many, sizeof too_many, "five names"},
               {twice, sizeof twice, "a name twice"},
               {cut, sizeof cut, "cut short"},
               {no_other, sizeof no_other, "no count of others"},
               {long_name, GS_MAX_THREAD_NAME + 5, "a name past GS_MAX_THREAD_NAME"}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        uint64_t n = load_site_with(bad[i].p, bad[i].n, &r);
        cr_assert_geq(n, 1, "%s: refused", bad[i].what);
        cr_assert_eq(r.nsites, 0, "%s: no site made", bad[i].what);
        gs_replay_free(&r);
    }
}

/* A random THREAD, CKPT_SITE with threads, CKPT_FAILURE with a thread, or
 * CKPT_BLOCK_SITE with threads: fields in range or just past it. */
static size_t random_named(uint8_t *out, uint64_t *seed)
{
    uint8_t payload[512];
    size_t n = 0;
    static const uint8_t types[] = {GS_REC_THREAD, GS_REC_CKPT_SITE, GS_REC_CKPT_FAILURE,
                                    GS_REC_CKPT_BLOCK_SITE};
    uint8_t type = types[rnd(seed) % 4];
    unsigned fields = type == GS_REC_THREAD ? 1 : type == GS_REC_CKPT_SITE ? 10
                                               : type == GS_REC_CKPT_FAILURE ? 9 : 8;
    for (unsigned i = 0; i < fields; i++)
        n += gs_put_varint(payload + n, i < 2 ? rnd(seed) % 4 : field(seed));
    unsigned names = type == GS_REC_THREAD || type == GS_REC_CKPT_FAILURE ? 1
                                                                          : (unsigned)(rnd(seed) % 6);
    if (type == GS_REC_CKPT_SITE || type == GS_REC_CKPT_BLOCK_SITE)
        n += gs_put_varint(payload + n, rnd(seed) % 2 ? names : field(seed));
    for (unsigned k = 0; k < names; k++) {
        size_t len = rnd(seed) % 4 ? rnd(seed) % 4 : GS_MAX_THREAD_NAME + rnd(seed) % 3;
        n += gs_put_varint(payload + n, len);
        for (size_t i = 0; i < len; i++)
            payload[n++] = (uint8_t)('a' + rnd(seed) % 3);
        if (type == GS_REC_CKPT_SITE || type == GS_REC_CKPT_BLOCK_SITE)
            n += gs_put_varint(payload + n, field(seed));
    }
    if (type == GS_REC_CKPT_SITE || type == GS_REC_CKPT_BLOCK_SITE)
        n += gs_put_varint(payload + n, field(seed));
    if (n > 500)
        n = 500; /* random_rounds' room for a record */
    return record(out, type, payload, rnd(seed) % 8 ? n : n / 2); /* some cut short */
}

/* Every name the replay holds is one it can give. */
static void use_names(struct gs_replay *r)
{
    char t[512];
    for (size_t i = 0; i < r->nsites; i++)
        site_text(r, &r->sites[i], t, sizeof t);
    for (size_t i = 0; i < r->blocks.nsites; i++)
        site_text(r, &r->blocks.sites[i], t, sizeof t);
    for (size_t i = 0; i < r->nfailures; i++)
        cr_assert(!r->failures[i].thread || gs_replay_thread_name(r, r->failures[i].thread));
    for (size_t i = 0; i < r->trace.nthreads; i++)
        cr_assert_not_null(gs_replay_thread_name(r, r->trace.threads[i].name));
    for (size_t i = 0; i < r->trace.nthread_names; i++)
        cr_assert_leq(strlen(r->trace.thread_names[i]), GS_MAX_THREAD_NAME);
}

Test(thread_names, random_named_records_after_a_good_checkpoint)
{
    struct gs_replay r;
    gs_replay_init(&r);
    define(&r);
    uint64_t addr = 0;
    run(&r, 0, NOPS, &addr);
    struct buf good = checkpoint(&r);
    random_rounds(&good, 0x7e57, 300, random_named, 1, use_names);
    gs_replay_free(&r);
    free(good.p);
}
