/*
 * cfi.c - the unwind rule at one code address, read from the call-frame
 * information (.eh_frame, found through .eh_frame_hdr) of the module that
 * holds it: what walk.c needs to step from a frame to its caller on x86-64.
 *
 * A rule says where the frame's CFA is (the stack pointer or the frame
 * pointer plus an offset), where the return address and the caller's frame
 * pointer were saved (at the CFA plus an offset), or that the frame is the
 * outermost one (the return address is undefined: _start, a thread's
 * start). Anything else the DWARF rules can say (a CFA or a register given
 * by an expression, a register saved in another register, a signal frame, a
 * CIE of a version or augmentation not known here) makes the rule UNSURE,
 * and the caller falls back to libunwind for the whole stack. So this reads
 * the common forms only, and never guesses.
 *
 * The module's memory is the program's own loaded image, read as libunwind
 * reads it; every read is still bounded by the lengths the records give.
 * The reference is the DWARF 5 standard, section 6.4, and the Linux
 * Standard Base's .eh_frame (pointer encodings, augmentations) and
 * .eh_frame_hdr (the sorted search table).
 */
#include <string.h>

#include "shim/record/record_int.h"

/* DWARF register numbers on x86-64 */
#define REG_RBP 6
#define REG_RSP 7
#define REG_RA 16

/* The registers a rule follows: the frame pointer, the stack pointer
 * (whose value in the caller is the CFA unless a rule says otherwise), and
 * the return address. */
enum { T_RBP, T_RSP, T_RA, TRACKED };
enum how { SAME, AT, UNDEF, BAD };

struct state {
    int cfa_reg; /* REG_RSP, REG_RBP, or -1 when not one of them */
    int64_t cfa_off;
    enum how how[TRACKED];
    int64_t off[TRACKED];
};

struct cie {
    uint64_t code_align;
    int64_t data_align;
    uint8_t fde_enc; /* pointer encoding of the FDE's addresses */
    int has_aug;     /* 'z': FDEs carry an augmentation length */
    const uint8_t *insns, *end;
};

static int tracked(uint64_t reg)
{
    return reg == REG_RBP ? T_RBP : reg == REG_RSP ? T_RSP : reg == REG_RA ? T_RA : -1;
}

static int uleb(const uint8_t **p, const uint8_t *end, uint64_t *out)
{
    uint64_t v = 0;
    for (unsigned shift = 0; *p < end && shift < 64; shift += 7) {
        uint8_t b = *(*p)++;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *out = v;
            return 0;
        }
    }
    return -1;
}

static int sleb(const uint8_t **p, const uint8_t *end, int64_t *out)
{
    uint64_t v = 0;
    unsigned shift = 0;
    while (*p < end && shift < 64) {
        uint8_t b = *(*p)++;
        v |= (uint64_t)(b & 0x7f) << shift;
        shift += 7;
        if (!(b & 0x80)) {
            if (shift < 64 && (b & 0x40))
                v |= ~(uint64_t)0 << shift;
            *out = (int64_t)v;
            return 0;
        }
    }
    return -1;
}

static int fixed(const uint8_t **p, const uint8_t *end, size_t len, uint64_t *out)
{
    if ((size_t)(end - *p) < len)
        return -1;
    uint64_t v = 0;
    memcpy(&v, *p, len); /* little-endian */
    *p += len;
    *out = v;
    return 0;
}

/* A pointer in encoding enc (DW_EH_PE_*): absolute, pc-relative or relative
 * to datarel; indirect and other bases are not read. */
static int encoded(const uint8_t **p, const uint8_t *end, uint8_t enc, uint64_t datarel,
                   uint64_t *out)
{
    uint64_t base = (uint64_t)(uintptr_t)*p, v = 0;
    int64_t s = 0;
    int ok;
    switch (enc & 0x0f) {
    case 0x00: ok = fixed(p, end, 8, &v); break; /* absptr */
    case 0x01: ok = uleb(p, end, &v); break;
    case 0x02: ok = fixed(p, end, 2, &v); break;
    case 0x03: ok = fixed(p, end, 4, &v); break;
    case 0x04: ok = fixed(p, end, 8, &v); break;
    case 0x09: ok = sleb(p, end, &s), v = (uint64_t)s; break;
    case 0x0a: ok = fixed(p, end, 2, &v), v = (uint64_t)(int64_t)(int16_t)v; break;
    case 0x0b: ok = fixed(p, end, 4, &v), v = (uint64_t)(int64_t)(int32_t)v; break;
    case 0x0c: ok = fixed(p, end, 8, &v); break;
    default: return -1;
    }
    if (ok != 0)
        return -1;
    switch (enc & 0xf0) {
    case 0x00: break;
    case 0x10: v += base; break;    /* pcrel */
    case 0x30: v += datarel; break; /* datarel */
    default: return -1;
    }
    *out = v;
    return 0;
}

/* The record (CIE or FDE) at p: its body [*body, *end), or -1. */
static int record(const uint8_t *p, const uint8_t **body, const uint8_t **end)
{
    uint32_t len;
    memcpy(&len, p, 4);
    if (len == 0 || len >= 0xfffffff0u) /* the end, or a 64-bit record: not read here */
        return -1;
    *body = p + 4;
    *end = p + 4 + len;
    return 0;
}

static int read_cie(const uint8_t *p, struct cie *c)
{
    const uint8_t *q, *end;
    uint64_t v;
    if (record(p, &q, &end) != 0 || end - q < 6)
        return -1;
    uint32_t id;
    memcpy(&id, q, 4);
    q += 4;
    if (id != 0)
        return -1; /* not a CIE */
    uint8_t version = *q++;
    if (version != 1 && version != 3)
        return -1;
    const char *aug = (const char *)q;
    const uint8_t *nul = memchr(q, 0, (size_t)(end - q));
    if (!nul)
        return -1;
    q = nul + 1;
    if (uleb(&q, end, &c->code_align) != 0 || sleb(&q, end, &c->data_align) != 0)
        return -1;
    if (version == 1) {
        if (q >= end)
            return -1;
        v = *q++;
    } else if (uleb(&q, end, &v) != 0) {
        return -1;
    }
    if (v != REG_RA)
        return -1;
    c->fde_enc = 0x00;
    c->has_aug = aug[0] == 'z';
    if (aug[0] && !c->has_aug)
        return -1; /* an augmentation without its length cannot be skipped */
    const uint8_t *data = q, *data_end = q;
    if (c->has_aug) {
        if (uleb(&q, end, &v) != 0 || v > (uint64_t)(end - q))
            return -1;
        data = q;
        data_end = q + v;
        q = data_end;
    }
    for (const char *a = aug + (c->has_aug ? 1 : 0); *a; a++) {
        switch (*a) {
        case 'R':
            if (data >= data_end)
                return -1;
            c->fde_enc = *data++;
            break;
        case 'L': /* the LSDA's encoding: a byte */
            if (data >= data_end)
                return -1;
            data++;
            break;
        case 'P': { /* the personality routine: an encoding, then a pointer in it */
            if (data >= data_end)
                return -1;
            uint8_t enc = *data++;
            if (encoded(&data, data_end, enc & 0x7f, 0, &v) != 0)
                return -1;
            break;
        }
        default: /* 'S', a signal frame, or something not known here */
            return -1;
        }
    }
    c->insns = q;
    c->end = end;
    return 0;
}

static void set(struct state *s, uint64_t reg, enum how how, int64_t off)
{
    int t = tracked(reg);
    if (t >= 0) {
        s->how[t] = how;
        s->off[t] = off;
    }
}

/* DW_CFA_restore: reg's rule as the CIE left it (init; none while the CIE's
 * own instructions run). */
static void restore(struct state *s, const struct state *init, uint64_t reg)
{
    int t = tracked(reg);
    if (t >= 0 && init) {
        s->how[t] = init->how[t];
        s->off[t] = init->off[t];
    }
}

/* A CFA register the walk can follow, or -1. */
static int cfa_reg(uint64_t reg) { return reg == REG_RSP || reg == REG_RBP ? (int)reg : -1; }

#define MAX_REMEMBERED 8

/* Runs the instructions [p, end) from the row at *loc up to the row that
 * covers target; init is the CIE's state, for DW_CFA_restore. 1 when it
 * stopped at target, 0 when the instructions ended, -1 when one was not
 * read. */
static int run(const uint8_t *p, const uint8_t *end, const struct cie *c, uint64_t *loc,
               uint64_t target, struct state *s, const struct state *init)
{
    struct state saved[MAX_REMEMBERED];
    unsigned nsaved = 0;
    while (p < end) {
        uint8_t op = *p++;
        uint64_t reg, u, adv = 0;
        int64_t sv;
        switch (op & 0xc0) {
        case 0x40: adv = op & 0x3f; goto advance;
        case 0x80:
            if (uleb(&p, end, &u) != 0)
                return -1;
            set(s, op & 0x3f, AT, (int64_t)u * c->data_align);
            continue;
        case 0xc0:
            restore(s, init, op & 0x3f);
            continue;
        }
        switch (op) {
        case 0x00: continue; /* nop */
        case 0x01:           /* set_loc */
            if (encoded(&p, end, c->fde_enc, 0, &u) != 0)
                return -1;
            if (u > target)
                return 1;
            *loc = u;
            continue;
        case 0x02: if (fixed(&p, end, 1, &adv) != 0) return -1; goto advance;
        case 0x03: if (fixed(&p, end, 2, &adv) != 0) return -1; goto advance;
        case 0x04: if (fixed(&p, end, 4, &adv) != 0) return -1; goto advance;
        case 0x05: /* offset_extended */
            if (uleb(&p, end, &reg) != 0 || uleb(&p, end, &u) != 0)
                return -1;
            set(s, reg, AT, (int64_t)u * c->data_align);
            continue;
        case 0x06: /* restore_extended */
            if (uleb(&p, end, &reg) != 0)
                return -1;
            restore(s, init, reg);
            continue;
        case 0x07: /* undefined */
            if (uleb(&p, end, &reg) != 0)
                return -1;
            set(s, reg, UNDEF, 0);
            continue;
        case 0x08: /* same_value */
            if (uleb(&p, end, &reg) != 0)
                return -1;
            set(s, reg, SAME, 0);
            continue;
        case 0x09: /* register: saved in another register */
            if (uleb(&p, end, &reg) != 0 || uleb(&p, end, &u) != 0)
                return -1;
            set(s, reg, BAD, 0);
            continue;
        case 0x0a: /* remember_state */
            if (nsaved == MAX_REMEMBERED)
                return -1;
            saved[nsaved++] = *s;
            continue;
        case 0x0b: /* restore_state */
            if (nsaved == 0)
                return -1;
            *s = saved[--nsaved];
            continue;
        case 0x0c: /* def_cfa */
            if (uleb(&p, end, &reg) != 0 || uleb(&p, end, &u) != 0)
                return -1;
            s->cfa_reg = cfa_reg(reg);
            s->cfa_off = (int64_t)u;
            continue;
        case 0x0d: /* def_cfa_register */
            if (uleb(&p, end, &reg) != 0)
                return -1;
            if (s->cfa_reg >= 0)
                s->cfa_reg = cfa_reg(reg);
            continue;
        case 0x0e: /* def_cfa_offset */
            if (uleb(&p, end, &u) != 0)
                return -1;
            s->cfa_off = (int64_t)u;
            continue;
        case 0x0f: /* def_cfa_expression */
            if (uleb(&p, end, &u) != 0 || u > (uint64_t)(end - p))
                return -1;
            p += u;
            s->cfa_reg = -1;
            continue;
        case 0x10: /* expression */
        case 0x16: /* val_expression */
            if (uleb(&p, end, &reg) != 0 || uleb(&p, end, &u) != 0 || u > (uint64_t)(end - p))
                return -1;
            p += u;
            set(s, reg, BAD, 0);
            continue;
        case 0x11: /* offset_extended_sf */
            if (uleb(&p, end, &reg) != 0 || sleb(&p, end, &sv) != 0)
                return -1;
            set(s, reg, AT, sv * c->data_align);
            continue;
        case 0x12: /* def_cfa_sf */
            if (uleb(&p, end, &reg) != 0 || sleb(&p, end, &sv) != 0)
                return -1;
            s->cfa_reg = cfa_reg(reg);
            s->cfa_off = sv * c->data_align;
            continue;
        case 0x13: /* def_cfa_offset_sf */
            if (sleb(&p, end, &sv) != 0)
                return -1;
            s->cfa_off = sv * c->data_align;
            continue;
        case 0x14: /* val_offset */
            if (uleb(&p, end, &reg) != 0 || uleb(&p, end, &u) != 0)
                return -1;
            set(s, reg, BAD, 0);
            continue;
        case 0x15: /* val_offset_sf */
            if (uleb(&p, end, &reg) != 0 || sleb(&p, end, &sv) != 0)
                return -1;
            set(s, reg, BAD, 0);
            continue;
        case 0x2e: /* GNU_args_size */
            if (uleb(&p, end, &u) != 0)
                return -1;
            continue;
        case 0x2f: /* GNU_negative_offset_extended */
            if (uleb(&p, end, &reg) != 0 || uleb(&p, end, &u) != 0)
                return -1;
            set(s, reg, AT, -(int64_t)u * c->data_align);
            continue;
        default:
            return -1;
        }
    advance:
        if (adv * c->code_align > target - *loc)
            return 1; /* the next row starts after target */
        *loc += adv * c->code_align;
    }
    return 0;
}

/* The rule for the row of the FDE at fde that covers target. */
static int rule_of_fde(const uint8_t *fde, uint64_t target, struct gs_cfi_rule *r)
{
    const uint8_t *q, *end;
    if (record(fde, &q, &end) != 0 || end - q < 4)
        return -1;
    uint32_t cie_off;
    memcpy(&cie_off, q, 4);
    if (cie_off == 0)
        return -1; /* a CIE, not an FDE */
    struct cie c;
    if (read_cie(q - cie_off, &c) != 0)
        return -1;
    q += 4;
    uint64_t begin, range, u;
    if (encoded(&q, end, c.fde_enc, 0, &begin) != 0 ||
        encoded(&q, end, c.fde_enc & 0x0f, 0, &range) != 0)
        return -1;
    if (target < begin || target - begin >= range)
        return -1; /* no FDE covers it */
    if (c.has_aug) {
        if (uleb(&q, end, &u) != 0 || u > (uint64_t)(end - q))
            return -1;
        q += u;
    }
    struct state s = {.cfa_reg = -1};
    uint64_t loc = begin;
    if (run(c.insns, c.end, &c, &loc, target, &s, NULL) != 0)
        return -1; /* a CIE's instructions never advance */
    struct state init = s;
    if (run(q, end, &c, &loc, target, &s, &init) < 0)
        return -1;

    if (s.cfa_reg < 0 || s.how[T_RSP] != SAME || s.cfa_off < 8 || s.cfa_off > INT32_MAX)
        return -1;
    if (s.how[T_RBP] != SAME && s.how[T_RBP] != AT)
        return -1;
    if (s.how[T_RA] == UNDEF) {
        r->kind = GS_CFI_OUTERMOST;
        return 0;
    }
    if (s.how[T_RA] != AT)
        return -1;
    if (s.off[T_RA] < INT16_MIN || s.off[T_RA] > INT16_MAX || s.off[T_RBP] < INT16_MIN ||
        s.off[T_RBP] > INT16_MAX)
        return -1;
    r->kind = GS_CFI_FRAME;
    r->cfa_rbp = s.cfa_reg == REG_RBP;
    r->rbp_saved = s.how[T_RBP] == AT;
    r->cfa_off = (int32_t)s.cfa_off;
    r->ra_off = (int16_t)s.off[T_RA];
    r->rbp_off = (int16_t)(r->rbp_saved ? s.off[T_RBP] : 0);
    return 0;
}

int gs_cfi_rule(const void *eh_frame_hdr, uint64_t target, struct gs_cfi_rule *r)
{
    memset(r, 0, sizeof *r);
    r->kind = GS_CFI_UNSURE;
    const uint8_t *hdr = eh_frame_hdr;
    if (!hdr || hdr[0] != 1 || hdr[2] != 0x03 || hdr[3] != 0x3b)
        return -1; /* only the search table of 4-byte offsets from the header */
    const uint8_t *p = hdr + 4;
    uint64_t frame, count;
    if (encoded(&p, p + 8, hdr[1], 0, &frame) != 0 || fixed(&p, p + 4, 4, &count) != 0 ||
        count == 0)
        return -1;
    const int32_t *table = (const int32_t *)(const void *)p; /* pairs (start, fde) */
    uint64_t base = (uint64_t)(uintptr_t)hdr;
    if (target < base + (uint64_t)(int64_t)table[0])
        return -1;
    uint64_t lo = 0, hi = count; /* the last entry that starts at or before target */
    while (hi - lo > 1) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (base + (uint64_t)(int64_t)table[2 * mid] <= target)
            lo = mid;
        else
            hi = mid;
    }
    const uint8_t *fde = hdr + table[2 * lo + 1];
    if (rule_of_fde(fde, target, r) != 0) {
        r->kind = GS_CFI_UNSURE;
        return -1;
    }
    return 0;
}
