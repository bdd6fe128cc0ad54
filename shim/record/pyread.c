/*
 * pyread.c - the walk of a thread's own Python frames, read from memory with
 * a layout (pylayout.c): no GIL, no Python API, no reference counts, no
 * allocation, no lock.
 *
 * Why that is safe for the calling thread's own frames: while the thread is
 * inside the call being recorded, none of its frames can return, so each
 * frame, the code object it holds a reference to, and the strings and line
 * table the code object holds stay alive and unchanged whatever other
 * threads do meanwhile (run Python, collect garbage, free other code
 * objects, make frame objects of this thread's frames: that sets a frame's
 * frame_obj, never its code, its place in the chain or its instruction).
 *
 * Every object read is checked to be of the type it should be (its ob_type
 * against the interpreter's PyCode_Type, PyUnicode_Type, PyBytes_Type,
 * PyFrame_Type) and every instruction offset to lie inside its code: a
 * layout that is not the interpreter's fails these at once. Until a layout
 * has proved itself, python.c has the walk read in GS_PYREAD_CHECKED mode,
 * where each load goes through process_vm_readv on the process itself (or,
 * where a sandbox forbids that, through a pipe), which fails with EFAULT
 * on memory that is not mapped instead of faulting: a wrong layout is
 * found without a crash. Once it has, GS_PYREAD_WHERE reads only where each
 * frame is (its code object and instruction), and gs_pyread_code the names
 * and line table of the frames whose code object python.c does not know.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "shim/record/pyread.h"

/* ---- loads ---- */

/* Copies n bytes at src through a pipe of its own (none is kept: a forked
 * child must not share it): write() fails with EFAULT where src is not
 * readable. */
static int pipe_read(void *dst, const void *src, size_t n)
{
    int fds[2];
    if (n > 4096 || pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0)
        return -1;
    int ok = write(fds[1], src, n) == (ssize_t)n && read(fds[0], dst, n) == (ssize_t)n;
    close(fds[0]);
    close(fds[1]);
    return ok ? 0 : -1;
}

static int checked_read(void *dst, const void *src, size_t n)
{
    static int no_vm_read;
    if (!src)
        return -1;
    if (!no_vm_read) {
        struct iovec local = {dst, n}, remote = {(void *)src, n};
        ssize_t got = process_vm_readv(getpid(), &local, 1, &remote, 1, 0);
        if (got == (ssize_t)n)
            return 0;
        if (got >= 0 || errno == EFAULT)
            return -1;
        no_vm_read = 1; /* ENOSYS, EPERM: a sandbox; the pipe instead */
    }
    return pipe_read(dst, src, n);
}

/* Always inlined, as is everything below that takes a mode: the walk is
 * made once for each mode (gs_pyread_frames), and in the plain ones each
 * load is a move. */
#define INLINE static inline __attribute__((always_inline))

INLINE int load(enum gs_pyread_mode mode, void *dst, const void *base, int off, size_t n)
{
    if (!base)
        return -1;
    const char *src = (const char *)base + off;
    if (mode == GS_PYREAD_PLAIN) {
        memcpy(dst, src, n);
        return 0;
    }
    int saved = errno;
    int rc = checked_read(dst, src, n);
    errno = saved;
    return rc;
}

#define LOAD(mode, dst, base, off) load(mode, &(dst), base, off, sizeof(dst))

/* Is obj an object of type type? */
INLINE int is_a(const struct gs_pylayout *l, enum gs_pyread_mode mode, const void *obj,
                const void *type)
{
    const void *t = NULL;
    return obj && LOAD(mode, t, obj, l->ob_type) == 0 && t == type;
}

/* Is [p, p + n) readable? Only asked in checked mode. */
static int readable(const void *p, size_t n)
{
    uint8_t b;
    return n == 0 || (checked_read(&b, p, 1) == 0 && checked_read(&b, (const char *)p + n - 1, 1) == 0);
}

/* The characters of a str: 0, or -1 when it is not one. A str of the old
 * kind (not compact: none that names code) reads as empty. */
INLINE int read_str(const struct gs_pylayout *l, enum gs_pyread_mode mode, const void *s,
                    const char **chars, uint32_t *len, uint8_t *kind)
{
    uint32_t state;
    int64_t n;
    if (!is_a(l, mode, s, l->unicode_type) || LOAD(mode, state, s, l->uni_state) != 0 ||
        LOAD(mode, n, s, l->uni_length) != 0 || n < 0)
        return -1;
    unsigned k = (state >> 2) & 7, compact = (state >> 5) & 1, ascii = (state >> 6) & 1;
    *chars = NULL;
    *len = 0;
    *kind = 1;
    if (!compact)
        return 0;
    if (k != 1 && k != 2 && k != 4)
        return -1;
    const char *data = (const char *)s + (ascii ? l->uni_ascii_size : l->uni_compact_size);
    if (n > 0xffff)
        n = 0xffff; /* names are cut far shorter than this anyway */
    if (mode == GS_PYREAD_CHECKED && !readable(data, (size_t)n * k))
        return -1;
    *chars = data;
    *len = (uint32_t)n;
    *kind = (uint8_t)k;
    return 0;
}

/* The code object's names and line table into f: 0, or -1. */
INLINE int read_code(const struct gs_pylayout *l, enum gs_pyread_mode mode, const void *code,
                     struct gs_pyframe *f)
{
    const void *file, *name, *table;
    int32_t first;
    int64_t table_len;
    if (LOAD(mode, file, code, l->co_filename) != 0 || LOAD(mode, name, code, l->co_name) != 0 ||
        LOAD(mode, first, code, l->co_firstlineno) != 0 ||
        LOAD(mode, table, code, l->co_linetable) != 0)
        return -1;
    if (read_str(l, mode, file, &f->file, &f->file_len, &f->file_kind) != 0 ||
        read_str(l, mode, name, &f->name, &f->name_len, &f->name_kind) != 0 ||
        !is_a(l, mode, table, l->bytes_type) || LOAD(mode, table_len, table, l->var_size) != 0 ||
        table_len < 0 || table_len > 0x7fffffff)
        return -1;
    f->table = (const uint8_t *)table + l->bytes_sval;
    f->table_len = (uint32_t)table_len;
    if (mode == GS_PYREAD_CHECKED && !readable(f->table, f->table_len))
        return -1;
    f->code = code;
    f->first_line = first;
    f->named = 1;
    return 0;
}

/* Frames read before giving up on a chain that does not end (more than any
 * interpreter's recursion limit lets a thread have, shim frames included). */
#define MAX_STEPS 100000

/* The walk; mode is GS_PYREAD_PLAIN or CHECKED (the loads), names whether
 * each frame's names are read too. */
INLINE int walk(const struct gs_pylayout *l, enum gs_pyread_mode mode, int names,
                const void *tstate, const void **next, struct gs_pyframe *out, unsigned max)
{
    const void *f = *next;
    if (f) {
        /* where the call before stopped */
    } else if (l->ts_cframe >= 0) {
        const void *cframe;
        if (LOAD(mode, cframe, tstate, l->ts_cframe) != 0 ||
            (cframe && LOAD(mode, f, cframe, l->cframe_frame) != 0))
            return -1;
    } else if (LOAD(mode, f, tstate, l->ts_frame) != 0) {
        return -1;
    }
    unsigned n = 0;
    for (unsigned steps = 0; f && n < max; steps++) {
        if (steps == MAX_STEPS)
            return -1;
        const void *code, *back;
        uintptr_t bits;
        if (LOAD(mode, bits, f, l->fr_code) != 0 || LOAD(mode, back, f, l->fr_previous) != 0)
            return -1;
        code = (const void *)(bits & l->code_mask);
        int addr;
        if (l->frame_objects) {
            int32_t lasti;
            if (!is_a(l, mode, f, l->frame_type) || !is_a(l, mode, code, l->code_type) ||
                LOAD(mode, lasti, f, l->fr_instr) != 0)
                return -1;
            addr = lasti < 0 ? -1 : l->lasti_units ? lasti * 2 : lasti;
        } else {
            uint8_t owner = 0;
            if (l->fr_owner >= 0 && LOAD(mode, owner, f, l->fr_owner) != 0)
                return -1;
            if ((owner < 32 && (l->owner_skip >> owner) & 1) || !code) {
                f = back; /* the interpreter's own frames: entry, shim, C stack */
                continue;
            }
            if (!is_a(l, mode, code, l->code_type)) {
                if (l->minor >= 13) { /* f_executable may be another object there */
                    f = back;
                    continue;
                }
                return -1;
            }
            const char *instr;
            if (LOAD(mode, instr, f, l->fr_instr) != 0)
                return -1;
            int64_t units;
            if (LOAD(mode, units, code, l->var_size) != 0)
                return -1;
            intptr_t off = instr - ((const char *)code + l->co_code);
            if (off < -2 || off >= units * 2)
                return -1; /* not inside its code: the layout is not this interpreter's */
            int32_t first_traceable = 0;
            if (l->co_firsttraceable >= 0 && owner != l->owner_generator &&
                LOAD(mode, first_traceable, code, l->co_firsttraceable) == 0 &&
                off < (intptr_t)first_traceable * 2) {
                f = back; /* not started yet: PyFrame_GetBack skips it too */
                continue;
            }
            addr = off < 0 ? -1 : (int)off;
        }
        if (!names) {
            out[n].code = code;
            out[n].named = 0;
        } else if (read_code(l, mode, code, &out[n]) != 0) {
            return -1;
        }
        out[n++].addr = addr;
        f = back;
    }
    *next = f;
    return (int)n;
}

/* The walk made for each mode: in the plain ones, which every walk takes
 * once a layout has proved itself, no load asks which mode it is in. */
static __attribute__((noinline)) int walk_plain(const struct gs_pylayout *l, const void *tstate,
                                                const void **next, struct gs_pyframe *out,
                                                unsigned max)
{
    return walk(l, GS_PYREAD_PLAIN, 1, tstate, next, out, max);
}

static __attribute__((noinline)) int walk_where(const struct gs_pylayout *l, const void *tstate,
                                                const void **next, struct gs_pyframe *out,
                                                unsigned max)
{
    return walk(l, GS_PYREAD_PLAIN, 0, tstate, next, out, max);
}

static __attribute__((noinline)) int walk_checked(const struct gs_pylayout *l,
                                                  const void *tstate, const void **next,
                                                  struct gs_pyframe *out, unsigned max)
{
    return walk(l, GS_PYREAD_CHECKED, 1, tstate, next, out, max);
}

int gs_pyread_frames(const struct gs_pylayout *l, enum gs_pyread_mode mode, const void *tstate,
                     const void **next, struct gs_pyframe *out, unsigned max)
{
    switch (mode) {
    case GS_PYREAD_PLAIN:
        return walk_plain(l, tstate, next, out, max);
    case GS_PYREAD_WHERE:
        return walk_where(l, tstate, next, out, max);
    default:
        return walk_checked(l, tstate, next, out, max);
    }
}

int gs_pyread_code(const struct gs_pylayout *l, struct gs_pyframe *f)
{
    return f->named ? 0 : read_code(l, GS_PYREAD_PLAIN, f->code, f);
}

int gs_pyread_ptr(const void *base, int off, const void **out)
{
    return load(GS_PYREAD_CHECKED, out, base, off, sizeof *out);
}
