/*
 * test_pyread.c - reading Python frames from memory (shim/record/pyread.c,
 * shim/record/pylines.c, shim/record/pylayout.c): lines from each coding of the line
 * table (the location table against what CPython 3.11 itself says of real
 * code objects: pylines_vectors.h, made by make_pylines_vectors.py), the
 * walk over frames laid out in memory as 3.11 lays them out, and a wrong
 * layout found without a crash. The layouts written in are compared with
 * the interpreter's own headers in test_pylayout.c.
 */
#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>

#include "shim/record/pyread.h"
#include "pylines_vectors.h"

Test(pylines, location_table_says_what_cpython_says)
{
    size_t n = sizeof pylines_vectors / sizeof pylines_vectors[0];
    cr_assert(n >= 8, "vectors of several code objects");
    for (size_t i = 0; i < n; i++) {
        const struct pylines_vector *v = &pylines_vectors[i];
        for (unsigned u = 0; u < v->units; u++)
            cr_assert_eq(gs_pylines_line(GS_PYLINES_LOCATIONS, v->table, v->table_len,
                                         v->first_line, (int)u * 2),
                         v->lines[u], "%s, code unit %u", v->name, u);
        cr_assert_eq(gs_pylines_line(GS_PYLINES_LOCATIONS, v->table, v->table_len,
                                     v->first_line, -2),
                     v->first_line, "%s not started: its first line", v->name);
        cr_assert_eq(gs_pylines_line(GS_PYLINES_LOCATIONS, v->table, v->table_len,
                                     v->first_line, (int)v->units * 2),
                     -1, "%s: past its end, no line", v->name);
    }
}

Test(pylines, location_table_cut_anywhere_reads_nothing_past_it)
{
    for (size_t i = 0; i < sizeof pylines_vectors / sizeof pylines_vectors[0]; i++) {
        const struct pylines_vector *v = &pylines_vectors[i];
        for (unsigned len = 0; len < v->table_len; len++) {
            /* a copy exactly len long: AddressSanitizer sees a read past it */
            unsigned char *t = malloc(len ? len : 1);
            memcpy(t, v->table, len);
            for (unsigned u = 0; u < v->units; u += 3)
                (void)gs_pylines_line(GS_PYLINES_LOCATIONS, t, len, v->first_line, (int)u * 2);
            free(t);
        }
    }
}

/* 3.10's co_linetable (Objects/lnotab_notes.txt of 3.10): (bytes, line
 * delta) pairs, -128 for no line, a zero-length pair only moves the line. */
Test(pylines, linetable_of_3_10)
{
    static const uint8_t t[] = {
        6,   0,              /* [0, 6): the first line, 10 */
        0,   2,   4,   1,    /* (no bytes, +2), then [6, 10): 13 */
        2,   0x80,           /* [10, 12): no line */
        254, 0,   8,   0xfd, /* [12, 266): still 13 (a long range), [266, 274): 10 */
    };
    static const struct {
        int addr, line;
    } want[] = {{0, 10}, {5, 10}, {6, 13}, {9, 13}, {10, -1}, {11, -1}, {12, 13},
                {265, 13}, {266, 10}, {273, 10}, {274, -1}, {-2, 10}};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        cr_assert_eq(gs_pylines_line(GS_PYLINES_LINETABLE, t, sizeof t, 10, want[i].addr),
                     want[i].line, "offset %d", want[i].addr);
}

/* 3.9's co_lnotab (Objects/lnotab_notes.txt of 3.9): (bytes, line)
 * increments, the line increment signed; a line is that of the last
 * increment at or before the offset. */
Test(pylines, lnotab_of_3_9)
{
    static const uint8_t t[] = {0, 1, 6, 1, 8, 0xfe, 0, 5, 255, 0, 10, 1};
    static const struct {
        int addr, line;
    } want[] = {{0, 21}, {5, 21}, {6, 22}, {13, 22}, {14, 25}, {20, 25}, {268, 25}, {269, 25},
                {279, 26}, {1000, 26}, {-1, 20}};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        cr_assert_eq(gs_pylines_line(GS_PYLINES_LNOTAB, t, sizeof t, 20, want[i].addr),
                     want[i].line, "offset %d", want[i].addr);
}

/* ---- frames laid out as 3.11 lays them out ---- */

static char code_type, unicode_type, bytes_type;

struct fake {
    _Alignas(16) uint8_t tstate[128], cframe[32];
    _Alignas(16) uint8_t frames[3][80];
    _Alignas(16) uint8_t codes[3][256];
    _Alignas(16) uint8_t strs[6][96];
    _Alignas(16) uint8_t tables[3][64];
};

static void put_ptr(uint8_t *base, int off, const void *p) { memcpy(base + off, &p, sizeof p); }
static void put_i64(uint8_t *base, int off, int64_t v) { memcpy(base + off, &v, sizeof v); }
static void put_i32(uint8_t *base, int off, int32_t v) { memcpy(base + off, &v, sizeof v); }

static void make_str(const struct gs_pylayout *l, uint8_t *s, const char *text)
{
    put_ptr(s, l->ob_type, &unicode_type);
    put_i64(s, l->uni_length, (int64_t)strlen(text));
    put_i32(s, l->uni_state, 1 << 2 | 1 << 5 | 1 << 6); /* kind 1, compact, ascii */
    memcpy(s + l->uni_ascii_size, text, strlen(text) + 1);
}

/* Three frames, innermost first: f (line 7 at code unit 2), g (its line 31
 * at unit 1), and the entry frame's h. Each code's table: one "no column"
 * entry per code unit, +1 line each. */
static void make_frames(struct fake *m, const struct gs_pylayout *l)
{
    static const char *const files[] = {"a.py", "b.py", "c.py"};
    static const char *const names[] = {"f", "C.g", "<module>"};
    static const int first[] = {5, 30, 1};
    static const int unit[] = {2, 1, 0};
    memset(m, 0, sizeof *m);
    for (int i = 0; i < 3; i++) {
        uint8_t *code = m->codes[i], *frame = m->frames[i];
        put_ptr(code, l->ob_type, &code_type);
        put_i64(code, l->var_size, 4); /* code units */
        make_str(l, m->strs[2 * i], files[i]);
        make_str(l, m->strs[2 * i + 1], names[i]);
        put_ptr(code, l->co_filename, m->strs[2 * i]);
        put_ptr(code, l->co_name, m->strs[2 * i + 1]);
        put_i32(code, l->co_firstlineno, first[i]);
        put_i32(code, l->co_firsttraceable, 0);
        uint8_t *table = m->tables[i];
        put_ptr(table, l->ob_type, &bytes_type);
        put_i64(table, l->var_size, 8);
        for (int k = 0; k < 4; k++) { /* 13 << 3: no column; 0: one unit; svarint +1 = 2 */
            table[l->bytes_sval + 2 * k] = 0x80 | 13 << 3;
            table[l->bytes_sval + 2 * k + 1] = k ? 2 : 0;
        }
        put_ptr(code, l->co_linetable, table);
        put_ptr(frame, l->fr_code, code);
        put_ptr(frame, l->fr_instr, code + l->co_code + 2 * unit[i]);
        put_ptr(frame, l->fr_previous, i < 2 ? m->frames[i + 1] : NULL);
    }
    put_ptr(m->cframe, l->cframe_frame, m->frames[0]);
    put_ptr(m->tstate, l->ts_cframe, m->cframe);
}

static struct gs_pylayout layout311(void)
{
    struct gs_pylayout l = *gs_pylayout_builtin(11);
    l.code_type = &code_type;
    l.unicode_type = &unicode_type;
    l.bytes_type = &bytes_type;
    return l;
}

static void *any_type(const char *name)
{
    (void)name;
    return &code_type;
}

/* The walk's loads do not check their offsets: gs_pylayout_init refuses a
 * layout that lacks one it reads (pyread.h), and every layout written in
 * must pass. */
Test(pyread, every_written_in_layout_has_each_offset_the_walk_reads)
{
    for (int minor = 9; minor <= 12; minor++) {
        struct gs_pylayout l;
        const char *why = "";
        cr_assert_not_null(gs_pylayout_builtin(minor), "3.%d", minor);
        cr_assert_eq(gs_pylayout_init(&l, minor, any_type, &why), 0, "3.%d: %s", minor, why);
    }
}

static void check_frames(const struct gs_pyframe *f, int n, const struct gs_pylayout *l)
{
    static const char *const names[] = {"f", "C.g", "<module>"};
    static const int lines[] = {7, 31, 1};
    cr_assert_eq(n, 3, "three frames");
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(f[i].name_len, strlen(names[i]));
        cr_assert(memcmp(f[i].name, names[i], f[i].name_len) == 0, "frame %d: %.*s", i,
                  (int)f[i].name_len, f[i].name);
        cr_assert_eq(f[i].file_kind, 1);
        cr_assert_eq(gs_pylines_line(l->lines, f[i].table, f[i].table_len, f[i].first_line,
                                     f[i].addr),
                     lines[i], "frame %d's line", i);
    }
}

Test(pyread, frames_of_a_3_11_layout_plain_and_checked)
{
    static struct fake m;
    struct gs_pylayout l = layout311();
    make_frames(&m, &l);
    struct gs_pyframe f[8];
    for (int mode = GS_PYREAD_PLAIN; mode <= GS_PYREAD_CHECKED; mode++) {
        const void *next = NULL;
        int n = gs_pyread_frames(&l, (enum gs_pyread_mode)mode, m.tstate, &next, f, 8);
        check_frames(f, n, &l);
        cr_assert_null(next, "to the end");
    }
}

/* GS_PYREAD_WHERE reads each frame's code object and instruction only; its
 * names and line table come with gs_pyread_code, which checks their types
 * then: a name that is not a str fails there, not in the walk. */
Test(pyread, where_each_frame_is_and_its_names_when_asked)
{
    static struct fake m;
    struct gs_pylayout l = layout311();
    make_frames(&m, &l);
    struct gs_pyframe plain[8], f[8];
    const void *next = NULL;
    cr_assert_eq(gs_pyread_frames(&l, GS_PYREAD_PLAIN, m.tstate, &next, plain, 8), 3);
    next = NULL;
    cr_assert_eq(gs_pyread_frames(&l, GS_PYREAD_WHERE, m.tstate, &next, f, 8), 3);
    cr_assert_null(next, "to the end");
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(f[i].code, m.codes[i], "frame %d's code", i);
        cr_assert_eq(f[i].addr, plain[i].addr, "frame %d's instruction", i);
        cr_assert(plain[i].named && !f[i].named, "frame %d: named only when asked", i);
        cr_assert_eq(gs_pyread_code(&l, &f[i]), 0);
        cr_assert(f[i].named);
    }
    check_frames(f, 3, &l);
    put_ptr(m.strs[3], l.ob_type, &bytes_type); /* g's name no longer a str */
    next = NULL;
    cr_assert_eq(gs_pyread_frames(&l, GS_PYREAD_WHERE, m.tstate, &next, f, 8), 3,
                 "where the frames are reads no name");
    cr_assert_eq(gs_pyread_code(&l, &f[0]), 0);
    cr_assert_eq(gs_pyread_code(&l, &f[1]), -1, "g's name is not a str");
    next = NULL;
    cr_assert_eq(gs_pyread_frames(&l, GS_PYREAD_PLAIN, m.tstate, &next, f, 8), -1,
                 "reading names, the walk fails as before");
}

Test(pyread, in_batches_from_where_the_last_stopped)
{
    static struct fake m;
    struct gs_pylayout l = layout311();
    make_frames(&m, &l);
    struct gs_pyframe f[3];
    const void *next = NULL;
    cr_assert_eq(gs_pyread_frames(&l, GS_PYREAD_PLAIN, m.tstate, &next, f, 2), 2);
    cr_assert_eq(next, m.frames[2], "stopped before the third");
    cr_assert_eq(gs_pyread_frames(&l, GS_PYREAD_PLAIN, m.tstate, &next, f + 2, 2), 1);
    check_frames(f, 3, &l);
}

Test(pyread, frames_not_started_are_skipped_as_the_api_skips_them)
{
    static struct fake m;
    struct gs_pylayout l = layout311();
    make_frames(&m, &l);
    put_i32(m.codes[1], l.co_firsttraceable, 2); /* g's frame at unit 1: not started */
    struct gs_pyframe f[8];
    const void *next = NULL;
    cr_assert_eq(gs_pyread_frames(&l, GS_PYREAD_PLAIN, m.tstate, &next, f, 8), 2);
    cr_assert_eq(f[1].name_len, 8, "the entry frame after f");
}

/* Each way a layout can be wrong, read with checked loads: -1, no fault.
 * The wrong offsets land on fields the right layout does not read
 * (_PyInterpreterFrame's f_locals and frame_obj, a thread state field
 * after cframe, a code object's line table), which hold what a wrong
 * offset would find: pointers to nowhere, an object of another type. */
Test(pyread, a_wrong_layout_fails_without_a_fault)
{
    static struct fake m;
    struct gs_pyframe f[8];
    struct gs_pylayout good = layout311();
    static const struct {
        const char *what;
        int delta[4]; /* fr_previous, fr_code, co_filename, ts_cframe */
    } wrong[] = {
        {"previous frame misplaced", {-8, 0, 0, 0}},
        {"code misplaced", {0, -8, 0, 0}},
        {"file name misplaced", {0, 0, 24, 0}},
        {"cframe misplaced", {0, 0, 0, 8}},
    };
    for (size_t i = 0; i < sizeof wrong / sizeof wrong[0]; i++) {
        make_frames(&m, &good);
        put_ptr(m.frames[0], 40, (void *)0x18); /* frame_obj */
        put_ptr(m.frames[0], 24, (void *)0x28); /* f_locals */
        put_ptr(m.tstate, good.ts_cframe + 8, (void *)0x38);
        const void *next = NULL;
        cr_assert_eq(gs_pyread_frames(&good, GS_PYREAD_CHECKED, m.tstate, &next, f, 8), 3,
                     "the right layout reads past all of it");
        struct gs_pylayout l = good;
        l.fr_previous += wrong[i].delta[0];
        l.fr_code += wrong[i].delta[1];
        l.co_filename += wrong[i].delta[2];
        l.ts_cframe += wrong[i].delta[3];
        next = NULL;
        cr_assert_eq(gs_pyread_frames(&l, GS_PYREAD_CHECKED, m.tstate, &next, f, 8), -1, "%s",
                     wrong[i].what);
    }
}

Test(pyread, an_instruction_outside_its_code_or_a_chain_without_end_fails)
{
    static struct fake m;
    struct gs_pylayout l = layout311();
    struct gs_pyframe f[8];
    make_frames(&m, &l);
    put_ptr(m.frames[1], l.fr_instr, m.codes[1] + l.co_code + 8); /* one past its 4 units */
    const void *next = NULL;
    cr_assert_eq(gs_pyread_frames(&l, GS_PYREAD_PLAIN, m.tstate, &next, f, 8), -1);
    make_frames(&m, &l);
    put_ptr(m.frames[2], l.fr_previous, m.frames[0]); /* a cycle */
    next = NULL;
    cr_assert_eq(gs_pyread_frames(&l, GS_PYREAD_PLAIN, m.tstate, &next, f, 8), 8,
                 "a cycle reads as frames up to max");
    l.owner_skip = ~0u; /* every frame skipped: the cycle would never end */
    next = NULL;
    cr_assert_eq(gs_pyread_frames(&l, GS_PYREAD_PLAIN, m.tstate, &next, f, 8), -1,
                 "a chain that does not end fails");
}
