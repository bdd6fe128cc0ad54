/*
 * simtensor.c - a stand-in for PyTorch's CUDA tensors, for running
 * examples/sim_torch/leak.py without a GPU: a Python extension module whose
 * Tensor owns device memory of the simulated CUDA driver (tests/sim, built
 * as build/sim/libcuda.so.1), allocated when it is made and freed when it
 * dies.
 *
 * Like PyTorch, it releases the GIL before it allocates (PyTorch's generated
 * bindings put `pybind11::gil_scoped_release no_gil;` in every op's
 * dispatch lambda: tools/autograd/gen_python_functions.py), so gpushim sees
 * the allocation on a thread that does not hold the GIL and reads its Python
 * frames from memory. A tensor made from others keeps them alive (its
 * "graph"), as autograd keeps an op's inputs for backward.
 *
 * Built by `make demo-python` against the machine's python3 headers.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

typedef int CUresult;
typedef unsigned long long CUdeviceptr;
typedef struct CUctx_st *CUcontext;
CUresult cuInit(unsigned flags);
CUresult cuDevicePrimaryCtxRetain(CUcontext *ctx, int dev);
CUresult cuCtxSetCurrent(CUcontext ctx);
CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t size);
CUresult cuMemFree_v2(CUdeviceptr p);

static CUcontext ctx;

static CUresult current(void)
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

typedef struct {
    PyObject_HEAD
    CUdeviceptr ptr;
    Py_ssize_t nbytes;
    PyObject *inputs; /* the tensors this one was made from, kept alive */
} Tensor;

static int tensor_init(Tensor *self, PyObject *args, PyObject *kwds)
{
    static char *names[] = {"nbytes", "inputs", NULL};
    Py_ssize_t nbytes;
    PyObject *inputs = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "n|O", names, &nbytes, &inputs))
        return -1;
    if (nbytes <= 0 || self->ptr) {
        PyErr_SetString(PyExc_ValueError, "a new tensor of a positive size");
        return -1;
    }
    CUresult rc;
    Py_BEGIN_ALLOW_THREADS /* as PyTorch's bindings do */
    rc = current();
    if (rc == 0)
        rc = cuMemAlloc_v2(&self->ptr, (size_t)nbytes);
    Py_END_ALLOW_THREADS
    if (rc != 0) {
        PyErr_Format(PyExc_MemoryError, "CUDA out of memory (cuMemAlloc_v2: %d)", rc);
        return -1;
    }
    self->nbytes = nbytes;
    Py_XINCREF(inputs);
    self->inputs = inputs;
    return 0;
}

static void tensor_dealloc(Tensor *self)
{
    Py_CLEAR(self->inputs);
    if (self->ptr) {
        Py_BEGIN_ALLOW_THREADS
        if (current() == 0)
            cuMemFree_v2(self->ptr);
        Py_END_ALLOW_THREADS
    }
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *tensor_nbytes(Tensor *self, void *closure)
{
    (void)closure;
    return PyLong_FromSsize_t(self->nbytes);
}

static PyGetSetDef tensor_getset[] = {
    {"nbytes", (getter)tensor_nbytes, NULL, "bytes of device memory", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject TensorType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "simtensor.Tensor",
    .tp_basicsize = sizeof(Tensor),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Tensor(nbytes, inputs=None): device memory, kept with its inputs",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)tensor_init,
    .tp_dealloc = (destructor)tensor_dealloc,
    .tp_getset = tensor_getset,
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "simtensor",
                                    "CUDA tensors of the simulated driver", -1, NULL,
                                    NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit_simtensor(void)
{
    if (PyType_Ready(&TensorType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module);
    if (!m)
        return NULL;
    Py_INCREF(&TensorType);
    if (PyModule_AddObject(m, "Tensor", (PyObject *)&TensorType) < 0) {
        Py_DECREF(&TensorType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
