/*
 * test_cards.c - which card a job needs (analyzer/findings/cards.c): from
 * its peak; from a failure nothing got past, what it held there and asked
 * (the peak is not what such a job needed); none of the cards; a leak that
 * kept rising; the sentence every screen gives, exactly.
 */
#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>

#include "gpushim_trace.h"
#include "analyzer/findings/findings.h"
#include "analyzer/model/model.h"
#include "analyzer/model/replay.h"
#include "analyzer/trace/trace.h"

#define GiB (1024ull * 1024 * 1024)
#define MiB (1024ull * 1024)

static void alloc(struct gs_replay *r, uint64_t t, uint64_t addr, uint64_t size)
{
    struct gs_revent e = {.type = GS_REC_ALLOC, .time_ns = t, .tid = 1, .device = 0,
                          .addr = addr, .size = size, .stack_id = 1, .kind = GS_KIND_DEVICE,
                          .space = GS_SPACE_ADDRESS};
    gs_replay_event(r, &e);
}

static void failed(struct gs_replay *r, uint64_t t, uint64_t size)
{
    struct gs_revent e = {.type = GS_REC_ALLOC_FAILED, .time_ns = t, .tid = 1, .device = 0,
                          .size = size, .stack_id = 2, .result = 2, .free_bytes = 0,
                          .total_bytes = 16 * GiB};
    gs_replay_event(r, &e);
}

static void text(const struct gs_fit *f, const char *want)
{
    char buf[512];
    gs_fit_text(f, buf, sizeof buf);
    cr_assert_str_eq(buf, want);
}

Test(cards, from_the_peak)
{
    struct gs_replay r;
    gs_replay_init(&r);
    alloc(&r, 1, 0x1000, 30 * GiB);
    gs_replay_finish(&r);
    struct gs_fit f;
    gs_card_fit(&r, 0, &f);
    cr_assert_eq(f.need, 30 * GiB);
    cr_assert_eq(f.card, 1, "40 GB");
    text(&f, "40 GB and larger cards: 10.00 GiB spare on 40 GB; 6.00 GiB short of 24 GB");
    gs_replay_free(&r);
}

Test(cards, a_failure_nothing_got_past_needs_more_than_the_peak)
{
    struct gs_replay r;
    gs_replay_init(&r);
    alloc(&r, 1, 0x1000, 23 * GiB);
    failed(&r, 2, 2 * GiB); /* the job's end: 25 GiB needed on a 24 GB card */
    gs_replay_finish(&r);
    struct gs_fit f;
    gs_card_fit(&r, 1, &f);
    cr_assert_eq(f.need, 25 * GiB);
    cr_assert_eq(f.held, 23 * GiB);
    cr_assert_eq(f.asked, 2 * GiB);
    cr_assert_eq(f.card, 1, "not 24 GB, which its peak fits");
    text(&f, "40 GB and larger cards for the 25.00 GiB it needed when it failed (23.00 GiB held, "
             "2.00 GiB asked): 15.00 GiB spare on 40 GB; 1.00 GiB short of 24 GB; but a leak "
             "suspect kept rising: a longer run outgrows any card");
    gs_replay_free(&r);
}

Test(cards, none_of_them_and_no_memory)
{
    struct gs_replay r;
    gs_replay_init(&r);
    gs_replay_finish(&r);
    struct gs_fit f;
    gs_card_fit(&r, 0, &f);
    text(&f, "no device memory was used");
    alloc(&r, 1, 0x1000, 200 * GiB);
    gs_card_fit(&r, 0, &f);
    cr_assert_eq(f.card, GS_NCARDS);
    text(&f, "none of the cards from 24 GB to 141 GB: 59.60 GiB short of 141 GB");
    gs_replay_free(&r);
}
