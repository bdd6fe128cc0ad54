/*
 * cards.c - which GPU the job fits on: the largest peak of device memory
 * on one device against the memory of common cards, with the headroom
 * left (or what is missing).
 *
 * A card's memory is what it reports to CUDA: N GiB for the 24, 40, 48,
 * 80 and 96 GB cards, 143 771 MiB for the 141 GB H200. The CUDA context
 * itself takes a few hundred MiB of it, which the peak does not count.
 */
#include "analyzer/trace/trace.h"
#include "analyzer/model/model.h"
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
