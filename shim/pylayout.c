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
 * source lines are cited with each table). Whatever their origin, python.c
 * trusts a layout only once it has proved itself: pyread.c checks the type
 * of every object read, and the frames it reads are compared with the
 * public API's on events where the thread holds the GIL.
 */
#include <string.h>

#include "pyread.h"

/* 3.11: Include/cpython/pystate.h (struct _ts: cframe after prev, next,
 * interp, _initialized, _static, recursion_remaining, recursion_limit,
 * recursion_headroom, tracing, tracing_what), Include/internal/pycore_frame.h
 * (_PyCFrame: use_tracing, current_frame, previous; _PyInterpreterFrame:
 * f_func, f_globals, f_builtins, f_locals, f_code, frame_obj, previous,
 * prev_instr, stacktop, is_entry, owner; enum _frameowner THREAD 0,
 * GENERATOR 1, FRAME_OBJECT 2), Include/cpython/code.h (PyCodeObject's
 * fields), Include/cpython/unicodeobject.h (PyASCIIObject with wstr: 48
 * bytes, PyCompactUnicodeObject: 72). The unit tests compare this table
 * with offsetof() on the 3.11 headers where they are installed. */
static const struct gs_pylayout py311 = {
    .minor = 11,
    .frame_objects = 0,
    .lines = GS_PYLINES_LOCATIONS,
    .ts_frame = -1,
    .ts_cframe = 56,
    .cframe_frame = 8,
    .fr_previous = 48,
    .fr_code = 32,
    .fr_instr = 56,
    .fr_owner = 69,
    .owner_skip = 0,
    .owner_generator = 1,
    .code_mask = ~(uint64_t)0,
    .co_filename = 112,
    .co_name = 128, /* co_qualname */
    .co_firstlineno = 72,
    .co_linetable = 136,
    .co_code = 184,
    .co_firsttraceable = 168,
    .ob_type = 8,
    .var_size = 16,
    .uni_state = 32,
    .uni_length = 16,
    .uni_ascii_size = 48,
    .uni_compact_size = 72,
    .bytes_sval = 32,
};

const struct gs_pylayout *gs_pylayout_builtin(int minor)
{
    switch (minor) {
    case 11:
        return &py311;
    }
    return NULL;
}

int gs_pylayout_init(struct gs_pylayout *l, int minor, void *(*sym)(const char *name),
                     const char **why)
{
    const struct gs_pylayout *b = gs_pylayout_builtin(minor);
    if (!b) {
        *why = "no layout is known for this version";
        return -1;
    }
    *l = *b;
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
