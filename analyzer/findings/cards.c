/*
 * cards.c - which GPU the job fits on: what one device needed (the largest
 * peak of device memory on one device, or more where an allocation failed
 * that nothing got past) against the memory of common cards, with the
 * headroom left (or what is missing), and whether a leak makes any card
 * too small in the end. One sentence for every screen (gs_fit_text).
 *
 * A card's memory is what it reports to CUDA: N GiB for the 24, 40, 48,
 * 80 and 96 GB cards, 143 771 MiB for the 141 GB H200. The CUDA context
 * itself takes a few hundred MiB of it, which the peak does not count.
 */
#include <stdio.h>

#include "analyzer/trace/trace.h"
#include "analyzer/util/bytes.h"
#include "analyzer/model/model.h"
#include "analyzer/model/replay.h"
#include "analyzer/findings/findings.h"

const struct gs_card gs_cards[GS_NCARDS] = {
    {"24 GB", 24ull << 30},  {"40 GB", 40ull << 30}, {"48 GB", 48ull << 30},
    {"80 GB", 80ull << 30},  {"96 GB", 96ull << 30}, {"141 GB", 143771ull << 20},
};

uint64_t gs_largest_device_peak(const struct gs_replay *r)
{
    uint64_t most = 0;
    for (int d = 0; d <= GS_MAX_DEVICES; d++)
        if (r->devices[d].present && r->devices[d].peak_bytes > most)
            most = r->devices[d].peak_bytes;
    return most;
}

void gs_card_fit(const struct gs_replay *r, size_t nsuspects, struct gs_fit *f)
{
    *f = (struct gs_fit){.need = gs_largest_device_peak(r), .growing = nsuspects > 0};
    for (size_t i = 0; i < r->nfailures; i++) {
        const struct gs_failure *x = &r->failures[i];
        if (x->outcome != GS_OUTCOME_UNRECOVERED)
            continue;
        /* saturated: a hostile trace's sizes may add up past 2^64 */
        uint64_t want = x->process_live_bytes + x->requested;
        if (want < x->requested)
            want = UINT64_MAX;
        if (want > f->need) {
            f->need = want;
            f->held = x->process_live_bytes;
            f->asked = x->requested;
        }
    }
    f->card = 0;
    while (f->card < GS_NCARDS && gs_cards[f->card].bytes < f->need)
        f->card++;
}

void gs_fit_text(const struct gs_fit *f, char *buf, size_t sz)
{
    char a[32], b[32], c[32], why[160] = "";
    size_t n;
    if (!f->need) {
        snprintf(buf, sz, "no device memory was used");
        return;
    }
    if (f->asked)
        snprintf(why, sizeof why, " for the %s it needed when it failed (%s held, %s asked)",
                 gs_human_bytes(f->need, a, sizeof a), gs_human_bytes(f->held, b, sizeof b),
                 gs_human_bytes(f->asked, c, sizeof c));
    if (f->card == GS_NCARDS)
        n = (size_t)snprintf(buf, sz, "none of the cards from %s to %s%s: %s short of %s",
                             gs_cards[0].name, gs_cards[GS_NCARDS - 1].name, why,
                             gs_human_bytes(f->need - gs_cards[GS_NCARDS - 1].bytes, a, sizeof a),
                             gs_cards[GS_NCARDS - 1].name);
    else if (f->card)
        n = (size_t)snprintf(buf, sz, "%s and larger cards%s: %s spare on %s; %s short of %s",
                             gs_cards[f->card].name, why,
                             gs_human_bytes(gs_cards[f->card].bytes - f->need, a, sizeof a),
                             gs_cards[f->card].name,
                             gs_human_bytes(f->need - gs_cards[f->card - 1].bytes, b, sizeof b),
                             gs_cards[f->card - 1].name);
    else
        n = (size_t)snprintf(buf, sz, "%s and larger cards%s: %s spare on %s",
                             gs_cards[f->card].name, why,
                             gs_human_bytes(gs_cards[f->card].bytes - f->need, a, sizeof a),
                             gs_cards[f->card].name);
    if (f->growing && n < sz)
        snprintf(buf + n, sz - n, "; but a leak suspect kept rising: a longer run outgrows any "
                                  "card");
}
