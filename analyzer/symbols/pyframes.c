/*
 * pyframes.c - Python frames in call sites: where they go in a stack a
 * person reads.
 *
 * A stack recorded while the thread held the GIL is its native frames,
 * innermost first, then its Python frames, innermost first (Python pcs,
 * include/gpushim_trace.h). Read as recorded, the native part runs from the
 * allocation down through the extension that made it, into the CPython
 * interpreter (the evaluation loop, calls, the interpreter's start-up), and
 * the Python part says which code the interpreter was running. Merged, the
 * Python frames stand where the interpreter's frames stood:
 *
 *   native frames down to the first machinery frame      (the extension)
 *   the Python frames                                    (the program)
 *   native frames after the last machinery frame         (a program that
 *                                                         embeds Python)
 *
 * Everything from the first machinery frame to the last is left out,
 * native frames of an extension that called back into Python between them
 * included: the Python frames cannot be placed among them without the
 * interpreter's private frame layout. A stack whose native part holds no
 * machinery frame (cut off by the stack depth, or nothing symbolized)
 * keeps all of it, and the Python frames follow.
 *
 * A machinery frame is the interpreter's or the FFI's. The interpreter's:
 * one in libpython*.so* or in an executable named python, python3,
 * python3.11 (with ABI flags: python3.13t), which is where a python
 * executable linked statically keeps the interpreter, or a frame of
 * _PyEval_EvalFrameDefault wherever it lies (an embedding program linked
 * with the interpreter statically). The FFI's, which carry a call from
 * Python to a C function: one in libffi (libffi.so.8: ffi_call_unix64, the
 * trampoline that makes the call, and ffi_call_int; it has no names where
 * Debian strips it), in ctypes' extension (_ctypes.cpython-311-x86_64-
 * linux-gnu.so: PyCFuncPtr_call, _ctypes_callproc) or cffi's
 * (_cffi_backend.cpython-311-x86_64-linux-gnu.so: cdata_call), a frame of
 * libffi's ffi_call* wherever it lies (a libffi linked into another
 * module), and the wrapper cffi generates into an API-mode module for each
 * C function (_cffi_f_NAME, cffi/recompiler.py's _generate_cpy_function).
 * So a ctypes call's allocation starts at the C function it called, or at
 * its Python line when it called the driver itself.
 */
#include <string.h>

#include "gpushim_trace.h"
#include "analyzer/model/model.h"
#include "analyzer/symbols/symbolize.h"
#include "analyzer/symbols/symbols.h"
#include "analyzer/symbols/symbols_int.h"
#include "analyzer/util/text.h"

static int python_executable(const char *base)
{
    if (strncmp(base, "python", 6) != 0)
        return 0;
    const char *p = base + 6;
    while ((*p >= '0' && *p <= '9') || *p == '.')
        p++;
    while (*p == 'd' || *p == 'm' || *p == 't' || *p == 'u') /* ABI flags */
        p++;
    return *p == 0;
}

/* A shared object NAME.so, NAME.cpython-311-x86_64-linux-gnu.so,
 * NAME.abi3.so (an extension module: the part before the first dot is
 * NAME), or, for a NAME ending in '-', a library a wheel renamed with a
 * hash (libffi-3a37f2b8.so.8.1.0). */
static int extension(const char *base, const char *name)
{
    size_t n = strlen(name);
    if (strncmp(base, name, n) != 0)
        return 0;
    if (name[n - 1] == '-')
        return strstr(base + n, ".so") != NULL;
    return base[n] == '.' && strstr(base + n, ".so") != NULL;
}

int gs_py_machinery_frame(const struct gs_frame *f)
{
    if (f->python)
        return 0;
    if (f->function && (strcmp(f->function, "_PyEval_EvalFrameDefault") == 0 ||
                        strncmp(f->function, "ffi_call", 8) == 0 ||
                        strncmp(f->function, "_cffi_f_", 8) == 0))
        return 1;
    if (!f->module)
        return 0;
    const char *base = gs_basename(f->module);
    return strncmp(base, "libpython", 9) == 0 || python_executable(base) ||
           strncmp(base, "libffi.so", 9) == 0 || extension(base, "libffi-") ||
           extension(base, "_ctypes") ||
           extension(base, "_cffi_backend");
}

enum gs_py_state gs_py_stack_state(const uint64_t *pcs, unsigned n)
{
    enum gs_py_state s = GS_PY_NONE;
    for (unsigned i = 0; i < n; i++) {
        if (!gs_pc_is_python(pcs[i]))
            continue;
        if (gs_py_pc_code(pcs[i]))
            return s == GS_PY_RELEASED || s == GS_PY_WAITER ? s : GS_PY_FRAMES;
        s = pcs[i] == GS_PY_PC_NO_GIL     ? GS_PY_NO_GIL
            : pcs[i] == GS_PY_PC_RELEASED ? GS_PY_RELEASED
            : pcs[i] == GS_PY_PC_WAITER   ? GS_PY_WAITER
                                          : GS_PY_NO_FRAME;
    }
    return s;
}

void gs_py_frame(const struct gs_replay *r, uint64_t pc, struct gs_frame *out)
{
    const struct gs_pycode *c = gs_replay_pycode(r, gs_py_pc_code(pc));
    memset(out, 0, sizeof *out);
    out->python = 1;
    out->pc = pc;
    out->line = (int)gs_py_pc_line(pc);
    if (c) {
        out->function = c->function;
        out->file = c->file;
    }
}

size_t gs_py_merge(const struct gs_frame *native, size_t nn, const struct gs_frame *py,
                   size_t np, struct gs_frame *out, size_t *before)
{
    size_t first = nn, last = nn, n = 0;
    for (size_t i = 0; i < nn; i++) {
        if (!gs_py_machinery_frame(&native[i]))
            continue;
        if (first == nn)
            first = i;
        last = i;
    }
    if (!np) /* nothing to put in their place: the native stack as it is */
        first = last = nn;
    for (size_t i = 0; i < first; i++)
        out[n++] = native[i];
    *before = n;
    for (size_t i = 0; i < np; i++)
        out[n++] = py[i];
    for (size_t i = last + 1; i < nn; i++)
        out[n++] = native[i];
    return n;
}
