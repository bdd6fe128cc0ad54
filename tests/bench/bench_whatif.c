/*
 * bench_whatif.c - what the model of PyTorch's caching allocator
 * (analyzer/whatif/torch_caching.c) costs per request, for `make bench`
 * (tests/bench/bench.py prints its rows).
 *
 * Usage: bench_whatif [N [SETTING]]   (N requests per setting, default
 * 20000000; SETTING: that one alone, named as printed)
 *
 * A training-like schedule: PERSIST tensors allocated once and kept (the
 * weights), then iterations of a forward pass that allocates ACTS
 * activations, each with a short-lived temporary half the time, and a
 * backward pass that frees them in mostly LIFO order (a pop takes one of
 * the top few at random), a gradient temporary half the time. Sizes are
 * log-uniform from 512 B to 1 GiB, fixed per tensor except for one in
 * five, drawn again each iteration (dynamic shapes); one tensor in ten is
 * on a second stream. ITERS different iterations are generated once and
 * replayed in turn until N requests are made, so the generator costs
 * nothing in the timed loop.
 *
 * The six settings of `gpushim whatif` (issue 17): the defaults,
 * expandable_segments, max_split_size_mb:512, roundup_power2_divisions:4,
 * garbage_collection_threshold:0.8 with a memory fraction of 0.9 (on a
 * 280 GiB card, 1.3 times the defaults' peak reserved, so that collection
 * happens), and expandable_segments with max_split_size_mb:512. Each runs
 * on its own, one after the other, timed in CPU time (the process's, which
 * other jobs on the machine disturb less than the wall clock); it prints a
 * line per setting:
 *
 *   SETTING NS ns/request (REQUESTS requests, peak reserved GIB GiB,
 *   SEGMENT_ALLOCS segment allocs, GC gc frees, OOMS OOMs, BLOCKS blocks at
 *   the end)
 *
 * and exits non-zero if a request fails. Deterministic (a fixed-seed
 * xorshift): the figures after the time are the same on every run.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "analyzer/whatif/torch_caching.h"

#ifndef PERSIST /* (-D: another live set) */
#define PERSIST 1000 /* tensors kept all along */
#define ACTS 2000    /* activations per iteration */
#endif
#define ITERS 16     /* different iterations, replayed in turn */
#define TOP 8        /* a backward pop takes one of the top TOP */
#define MIB (1024.0 * 1024.0)

struct ev { /* a request: an allocation (size > 0) or a free (size 0) */
    uint64_t id, size;
    uint32_t stream;
};

static uint64_t rng = 0x2545f4914f6cdd1dull;
static uint64_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}
static double unit(void) { return (double)(next() >> 11) / 9007199254740992.0; }
/* log-uniform in [512 B, 1 GiB] */
static uint64_t draw_size(void)
{
    return (uint64_t)exp(log(512.0) + unit() * (log(1073741824.0) - log(512.0)));
}
static uint32_t draw_stream(void) { return next() % 10 == 0 ? 1 : 0; }

struct sched {
    struct ev *v;
    size_t n, cap;
};

static void push(struct sched *s, uint64_t id, uint64_t size, uint32_t stream)
{
    if (s->n == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 4096;
        s->v = realloc(s->v, s->cap * sizeof *s->v);
        if (!s->v) {
            perror("bench_whatif");
            exit(1);
        }
    }
    s->v[s->n++] = (struct ev){id, size, stream};
}

/* Ids: persistent tensors 1..PERSIST, activations PERSIST+1.., temporaries
 * one id (freed before the next is made). */
#define ACT_ID(k) (PERSIST + 1 + (uint64_t)(k))
#define TMP_ID (PERSIST + ACTS + 1)

static void gen_iteration(struct sched *s, const uint64_t *act_size, const uint32_t *act_stream)
{
    static uint32_t stack[ACTS];
    int top = 0;
    for (int k = 0; k < ACTS; k++) {
        uint64_t size = act_size[k];
        if (next() % 5 == 0)
            size = draw_size();
        push(s, ACT_ID(k), size, act_stream[k]);
        stack[top++] = (uint32_t)k;
        if (next() & 1) {
            push(s, TMP_ID, draw_size(), act_stream[k]);
            push(s, TMP_ID, 0, 0);
        }
    }
    while (top) {
        int back = (int)(next() % TOP);
        if (back >= top)
            back = top - 1;
        uint32_t k = stack[top - 1 - back];
        memmove(&stack[top - 1 - back], &stack[top - back], (size_t)back * sizeof stack[0]);
        top--;
        if (next() & 1) {
            push(s, TMP_ID, act_size[k], act_stream[k]);
            push(s, ACT_ID(k), 0, 0);
            push(s, TMP_ID, 0, 0);
        } else {
            push(s, ACT_ID(k), 0, 0);
        }
    }
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts); /* CPU time: the figure on a loaded machine too */
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int request(struct gs_tc *t, const struct ev *e)
{
    int rc = e->size ? gs_tc_alloc(t, e->id, e->size, e->stream) : gs_tc_release(t, e->id);
    return rc == GS_TC_OK || rc == GS_TC_OOM ? 0 : -1; /* an OOM is a figure, not a failure */
}

static const char *only; /* the one setting to run, or NULL: all */

/* Runs n requests of the schedule under c. */
static void run(const char *name, const struct gs_tc_config *c, const struct sched *init,
                const struct sched *iter, uint64_t n)
{
    if (only && strcmp(only, name) != 0)
        return;
    struct gs_tc *t = gs_tc_new(c);
    if (!t) {
        fprintf(stderr, "bench_whatif: %s: gs_tc_new failed\n", name);
        exit(1);
    }
    double t0 = now();
    uint64_t done = 0;
    for (size_t i = 0; i < init->n && done < n; i++, done++)
        if (request(t, &init->v[i]) < 0)
            goto bad;
    while (done < n)
        for (size_t i = 0; i < iter->n && done < n; i++, done++)
            if (request(t, &iter->v[i]) < 0)
                goto bad;
    double dt = now() - t0;
    const struct gs_tc_stats *s = gs_tc_stats(t);
    printf("%-28s %7.1f ns/request (%llu requests, peak reserved %.1f GiB, %llu segment allocs, "
           "%llu gc frees, %llu OOMs, %llu blocks at the end)\n",
           name, dt * 1e9 / (double)done, (unsigned long long)done,
           (double)s->reserved_peak / MIB / 1024.0,
           (unsigned long long)s->segment_allocs, (unsigned long long)s->gc_frees,
           (unsigned long long)s->ooms, (unsigned long long)s->live_blocks);
    fflush(stdout);
    gs_tc_free(t);
    return;
bad:
    fprintf(stderr, "bench_whatif: %s: request %llu failed\n", name, (unsigned long long)done);
    exit(1);
}

int main(int argc, char **argv)
{
    uint64_t n = argc > 1 ? strtoull(argv[1], NULL, 10) : 20000000;
    only = argc > 2 ? argv[2] : NULL;
    static uint64_t act_size[ACTS];
    static uint32_t act_stream[ACTS];
    struct sched init = {0}, iter = {0};
    for (int k = 0; k < PERSIST; k++)
        push(&init, 1 + (uint64_t)k, draw_size(), draw_stream());
    for (int k = 0; k < ACTS; k++) {
        act_size[k] = draw_size();
        act_stream[k] = draw_stream();
    }
    for (int i = 0; i < ITERS; i++)
        gen_iteration(&iter, act_size, act_stream);

    struct gs_tc_config c;
    gs_tc_config_default(&c);
    run("default", &c, &init, &iter, n);

    gs_tc_config_default(&c);
    c.expandable_segments = 1;
    run("expandable_segments", &c, &init, &iter, n);

    gs_tc_config_default(&c);
    c.max_split_size = 512ull << 20;
    run("max_split_size_mb:512", &c, &init, &iter, n);

    gs_tc_config_default(&c);
    gs_tc_config_pow2_all(&c, 4);
    run("roundup_power2_divisions:4", &c, &init, &iter, n);

    gs_tc_config_default(&c);
    c.capacity = 280ull << 30; /* 1.3 times the defaults' peak reserved */
    c.gc_threshold = 0.8;
    c.memory_fraction = 0.9;
    run("gc_threshold:0.8,fraction:0.9", &c, &init, &iter, n);

    gs_tc_config_default(&c);
    c.expandable_segments = 1;
    c.max_split_size = 512ull << 20;
    run("expandable+max_split:512", &c, &init, &iter, n);

    free(init.v);
    free(iter.v);
    return 0;
}
