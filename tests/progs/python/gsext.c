/*
 * gsext.c - a CPython extension module that allocates device memory the way
 * PyTorch's bindings do: the GIL released around the driver call.
 *
 * PyTorch's generated bindings wrap every op's dispatch in
 * `pybind11::gil_scoped_release no_gil;` (tools/autograd/gen_python_functions.py
 * emits it into each generated `dispatch_*` lambda), and the tensor
 * constructors do the same (torch/csrc/utils/tensor_new.cpp, new_with_sizes),
 * so the caching allocator reaches cudaMalloc with the GIL released. Here
 * Py_BEGIN_ALLOW_THREADS / Py_END_ALLOW_THREADS stand for them, and the
 * driver is the simulated one (build/sim/libcuda.so.1), linked directly.
 *
 * Backward runs on the autograd engine's own threads, which never hold the
 * GIL while the Python thread that called backward() waits
 * (torch/csrc/autograd/engine.cpp: Engine::thread_init names each device
 * thread "pt_autograd_" + device with c10::setThreadName; the caller blocks
 * in execute() with the GIL released by python_engine.cpp). pool_alloc does
 * that: a thread of its own named pt_autograd_0 allocates while the caller
 * waits without the GIL.
 *
 * Built by tests/integration/test_python_nogil.py against each interpreter's
 * own headers (sysconfig), linked with the simulated driver.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <pthread.h>
#include <stdint.h>

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef struct CUctx_st *CUcontext;
CUresult cuInit(unsigned flags);
CUresult cuDevicePrimaryCtxRetain(CUcontext *ctx, CUdevice dev);
CUresult cuCtxSetCurrent(CUcontext ctx);
CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t size);
CUresult cuMemFree_v2(CUdeviceptr p);

static CUcontext ctx;

static PyObject *failed(const char *what, CUresult rc)
{
    PyErr_Format(PyExc_RuntimeError, "%s failed: %d", what, rc);
    return NULL;
}

/* The device's primary context, current on the calling thread. */
static CUresult use_ctx(void)
{
    if (!ctx) {
        CUresult rc = cuInit(0);
        if (rc == 0)
            rc = cuDevicePrimaryCtxRetain(&ctx, 0);
        if (rc != 0)
            return rc;
    }
    return cuCtxSetCurrent(ctx);
}

static CUresult alloc_without_gil(size_t size, CUdeviceptr *p)
{
    CUresult rc;
    Py_BEGIN_ALLOW_THREADS
    rc = use_ctx();
    if (rc == 0)
        rc = cuMemAlloc_v2(p, size);
    Py_END_ALLOW_THREADS
    return rc;
}

/* alloc(size) -> address: the GIL released around the driver call. */
static PyObject *gs_alloc(PyObject *self, PyObject *arg)
{
    (void)self;
    size_t size = PyLong_AsSize_t(arg);
    if (size == (size_t)-1 && PyErr_Occurred())
        return NULL;
    CUdeviceptr p = 0;
    CUresult rc = alloc_without_gil(size, &p);
    return rc ? failed("cuMemAlloc_v2", rc) : PyLong_FromUnsignedLongLong(p);
}

/* alloc_with_gil(size) -> address: the GIL kept, as ctypes.PyDLL does. */
static PyObject *gs_alloc_with_gil(PyObject *self, PyObject *arg)
{
    (void)self;
    size_t size = PyLong_AsSize_t(arg);
    if (size == (size_t)-1 && PyErr_Occurred())
        return NULL;
    CUdeviceptr p = 0;
    CUresult rc = use_ctx();
    if (rc == 0)
        rc = cuMemAlloc_v2(&p, size);
    return rc ? failed("cuMemAlloc_v2", rc) : PyLong_FromUnsignedLongLong(p);
}

/* free(address): the GIL released. */
static PyObject *gs_free(PyObject *self, PyObject *arg)
{
    (void)self;
    CUdeviceptr p = PyLong_AsUnsignedLongLong(arg);
    if (PyErr_Occurred())
        return NULL;
    CUresult rc;
    Py_BEGIN_ALLOW_THREADS
    rc = use_ctx();
    if (rc == 0)
        rc = cuMemFree_v2(p);
    Py_END_ALLOW_THREADS
    if (rc)
        return failed("cuMemFree_v2", rc);
    Py_RETURN_NONE;
}

struct pool_job {
    size_t size;
    unsigned n;
    CUdeviceptr *out;
    CUresult rc;
};

static void *engine_thread(void *arg)
{
    struct pool_job *job = arg;
    pthread_setname_np(pthread_self(), "pt_autograd_0");
    job->rc = use_ctx();
    for (unsigned i = 0; job->rc == 0 && i < job->n; i++)
        job->rc = cuMemAlloc_v2(&job->out[i], job->size);
    return NULL;
}

/* The autograd engine's device thread as PyTorch makes it: a Python thread
 * state with no frames, the GIL released (PythonEngine::thread_init,
 * torch/csrc/autograd/python_engine.cpp: `auto gil =
 * std::make_unique<pybind11::gil_scoped_acquire>(); pybind11::gil_scoped_release
 * no_gil;`), named pt_autograd_0 (Engine::thread_init). WIP, issue 42. */
/* The GraphTask the calling engine thread runs, as libtorch tells it
 * (torch/csrc/autograd/engine.cpp: `int get_current_graph_task_id() { if
 * (current_graph_task) return current_graph_task->id_; return -1; }`), under
 * its linkage name: each engine_backward is a task of its own. */
static __thread int current_task = -1;
static int tasks;
int gs_graph_task_id(void) __asm__("_ZN5torch8autograd25get_current_graph_task_idEv");
int gs_graph_task_id(void) { return current_task; }

static void *tstate_engine_thread(void *arg)
{
    PyGILState_STATE g = PyGILState_Ensure();
    PyThreadState *saved = PyEval_SaveThread();
    current_task = __atomic_fetch_add(&tasks, 1, __ATOMIC_RELAXED);
    engine_thread(arg);
    current_task = -1;
    PyEval_RestoreThread(saved);
    PyGILState_Release(g);
    return NULL;
}

/* n allocations of size bytes by a new thread running thread(), the
 * caller waiting for it without the GIL: their addresses. */
static PyObject *on_engine(void *(*thread)(void *), Py_ssize_t size, Py_ssize_t n)
{
    CUdeviceptr out[1024];
    struct pool_job job = {(size_t)size, (unsigned)n, out, 0};
    pthread_t t;
    int err;
    Py_BEGIN_ALLOW_THREADS
    err = pthread_create(&t, NULL, thread, &job);
    if (err == 0)
        pthread_join(t, NULL);
    Py_END_ALLOW_THREADS
    if (err != 0)
        return failed("pthread_create", err);
    if (job.rc != 0)
        return failed("cuMemAlloc_v2 on the engine thread", job.rc);
    PyObject *list = PyList_New(n);
    for (Py_ssize_t i = 0; list && i < n; i++)
        PyList_SET_ITEM(list, i, PyLong_FromUnsignedLongLong(out[i]));
    return list;
}

/* engine_backward(size, n=1) -> [addresses]: n allocations on such a
 * thread, one task, the caller waiting without the GIL as
 * THPEngine_run_backward's caller does. */
static PyObject *gs_engine_backward(PyObject *self, PyObject *args)
{
    (void)self;
    Py_ssize_t size, n = 1;
    if (!PyArg_ParseTuple(args, "n|n", &size, &n) || size < 0 || n < 1 || n > 1024) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_ValueError, "size >= 0, 1 <= n <= 1024");
        return NULL;
    }
    return on_engine(tstate_engine_thread, size, n);
}

/* pool_alloc(size, n) -> [addresses]: n allocations made by a thread named
 * like PyTorch's autograd engine thread (no Python thread state, as a C
 * pool's), the caller waiting without the GIL. */
static PyObject *gs_pool_alloc(PyObject *self, PyObject *args)
{
    (void)self;
    Py_ssize_t size, n;
    if (!PyArg_ParseTuple(args, "nn", &size, &n) || size < 0 || n < 0 || n > 1024) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_ValueError, "size >= 0, 0 <= n <= 1024");
        return NULL;
    }
    return on_engine(engine_thread, size, n);
}

#if PY_VERSION_HEX >= 0x030C0000
static int watch_nothing(PyCodeEvent event, PyCodeObject *code)
{
    (void)event;
    (void)code;
    return 0;
}
#endif

/* Takes every code watcher the interpreter has left (3.12 and later; 8 in
 * all, Include/internal/pycore_interp.h's CODE_MAX_WATCHERS): how many. */
static PyObject *gs_take_code_watchers(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    long taken = 0;
#if PY_VERSION_HEX >= 0x030C0000
    while (PyCode_AddWatcher(watch_nothing) >= 0)
        taken++;
    PyErr_Clear(); /* the refusal that ended it */
#endif
    return PyLong_FromLong(taken);
}

static PyMethodDef methods[] = {
    {"take_code_watchers", gs_take_code_watchers, METH_NOARGS,
     "take_code_watchers(): every code watcher left taken (3.12 and later); how many"},
    {"alloc", gs_alloc, METH_O, "alloc(size): device memory, the GIL released"},
    {"alloc_with_gil", gs_alloc_with_gil, METH_O, "alloc_with_gil(size): the GIL kept"},
    {"free", gs_free, METH_O, "free(address), the GIL released"},
    {"engine_backward", gs_engine_backward, METH_VARARGS,
     "engine_backward(size, n=1): n allocations on an engine thread with a thread state"},
    {"pool_alloc", gs_pool_alloc, METH_VARARGS,
     "pool_alloc(size, n): n allocations on a thread named pt_autograd_0"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "gsext", NULL, -1, methods,
                                    NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit_gsext(void) { return PyModule_Create(&module); }
