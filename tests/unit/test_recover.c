/*
 * test_recover.c - analyzer/read/recover.c: the events of a ring file past the
 * trace's last chunk position are handed on, exactly those and in order;
 * a ring file that is not the trace's, of another layout, or whose positions
 * or entries are hostile is refused or counted as damaged, never trusted.
 * Rings are made with shim/file/ring.c, as the shim makes them.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gpushim_trace.h"
#include "gpushim_ring.h"
#include "analyzer/trace/trace.h"
#include "analyzer/read/read.h"
#include "shim/base/base.h"
#include "shim/file/file.h"

#define ID 0x5eed

struct seen {
    unsigned events, stacks;
    uint64_t addrs[64];
};

static void on_event(void *ctx, const struct gs_revent *e)
{
    struct seen *s = ctx;
    if (s->events < 64)
        s->addrs[s->events] = e->addr;
    s->events++;
}

static void on_stack(void *ctx, uint32_t id, const uint64_t *pcs, unsigned n)
{
    (void)id, (void)pcs, (void)n;
    ((struct seen *)ctx)->stacks++;
}

static const struct gs_reader_ops ops = {.event = on_event, .stack = on_stack};

static char trace[256], ring[256 + 8];

/* A ring file for trace "t.trace" with a stack and n allocations at
 * addresses 0x1000 * (i + 1); *pos gets the position after entry `after`. */
static struct gs_ring make_ring(unsigned n, unsigned after, uint64_t *pos)
{
    snprintf(trace, sizeof trace, "/tmp/gpushim-recover-%d.trace", (int)getpid());
    snprintf(ring, sizeof ring, "%s.ring", trace);
    unlink(ring);
    struct gs_ring r;
    cr_assert_eq(gs_ring_init(&r, ring, 1u << 16, ID), 0, "ring: %s", strerror(errno));
    union {
        struct gs_stack_body b;
        uint8_t bytes[sizeof(struct gs_stack_body) + 2 * 8];
    } st = {.b = {.type = GS_REC_STACK, .id = 1, .n = 2}};
    st.b.pcs[0] = 0x400100;
    st.b.pcs[1] = 0x400200;
    cr_assert_eq(gs_ring_push(&r, &st, sizeof st.bytes), 0);
    for (unsigned i = 0; i < n; i++) {
        if (i == after)
            *pos = r.hdr->head;
        struct gs_ev ev = {.type = GS_REC_ALLOC, .stack_id = 1, .time_ns = 10 * i,
                           .addr = 0x1000 * (i + 1), .size = 4096};
        cr_assert_eq(gs_ring_push(&r, &ev, sizeof ev), 0);
    }
    return r;
}

static void recover_as(uint64_t id, uint64_t ring_pos, struct seen *s,
                       struct gs_reader_stats *st)
{
    struct gs_trace_info info = {.header.ring_id = id};
    struct gs_ring_snapshot snap;
    memset(st, 0, sizeof *st);
    memset(s, 0, sizeof *s);
    gs_ring_snapshot_take(trace, &info, &snap);
    st->ring_pos = ring_pos; /* what the trace's chunks, read after the snapshot, reach */
    gs_ring_snapshot_replay(&snap, &ops, s, st);
    gs_ring_snapshot_free(&snap);
}

static void recover(uint64_t ring_pos, struct seen *s, struct gs_reader_stats *st)
{
    recover_as(ID, ring_pos, s, st);
}

Test(recover, only_the_entries_past_the_last_chunk)
{
    uint64_t pos = 0;
    struct gs_ring r = make_ring(10, 4, &pos);
    struct seen s;
    struct gs_reader_stats st;
    recover(pos, &s, &st);
    cr_assert_eq(st.ring_use, GS_RING_READ, "%s", st.ring_problem);
    cr_assert_eq(s.events, 6, "allocations 4..9");
    cr_assert_eq(st.recovered_events, 6);
    for (unsigned i = 0; i < 6; i++)
        cr_assert_eq(s.addrs[i], 0x1000 * (i + 5), "in order");
    cr_assert_eq(st.damaged_records, 0);
    recover(0, &s, &st);
    cr_assert_eq((s.events << 8) | s.stacks, (10 << 8) | 1, "from the start: the stack too");
    recover(r.hdr->head, &s, &st);
    cr_assert_eq(s.events, 0, "the trace has them all");
    cr_assert_eq(st.ring_use, GS_RING_READ);
    gs_ring_destroy(&r);
    unlink(ring);
}

Test(recover, ring_moved_past_the_trace_is_a_gap)
{
    uint64_t pos = 0;
    struct gs_ring r = make_ring(10, 4, &pos);
    r.hdr->tail = pos; /* the writer wrote chunks this copy of the trace lacks */
    struct seen s;
    struct gs_reader_stats st;
    recover(0, &s, &st);
    cr_assert_eq(s.events, 6, "only what is certainly still in the ring");
    cr_assert_eq(st.ring_gap, pos);
    cr_assert_not(gs_trace_complete(&st), "a gap is not complete");
    gs_ring_destroy(&r);
    unlink(ring);
}

Test(recover, refuses_what_is_not_this_traces_ring)
{
    uint64_t pos = 0;
    struct gs_ring r = make_ring(3, 0, &pos);
    struct seen s;
    struct gs_reader_stats st;
    recover_as(ID + 1, 0, &s, &st);
    cr_assert_eq(st.ring_use, GS_RING_UNUSABLE);
    cr_assert_str_eq(st.ring_problem, "it belongs to another trace");

    r.hdr->layout ^= 1;
    recover(0, &s, &st);
    cr_assert_eq(st.ring_use, GS_RING_UNUSABLE);
    cr_assert_str_eq(st.ring_problem, "written on a machine of another architecture");
    r.hdr->layout ^= 1;

    uint64_t head = r.hdr->head;
    r.hdr->head = head + (1u << 16) + 8; /* more than the ring holds */
    recover(0, &s, &st);
    cr_assert_eq(st.ring_use, GS_RING_UNUSABLE);
    cr_assert_str_eq(st.ring_problem, "its positions are not those of a ring");
    cr_assert_eq(s.events, 0, "nothing read");
    r.hdr->head = head;
    /* chunks written after the snapshot, read with the trace: nothing from the ring */
    recover(head + 100, &s, &st);
    cr_assert_eq((st.ring_use << 8) | s.events, GS_RING_READ << 8);

    memcpy(r.hdr->magic, "XXXXXXXX", 8);
    recover(0, &s, &st);
    cr_assert_str_eq(st.ring_problem, "not a gpushim ring file");
    gs_ring_destroy(&r);
    unlink(ring);

    recover(0, &s, &st);
    cr_assert_eq(st.ring_use, GS_RING_MISSING);
    cr_assert_eq(mkfifo(ring, 0600), 0); /* must not block on a FIFO */
    recover(0, &s, &st);
    cr_assert_str_eq(st.ring_problem, "not a regular file");
    unlink(ring);
}

Test(recover, falls_back_to_the_name_the_trace_recorded)
{
    uint64_t pos = 0;
    struct gs_ring r = make_ring(3, 0, &pos); /* at "<trace>.ring" */
    char other[sizeof ring + 4];
    snprintf(other, sizeof other, "%s.1", ring);
    cr_assert_eq(rename(ring, other), 0);
    cr_assert_eq(symlink("/dev/null", ring) == 0 || errno == EEXIST, 1);
    struct gs_trace_info info = {.header.ring_id = ID};
    const char *slash = strrchr(other, '/');
    snprintf(info.header.ring_name, sizeof info.header.ring_name, "%s", slash + 1);
    struct gs_ring_snapshot snap;
    struct seen s = {0};
    struct gs_reader_stats st = {0};
    gs_ring_snapshot_take(trace, &info, &snap);
    gs_ring_snapshot_replay(&snap, &ops, &s, &st);
    gs_ring_snapshot_free(&snap);
    cr_assert_eq(st.ring_use, GS_RING_READ, "%s", st.ring_problem);
    cr_assert_str_eq(st.ring_path, other);
    cr_assert_eq(s.events, 3);
    gs_ring_destroy(&r);
    unlink(ring);
    unlink(other);
}

Test(recover, hostile_entries_are_counted_not_trusted)
{
    uint64_t pos = 0;
    struct gs_ring r = make_ring(4, 0, &pos);
    /* the stack's body says 200 frames in a body of 2 */
    uint32_t n = 200;
    memcpy(r.buf + 4 + offsetof(struct gs_stack_body, n), &n, sizeof n);
    /* the second allocation's type is one no ring holds */
    uint32_t total;
    memcpy(&total, r.buf, 4);
    uint64_t second = total + 4 + sizeof(struct gs_ev);
    r.buf[second + 4] = 99;
    struct seen s;
    struct gs_reader_stats st;
    recover(0, &s, &st);
    cr_assert_eq(st.damaged_records, 2);
    cr_assert_eq((s.stacks << 8) | s.events, 3, "the three good allocations, no stack");
    /* a length word that runs past head stops the reading */
    uint32_t huge = 60000;
    memcpy(r.buf + second, &huge, 4);
    recover(0, &s, &st);
    cr_assert_eq(s.events, 1, "the one before it");
    cr_assert_eq(st.damaged_records, 2);
    gs_ring_destroy(&r);
    unlink(ring);
}
