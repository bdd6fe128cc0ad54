/*
 * allocator_view.c - what a trace can see, given the framework that made it and the
 * allocator settings it ran under.
 *
 * The shim sees the driver. A framework's caching allocator hands tensors
 * out of segments it got from the driver, so a report of a PyTorch run with
 * default settings shows segments, not tensors. The trace records the
 * allocator settings (GS_REC_SETTINGS) and the modules loaded; from those
 * this file names the framework and says, in one sentence, what the sizes
 * in the report are and how to see tensors instead (gpushim run
 * --per-tensor, which sets what analyzer/cmd/run.c describes).
 */
#include <stdio.h>
#include <string.h>

#include "analyzer/read/read.h"
#include "analyzer/model/model.h"
#include "analyzer/model/replay.h"
#include "analyzer/findings/findings.h"
#include "analyzer/util/text.h"

static const char *setting(const struct gs_trace_info *info, const char *name)
{
    for (unsigned i = 0; i < info->header.nsettings; i++)
        if (!strcmp(info->header.settings[i].name, name))
            return info->header.settings[i].value;
    return NULL;
}

static int has_module(const struct gs_replay *r, const char *const *prefixes)
{
    for (size_t i = 0; i < r->trace.nmodules; i++) {
        const char *base = gs_basename(r->trace.modules[i].path);
        for (const char *const *p = prefixes; *p; p++)
            if (!strncmp(base, *p, strlen(*p)))
                return 1;
    }
    return 0;
}

/* A PYTORCH_*ALLOC_CONF option "key:value" is present. */
static int conf_has(const char *conf, const char *option)
{
    size_t n = strlen(option);
    for (const char *p = conf; p && *p;) {
        while (*p == ' ' || *p == ',')
            p++;
        if (!strncmp(p, option, n) && (p[n] == 0 || p[n] == ',' || p[n] == ' '))
            return 1;
        p = strchr(p, ',');
    }
    return 0;
}

/* Did PyTorch allocate through gpushim_torch_alloc (its pluggable allocator,
 * installed by gpushim.torch.use_allocator)? Its tensors are then one
 * allocation each whatever PYTORCH_CUDA_ALLOC_CONF says. */
static int pluggable(const struct gs_replay *r)
{
    for (size_t i = 0; i < r->nsites; i++)
        if (r->sites[i].api == GS_API_gpushim_torch_alloc)
            return 1;
    return 0;
}

static void add(struct gs_alloc_mode *m, int per_tensor, const char *note)
{
    size_t len = strlen(m->note);
    snprintf(m->note + len, sizeof m->note - len, "%s%s", len ? "; " : "", note);
    m->per_tensor = m->per_tensor == 0 ? 0 : per_tensor; /* any framework not per tensor: no */
}

int gs_alloc_mode_jax(const struct gs_alloc_mode *m)
{
    return (m->frameworks & GS_FW_JAX) && !(m->frameworks & GS_FW_PYTORCH);
}

void gs_allocator_mode(const struct gs_trace_info *info, const struct gs_replay *r,
                       struct gs_alloc_mode *m)
{
    static const char *const torch[] = {"libc10_cuda.so", "libtorch_cuda.so", NULL};
    static const char *const jax[] = {"xla_extension.so", "xla_cuda_plugin.so",
                                      "pjrt_c_api_gpu_plugin.so", NULL};
    static const char *const tf[] = {"libtensorflow_framework.so", "libtensorflow_cc.so",
                                     "_pywrap_tensorflow_internal.so", NULL};
    memset(m, 0, sizeof *m);
    m->per_tensor = -1;
    if (has_module(r, torch)) {
        m->frameworks |= GS_FW_PYTORCH;
        const char *conf = setting(info, "PYTORCH_ALLOC_CONF");
        if (!conf)
            conf = setting(info, "PYTORCH_CUDA_ALLOC_CONF");
        const char *nocache = setting(info, "PYTORCH_NO_CUDA_MEMORY_CACHING");
        if (pluggable(r))
            add(m, 1, "PyTorch with gpushim's allocator (gpushim.torch.use_allocator): one "
                      "allocation per tensor storage");
        else if (conf_has(conf, "backend:cudaMallocAsync"))
            add(m, 1, "PyTorch with backend:cudaMallocAsync: one stream-ordered allocation per "
                      "tensor storage (views of one storage are one allocation)");
        else if (nocache && strcmp(nocache, "0") != 0)
            add(m, 1, "PyTorch without caching (PYTORCH_NO_CUDA_MEMORY_CACHING): one allocation "
                      "per tensor storage");
        else if (conf_has(conf, "expandable_segments:True"))
            add(m, 0, "PyTorch expandable segments: sizes are 2 MiB or 20 MiB pages mapped into "
                      "growing segments, not tensors; run with --per-tensor to see tensors");
        else
            add(m, 0, "PyTorch caching allocator: sizes are segments, not tensors; run with "
                      "--per-tensor to see tensors");
    }
    if (has_module(r, jax)) {
        m->frameworks |= GS_FW_JAX;
        const char *alloc = setting(info, "XLA_PYTHON_CLIENT_ALLOCATOR");
        const char *pre = setting(info, "XLA_PYTHON_CLIENT_PREALLOCATE");
        if (alloc && !strcmp(alloc, "platform"))
            add(m, 1, "JAX with XLA_PYTHON_CLIENT_ALLOCATOR=platform: one allocation per buffer");
        else if (pre && (!strcmp(pre, "false") || !strcmp(pre, "0")))
            add(m, 0, "JAX's BFC allocator: sizes are the regions it grows by, not buffers; run "
                      "with --per-tensor to see buffers");
        else
            add(m, 0, "JAX preallocates most of the device in one allocation and serves buffers "
                      "from it: sizes are that allocation, not buffers; run with --per-tensor to "
                      "see buffers");
    }
    if (has_module(r, tf)) {
        m->frameworks |= GS_FW_TENSORFLOW;
        const char *alloc = setting(info, "TF_GPU_ALLOCATOR");
        if (alloc && !strcmp(alloc, "cuda_malloc_async"))
            add(m, 1, "TensorFlow with TF_GPU_ALLOCATOR=cuda_malloc_async: one stream-ordered "
                      "allocation per tensor");
        else
            add(m, 0, "TensorFlow's BFC allocator: sizes are regions, not tensors; run with "
                      "--per-tensor to see tensors");
    }
}
