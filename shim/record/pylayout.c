/*
 * pylayout.c - where the interpreter keeps what pyread.c reads: offsets
 * into the thread state, frames, code objects, str and bytes, for each
 * CPython from 3.9 to 3.14 with the GIL, on 64-bit Linux.
 *
 * 3.13 and later say it themselves: _PyRuntime starts with _Py_DebugOffsets,
 * the offsets an out-of-process profiler needs, for the very build that
 * runs (Include/internal/pycore_runtime.h in 3.13,
 * Include/internal/pycore_debug_offsets.h in 3.14). For 3.9 to 3.12 the
 * offsets are written in here, each from the version's own headers (the
 * source lines are cited with each table; make test compares each with
 * offsetof() on the headers of every CPython the machine has). Whatever their origin, python.c
 * trusts a layout only once it has proved itself: pyread.c checks the type
 * of every object read, and the frames it reads are compared with the
 * public API's on events where the thread holds the GIL.
 */
#include <stdint.h>
#include <string.h>

#include "shim/record/pyread.h"

/* What every 64-bit CPython with the GIL shares: PyObject's ob_type after
 * its reference count, PyVarObject's ob_size, PyASCIIObject's length and
 * state, PyBytesObject's characters after its cached hash
 * (Include/object.h, Include/cpython/unicodeobject.h, bytesobject.h). */
#define OBJECTS_64                                                                                 \
    .ob_type = 8, .var_size = 16, .uni_length = 16, .uni_state = 32, .bytes_sval = 32,            \
    .code_mask = ~(uint64_t)0

/* 3.9 and 3.10: the chain is of PyFrameObjects from PyThreadState.frame
 * (Include/cpython/pystate.h: prev, next, interp, frame), f_back and f_code
 * after PyObject_VAR_HEAD (Include/cpython/frameobject.h); PyCodeObject's
 * co_firstlineno, co_filename, co_name and line table (Include/cpython/code.h);
 * PyASCIIObject with its wstr, 48 bytes, PyCompactUnicodeObject 72
 * (Include/cpython/unicodeobject.h). */
#define FRAME_OBJECTS                                                                              \
    OBJECTS_64, .frame_objects = 1, .ts_frame = 24, .ts_cframe = -1, .cframe_frame = -1,           \
    .fr_previous = 24, .fr_code = 32, .fr_owner = -1, .instr_is_lasti = 1,                         \
    .owner_generator = -1, .co_firstlineno = 40, .co_filename = 104, .co_name = 112,               \
    .co_linetable = 120, .co_code = -1, .co_firsttraceable = -1, .uni_ascii_size = 48,             \
    .uni_compact_size = 72

/* 3.9: f_lasti at 104, in bytes; the line table is co_lnotab. */
static const struct gs_pylayout py39 = {
    FRAME_OBJECTS, .minor = 9, .lines = GS_PYLINES_LNOTAB, .fr_instr = 104, .lasti_units = 0,
};

/* 3.10: f_lasti at 96 (f_stackdepth replaced f_valuestack and f_stacktop),
 * in code units; co_linetable in co_lnotab's place. */
static const struct gs_pylayout py310 = {
    FRAME_OBJECTS, .minor = 10, .lines = GS_PYLINES_LINETABLE, .fr_instr = 96, .lasti_units = 1,
};

/* 3.11 and 3.12: the chain is of _PyInterpreterFrames from
 * PyThreadState.cframe->current_frame; lines from the location table;
 * co_qualname read for the function's name. */
#define INTERPRETER_FRAMES                                                                         \
    OBJECTS_64, .frame_objects = 0, .lines = GS_PYLINES_LOCATIONS, .ts_frame = -1,                 \
    .ts_cframe = 56, .owner_generator = 1, .co_filename = 112, .co_name = 128,                     \
    .co_linetable = 136

/* 3.11: Include/cpython/pystate.h (struct _ts: cframe after prev, next,
 * interp, _initialized, _static, recursion_remaining, recursion_limit,
 * recursion_headroom, tracing, tracing_what), Include/internal/pycore_frame.h
 * (_PyCFrame: use_tracing, current_frame, previous; _PyInterpreterFrame:
 * f_func, f_globals, f_builtins, f_locals, f_code, frame_obj, previous,
 * prev_instr, stacktop, is_entry, owner; enum _frameowner THREAD 0,
 * GENERATOR 1, FRAME_OBJECT 2), Include/cpython/code.h, and PyASCIIObject
 * still with its wstr (48 bytes, PyCompactUnicodeObject 72). */
static const struct gs_pylayout py311 = {
    INTERPRETER_FRAMES, .minor = 11, .cframe_frame = 8, .fr_previous = 48, .fr_code = 32,
    .fr_instr = 56, .fr_owner = 69, .owner_skip = 0, .co_firstlineno = 72, .co_code = 184,
    .co_firsttraceable = 168, .uni_ascii_size = 48, .uni_compact_size = 72,
};

/* 3.12: _PyCFrame is current_frame, previous; _PyInterpreterFrame is
 * f_code, previous, f_funcobj, f_globals, f_builtins, f_locals, frame_obj,
 * prev_instr, stacktop, return_offset, owner, and enum _frameowner adds
 * FRAME_OWNED_BY_CSTACK = 3, the shim frames, skipped
 * (Include/internal/pycore_frame.h); wstr is gone: PyASCIIObject 40 bytes,
 * PyCompactUnicodeObject 56. */
static const struct gs_pylayout py312 = {
    INTERPRETER_FRAMES, .minor = 12, .cframe_frame = 0, .fr_previous = 8, .fr_code = 0,
    .fr_instr = 56, .fr_owner = 70, .owner_skip = 1u << 3, .co_firstlineno = 68, .co_code = 192,
    .co_firsttraceable = 176, .uni_ascii_size = 40, .uni_compact_size = 56,
};

const struct gs_pylayout *gs_pylayout_builtin(int minor)
{
    switch (minor) {
    case 9:
        return &py39;
    case 10:
        return &py310;
    case 11:
        return &py311;
    case 12:
        return &py312;
    }
    return NULL;
}

/* ---- 3.13 and later: _Py_DebugOffsets, at the start of _PyRuntime ---- */

/* The members read, by their index among the struct's uint64_t words after
 * its 8-byte cookie (every member is a uint64_t; there is no padding). The
 * order is 3.13's Include/internal/pycore_runtime.h and 3.14's
 * Include/internal/pycore_debug_offsets.h: 3.14 added threads_main,
 * code_object_generation and tlbc_generation to interpreter_state,
 * stackpointer and tlbc_index to interpreter_frame, co_tlbc to code_object,
 * and set_object before dict_object. */
struct debug_words {
    int version, free_threaded;
    int ts_current_frame;
    int fr_previous, fr_executable, fr_instr_ptr, fr_owner;
    int co_filename, co_qualname, co_linetable, co_firstlineno, co_code_adaptive;
    int ob_type, bytes_ob_size, bytes_ob_sval;
    int uni_state, uni_length, uni_ascii_size;
    int count; /* words at least */
};

/* Each section's first word (its size) by index; a member is its base plus
 * its place in the section. */
static const struct debug_words words313 = {
    .version = 0, .free_threaded = 1,
    .ts_current_frame = 18 + 4, /* thread_state at 18: size, prev, next, interp, current_frame */
    .fr_previous = 27 + 1, .fr_executable = 27 + 2, .fr_instr_ptr = 27 + 3, .fr_owner = 27 + 5,
    .co_filename = 33 + 1, .co_qualname = 33 + 3, .co_linetable = 33 + 4, .co_firstlineno = 33 + 5,
    .co_code_adaptive = 33 + 9,
    .ob_type = 43 + 1,
    .bytes_ob_size = 63 + 1, .bytes_ob_sval = 63 + 2,
    .uni_state = 66 + 1, .uni_length = 66 + 2, .uni_ascii_size = 66 + 3,
    .count = 72,
};

static const struct debug_words words314 = {
    .version = 0, .free_threaded = 1,
    .ts_current_frame = 21 + 4,
    .fr_previous = 30 + 1, .fr_executable = 30 + 2, .fr_instr_ptr = 30 + 3, .fr_owner = 30 + 5,
    .co_filename = 38 + 1, .co_qualname = 38 + 3, .co_linetable = 38 + 4, .co_firstlineno = 38 + 5,
    .co_code_adaptive = 38 + 9,
    .ob_type = 49 + 1,
    .bytes_ob_size = 73 + 1, .bytes_ob_sval = 73 + 2,
    .uni_state = 76 + 1, .uni_length = 76 + 2, .uni_ascii_size = 76 + 3,
    .count = 94,
};

/* A member that must be an offset inside an object of a few kilobytes. */
static int word(const uint64_t *w, int i, int *out)
{
    if (w[i] > 1 << 16)
        return -1;
    *out = (int)w[i];
    return 0;
}

static int from_debug_offsets(struct gs_pylayout *l, int minor, const void *runtime,
                              const char **why)
{
    const struct debug_words *d = minor == 13 ? &words313 : minor == 14 ? &words314 : NULL;
    if (!d) {
        *why = "its debug offsets are of a version newer than this shim knows";
        return -1;
    }
    if (!runtime || memcmp(runtime, "xdebugpy", 8) != 0) {
        *why = "_PyRuntime does not start with its debug offsets";
        return -1;
    }
    const uint64_t *w = (const uint64_t *)((const char *)runtime + 8);
    uint64_t hex = w[d->version];
    if ((hex >> 24) != 3 || (int)((hex >> 16) & 0xff) != minor || ((hex >> 4) & 0xf) != 0xf) {
        *why = "its debug offsets are of another version (or a pre-release)";
        return -1;
    }
    if (w[d->free_threaded]) {
        *why = "a free-threaded build";
        return -1;
    }
    memset(l, 0, sizeof *l);
    l->minor = minor;
    l->lines = GS_PYLINES_LOCATIONS;
    l->ts_cframe = -1;
    l->cframe_frame = -1;
    int code_adaptive;
    if (word(w, d->ts_current_frame, &l->ts_frame) || word(w, d->fr_previous, &l->fr_previous) ||
        word(w, d->fr_executable, &l->fr_code) || word(w, d->fr_instr_ptr, &l->fr_instr) ||
        word(w, d->fr_owner, &l->fr_owner) || word(w, d->co_filename, &l->co_filename) ||
        word(w, d->co_qualname, &l->co_name) || word(w, d->co_linetable, &l->co_linetable) ||
        word(w, d->co_firstlineno, &l->co_firstlineno) ||
        word(w, d->co_code_adaptive, &code_adaptive) || word(w, d->ob_type, &l->ob_type) ||
        word(w, d->bytes_ob_size, &l->var_size) || word(w, d->bytes_ob_sval, &l->bytes_sval) ||
        word(w, d->uni_state, &l->uni_state) || word(w, d->uni_length, &l->uni_length) ||
        word(w, d->uni_ascii_size, &l->uni_ascii_size)) {
        *why = "its debug offsets are out of range";
        return -1;
    }
    l->co_code = code_adaptive;
    /* Not among the debug offsets, from the headers of 3.13 and 3.14 with
     * the GIL: PyCompactUnicodeObject is PyASCIIObject and utf8_length,
     * utf8; _co_firsttraceable (an int) and co_extra come right before
     * co_code_adaptive; the frame owners are THREAD 0, GENERATOR 1,
     * FRAME_OBJECT 2 and, not frames of Python code, CSTACK 3 (3.13) or
     * INTERPRETER 3 and CSTACK 4 (3.14); 3.14's f_executable is a
     * _PyStackRef whose two low bits are tags. */
    l->uni_compact_size = l->uni_ascii_size + 16;
    l->co_firsttraceable = code_adaptive - 16;
    l->owner_skip = ~7u;
    l->owner_generator = 1;
    l->code_mask = minor >= 14 ? ~(uint64_t)3 : ~(uint64_t)0;
    return 0;
}

/* Does l have every offset the walk reads without asking (pyread.h)? */
static int complete(const struct gs_pylayout *l)
{
    const int always[] = {l->fr_previous, l->fr_code, l->fr_instr, l->co_filename, l->co_name,
                          l->co_firstlineno, l->co_linetable, l->ob_type, l->var_size,
                          l->uni_state, l->uni_length, l->uni_ascii_size, l->uni_compact_size,
                          l->bytes_sval};
    for (size_t i = 0; i < sizeof always / sizeof always[0]; i++)
        if (always[i] < 0)
            return 0;
    if (l->ts_cframe >= 0 ? l->cframe_frame < 0 : l->ts_frame < 0)
        return 0;
    return l->frame_objects || l->co_code >= 0;
}

int gs_pylayout_init(struct gs_pylayout *l, int minor, void *(*sym)(const char *name),
                     const char **why)
{
    const struct gs_pylayout *b = gs_pylayout_builtin(minor);
    if (b)
        *l = *b;
    else if (minor < 13 || from_debug_offsets(l, minor, sym("_PyRuntime"), why) != 0) {
        if (minor < 13)
            *why = "no layout is known for this version";
        return -1;
    }
    if (!complete(l)) {
        *why = "its layout lacks an offset the walk reads";
        return -1;
    }
    l->code_type = sym("PyCode_Type");
    l->unicode_type = sym("PyUnicode_Type");
    l->bytes_type = sym("PyBytes_Type");
    l->frame_type = sym("PyFrame_Type");
    if (!l->code_type || !l->unicode_type || !l->bytes_type || (l->frame_objects && !l->frame_type)) {
        *why = "the interpreter does not export its types";
        return -1;
    }
    return 0;
}
