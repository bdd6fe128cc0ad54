/*
 * test_cfi.c - shim/record/cfi.c and walk.c, the fast unwinder's rules and
 * walk: call-frame information written here byte by byte (an
 * .eh_frame_hdr, a CIE, FDEs, as gcc emits them) and the rule read at each
 * address of it: a prologue's rows one by one, remember/restore_state, the
 * outermost frame (return address undefined); what cfi.c must not guess
 * at (a signal frame's 'S', a CFA given by an expression, a return address
 * saved in a register, an address no FDE covers, instructions cut short)
 * reads as GS_CFI_UNSURE. Then the walk itself on this program's own stack,
 * against libgcc's unwinder (glibc's backtrace); the integration tests
 * compare it with libunwind (run_tests.py --unwind-check).
 */
#include <criterion/criterion.h>
#include <execinfo.h>
#include <stdint.h>
#include <string.h>

#include "shim/record/record_int.h"

/* A buffer of call-frame information: the header, its table, then
 * .eh_frame; the code it describes is at fake addresses (never run). */
static uint8_t mem[4096] __attribute__((aligned(16)));
static size_t used;
#define EH_FRAME 256 /* where .eh_frame starts in mem */
static uint64_t code; /* the first function's address */

static size_t put(const void *p, size_t n)
{
    size_t at = used;
    memcpy(mem + used, p, n);
    used += n;
    return at;
}

static void put32(size_t at, int64_t v)
{
    int32_t x = (int32_t)v;
    memcpy(mem + at, &x, 4);
}

/* A CIE with augmentation aug ("zR" or "zRS"), code alignment 1, data
 * alignment -8, return address column 16, FDE addresses pc-relative
 * sdata4; its initial instructions: CFA = rsp + 8, return address at
 * CFA - 8. Returns its offset. */
static size_t cie(const char *aug)
{
    size_t at = used;
    uint8_t head[4 + 4 + 1] = {0, 0, 0, 0, 0, 0, 0, 0, 1};
    put(head, sizeof head);
    put(aug, strlen(aug) + 1);
    uint8_t rest[] = {1, 0x78, 16, 1, 0x1b, 0x0c, 7, 8, 0x90, 1, 0, 0};
    put(rest, sizeof rest);
    while ((used - at) % 4)
        put("", 1);
    put32(at, (int64_t)(used - at - 4));
    return at;
}

/* An FDE of the CIE at cie_at for [begin, begin + len) with instructions
 * insns. Returns its offset. */
static size_t fde(size_t cie_at, uint64_t begin, uint32_t len, const uint8_t *insns, size_t n)
{
    size_t at = used;
    uint8_t zero[4 + 4 + 4 + 4 + 1] = {0};
    put(zero, sizeof zero);
    put32(at + 4, (int64_t)(at + 4 - cie_at));
    put32(at + 8, (int64_t)(begin - (uint64_t)(uintptr_t)(mem + at + 8)));
    memcpy(mem + at + 12, &len, 4);
    put(insns, n);
    while ((used - at) % 4)
        put("", 1); /* DW_CFA_nop */
    put32(at, (int64_t)(used - at - 4));
    return at;
}

/* The header at mem[0] with a table of the FDEs at fdes[] (sorted). */
static void header(const size_t *fdes, const uint64_t *starts, int n)
{
    uint8_t h[4] = {1, 0x1b, 0x03, 0x3b};
    memcpy(mem, h, 4);
    put32(4, (int64_t)(EH_FRAME - 4));
    uint32_t count = (uint32_t)n;
    memcpy(mem + 8, &count, 4);
    for (int i = 0; i < n; i++) {
        put32(12 + 8 * (size_t)i, (int64_t)(starts[i] - (uint64_t)(uintptr_t)mem));
        put32(16 + 8 * (size_t)i, (int64_t)fdes[i]);
    }
}

static struct gs_cfi_rule rule(uint64_t at)
{
    struct gs_cfi_rule r;
    int rc = gs_cfi_rule(mem, at, &r);
    cr_assert_eq(rc == 0, r.kind != GS_CFI_UNSURE, "the return value agrees with the kind");
    return r;
}

#define FRAME(r, rbp_cfa, off, saved, rbp_at)                                                  \
    do {                                                                                      \
        cr_assert_eq((r).kind, GS_CFI_FRAME);                                                 \
        cr_assert_eq((r).cfa_rbp, rbp_cfa, "CFA from rbp");                                   \
        cr_assert_eq((r).cfa_off, off, "CFA offset %d", (r).cfa_off);                         \
        cr_assert_eq((r).ra_off, -8);                                                         \
        cr_assert_eq((r).rbp_saved, saved, "rbp saved");                                      \
        if (saved)                                                                            \
            cr_assert_eq((r).rbp_off, rbp_at, "rbp at %d", (r).rbp_off);                      \
    } while (0)

/* f: push %rbp (1 byte); mov %rsp,%rbp (3); body to 0x20; leave at 0x20;
 * ret at 0x21 (0x22 bytes). g at 0x40: a remembered state around an
 * early return. h at 0x80: the outermost frame. */
static void build(const char *aug)
{
    memset(mem, 0, sizeof mem);
    used = EH_FRAME;
    code = (uint64_t)(uintptr_t)mem + 0x100000;
    size_t c = cie(aug);
    const uint8_t f_insns[] = {
        0x41,       /* advance 1 */
        0x0e, 16,   /* def_cfa_offset 16 */
        0x86, 2,    /* rbp at CFA - 16 */
        0x43,       /* advance 3 */
        0x0d, 6,    /* def_cfa_register rbp */
        0x02, 0x1c, /* advance_loc1 28: 0x20 */
        0x0c, 7, 8, /* def_cfa rsp + 8 (after leave) */
    };
    const uint8_t g_insns[] = {
        0x44,          /* 0x44, after sub $24,%rsp */
        0x0e, 32,      /* def_cfa_offset 32 */
        0x44,          /* 0x48 */
        0x0a,          /* remember_state */
        0x0e, 8,       /* def_cfa_offset 8: the early return's ret */
        0x41,          /* 0x49 */
        0x0b,          /* restore_state: CFA = rsp + 32 again */
        0x2e, 16,      /* GNU_args_size, read and ignored */
    };
    const uint8_t h_insns[] = {
        0x41,    /* advance 1 */
        0x07, 16 /* the return address is undefined */
    };
    size_t fdes[3];
    fdes[0] = fde(c, code, 0x22, f_insns, sizeof f_insns);
    fdes[1] = fde(c, code + 0x40, 0x20, g_insns, sizeof g_insns);
    fdes[2] = fde(c, code + 0x80, 0x10, h_insns, sizeof h_insns);
    uint64_t starts[3] = {code, code + 0x40, code + 0x80};
    header(fdes, starts, 3);
    cr_assert_lt(used, sizeof mem);
}

Test(cfi, a_prologue_row_by_row)
{
    build("zR");
    FRAME(rule(code), 0, 8, 0, 0);
    FRAME(rule(code + 1), 0, 16, 1, -16);
    FRAME(rule(code + 3), 0, 16, 1, -16);
    FRAME(rule(code + 4), 1, 16, 1, -16);
    FRAME(rule(code + 0x1f), 1, 16, 1, -16);
    FRAME(rule(code + 0x20), 0, 8, 1, -16);
    FRAME(rule(code + 0x21), 0, 8, 1, -16);
}

Test(cfi, remember_and_restore_state)
{
    build("zR");
    FRAME(rule(code + 0x40), 0, 8, 0, 0);
    FRAME(rule(code + 0x43), 0, 8, 0, 0);
    FRAME(rule(code + 0x44), 0, 32, 0, 0);
    FRAME(rule(code + 0x47), 0, 32, 0, 0);
    FRAME(rule(code + 0x48), 0, 8, 0, 0);
    FRAME(rule(code + 0x49), 0, 32, 0, 0);
    FRAME(rule(code + 0x5f), 0, 32, 0, 0);
}

Test(cfi, the_outermost_frame)
{
    build("zR");
    FRAME(rule(code + 0x80), 0, 8, 0, 0);
    cr_assert_eq(rule(code + 0x81).kind, GS_CFI_OUTERMOST);
    cr_assert_eq(rule(code + 0x8f).kind, GS_CFI_OUTERMOST);
}

Test(cfi, addresses_no_fde_covers_are_unsure)
{
    build("zR");
    cr_assert_eq(rule(code - 1).kind, GS_CFI_UNSURE, "before the first function");
    cr_assert_eq(rule(code + 0x22).kind, GS_CFI_UNSURE, "past f's end, before g");
    cr_assert_eq(rule(code + 0x90).kind, GS_CFI_UNSURE, "past the last");
    cr_assert_eq(gs_cfi_rule(NULL, code, &(struct gs_cfi_rule){0}), -1, "no header");
}

Test(cfi, a_signal_frame_is_unsure)
{
    build("zRS");
    cr_assert_eq(rule(code).kind, GS_CFI_UNSURE);
    cr_assert_eq(rule(code + 4).kind, GS_CFI_UNSURE);
}

/* One function with instructions insns, whose rule at code + at is read. */
static struct gs_cfi_rule one(const uint8_t *insns, size_t n, uint64_t at)
{
    memset(mem, 0, sizeof mem);
    used = EH_FRAME;
    code = (uint64_t)(uintptr_t)mem + 0x100000;
    size_t c = cie("zR");
    size_t f = fde(c, code, 0x100, insns, n);
    header(&f, &code, 1);
    return rule(code + at);
}

Test(cfi, what_is_not_read_is_unsure)
{
    /* CFA by an expression (gcc's realigned frames), then a plain one again */
    const uint8_t expr[] = {0x41, 0x0f, 3, 0x76, 0x78, 0x06, 0x41, 0x0c, 7, 16};
    cr_assert_eq(one(expr, sizeof expr, 1).kind, GS_CFI_UNSURE);
    FRAME(one(expr, sizeof expr, 2), 0, 16, 0, 0);
    /* the CFA from a register other than rsp and rbp (r10) */
    const uint8_t r10[] = {0x41, 0x0c, 10, 0};
    cr_assert_eq(one(r10, sizeof r10, 1).kind, GS_CFI_UNSURE);
    /* the return address in a register, and by an expression */
    const uint8_t in_reg[] = {0x41, 0x09, 16, 3};
    cr_assert_eq(one(in_reg, sizeof in_reg, 1).kind, GS_CFI_UNSURE);
    const uint8_t ra_expr[] = {0x41, 0x10, 16, 1, 0x9c};
    cr_assert_eq(one(ra_expr, sizeof ra_expr, 1).kind, GS_CFI_UNSURE);
    /* rbp kept as a value (val_offset) */
    const uint8_t val[] = {0x41, 0x14, 6, 2};
    cr_assert_eq(one(val, sizeof val, 1).kind, GS_CFI_UNSURE);
    /* an instruction not known here */
    const uint8_t unknown[] = {0x41, 0x3f};
    cr_assert_eq(one(unknown, sizeof unknown, 1).kind, GS_CFI_UNSURE);
    /* restore_state with nothing remembered */
    const uint8_t restore[] = {0x41, 0x0b};
    cr_assert_eq(one(restore, sizeof restore, 1).kind, GS_CFI_UNSURE);
    /* cut short: an operand past the end of the FDE */
    const uint8_t cut[] = {0x41, 0x0c, 7, 0x80};
    cr_assert_eq(one(cut, sizeof cut, 1).kind, GS_CFI_UNSURE);
    /* ...but rows before the damage still read */
    FRAME(one(cut, sizeof cut, 0), 0, 8, 0, 0);
}

/* The walk on this program's stack: the same return addresses as libgcc's
 * unwinder (glibc's backtrace), from the caller of the function that asked
 * on, to the outermost frame. */
static int walk_n, bt_n;
static uint64_t walked[256];
static void *traced[256];

__attribute__((noinline)) static void leaf(void)
{
    walk_n = gs_walk_stack(walked, 256);
    bt_n = backtrace(traced, 256);
    __asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) static void middle(int n)
{
    if (n)
        middle(n - 1);
    else
        leaf();
    __asm__ volatile("" ::: "memory");
}

Test(walk, the_same_frames_as_libgcc)
{
    middle(5);
    /* Linked into this program, the shim's image is the program's: the
     * walk leaves out its frames as the shim's own, up to the first frame
     * in a library (Criterion's); from there on it must be libgcc's. */
    cr_assert_gt(walk_n, 2, "the walk went through (%d frames)", walk_n);
    int j = 0;
    while (j < bt_n && (uint64_t)(uintptr_t)traced[j] != walked[0])
        j++;
    cr_assert_geq(j, 8, "libgcc's frames in this program: leaf, 6 middles, the test (%d)", j);
    cr_assert_eq(walk_n, bt_n - j, "frames: walked %d, libgcc %d", walk_n, bt_n - j);
    for (int i = 0; i < walk_n; i++)
        cr_assert_eq(walked[i], (uint64_t)(uintptr_t)traced[j + i], "frame %d", i);
}

Test(walk, stops_at_max)
{
    uint64_t pcs[3];
    cr_assert_eq(gs_walk_stack(pcs, 3), 3);
    cr_assert_eq(gs_walk_stack(pcs, 0), 0);
}
