/*
 * walk.c - the fast unwinder: the calling thread's return addresses from
 * the unwind rules of cfi.c, each rule worked out once per code address and
 * kept in a table every thread shares.
 *
 * A step from a frame to its caller is then a lookup and two or three
 * loads: CFA = rsp or rbp + offset, the return address at CFA + ra_off,
 * the caller's rbp at CFA + rbp_off when the frame saved it, rsp = CFA.
 * libunwind (unwind.c) stays the reference: gs_walk_stack answers -1, and
 * the caller asks libunwind for the whole stack, wherever it cannot be sure
 * it would give the same frames: a code address with no unwind information
 * (JIT code, a module without .eh_frame_hdr), a rule cfi.c does not read
 * (expressions, signal frames), a thread on a stack that is not its own
 * (sigaltstack, coroutines), or a step that would leave the thread's stack,
 * not climb it, or load a word below its frame's rsp (where a frame that
 * calls keeps nothing). Every load is inside [the walker's own rsp, the
 * stack's top), so a wrong rule can give wrong frames but never a fault.
 * The test tests/integration/test_unwind.py runs the test programs with
 * GPUSHIM_UNWIND=check, which compares every stack with libunwind's.
 *
 * The table keys a rule by the address it was read for and is never
 * emptied: code unloaded by dlclose and other code loaded at the same
 * address would be walked with the old rules (docs/limits.md).
 *
 * Each thread also keeps its last walk: every state (pc, rsp, rbp) it went
 * through and the rule of each step, so the words each step loaded are
 * known. A walk is a function of its state and of the words it loads
 * (rules are fixed per code address), so when a new walk reaches a state
 * (pc and rsp) the last one went through, the last one's steps from there
 * are the new one's for as long as the return address each loaded still
 * holds what it held and the walk's rbp is the last one's where a step
 * reads it: checking that is a load and a compare a step, none waiting for
 * the one before, where walking is a rule lookup and loads that each wait
 * for the last. Consecutive events share most of their outer frames (the
 * interpreter, the framework's dispatch), and those are the frames that
 * are only checked. rbp is compared only where a step's CFA is rbp's: in
 * code without frame pointers it holds any variable, and a frame that
 * saves it saves a value that changes from call to call while the return
 * addresses do not. Where a return address differs, or the rbp a step
 * reads, the walk goes on by the rules from the last state that matched,
 * and may meet the last walk again higher up.
 * tests/progs/drv_unwind.c's memo takes each of these ways.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "shim/base/base.h"
#include "shim/record/record_int.h"

#if defined(__x86_64__)

/* A rule as one word, never 0: bit 0 set; bits 1-2 the kind; bit 3 CFA
 * from rbp; bit 4 rbp saved; bits 8-15 ra_off; 16-31 rbp_off; 32-63
 * cfa_off. */
#define R_SET 1u
#define R_KIND(v) ((unsigned)((v) >> 1) & 3u)
#define R_CFA_RBP(v) (((v) >> 3) & 1u)
#define R_RBP_SAVED(v) (((v) >> 4) & 1u)
#define R_RA_OFF(v) ((int64_t)(int8_t)((v) >> 8))
#define R_RBP_OFF(v) ((int64_t)(int16_t)((v) >> 16))
#define R_CFA_OFF(v) ((int64_t)(int32_t)((v) >> 32))

static uint64_t pack(const struct gs_cfi_rule *r)
{
    if (r->kind == GS_CFI_FRAME && (r->ra_off < INT8_MIN || r->ra_off > INT8_MAX))
        return R_SET | (uint64_t)GS_CFI_UNSURE << 1;
    return R_SET | (uint64_t)r->kind << 1 | (uint64_t)(r->cfa_rbp != 0) << 3 |
           (uint64_t)(r->rbp_saved != 0) << 4 | (uint64_t)(uint8_t)(int8_t)r->ra_off << 8 |
           (uint64_t)(uint16_t)r->rbp_off << 16 | (uint64_t)(uint32_t)r->cfa_off << 32;
}

typedef int (*find_object_fn)(void *, struct dl_find_object *);
static find_object_fn find_object; /* glibc's _dl_find_object (2.35 on): lock-free */
static int find_object_state; /* 0 not looked up, 1 looked up */

static uint64_t read_rule(uint64_t target)
{
    struct gs_cfi_rule r = {.kind = GS_CFI_UNSURE};
    if (!__atomic_load_n(&find_object_state, __ATOMIC_ACQUIRE)) {
        __atomic_store_n(&find_object,
                         (find_object_fn)gs_real_dlsym(RTLD_DEFAULT, "_dl_find_object"),
                         __ATOMIC_RELAXED);
        __atomic_store_n(&find_object_state, 1, __ATOMIC_RELEASE);
    }
    find_object_fn find = __atomic_load_n(&find_object, __ATOMIC_RELAXED);
    struct dl_find_object o;
    if (find && find((void *)(uintptr_t)target, &o) == 0 && o.dlfo_eh_frame)
        gs_cfi_rule(o.dlfo_eh_frame, target, &r);
    return pack(&r);
}

/* The shared table of rules: open addressing on the address; a slot is
 * claimed by writing its key, and its rule is stored after, so a reader
 * that finds the key before the rule works the rule out itself. When a
 * run of slots is full the rule is worked out each time. */
#define RULE_SLOTS (1u << 16)
#define RULE_PROBES 16
static struct {
    uint64_t key, rule;
} rules[RULE_SLOTS];

static uint64_t rule_at(uint64_t target)
{
    /* code addresses differ in their low bits: they are the index, mixed
     * with the next ones for modules loaded 64 KiB apart */
    uint32_t i = (uint32_t)(target ^ target >> 16) & (RULE_SLOTS - 1);
    for (unsigned probe = 0; probe < RULE_PROBES; probe++, i = (i + 1) & (RULE_SLOTS - 1)) {
        uint64_t k = __atomic_load_n(&rules[i].key, __ATOMIC_ACQUIRE);
        if (k == target) {
            uint64_t v = __atomic_load_n(&rules[i].rule, __ATOMIC_ACQUIRE);
            return v ? v : read_rule(target);
        }
        if (k == 0) {
            uint64_t v = read_rule(target), expected = 0;
            if (__atomic_compare_exchange_n(&rules[i].key, &expected, target, 0, __ATOMIC_ACQ_REL,
                                            __ATOMIC_ACQUIRE))
                __atomic_store_n(&rules[i].rule, v, __ATOMIC_RELEASE);
            return v;
        }
    }
    return read_rule(target);
}

/* The calling thread's stack, [lo, hi), read once. */
static __thread struct {
    uint64_t lo, hi;
    int state; /* 0 not read, 1 read, -1 not to be had */
} bounds;

static int stack_bounds(void)
{
    if (bounds.state)
        return bounds.state > 0;
    bounds.state = -1;
    pthread_attr_t attr;
    if (pthread_getattr_np(pthread_self(), &attr) != 0)
        return 0;
    void *addr;
    size_t size;
    if (pthread_attr_getstack(&attr, &addr, &size) == 0 && size) {
        bounds.lo = (uint64_t)(uintptr_t)addr;
        bounds.hi = bounds.lo + size;
        bounds.state = 1;
    }
    pthread_attr_destroy(&attr);
    return bounds.state > 0;
}

/* The thread's last walk: states 0..len-1, each a (pc, sp, fp), the rule
 * of the step from it (0 for the last) and at, where that step loaded its
 * return address (the next state's pc; the step's CFA is the next state's
 * sp). fp is the walk's rbp in that state where the step reads it (its CFA
 * is rbp's); in a state taken on from the walk before, elsewhere, it may
 * be that walk's. pc 0 in the last state: the chain ended there. Each a
 * column of its own, so that checking a step reads three words and taking
 * states on is a copy of each column. Two per thread: the walk reads one
 * and writes the other, states it walked and states it took on from the
 * one it reads. */
struct memo {
    unsigned cap, len;  /* len 0: nothing to go on */
    unsigned first_out; /* the first state outside the shim, whose pc was kept */
    uint64_t *pc, *sp, *fp, *rule, *at;
};
static __thread struct memo *memo_read, *memo_write;
static __thread int memo_none; /* could not be allocated: walk without */
static __thread enum gs_walk_memo memo_use; /* how the thread's last walk used the one before */
static pthread_key_t memo_key;
static pthread_once_t memo_once = PTHREAD_ONCE_INIT;
static int memo_key_ok;

static void memo_free(void *pair)
{
    memo_read = memo_write = NULL; /* a later walk of this thread starts anew */
    free(pair);
}

static void memo_key_init(void) { memo_key_ok = pthread_key_create(&memo_key, memo_free) == 0; }

static int memo_get(void)
{
    if (memo_read)
        return 1;
    if (memo_none)
        return 0;
    pthread_once(&memo_once, memo_key_init);
    /* the frames kept and the shim's own */
    unsigned cap = gs_config()->stack_depth + 32;
    struct memo *pair =
        memo_key_ok ? calloc(1, 2 * sizeof *pair + 2 * 5 * cap * sizeof(uint64_t)) : NULL;
    if (!pair || pthread_setspecific(memo_key, pair) != 0) {
        free(pair);
        memo_none = 1;
        return 0;
    }
    uint64_t *col = (uint64_t *)(pair + 2);
    for (int m = 0; m < 2; m++, col += 5 * cap)
        pair[m] = (struct memo){.cap = cap,
                                .pc = col,
                                .sp = col + cap,
                                .fp = col + 2 * cap,
                                .rule = col + 3 * cap,
                                .at = col + 4 * cap};
    memo_read = pair;
    memo_write = pair + 1;
    return 1;
}

#define LOAD(at) (*(const uint64_t *)(uintptr_t)(at))

/* The rbp of a walk that took on the last walk's states from j, with rbp
 * own, in state i: the word the last step from j to i that saves rbp
 * loads, else own. */
__attribute__((no_sanitize_address)) static uint64_t rbp_in(const struct memo *l, unsigned j,
                                                            unsigned i, uint64_t own)
{
    for (unsigned t = i; t > j; t--)
        if (R_RBP_SAVED(l->rule[t - 1]))
            return LOAD(l->sp[t] + (uint64_t)R_RBP_OFF(l->rule[t - 1]));
    return own;
}

/* How far the last walk's steps from its state j hold for this walk, which
 * is in that state with rbp *fp: the first state i (j <= i < end) whose
 * step does not hold, or end - 1. A step holds when the return address it
 * loaded still holds what it held, and when this walk's rbp is the last
 * walk's wherever the step reads it (its CFA is rbp's). rbp is the one
 * register a state has besides pc and sp, and it often holds a variable of
 * the code's, a frame pointer only where a rule says so: a step that loads
 * an rbp saved in its frame takes the word as it is now, whether or not it
 * is the last walk's, and it matters only if a later step reads it. So the
 * states j..i-1 are this walk's but for rbp where no step reads it, which
 * no walk looks at. Every word a step loaded is above its state's sp, so
 * above this walk's. *fp becomes the walk's rbp in state i. */
__attribute__((no_sanitize_address)) static unsigned holds(const struct memo *l, unsigned j,
                                                           unsigned end, uint64_t *fp)
{
    const uint64_t *pc = l->pc, *rule = l->rule, *at = l->at;
    unsigned i = j;
    for (; i + 1 < end; i++) {
        uint64_t r = rule[i];
        if (R_CFA_RBP(r) && rbp_in(l, j, i, *fp) != l->fp[i])
            break;
        if (LOAD(at[i]) != pc[i + 1])
            break;
    }
    *fp = rbp_in(l, j, i, *fp);
    return i;
}

/* Copies states [from, from + m) of one memo to [to, to + m) of another:
 * a few by hand, more a column at a time. */
static void take_on(struct memo *out, unsigned to, const struct memo *l, unsigned from, unsigned m)
{
    if (m <= 16) {
        for (unsigned t = 0; t < m; t++) {
            out->pc[to + t] = l->pc[from + t];
            out->sp[to + t] = l->sp[from + t];
            out->fp[to + t] = l->fp[from + t];
            out->rule[to + t] = l->rule[from + t];
            out->at[to + t] = l->at[from + t];
        }
        return;
    }
    size_t bytes = m * sizeof(uint64_t);
    memcpy(out->pc + to, l->pc + from, bytes);
    memcpy(out->sp + to, l->sp + from, bytes);
    memcpy(out->fp + to, l->fp + from, bytes);
    memcpy(out->rule + to, l->rule + from, bytes);
    memcpy(out->at + to, l->at + from, bytes);
}

/* The loads read the program's stack frames, which AddressSanitizer does
 * not know the walker may read. */
__attribute__((noinline, no_sanitize_address)) int gs_walk_stack(uint64_t *pcs, unsigned max)
{
    uint64_t pc, sp, fp;
    __asm__ volatile("leaq 0(%%rip), %0\n\tmovq %%rsp, %1\n\tmovq %%rbp, %2"
                     : "=r"(pc), "=r"(sp), "=r"(fp));
    if (!max)
        return 0;
    if (!stack_bounds() || sp < bounds.lo || sp >= bounds.hi)
        return -1; /* not on the thread's own stack */
    const uint64_t top = bounds.hi;
    /* last: the thread's last walk, j the first of its states not below
     * this walk's; out: this walk's */
    struct memo *out = memo_get() ? memo_write : NULL;
    const struct memo *last = out ? memo_read : NULL;
    unsigned last_len = last ? last->len : 0, j = 0;
    memo_use = GS_WALK_NEW;
    int ruled = 0; /* a step was worked out by the rules */
    uint64_t target = pc; /* the first frame is exact; a caller's is its call, pc - 1 */
    unsigned n = 0, k = 0; /* frames kept; states gone through */
    unsigned first_out = 0;
    int in_shim = 1; /* the shim's own frames come first and are left out */
    for (;;) {
        if (in_shim && !gs_in_shim((const void *)(uintptr_t)pc)) {
            in_shim = 0;
            first_out = k;
        }
        if (last_len && out) {
            while (j < last_len && last->sp[j] < sp)
                j++;
            /* the same state, as far in or out of the shim's frames, and the
             * first state only for the first (its rule is its exact pc's) */
            if (j < last_len && last->sp[j] == sp && last->pc[j] == pc &&
                (in_shim ? j < last->first_out : j >= last->first_out) && (j == 0) == (k == 0)) {
                memo_use = GS_WALK_WENT_ON;
                unsigned skip = in_shim ? last->first_out - j : 0; /* the shim's, not kept */
                unsigned room = max - n + skip < out->cap - k ? max - n + skip : out->cap - k;
                unsigned lim = last_len - j > room ? j + room + 1 : last_len;
                unsigned i = holds(last, j, lim, &fp);
                unsigned m = i - j; /* states j..i-1 taken on; i is this walk's too */
                unsigned kept = m > skip ? m - skip : 0;
                take_on(out, k, last, j, m);
                memcpy(pcs + n, last->pc + j + skip, kept * sizeof *pcs);
                if (in_shim && kept) { /* past the shim's frames */
                    in_shim = 0;
                    first_out = k + skip;
                }
                n += kept;
                k += m;
                if (n == max) {
                    k--; /* the last state kept is the last taken on */
                    goto done;
                }
                pc = last->pc[i];
                sp = last->sp[i];
                target = k ? pc - 1 : pc;
                j = i + 1; /* where the walk goes on by the rules, not to be joined again */
                if (pc == 0)
                    goto chain_end;
                continue; /* state i: in or out of the shim, then its step */
            }
        }
        uint64_t r = rule_at(target);
        unsigned kind = R_KIND(r);
        if (kind == GS_CFI_UNSURE)
            return -1;
        if (out) {
            if (k < out->cap) {
                out->pc[k] = pc;
                out->sp[k] = sp;
                out->fp[k] = fp;
                out->rule[k] = r;
            } else {
                out = NULL; /* deeper than a memo holds: walk on without */
            }
        }
        if (!in_shim) {
            pcs[n++] = pc;
            if (n == max)
                goto done;
        }
        if (kind == GS_CFI_OUTERMOST)
            goto done;
        ruled = 1;
        uint64_t cfa = (R_CFA_RBP(r) ? fp : sp) + (uint64_t)R_CFA_OFF(r);
        uint64_t ra_at = cfa + (uint64_t)R_RA_OFF(r);
        /* The step would not climb the stack, or would leave it, or load a
         * word below the frame's sp, where a frame that calls keeps nothing */
        if (cfa <= sp || cfa > top || ra_at < sp || ra_at > top - 8)
            return -1;
        if (R_RBP_SAVED(r)) {
            uint64_t fp_at = cfa + (uint64_t)R_RBP_OFF(r);
            if (fp_at < sp || fp_at > top - 8)
                return -1;
            fp = LOAD(fp_at);
        }
        if (out)
            out->at[k] = ra_at;
        pc = LOAD(ra_at);
        sp = cfa;
        k++;
        if (pc == 0)
            goto chain_end;
        target = pc - 1;
    }
chain_end:
    if (out && k < out->cap) { /* the end of the chain, kept as a state */
        out->pc[k] = 0;
        out->sp[k] = sp;
        out->fp[k] = fp;
        out->rule[k] = 0;
    } else {
        out = NULL;
    }
done:
    if (memo_use == GS_WALK_WENT_ON && !ruled)
        memo_use = GS_WALK_CHECKED;
    if (out) {
        out->len = k + 1;
        out->first_out = first_out;
        memo_write = memo_read;
        memo_read = out;
    } else if (memo_read) {
        memo_read->len = 0; /* walked without a memo: nothing to go on */
    }
    return (int)n;
}

enum gs_walk_memo gs_walk_memo(void) { return memo_use; }

#else

enum gs_walk_memo gs_walk_memo(void) { return GS_WALK_NEW; }

int gs_walk_stack(uint64_t *pcs, unsigned max)
{
    (void)pcs;
    (void)max;
    return -1; /* libunwind's alone on other machines */
}

#endif
