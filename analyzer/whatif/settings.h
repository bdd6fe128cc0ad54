/*
 * settings.h - the allocator settings a what-if replay compares
 * (settings.c): a PYTORCH_CUDA_ALLOC_CONF value read the way PyTorch reads
 * it, the PyTorch versions the model knows, and the settings compared when
 * the user names none.
 *
 * Included by: analyzer/whatif, the layers above it and tests.
 */
#ifndef GPUSHIM_WHATIF_SETTINGS_H
#define GPUSHIM_WHATIF_SETTINGS_H

#include <stddef.h>

#include "analyzer/whatif/torch_caching.h"
#include "analyzer/whatif/xla_bfc.h"

#define GS_WI_NAME 160     /* a setting's name, as the user writes it */
#define GS_WI_SETTINGS 16  /* the most settings one replay compares */

/* What a setting costs besides memory. */
#define GS_WI_IPC_HANDLES 1u  /* expandable segments: memory shared with another process
                               * (torch.multiprocessing) goes through exported VMM handles
                               * (POSIX fd, or fabric), not cudaIpcGetMemHandle: PyTorch 2.5
                               * and later (pytorch/pytorch#130890); before, sharing fails */
#define GS_WI_SLOWER_SPLIT 2u /* max_split_size_mb: large blocks not split, so more
                               * cudaMalloc calls and OOM retries (pytorch/pytorch#113481) */
/* What costs (GS_WI_*) mean, in a sentence every screen gives; NULL: none. */
const char *gs_wi_costs_text(unsigned costs);

/* The allocator a setting is of. */
enum gs_wi_allocator {
    GS_WI_TORCH = 0, /* PyTorch's CUDA caching allocator (torch_caching.c) */
    GS_WI_XLA = 1,   /* XLA's BFC allocator as JAX builds it (xla_bfc.c) */
};

struct gs_wi_setting {
    char name[GS_WI_NAME]; /* "default", or the options as the user writes them:
                            * PYTORCH_CUDA_ALLOC_CONF's, or JAX's NAME=VALUE */
    enum gs_wi_allocator allocator;
    struct gs_tc_config tc;   /* GS_WI_TORCH */
    struct gs_bfc_config bfc; /* GS_WI_XLA (its capacity is the card's, set per case) */
    unsigned costs;        /* GS_WI_IPC_HANDLES, GS_WI_SLOWER_SPLIT */
};

/* Reads a PYTORCH_CUDA_ALLOC_CONF value (CUDAAllocatorConfig::parseArgs'
 * options; pinned-memory options and backend:native change nothing here)
 * over the defaults of torch, with one option of gpushim's own:
 * memory_fraction:F, what torch.cuda.set_per_process_memory_fraction(F)
 * sets (garbage_collection_threshold acts only with it). "" or "default":
 * the defaults. 0, or -1 with why in err. */
int gs_wi_parse_torch(const char *conf, enum gs_tc_torch torch, struct gs_wi_setting *s,
                      char *err, size_t errsz);

/* Reads JAX's allocator settings, "NAME=VALUE" separated by commas:
 * XLA_PYTHON_CLIENT_MEM_FRACTION (in (0, 1]; default .75) and
 * XLA_PYTHON_CLIENT_PREALLOCATE (true or false; default true), as
 * jax/_src/xla_bridge.py reads them. "" or "default": JAX's defaults. 0, or
 * -1 with why in err. */
int gs_wi_parse_xla(const char *conf, struct gs_wi_setting *s, char *err, size_t errsz);
/* The JAX settings compared when the user names none, the run's own
 * fraction first when it set one (fraction: XLA_PYTHON_CLIENT_MEM_FRACTION
 * as it ran, may be NULL). */
size_t gs_wi_default_xla_settings(const char *fraction, struct gs_wi_setting *out, size_t max);

/* A setting as the user writes it, read by allocator's reader (PyTorch's
 * with the rules of torch). 0, or -1 with why in err. */
int gs_wi_parse(const char *conf, enum gs_wi_allocator allocator, enum gs_tc_torch torch,
                struct gs_wi_setting *s, char *err, size_t errsz);
/* The allocator a setting's words are for: JAX's are NAME=VALUE. */
enum gs_wi_allocator gs_wi_allocator_of(const char *conf);

/* The settings compared when the user names none, the run's own first when
 * it had any (conf: the PYTORCH_CUDA_ALLOC_CONF it ran with, may be NULL).
 * Returns how many were written to out (at most max). */
size_t gs_wi_default_settings(enum gs_tc_torch torch, const char *conf,
                              struct gs_wi_setting *out, size_t max);

/* "2.N" or "2.N.P", or "pr193400" (2.12 with pytorch/pytorch#193400). 0
 * for a version the model follows as it is (2.12, pr193400); 1 for another
 * 2.x release: its options and memory fraction's rules apply, its
 * allocator is read as 2.12's (a release after 2.12 is read as 2.12); -1
 * when it names no PyTorch 2 version. */
int gs_wi_parse_torch_version(const char *s, enum gs_tc_torch *out);
/* What the model follows for that version, in a few words. */
const char *gs_wi_torch_version_name(enum gs_tc_torch torch);
/* The version as --torch names it: "2.9", "2.12", "pr193400". */
const char *gs_wi_torch_version(enum gs_tc_torch torch);
/* What the XLA model follows, in a few words. */
const char *gs_wi_xla_name(void);

#endif
