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
#include <stdlib.h>
#include <string.h>

#include "analyzer/util/bytes.h"
#include "analyzer/model/model.h"
#include "analyzer/model/replay.h"
#include "analyzer/read/read.h"
#include "analyzer/whatif/answer.h"

const char *gs_wi_run_setting(const struct gs_trace_info *info, const char *name)
{
    for (unsigned i = 0; i < info->header.nsettings; i++)
        if (!strcmp(info->header.settings[i].name, name))
            return info->header.settings[i].value;
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
 * that says, the free memory then plus what the process held; and the
 * device's total memory (cudaMemGetInfo's total), which the allocators'
 * fractions are of. */
static void run_cards(const struct gs_replay *r, uint64_t *card, uint64_t *total)
{
    for (size_t i = 0; i < r->nfailures; i++) {
        const struct gs_failure *f = &r->failures[i];
        size_t s = f->device >= 0 && f->device < GS_MAX_DEVICES ? (size_t)f->device
                                                                : GS_MAX_DEVICES;
        if (card[s] || f->free_bytes == UINT64_MAX || f->total_bytes == UINT64_MAX)
            continue;
        uint64_t had = f->free_bytes + f->process_live_bytes;
        card[s] = had < f->free_bytes || had > f->total_bytes ? f->total_bytes : had;
        total[s] = f->total_bytes;
    }
    /* blocks carry no device: theirs is the one device that failed */
    if (!card[GS_MAX_DEVICES])
        for (size_t d = 0; d < GS_MAX_DEVICES; d++)
            if (card[d]) {
                card[GS_MAX_DEVICES] = card[d];
                total[GS_MAX_DEVICES] = total[d];
                break;
            }
}

/* Which cases a pass replays: those of the cards known at the start (and
 * no limit), those of the run's own card, or all of them. */
enum pass { KNOWN_CARDS, RUN_CARD, ALL_CARDS };

/* The cases of card c for each setting: its capacity, or GS_WI_SKIP when
 * this pass is not the one that replays it. A card given has its whole
 * memory as its total, which the allocators take their fractions of
 * (PyTorch's setMemoryFraction: fraction x the device's total; XLA's
 * CreateBFCAllocator: total_memory x memory_fraction), and the context
 * less for the process: the device refuses past that. */
static void card_cases(const struct gs_wi_answer *a, size_t c, enum pass pass,
                       struct gs_wi_case *cases)
{
    size_t ns = a->q.nsettings, nc = a->q.ncards;
    for (size_t s = 0; s < ns; s++) {
        uint64_t cap = 0, total = 0; /* c == nc: no limit */
        if (c < nc && a->q.cards[c].run) {
            cap = GS_WI_RUN_CARD;
        } else if (c < nc) {
            total = a->q.cards[c].bytes;
            cap = total > a->q.context ? total - a->q.context : 1;
        }
        if (pass != ALL_CARDS && (cap == GS_WI_RUN_CARD) != (pass == RUN_CARD))
            cap = GS_WI_SKIP;
        cases[c * ns + s] = (struct gs_wi_case){.setting = s, .capacity = cap, .total = total};
    }
}

static int has_run_card(const struct gs_wi_answer *a)
{
    for (size_t c = 0; c < a->q.ncards; c++)
        if (a->q.cards[c].run)
            return 1;
    return 0;
}

/* The replay of a pass, with the run's cards known so far. */
static struct gs_whatif *engine(struct gs_wi_answer *a, enum pass pass)
{
    struct gs_wi_case cases[GS_WI_CASES];
    for (size_t c = 0; c <= a->q.ncards; c++)
        card_cases(a, c, pass, cases);
    struct gs_whatif *w =
        gs_whatif_new(a->q.settings, a->q.nsettings, cases, (a->q.ncards + 1) * a->q.nsettings);
    for (size_t d = 0; w && d <= GS_MAX_DEVICES; d++)
        if (a->run_card[d])
            gs_whatif_set_run_card(w, d == GS_MAX_DEVICES ? -1 : (int32_t)d, a->run_card[d],
                                   a->run_total[d]);
    return w;
}

int gs_wi_answer_begin(struct gs_wi_answer *a, const struct gs_wi_question *q,
                       const struct gs_trace_info *info, const struct gs_replay *r, char *err,
                       size_t errsz)
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
    size_t ns = a->q.nsettings, nc = a->q.ncards;
    if ((nc + 1) * ns > GS_WI_CASES) {
        snprintf(err, errsz, "%zu settings on %zu cards: at most %d comparisons", ns, nc + 1,
                 GS_WI_CASES);
        return -1;
    }
    a->cards_known = r != NULL;
    if (r) /* the run's cards known: every case in this one pass */
        run_cards(r, a->run_card, a->run_total);
    if (!(a->w = engine(a, r ? ALL_CARDS : KNOWN_CARDS))) {
        snprintf(err, errsz, "out of memory");
        return -1;
    }
    return 0;
}

void gs_wi_answer_event(struct gs_wi_answer *a, const struct gs_revent *e)
{
    gs_whatif_event(a->w, e);
}

/* The devices as the answer shows them: the first pass's, with the run's
 * cards' outcomes from the second; without any run's card known, that card
 * left out (it would be no limit twice). */
static int merge(struct gs_wi_answer *a)
{
    size_t ns = a->q.nsettings, nc = a->q.ncards;
    size_t from[GS_WI_CARDS + 1], n = 0; /* the cards shown: their index as replayed */
    for (size_t c = 0; c <= nc; c++)
        if (c == nc || !a->q.cards[c].run || !a->run_card_unknown)
            from[n++] = c;
    for (size_t i = 0; i <= GS_MAX_DEVICES; i++) {
        const struct gs_wi_device *d = gs_whatif_device(a->w, i);
        const struct gs_wi_device *dr = a->w_run ? gs_whatif_device(a->w_run, i) : NULL;
        if (!d && !dr)
            continue;
        struct gs_wi_device *m = a->dev[i] = malloc(sizeof *m);
        if (!m)
            return -1;
        *m = d ? *d : *dr;
        for (size_t c = 0; c < n; c++)
            for (size_t s = 0; s < ns; s++) {
                const struct gs_wi_device *src =
                    dr && from[c] < nc && a->q.cards[from[c]].run ? dr : d;
                if (src)
                    m->out[c * ns + s] = src->out[from[c] * ns + s];
                else
                    memset(&m->out[c * ns + s], 0, sizeof m->out[0]);
            }
        if (d && dr)
            m->models = d->models + dr->models;
        if (dr) { /* the failed requests' served bits of the run's cases */
            m->run_card = dr->run_card;
            for (size_t k = 0; k < m->nfailed && k < dr->nfailed; k++)
                m->failed[k].served |= dr->failed[k].served;
        }
    }
    if (a->run_card_unknown) { /* the card list as shown */
        size_t k = 0;
        for (size_t c = 0; c < nc; c++)
            if (!a->q.cards[c].run)
                a->q.cards[k++] = a->q.cards[c];
        a->q.ncards = k;
    }
    return 0;
}

int gs_wi_answer_finish(struct gs_wi_answer *a, const char *path,
                        const struct gs_read_seen *seen, const struct gs_replay *r, char *err,
                        size_t errsz)
{
    gs_whatif_finish(a->w);
    a->source = gs_whatif_source(a->w);
    a->ipc_seen = r->kinds[GS_KIND_IMPORTED].allocs > 0;
    a->ipc_breaks = a->ipc_seen && a->q.torch_before_2_5;
    if (!a->cards_known && has_run_card(a)) {
        run_cards(r, a->run_card, a->run_total);
        int known = 0;
        for (size_t d = 0; d <= GS_MAX_DEVICES; d++)
            known |= a->run_card[d] != 0;
        if (!known) {
            a->run_card_unknown = 1;
        } else { /* the run's cards, in a second pass */
            a->w_run = engine(a, RUN_CARD);
            if (!a->w_run) {
                snprintf(err, errsz, "out of memory");
                return -1;
            }
            if (gs_whatif_replay(path, seen, a->w_run, err, errsz) != 0)
                return -1;
        }
    }
    if (gs_whatif_nomem(a->w) || (a->w_run && gs_whatif_nomem(a->w_run)) || merge(a) != 0) {
        snprintf(err, errsz, "out of memory while replaying");
        return -1;
    }
    return 0;
}

int gs_wi_answer(const char *path, const struct gs_read_seen *seen,
                 const struct gs_trace_info *info, const struct gs_replay *r,
                 const struct gs_wi_question *q, struct gs_wi_answer *a, char *err, size_t errsz)
{
    if (gs_wi_answer_begin(a, q, info, r, err, errsz) != 0 ||
        gs_whatif_replay(path, seen, a->w, err, errsz) != 0 ||
        gs_wi_answer_finish(a, path, seen, r, err, errsz) != 0) {
        gs_wi_answer_free(a);
        return -1;
    }
    return 0;
}

void gs_wi_answer_free(struct gs_wi_answer *a)
{
    gs_whatif_free(a->w);
    gs_whatif_free(a->w_run);
    a->w = a->w_run = NULL;
    for (size_t i = 0; i <= GS_MAX_DEVICES; i++) {
        free(a->dev[i]);
        a->dev[i] = NULL;
    }
}

const struct gs_wi_device *gs_wi_answer_device(const struct gs_wi_answer *a, size_t idx)
{
    return idx <= GS_MAX_DEVICES ? a->dev[idx] : NULL;
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
        if (o->ran_out || (a->ipc_breaks && (a->q.settings[s].costs & GS_WI_IPC_HANDLES)))
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
    /* blocks carry no device: theirs is the replay's device -1 */
    size_t slot = a->source == GS_WI_SRC_BLOCKS || device < 0 || device >= GS_MAX_DEVICES
                      ? GS_MAX_DEVICES
                      : (size_t)device;
    const struct gs_wi_device *d = gs_wi_answer_device(a, slot);
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
            (a->ipc_breaks && (a->q.settings[s].costs & GS_WI_IPC_HANDLES)))
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
