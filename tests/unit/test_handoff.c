/*
 * test_handoff.c - shim/record/handoff.c: which Python frames are a hand-off
 * (PyTorch's built in, more from GPUSHIM_HANDOFF's "FILE_SUFFIX:FUNCTION"
 * pairs, none with "0"), by the frame's file and function as read.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "shim/record/pyread.h"
#include "shim/record/record_int.h"

static struct gs_pyframe frame(const char *file, const char *name)
{
    return (struct gs_pyframe){.named = 1, .file = file, .file_len = (uint32_t)strlen(file),
                               .name = name, .name_len = (uint32_t)strlen(name),
                               .file_kind = 1, .name_kind = 1};
}

static int is(const char *file, const char *name)
{
    struct gs_pyframe f = frame(file, name);
    return gs_handoff_is(&f);
}

Test(handoff, torch_built_in)
{
    gs_handoff_init(NULL);
    cr_assert(gs_handoff_any());
    const char *site = "/usr/lib/python3/dist-packages/torch/autograd/";
    char graph[256], init[256];
    snprintf(graph, sizeof graph, "%sgraph.py", site);
    snprintf(init, sizeof init, "%s__init__.py", site);
    cr_assert(is(graph, "_engine_run_backward"), "2.3 and later");
    cr_assert(is(init, "backward") && is(init, "grad"), "2.0 to 2.2");
    cr_assert(!is(graph, "backward"), "the function and the file both");
    cr_assert(!is(init, "_engine_run_backward"));
    cr_assert(!is("/x/mytorch/autograd/graph.py", "_engine_run_backward"), "a whole path part");
    cr_assert(!is(graph, "_engine_run_backward_"), "the whole name");
    struct gs_pyframe wide = frame(graph, "_engine_run_backward");
    wide.name_kind = 2;
    cr_assert(!gs_handoff_is(&wide), "names not in one byte a character are never one");
    wide = frame(graph, "_engine_run_backward");
    wide.named = 0;
    cr_assert(!gs_handoff_is(&wide), "a frame whose names were not read");
}

Test(handoff, more_from_the_variable_and_none)
{
    gs_handoff_init("train.py:wait_for_engine;/jax/_src/dispatch.py:apply;bad;:x;y:");
    cr_assert(is("/home/u/train.py", "wait_for_engine"));
    cr_assert(is("/x/jax/_src/dispatch.py", "apply"));
    cr_assert(is("/t/torch/autograd/graph.py", "_engine_run_backward"), "the built-in kept");
    cr_assert(!is("bad", "bad") && !is("/a/b.py", "x") && !is("/y", ""), "malformed pairs: none");
    gs_handoff_init("0");
    cr_assert(!gs_handoff_any());
    cr_assert(!is("/t/torch/autograd/graph.py", "_engine_run_backward"), "0: not even torch's");
}
