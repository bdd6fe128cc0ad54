/*
 * handoff.c - which Python functions hand work to another thread and wait
 * for it: a thread whose innermost Python frame is one of them is the one
 * that a thread with no Python frames of its own works for (python.c).
 *
 * Built in, PyTorch's autograd: the thread that calls backward() releases
 * the GIL in THPEngine_run_backward (torch/csrc/autograd/python_engine.cpp)
 * and waits, in Engine::execute (engine.cpp), for the engine's device
 * threads (pt_autograd_0, ...), which run the backward nodes and allocate
 * the gradients; its innermost frame is torch/autograd/graph.py's
 * _engine_run_backward (PyTorch 2.3 and later), or torch/autograd/
 * __init__.py's backward or grad, which call the engine themselves (2.0 to
 * 2.2). GPUSHIM_HANDOFF adds others, "FILE_SUFFIX:FUNCTION" pairs with ';'
 * between them, or is "0" for none at all. A function is named as the
 * interpreter names its code (co_qualname from 3.11, co_name before).
 */
#include <string.h>

#include "shim/record/pyread.h"
#include "shim/record/record_int.h"

#define ENTRIES 16
#define ENTRY_MAX 256

static struct {
    int n;
    struct entry {
        char suffix[ENTRY_MAX], name[ENTRY_MAX];
        size_t suffix_len, name_len;
    } e[ENTRIES];
} table;

static void add(const char *suffix, size_t slen, const char *name, size_t nlen)
{
    if (table.n == ENTRIES || !slen || !nlen || slen >= ENTRY_MAX || nlen >= ENTRY_MAX)
        return;
    struct entry *e = &table.e[table.n++];
    memcpy(e->suffix, suffix, slen);
    e->suffix_len = slen;
    memcpy(e->name, name, nlen);
    e->name_len = nlen;
}

void gs_handoff_init(const char *more)
{
    memset(&table, 0, sizeof table);
    if (more && !strcmp(more, "0"))
        return;
    static const char *const builtin[][2] = {
        {"/torch/autograd/graph.py", "_engine_run_backward"},
        {"/torch/autograd/__init__.py", "backward"},
        {"/torch/autograd/__init__.py", "grad"}};
    for (size_t i = 0; i < sizeof builtin / sizeof builtin[0]; i++)
        add(builtin[i][0], strlen(builtin[i][0]), builtin[i][1], strlen(builtin[i][1]));
    while (more && *more) {
        size_t len = strcspn(more, ";");
        const char *colon = memchr(more, ':', len);
        if (colon)
            add(more, (size_t)(colon - more), colon + 1, len - (size_t)(colon - more) - 1);
        more += len + (more[len] == ';');
    }
}

int gs_handoff_any(void) { return table.n > 0; }

int gs_handoff_is(const struct gs_pyframe *f)
{
    if (!f->named || f->file_kind != 1 || f->name_kind != 1)
        return 0;
    for (int i = 0; i < table.n; i++) {
        const struct entry *e = &table.e[i];
        if (f->file_len >= e->suffix_len && f->name_len == e->name_len &&
            !memcmp(f->file + f->file_len - e->suffix_len, e->suffix, e->suffix_len) &&
            !memcmp(f->name, e->name, e->name_len))
            return 1;
    }
    return 0;
}
