/*
 * answer.c - owns the question a what-if replay answers: which settings on
 * which cards (the run's own, when none is given: the memory the process
 * had at its first failed allocation on each device, which is the free
 * memory the driver reported then plus what the process held), the cases
 * handed to whatif.c (each setting on each card, and each with no limit
 * for what it would take), and which setting is best for a card.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "analyzer/util/bytes.h"
#include "analyzer/model/model.h"
#include "analyzer/read/read.h"
#include "analyzer/whatif/answer.h"

const char *gs_wi_run_setting(const struct gs_trace_info *info, const char *name)
{
    for (unsigned i = 0; i < info->nsettings; i++)
        if (!strcmp(info->settings[i].name, name))
            return info->settings[i].value;
    return NULL;
}

const char *gs_wi_run_conf(const struct gs_trace_info *info, char *buf, size_t sz)
{
    const char *conf = gs_wi_run_setting(info, "PYTORCH_ALLOC_CONF");
    const char *legacy = gs_wi_run_setting(info, "PYTORCH_CUDA_ALLOC_CONF");
    if (!conf)
        conf = legacy;
    if (!conf || !sz)
        return NULL;
    size_t n = 0;
    buf[0] = 0;
    for (const char *p = conf; *p;) {
        while (*p == ',' || *p == ' ')
            p++;
        size_t len = strcspn(p, ",");
        if (len && strncmp(p, "backend:", 8) != 0 && n + len + 2 < sz)
            n += (size_t)snprintf(buf + n, sz - n, "%s%.*s", n ? "," : "", (int)len, p);
        p += len;
    }
    return n ? buf : NULL;
}

/* The memory the process had on each device: at its first failure there
 * that says, the free memory then plus what the process held. */
static void run_cards(const struct gs_replay *r, uint64_t *card)
{
    for (size_t i = 0; i < r->nfailures; i++) {
        const struct gs_failure *f = &r->failures[i];
        size_t s = f->device >= 0 && f->device < GS_MAX_DEVICES ? (size_t)f->device
                                                                : GS_MAX_DEVICES;
        if (card[s] || f->free_bytes == UINT64_MAX || f->total_bytes == UINT64_MAX)
            continue;
        uint64_t had = f->free_bytes + f->process_live_bytes;
        card[s] = had < f->free_bytes || had > f->total_bytes ? f->total_bytes : had;
    }
    /* blocks carry no device: theirs is the one device that failed */
    if (!card[GS_MAX_DEVICES])
        for (size_t d = 0; d < GS_MAX_DEVICES; d++)
            if (card[d]) {
                card[GS_MAX_DEVICES] = card[d];
                break;
            }
}

int gs_wi_answer(const char *path, const struct gs_trace_info *info, const struct gs_replay *r,
                 const struct gs_wi_question *q, struct gs_wi_answer *a, char *err, size_t errsz)
{
    memset(a, 0, sizeof *a);
    a->q = *q;
    if (!a->q.nsettings && q->allocator == GS_WI_XLA) {
        a->q.nsettings = gs_wi_default_xla_settings(
            gs_wi_run_setting(info, "XLA_PYTHON_CLIENT_MEM_FRACTION"), a->q.settings,
            GS_WI_SETTINGS);
    } else if (!a->q.nsettings) {
        char conf[512];
        a->q.nsettings = gs_wi_default_settings(q->torch, gs_wi_run_conf(info, conf, sizeof conf),
                                                a->q.settings, GS_WI_SETTINGS);
    }
    if (!a->q.ncards) {
        a->q.ncards = 1;
        memset(&a->q.cards[0], 0, sizeof a->q.cards[0]);
        snprintf(a->q.cards[0].name, sizeof a->q.cards[0].name, "the run's");
        a->q.cards[0].run = 1;
    }
    run_cards(r, a->run_card);
    int known = 0;
    for (size_t d = 0; d <= GS_MAX_DEVICES; d++)
        known |= a->run_card[d] != 0;
    if (!known && a->q.ncards == 1 && a->q.cards[0].run) { /* it would be no limit twice */
        a->q.ncards = 0;
        a->run_card_unknown = 1;
    }
    size_t ns = a->q.nsettings, nc = a->q.ncards;
    if ((nc + 1) * ns > GS_WI_CASES) {
        snprintf(err, errsz, "%zu settings on %zu cards: at most %d comparisons", ns, nc + 1,
                 GS_WI_CASES);
        return -1;
    }

    a->ipc_seen = r->kinds[GS_KIND_IMPORTED].allocs > 0;
    struct gs_wi_case cases[GS_WI_CASES];
    for (size_t c = 0; c <= nc; c++)
        for (size_t s = 0; s < ns; s++) {
            uint64_t cap = 0;
            if (c < nc)
                cap = a->q.cards[c].run ? GS_WI_RUN_CARD
                      : a->q.cards[c].bytes > a->q.context ? a->q.cards[c].bytes - a->q.context
                                                           : 1;
            cases[c * ns + s] = (struct gs_wi_case){.setting = s, .capacity = cap};
        }
    a->w = gs_whatif_new(a->q.settings, ns, cases, (nc + 1) * ns);
    if (!a->w) {
        snprintf(err, errsz, "out of memory");
        return -1;
    }
    for (size_t d = 0; d <= GS_MAX_DEVICES; d++)
        if (a->run_card[d])
            gs_whatif_set_run_card(a->w, d == GS_MAX_DEVICES ? -1 : (int32_t)d, a->run_card[d]);
    if (gs_whatif_replay(path, a->w, err, errsz) != 0) {
        gs_wi_answer_free(a);
        return -1;
    }
    if (gs_whatif_nomem(a->w)) {
        snprintf(err, errsz, "out of memory while replaying");
        gs_wi_answer_free(a);
        return -1;
    }
    return 0;
}

void gs_wi_answer_free(struct gs_wi_answer *a)
{
    gs_whatif_free(a->w);
    a->w = NULL;
}

const struct gs_wi_outcome *gs_wi_outcome_of(const struct gs_wi_answer *a,
                                             const struct gs_wi_device *d, size_t c, size_t s)
{
    return &d->out[c * a->q.nsettings + s];
}

uint64_t gs_wi_card_bytes(const struct gs_wi_answer *a, const struct gs_wi_device *d, size_t c)
{
    return c < a->q.ncards ? gs_wi_outcome_of(a, d, c, 0)->capacity : 0;
}

/* x is better than y on a card both fit: fewer OOM retries, then a lower
 * peak (more headroom), then fewer driver calls. */
static int better(const struct gs_wi_outcome *x, const struct gs_wi_outcome *y)
{
    if (x->st.oom_retries != y->st.oom_retries)
        return x->st.oom_retries < y->st.oom_retries;
    if (x->device_peak != y->device_peak)
        return x->device_peak < y->device_peak;
    return x->st.segment_allocs + x->st.segment_frees < y->st.segment_allocs + y->st.segment_frees;
}

size_t gs_wi_best(const struct gs_wi_answer *a, const struct gs_wi_device *d, size_t c)
{
    size_t best = SIZE_MAX;
    for (size_t s = 0; s < a->q.nsettings; s++) {
        const struct gs_wi_outcome *o = gs_wi_outcome_of(a, d, c, s);
        if (o->ran_out || (a->ipc_seen && (a->q.settings[s].costs & GS_WI_BREAKS_IPC)))
            continue;
        if (best == SIZE_MAX || better(o, gs_wi_outcome_of(a, d, c, best)))
            best = s;
    }
    return best;
}

int gs_wi_verdict(const struct gs_wi_answer *a, int32_t device, uint64_t time_ns,
                  struct gs_wi_verdict *v)
{
    memset(v, 0, sizeof *v);
    v->setting = SIZE_MAX;
    if (!a->w)
        return -1;
    /* blocks carry no device: theirs is the replay's device -1 */
    size_t slot = gs_whatif_source(a->w) == GS_WI_SRC_BLOCKS || device < 0 ||
                          device >= GS_MAX_DEVICES
                      ? GS_MAX_DEVICES
                      : (size_t)device;
    const struct gs_wi_device *d = gs_whatif_device(a->w, slot);
    if (!d || !a->q.ncards || !a->q.cards[0].run || !gs_wi_card_bytes(a, d, 0))
        return -1;
    const struct gs_wi_failed *f = NULL;
    for (size_t k = 0; k < d->nfailed && !f; k++)
        if (d->failed[k].time_ns == time_ns)
            f = &d->failed[k];
    if (!f)
        return -1;
    v->replayed = 1;
    v->capacity = gs_wi_card_bytes(a, d, 0);
    v->needs = gs_wi_outcome_of(a, d, a->q.ncards, 0)->device_peak;
    for (size_t s = 0; s < a->q.nsettings; s++) {
        const struct gs_wi_outcome *o = gs_wi_outcome_of(a, d, 0, s);
        if (!(f->served & (1ull << s)) || (o->ran_out && o->first_oom.time_ns < time_ns) ||
            (a->ipc_seen && (a->q.settings[s].costs & GS_WI_BREAKS_IPC)))
            continue; /* case s of card 0 is case s */
        if (v->setting == SIZE_MAX || better(o, gs_wi_outcome_of(a, d, 0, v->setting))) {
            v->setting = s;
            v->peak = o->device_peak;
        }
    }
    char p[32], c[32], n[32];
    gs_human_bytes(v->capacity, c, sizeof c);
    gs_human_bytes(v->needs, n, sizeof n);
    if (v->setting != SIZE_MAX)
        snprintf(v->sentence, sizeof v->sentence,
                 "%s would have fitted: peak %s of %s, where %s reserves %s with no limit "
                 "(gpushim whatif)", a->q.settings[v->setting].name,
                 gs_human_bytes(v->peak, p, sizeof p), c, a->q.settings[0].name, n);
    else
        snprintf(v->sentence, sizeof v->sentence,
                 "no allocator setting of the %zu compared would have avoided it: each runs out "
                 "on this card (%s for the process); with no limit %s reserves %s "
                 "(gpushim whatif)", a->q.nsettings, c, a->q.settings[0].name, n);
    return 0;
}
