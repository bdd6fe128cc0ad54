/*
 * test_pyframes.c - analyzer/symbols/pyframes.c: which frames are the CPython
 * interpreter's (by module: libpython, a python executable; by function:
 * _PyEval_EvalFrameDefault) or the FFI's (libffi, ctypes, cffi; ffi_call*,
 * _cffi_f_*), where Python frames go in a merged stack (in
 * place of the interpreter's frames, the extension's frames before them and
 * an embedding program's after them kept), what a stack says of Python (its
 * markers), and Python frames named from the trace's code objects.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "gpushim_trace.h"
#include "analyzer/trace/trace.h"
#include "analyzer/model/model.h"
#include "analyzer/model/replay.h"
#include "analyzer/read/checkpoint_load.h"
#include "analyzer/symbols/symbolize.h"
#include "analyzer/symbols/symbols.h"
#include "analyzer/symbols/symbols_int.h"

static struct gs_frame native(const char *function, const char *module)
{
    return (struct gs_frame){.function = function, .module = module, .pc = 0x1000};
}

static struct gs_frame python(const char *function)
{
    return (struct gs_frame){.function = function, .file = "x.py", .line = 1, .python = 1};
}

Test(pyframes, machinery_frames_by_module_and_by_function)
{
    static const char *const yes[] = {
        "/usr/lib/x86_64-linux-gnu/libpython3.11.so.1.0", "/opt/conda/lib/libpython3.9.so",
        "libpython3.13t.so.1.0", "/usr/bin/python3.11", "/usr/bin/python3", "/usr/bin/python",
        "/opt/py/bin/python3.13t", "/usr/bin/python3.8d", "python3.12",
        /* the FFI's: libffi, ctypes', cffi's */
        "/usr/lib/x86_64-linux-gnu/libffi.so.8", "/opt/conda/lib/libffi.so.7.1.0",
        "/x/site-packages/cffi.libs/libffi-3a37f2b8.so.8.1.0",
        "/usr/lib/python3.11/lib-dynload/_ctypes.cpython-311-x86_64-linux-gnu.so",
        "/opt/py/lib/python3.9/lib-dynload/_ctypes.cpython-39-x86_64-linux-gnu.so",
        "/usr/lib/python3/dist-packages/_cffi_backend.cpython-311-x86_64-linux-gnu.so",
        "_ctypes.so"};
    static const char *const no[] = {
        "/usr/bin/python3-config", "/usr/bin/pythonw", "/usr/bin/ipython3", "/usr/bin/train",
        "/usr/lib/python3.11/site-packages/torch/lib/libtorch_python.so", "?", "",
        "/usr/lib/python3.11/lib-dynload/_ctypes_test.cpython-311-x86_64-linux-gnu.so",
        "/usr/lib/libffish.so", "/x/libffi-bindings.py", "/x/_ctypes.py", "/x/_cffi_backend"};
    for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++) {
        struct gs_frame f = native("anything", yes[i]);
        cr_assert(gs_py_machinery_frame(&f), "%s is the machinery's", yes[i]);
    }
    for (size_t i = 0; i < sizeof no / sizeof no[0]; i++) {
        struct gs_frame f = native("anything", no[i]);
        cr_assert(!gs_py_machinery_frame(&f), "%s is not the machinery's", no[i]);
    }
    static const char *const functions[] = {"_PyEval_EvalFrameDefault", "ffi_call_unix64",
                                            "ffi_call_int", "ffi_call", "_cffi_f_cuMemAlloc"};
    for (size_t i = 0; i < sizeof functions / sizeof functions[0]; i++) {
        struct gs_frame f = native(functions[i], "/usr/bin/embedder");
        cr_assert(gs_py_machinery_frame(&f), "%s, wherever it lies", functions[i]);
    }
    struct gs_frame mine = native("cuda_alloc", "/home/u/libmine.so");
    cr_assert(!gs_py_machinery_frame(&mine), "the C function ctypes called is the program's");
    struct gs_frame py = python("_PyEval_EvalFrameDefault");
    py.module = "/usr/bin/python3";
    cr_assert(!gs_py_machinery_frame(&py), "a Python frame never is");
    struct gs_frame nameless = {.module = NULL};
    cr_assert(!gs_py_machinery_frame(&nameless));
}

static void names(const struct gs_frame *f, size_t n, const char *want)
{
    char got[512] = "";
    for (size_t i = 0; i < n; i++) {
        strcat(got, i ? " " : "");
        strcat(got, f[i].function ? f[i].function : "?");
    }
    cr_assert_str_eq(got, want);
}

Test(pyframes, python_frames_take_the_interpreters_place)
{
    const char *lib = "/usr/lib/libpython3.11.so.1.0";
    struct gs_frame nat[] = {
        native("cudaMalloc_caller", "/x/libtorch_cuda.so"),
        native("THPVariable_empty", "/x/libtorch_python.so"),
        native("_PyObject_MakeTpCall", lib),
        native("_PyEval_EvalFrameDefault", lib),
        native("callback_into_python", "/x/ext.so"), /* between two interpreter frames: left out */
        native("_PyEval_EvalFrameDefault", lib),
        native("Py_RunMain", lib),
        native("main", "/usr/bin/embedder"), /* after the last: kept */
    };
    struct gs_frame py[] = {python("forward"), python("train"), python("<module>")};
    struct gs_frame out[16];
    size_t before;
    size_t n = gs_py_merge(nat, 8, py, 3, out, &before);
    names(out, n, "cudaMalloc_caller THPVariable_empty forward train <module> main");
    cr_assert_eq(before, 2);

    /* A python executable: the interpreter runs to the end. A ctypes call
     * of the C function that allocated: the FFI's frames go with the
     * interpreter's (libffi's trampoline unnamed, as Debian strips it). */
    struct gs_frame exe[] = {native("cuda_alloc", "/home/u/libmine.so"),
                             native(NULL, "/usr/lib/x86_64-linux-gnu/libffi.so.8"),
                             native("ffi_call_int", "/usr/lib/x86_64-linux-gnu/libffi.so.8"),
                             native("_ctypes_callproc", "/usr/lib/_ctypes.so"),
                             native("PyCFuncPtr_call", "/usr/lib/_ctypes.so"),
                             native("_PyEval_EvalFrameDefault", "/usr/bin/python3.11"),
                             native("Py_BytesMain", "/usr/bin/python3.11")};
    n = gs_py_merge(exe, 7, py, 3, out, &before);
    names(out, n, "cuda_alloc forward train <module>");
    cr_assert_eq(before, 1);
    /* ctypes called the driver itself: the Python line leads */
    n = gs_py_merge(exe + 1, 6, py, 3, out, &before);
    names(out, n, "forward train <module>");
    cr_assert_eq(before, 0);

    /* No interpreter frame (the native stack was cut short): Python frames follow. */
    n = gs_py_merge(nat, 2, py, 3, out, &before);
    names(out, n, "cudaMalloc_caller THPVariable_empty forward train <module>");
    cr_assert_eq(before, 2);

    /* The interpreter called the driver itself: no native frame before. */
    n = gs_py_merge(exe + 5, 2, py, 1, out, &before);
    names(out, n, "forward");
    cr_assert_eq(before, 0);

    /* No Python frames: the native stack as it is, interpreter frames and all. */
    n = gs_py_merge(nat, 8, py, 0, out, &before);
    cr_assert_eq(n, 8);
    cr_assert_eq(before, 8);
    cr_assert_str_eq(out[3].function, "_PyEval_EvalFrameDefault");

    /* Nothing native at all. */
    n = gs_py_merge(NULL, 0, py, 2, out, &before);
    names(out, n, "forward train");
}

Test(pyframes, what_a_stack_says_of_python)
{
    uint64_t plain[] = {0x401000, 0x7f0000001000};
    cr_assert_eq(gs_py_stack_state(plain, 2), GS_PY_NONE);
    cr_assert_eq(gs_py_stack_state(plain, 0), GS_PY_NONE);
    uint64_t nogil[] = {0x401000, GS_PY_PC_NO_GIL};
    cr_assert_eq(gs_py_stack_state(nogil, 2), GS_PY_NO_GIL);
    uint64_t noframe[] = {0x401000, GS_PY_PC_NO_FRAME};
    cr_assert_eq(gs_py_stack_state(noframe, 2), GS_PY_NO_FRAME);
    uint64_t frames[] = {0x401000, gs_py_pc(3, 10), gs_py_pc(1, 2)};
    cr_assert_eq(gs_py_stack_state(frames, 3), GS_PY_FRAMES);
    /* any other code-0 pc reads as "no frame", never as a frame */
    uint64_t odd[] = {GS_PY_PC_BASE | 77};
    cr_assert_eq(gs_py_stack_state(odd, 1), GS_PY_NO_FRAME);
}

Test(pyframes, python_frames_are_named_from_the_traces_code_objects)
{
    struct gs_replay r;
    gs_replay_init(&r);
    struct gs_rpycode c = {.id = 5, .file = "/srv/model.py", .function = "Model.forward",
                           .first_line = 80};
    gs_replay_ops.pycode(&r, &c);
    struct gs_frame f;
    gs_py_frame(&r, gs_py_pc(5, 88), &f);
    cr_assert(f.python);
    cr_assert_str_eq(f.function, "Model.forward");
    cr_assert_str_eq(f.file, "/srv/model.py");
    cr_assert_eq(f.line, 88);
    cr_assert_null(f.module);
    /* a code id the trace never defined (a damaged chunk): nameless, still Python */
    gs_py_frame(&r, gs_py_pc(6, 1), &f);
    cr_assert(f.python);
    cr_assert_null(f.function);
    cr_assert_null(f.file);
    cr_assert_eq(f.line, 1);
    gs_replay_free(&r);
}
