/*
 * test_stacks.c - shim/record/stacks.c, the table of distinct stacks:
 * gs_stack_intern dedups identical stacks and numbers distinct ones 1, 2, 3,
 * ...; stacks that differ only in length or in one frame are distinct; the
 * zero-length stack is a stack like any other; gs_stack_find sees only what
 * was inserted; the table keeps everything across growth (100000 stacks);
 * gs_stack_table_clear empties it and restarts the ids; a stack's stored
 * frames never move (record.c's per-thread caches keep pointers to them),
 * however many stacks come after and however long one is.
 */
#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>

#include "gpushim_trace.h"
#include "shim/record/record_int.h"

static uint32_t intern(struct gs_stack_table *t, const uint64_t *pcs, unsigned n, int *is_new)
{
    return gs_stack_intern(t, pcs, n, gs_stack_hash(pcs, n), is_new, NULL);
}

static uint32_t find(const struct gs_stack_table *t, const uint64_t *pcs, unsigned n)
{
    return gs_stack_find(t, pcs, n, gs_stack_hash(pcs, n), NULL);
}

Test(stacks, identical_stack_gets_same_id_and_is_not_new)
{
    struct gs_stack_table t = {0};
    uint64_t a[] = {0x401000, 0x401234, 0x7f0000001000};
    uint64_t copy[3];
    memcpy(copy, a, sizeof a);
    int is_new = -1;
    uint32_t id1 = intern(&t, a, 3, &is_new);
    cr_assert_eq(id1, 1, "first id is 1, got %u", id1);
    cr_assert_eq(is_new, 1, "first time: new");
    uint32_t id2 = intern(&t, copy, 3, &is_new);
    cr_assert_eq(id2, id1, "same stack, same id");
    cr_assert_eq(is_new, 0, "second time: not new");
    cr_assert_eq(t.used, 1, "one entry");
    gs_stack_table_clear(&t);
}

Test(stacks, distinct_stacks_get_consecutive_ids)
{
    struct gs_stack_table t = {0};
    for (uint32_t i = 0; i < 50; i++) {
        uint64_t pcs[2] = {0x1000 + i, 0x2000};
        int is_new;
        uint32_t id = intern(&t, pcs, 2, &is_new);
        cr_assert_eq(id, i + 1, "stack %u got id %u", i, id);
        cr_assert_eq(is_new, 1);
    }
    for (uint32_t i = 0; i < 50; i++) {
        uint64_t pcs[2] = {0x1000 + i, 0x2000};
        int is_new;
        cr_assert_eq(intern(&t, pcs, 2, &is_new), i + 1, "stack %u again", i);
        cr_assert_eq(is_new, 0);
    }
    gs_stack_table_clear(&t);
}

Test(stacks, prefix_and_one_frame_differences_are_distinct)
{
    struct gs_stack_table t = {0};
    uint64_t a[4] = {10, 20, 30, 40};
    uint64_t b[4] = {10, 20, 31, 40}; /* one frame differs */
    uint64_t c[4] = {10, 20, 30, 41}; /* the last frame differs */
    int is_new;
    uint32_t ida = intern(&t, a, 4, &is_new);
    uint32_t idpre = intern(&t, a, 3, &is_new); /* a prefix of a */
    cr_assert_eq(is_new, 1, "a prefix is a new stack");
    uint32_t idb = intern(&t, b, 4, &is_new);
    cr_assert_eq(is_new, 1, "one frame different is a new stack");
    uint32_t idc = intern(&t, c, 4, &is_new);
    cr_assert_eq(is_new, 1);
    uint32_t id1 = intern(&t, a, 1, &is_new);
    cr_assert_eq(is_new, 1);
    cr_assert(ida != idpre && ida != idb && ida != idc && idb != idc && idpre != id1,
              "ids %u %u %u %u %u distinct", ida, idpre, idb, idc, id1);
    cr_assert_eq(find(&t, a, 4), ida);
    cr_assert_eq(find(&t, a, 3), idpre);
    cr_assert_eq(find(&t, b, 4), idb);
    cr_assert_eq(find(&t, c, 4), idc);
    cr_assert_eq(find(&t, a, 1), id1);
    cr_assert_eq(find(&t, a, 2), 0, "length 2 was never inserted");
    gs_stack_table_clear(&t);
}

Test(stacks, colliding_hash_still_compares_frames)
{
    /* Pass the same hash for two different stacks: intern must compare the
     * frames, not trust the hash. */
    struct gs_stack_table t = {0};
    uint64_t a[2] = {1, 2}, b[2] = {1, 3};
    int is_new;
    uint32_t ida = gs_stack_intern(&t, a, 2, 42, &is_new, NULL);
    uint32_t idb = gs_stack_intern(&t, b, 2, 42, &is_new, NULL);
    cr_assert_eq(is_new, 1, "same hash, other frames: new");
    cr_assert_neq(ida, idb);
    cr_assert_eq(gs_stack_find(&t, a, 2, 42, NULL), ida);
    cr_assert_eq(gs_stack_find(&t, b, 2, 42, NULL), idb);
    /* same hash, a prefix of a: the lengths must be compared too */
    uint32_t idp = gs_stack_intern(&t, a, 1, 42, &is_new, NULL);
    cr_assert_eq(is_new, 1, "same hash, a prefix: new");
    cr_assert(idp != ida && idp != idb, "prefix id %u distinct", idp);
    cr_assert_eq(gs_stack_find(&t, a, 1, 42, NULL), idp);
    cr_assert_eq(gs_stack_find(&t, a, 2, 42, NULL), ida);
    gs_stack_table_clear(&t);
}

/* The first stack interned may be empty (nothing could be unwound): the
 * frames array is still NULL then, and nothing may be copied into it. */
Test(stacks, zero_length_stack_in_empty_table)
{
    /* The very first stack has no frames: the frames array is still NULL. */
    struct gs_stack_table t = {0};
    uint64_t dummy[1] = {0};
    int is_new;
    uint32_t id = intern(&t, dummy, 0, &is_new);
    cr_assert_eq(id, 1, "zero-length stack gets id 1, got %u", id);
    cr_assert_eq(is_new, 1);
    cr_assert_eq(intern(&t, dummy, 0, &is_new), 1, "and again");
    cr_assert_eq(is_new, 0);
    cr_assert_eq(find(&t, dummy, 0), 1);
    gs_stack_table_clear(&t);
}

Test(stacks, zero_length_stack_among_others)
{
    struct gs_stack_table t = {0};
    uint64_t a[1] = {0};
    int is_new;
    uint32_t ida = intern(&t, a, 1, &is_new); /* the single frame 0 */
    uint32_t id0 = intern(&t, a, 0, &is_new);
    cr_assert_eq(is_new, 1, "empty stack differs from the stack {0}");
    cr_assert_neq(ida, id0);
    cr_assert_eq(find(&t, a, 0), id0);
    cr_assert_eq(find(&t, a, 1), ida);
    gs_stack_table_clear(&t);
}

Test(stacks, find_on_empty_and_missing)
{
    struct gs_stack_table t = {0};
    uint64_t a[3] = {1, 2, 3};
    cr_assert_eq(find(&t, a, 3), 0, "empty table finds nothing");
    int is_new;
    intern(&t, a, 3, &is_new);
    uint64_t b[3] = {1, 2, 4};
    cr_assert_eq(find(&t, b, 3), 0, "never inserted");
    cr_assert_eq(find(&t, a, 3), 1);
    cr_assert_eq(t.used, 1, "find inserts nothing");
    gs_stack_table_clear(&t);
}

static void nth_stack(uint32_t i, uint64_t *pcs, unsigned *n)
{
    *n = 1 + i % 7;
    uint64_t x = (uint64_t)i * 0x9e3779b97f4a7c15ull + 1;
    for (unsigned k = 0; k < *n; k++) {
        x ^= x >> 29;
        x *= 0xbf58476d1ce4e5b9ull;
        pcs[k] = x ^ ((uint64_t)i << 20) ^ k;
    }
    pcs[0] = i; /* makes every stack distinct */
}

Test(stacks, survives_growth_to_100000_stacks)
{
    struct gs_stack_table t = {0};
    const uint32_t N = 100000;
    uint64_t pcs[8];
    unsigned n;
    for (uint32_t i = 0; i < N; i++) {
        nth_stack(i, pcs, &n);
        int is_new;
        uint32_t id = intern(&t, pcs, n, &is_new);
        cr_assert_eq(id, i + 1, "stack %u got id %u", i, id);
        cr_assert_eq(is_new, 1, "stack %u new", i);
    }
    cr_assert_eq(t.used, N);
    cr_assert_geq(t.nslots, 2 * (size_t)N, "kept at most half full");
    for (uint32_t i = 0; i < N; i++) {
        nth_stack(i, pcs, &n);
        cr_assert_eq(find(&t, pcs, n), i + 1, "stack %u found after growth", i);
    }
    for (uint32_t i = 0; i < N; i += 997) {
        nth_stack(i, pcs, &n);
        int is_new;
        cr_assert_eq(intern(&t, pcs, n, &is_new), i + 1);
        cr_assert_eq(is_new, 0, "stack %u not new again", i);
    }
    nth_stack(N, pcs, &n);
    cr_assert_eq(find(&t, pcs, n), 0, "stack %u never inserted", N);
    gs_stack_table_clear(&t);
}

Test(stacks, stored_frames_never_move)
{
    struct gs_stack_table t = {0};
    enum { N = 20000 }; /* about 80000 frames: several chunks, and the slots grow */
    static const uint64_t *where[N];
    uint64_t pcs[GS_MAX_FRAMES];
    unsigned n;
    int is_new;
    /* first, a stack as deep as a writer records */
    for (unsigned k = 0; k < GS_MAX_FRAMES; k++)
        pcs[k] = 0x7f0000000000ull + k;
    const uint64_t *deep;
    gs_stack_intern(&t, pcs, GS_MAX_FRAMES, gs_stack_hash(pcs, GS_MAX_FRAMES), &is_new, &deep);
    for (uint32_t i = 0; i < N; i++) {
        nth_stack(i, pcs, &n);
        cr_assert_eq(gs_stack_intern(&t, pcs, n, gs_stack_hash(pcs, n), &is_new, &where[i]), i + 2);
        cr_assert_eq(memcmp(where[i], pcs, n * sizeof pcs[0]), 0, "stack %u stored as given", i);
    }
    for (uint32_t i = 0; i < N; i++) {
        nth_stack(i, pcs, &n);
        const uint64_t *found = NULL;
        cr_assert_neq(gs_stack_find(&t, pcs, n, gs_stack_hash(pcs, n), &found), 0);
        cr_assert_eq(found, where[i], "stack %u still where it was stored", i);
        cr_assert_eq(memcmp(found, pcs, n * sizeof pcs[0]), 0, "stack %u unchanged", i);
    }
    for (unsigned k = 0; k < GS_MAX_FRAMES; k++)
        cr_assert_eq(deep[k], 0x7f0000000000ull + k, "the deep stack unchanged");
    gs_stack_table_clear(&t);
}

Test(stacks, clear_resets_ids)
{
    struct gs_stack_table t = {0};
    uint64_t a[2] = {5, 6}, b[2] = {7, 8};
    int is_new;
    intern(&t, a, 2, &is_new);
    cr_assert_eq(intern(&t, b, 2, &is_new), 2);
    gs_stack_table_clear(&t);
    cr_assert_eq(t.used, 0);
    cr_assert_eq(t.next_id, 0);
    cr_assert_null(t.slots);
    cr_assert_eq(find(&t, a, 2), 0, "cleared table finds nothing");
    cr_assert_eq(intern(&t, b, 2, &is_new), 1, "ids restart at 1");
    cr_assert_eq(is_new, 1);
    cr_assert_eq(intern(&t, a, 2, &is_new), 2);
    gs_stack_table_clear(&t);
}
