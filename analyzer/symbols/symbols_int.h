/*
 * symbols_int.h - what the symbols layer's files share: Python frames
 * merged into call sites (pyframes.c), PyTorch's backward nodes named
 * (autograd.c). sites.c uses both.
 *
 * Included by: the files of analyzer/symbols (and unit tests).
 */
#ifndef GPUSHIM_SYMBOLS_SYMBOLS_INT_H
#define GPUSHIM_SYMBOLS_SYMBOLS_INT_H

#include <stddef.h>
#include <stdint.h>

#include "analyzer/symbols/symbols.h"

struct gs_replay;
struct gs_frame;

/* ---- pyframes.c: Python frames in call sites ---- */
enum gs_py_state gs_py_stack_state(const uint64_t *pcs, unsigned n);
/* Whether f is a frame of CPython's interpreter or of the FFI that carries
 * a call from Python to C: libffi, ctypes, cffi (see pyframes.c). */
int gs_py_machinery_frame(const struct gs_frame *f);
/* The frame of Python pc pc: function, file and line from its code object,
 * or NULL function and file when the trace does not define it. */
void gs_py_frame(const struct gs_replay *r, uint64_t pc, struct gs_frame *out);
/* Merges a stack's native source frames (nn, innermost first) and Python
 * frames (np, innermost first) into out (room for nn + np): the Python
 * frames in place of the interpreter's. Returns the frames in out; *before:
 * how many native frames come before the first Python one. */
size_t gs_py_merge(const struct gs_frame *native, size_t nn, const struct gs_frame *py,
                   size_t np, struct gs_frame *out, size_t *before);

/* ---- autograd.c ---- */
/* Whether function (a symbolized name, mangled or not) is the apply of one
 * of PyTorch's generated backward nodes: 1 and its operator's name in out
 * ("torch::autograd::generated::MulBackward0::apply(...)" -> "mul"), or 0
 * (also when out cannot hold it). */
int gs_autograd_backward_of(const char *function, char *out, size_t outsz);

#endif
