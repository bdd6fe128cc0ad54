/*
 * test_pylayout.c - the layouts written in shim/record/pylayout.c against the
 * interpreter's own headers, where the python3 of the machine has them
 * installed with their internal part (python3-dev): each offset the shim
 * reads, compared with offsetof() on the real structures. The Makefile
 * builds this file with that interpreter's include directory and
 * GS_PYTHON_HEADERS; without them the test says it is skipped.
 */
#include <criterion/criterion.h>
#include <stddef.h>

#ifdef GS_PYTHON_HEADERS
#define Py_BUILD_CORE 1
#include <Python.h>
#if PY_MINOR_VERSION >= 11
#include <internal/pycore_code.h>
#include <internal/pycore_frame.h>
#else
#include <frameobject.h>
#endif
#endif

#include "shim/record/pyread.h"

#if defined GS_PYTHON_HEADERS && PY_MINOR_VERSION >= 13
#include <dlfcn.h>
static void *sym(const char *name) { return dlsym(RTLD_DEFAULT, name); }
#endif

#define SAME(field, value) cr_assert_eq(l->field, (int)(value), #field ": %d, the headers say %d", \
                                        l->field, (int)(value))

Test(pylayout, written_in_layout_is_the_installed_interpreters)
{
#ifndef GS_PYTHON_HEADERS
    cr_skip_test("no Python headers (python3-dev) on this machine");
#else
#if PY_MINOR_VERSION < 9
    cr_skip_test("Python 3.%d: its frames are not read", PY_MINOR_VERSION);
#else
#if PY_MINOR_VERSION >= 13
    /* What the shim makes of the debug offsets of the libpython this test
     * is linked with (built by tests/integration/test_python_layout.py). */
    struct gs_pylayout from_runtime;
    const char *why = NULL;
    cr_assert_eq(gs_pylayout_init(&from_runtime, PY_MINOR_VERSION, sym, &why), 0, "%s", why);
    const struct gs_pylayout *l = &from_runtime;
#else
    const struct gs_pylayout *l = gs_pylayout_builtin(PY_MINOR_VERSION);
#endif
    cr_assert_not_null(l, "a layout for 3.%d", PY_MINOR_VERSION);
    SAME(minor, PY_MINOR_VERSION);
    SAME(ob_type, offsetof(PyObject, ob_type));
    SAME(var_size, offsetof(PyVarObject, ob_size));
    SAME(co_filename, offsetof(PyCodeObject, co_filename));
    SAME(co_firstlineno, offsetof(PyCodeObject, co_firstlineno));
    SAME(uni_state, offsetof(PyASCIIObject, state));
    SAME(uni_length, offsetof(PyASCIIObject, length));
    SAME(uni_ascii_size, sizeof(PyASCIIObject));
    SAME(uni_compact_size, sizeof(PyCompactUnicodeObject));
    SAME(bytes_sval, offsetof(PyBytesObject, ob_sval));
#if PY_MINOR_VERSION >= 11
#if PY_MINOR_VERSION >= 13
    SAME(ts_frame, offsetof(PyThreadState, current_frame));
    SAME(ts_cframe, -1);
    SAME(fr_code, offsetof(_PyInterpreterFrame, f_executable));
    SAME(fr_instr, offsetof(_PyInterpreterFrame, instr_ptr));
    cr_assert(l->owner_skip >> FRAME_OWNED_BY_CSTACK & 1, "C stack frames skipped");
    cr_assert_eq(l->owner_skip & 7u, 0u, "thread, generator and frame object frames read");
#else
    SAME(ts_cframe, offsetof(PyThreadState, cframe));
    SAME(cframe_frame, offsetof(_PyCFrame, current_frame));
    SAME(fr_code, offsetof(_PyInterpreterFrame, f_code));
    SAME(fr_instr, offsetof(_PyInterpreterFrame, prev_instr));
    cr_assert_eq(l->owner_skip, PY_MINOR_VERSION == 12 ? 1u << 3 : 0u,
                 "3.12's C stack frames skipped");
#endif
    SAME(fr_previous, offsetof(_PyInterpreterFrame, previous));
    SAME(fr_owner, offsetof(_PyInterpreterFrame, owner));
    SAME(owner_generator, FRAME_OWNED_BY_GENERATOR);
    SAME(co_name, offsetof(PyCodeObject, co_qualname));
    SAME(co_linetable, offsetof(PyCodeObject, co_linetable));
    SAME(co_code, offsetof(PyCodeObject, co_code_adaptive));
    SAME(co_firsttraceable, offsetof(PyCodeObject, _co_firsttraceable));
    cr_assert_eq(l->lines, GS_PYLINES_LOCATIONS);
#else
    SAME(ts_frame, offsetof(PyThreadState, frame));
    SAME(fr_previous, offsetof(PyFrameObject, f_back));
    SAME(fr_code, offsetof(PyFrameObject, f_code));
    SAME(fr_instr, offsetof(PyFrameObject, f_lasti));
    SAME(co_name, offsetof(PyCodeObject, co_name));
#if PY_MINOR_VERSION == 10
    SAME(co_linetable, offsetof(PyCodeObject, co_linetable));
#else
    SAME(co_linetable, offsetof(PyCodeObject, co_lnotab));
#endif
#endif
#endif
#endif
}
