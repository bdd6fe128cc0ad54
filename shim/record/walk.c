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
 * (sigaltstack, coroutines), or a step that would leave the thread's stack
 * or not climb it. Every load is inside [the walker's own rsp, the stack's
 * top), so a wrong rule can give wrong frames but never a fault. The test
 * tests/integration/test_unwind.py runs the test programs with
 * GPUSHIM_UNWIND=check, which compares every stack with libunwind's.
 *
 * The table keys a rule by the address it was read for and is never
 * emptied: code unloaded by dlclose and other code loaded at the same
 * address would be walked with the old rules (docs/limits.md).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>

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
    const uint64_t floor = sp, top = bounds.hi;
    uint64_t target = pc; /* the first frame is exact; a caller's is its call, pc - 1 */
    unsigned n = 0;
    int in_shim = 1; /* the shim's own frames come first and are left out */
    for (;;) {
        uint64_t r = rule_at(target);
        unsigned kind = R_KIND(r);
        if (kind == GS_CFI_UNSURE)
            return -1;
        if (in_shim && !gs_in_shim((const void *)(uintptr_t)pc))
            in_shim = 0;
        if (!in_shim) {
            pcs[n++] = pc;
            if (n == max)
                return (int)n;
        }
        if (kind == GS_CFI_OUTERMOST)
            return (int)n;
        uint64_t cfa = (R_CFA_RBP(r) ? fp : sp) + (uint64_t)R_CFA_OFF(r);
        uint64_t ra_at = cfa + (uint64_t)R_RA_OFF(r);
        if (cfa <= sp || cfa > top || ra_at < floor || ra_at > top - 8)
            return -1; /* the step would not climb the stack, or leave it */
        if (R_RBP_SAVED(r)) {
            uint64_t fp_at = cfa + (uint64_t)R_RBP_OFF(r);
            if (fp_at < floor || fp_at > top - 8)
                return -1;
            fp = *(const uint64_t *)(uintptr_t)fp_at;
        }
        pc = *(const uint64_t *)(uintptr_t)ra_at;
        sp = cfa;
        if (pc == 0)
            return (int)n; /* the end of the chain */
        target = pc - 1;
    }
}

#else

int gs_walk_stack(uint64_t *pcs, unsigned max)
{
    (void)pcs;
    (void)max;
    return -1; /* libunwind's alone on other machines */
}

#endif
