/*
 * settings.c - owns the allocator settings a what-if replay compares: a
 * PYTORCH_CUDA_ALLOC_CONF value read as the PyTorch version asked for reads
 * it (CUDAAllocatorConfig::parseArgs, c10/cuda/CUDAAllocatorConfig.cpp; from
 * 2.10 with AcceleratorAllocatorConfig, c10/core/AllocatorConfig.cpp:
 * options "key:value" separated by commas, a list in brackets; which options
 * the version has, and the checks it makes on each value), the PyTorch
 * versions the model knows, and the settings compared when the user names
 * none; and JAX's settings for the model of XLA's BFC allocator, as
 * jax/_src/xla_bridge.py reads them from the environment.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyzer/whatif/settings.h"

#define MiB (1024ull * 1024ull)

static int fail(char *err, size_t errsz, const char *fmt, const char *a, size_t alen)
{
    snprintf(err, errsz, fmt, (int)alen, a);
    return -1;
}

/* The text [p, p+n) as a string in buf (32 bytes): 0, or -1 when empty or
 * too long for a number. */
static int as_string(const char *p, size_t n, char *buf)
{
    if (n == 0 || n >= 32)
        return -1;
    memcpy(buf, p, n);
    buf[n] = 0;
    errno = 0;
    return 0;
}

/* A whole unsigned number of the text [p, p+n). */
static int number(const char *p, size_t n, unsigned long long *out)
{
    char buf[32], *end;
    if (as_string(p, n, buf) != 0 || buf[0] < '0' || buf[0] > '9')
        return -1;
    *out = strtoull(buf, &end, 10);
    return *end || errno ? -1 : 0;
}

/* A fraction in [0, 1] of the text [p, p+n). */
static int fraction(const char *p, size_t n, double *out)
{
    char buf[32], *end;
    if (as_string(p, n, buf) != 0)
        return -1;
    *out = strtod(buf, &end);
    return *end || errno || !(*out >= 0.0 && *out <= 1.0) ? -1 : 0;
}

static int is(const char *p, size_t n, const char *word)
{
    return strlen(word) == n && !memcmp(p, word, n);
}

/* The options of PYTORCH_CUDA_ALLOC_CONF and the release that added each,
 * for --torch: the parser of an older release refuses an option it does
 * not know ("Unrecognized CachingAllocator option", "Unrecognized key ...
 * in CUDA allocator config"). Each from its pull request's merge against
 * the release branches' cuts (release/2.9 was cut on 2025-09-08):
 * expandable_segments pytorch/pytorch#96995 (2.1); release_lock_on_cudamalloc
 * #108367 (merged after 2.1's cut, 2023-08); pinned_use_cuda_host_register
 * and pinned_num_register_threads (2.2); max_non_split_rounding_mb #136174
 * and pinned_use_background_threads #135524 (2024-09, after 2.5's cut);
 * graph_capture_record_stream_reuse #158352 (2025-07/08, before 2.9's cut:
 * #162186 of 2025-09-04 builds on it); pinned_reserve_segment_size_mb
 * #164501 (2025-10) and per_process_memory_fraction #161035, written
 * against the ConfigTokenizer of the refactor merged 2025-10-16
 * (#165135, #165281): 2.10. The hip spellings are the same options. */
static const struct {
    const char *key;
    int since; /* the 2.x minor */
} since[] = {
    {"max_split_size_mb", 0},
    {"roundup_power2_divisions", 0},
    {"garbage_collection_threshold", 0},
    {"backend", 0},
    {"expandable_segments", 1},
    {"release_lock_on_cudamalloc", 2},
    {"release_lock_on_hipmalloc", 2},
    {"pinned_use_cuda_host_register", 2},
    {"pinned_use_hip_host_register", 2},
    {"pinned_num_register_threads", 2},
    {"max_non_split_rounding_mb", 6},
    {"pinned_use_background_threads", 6},
    {"graph_capture_record_stream_reuse", 9},
    {"pinned_reserve_segment_size_mb", 10},
    {"per_process_memory_fraction", 10},
};

/* The minor that added option k (-1: not an option of PyTorch's). */
static int option_since(const char *k, size_t kn)
{
    for (size_t i = 0; i < sizeof since / sizeof since[0]; i++)
        if (is(k, kn, since[i].key))
            return since[i].since;
    return -1;
}

/* roundup_power2_divisions' list "[SIZE:N,...,>:N]", as
 * parseRoundUpPower2Divisions reads it (CUDAAllocatorConfig before 2.10,
 * AcceleratorAllocatorConfig from it, the same rules): SIZE in MiB, a power
 * of two, names the interval of index log2(SIZE) clamped to [0, 15] (the
 * intervals are [1 MiB << i, 2 MiB << i), the last one all above), which
 * gets N (0, or a power of two); the first SIZE also fills every interval
 * below it; ">" fills from the last SIZE's interval (that one included) to
 * the end. The array starts at 0 (parseArgs' reset). 0, or -1 with why. */
static int pow2_list(struct gs_tc_config *c, const char *v, size_t vn, char *err, size_t errsz)
{
    if (vn < 2 || v[vn - 1] != ']')
        return fail(err, errsz, "roundup_power2_divisions: a list [SIZE:N,...] ends in ]%.*s",
                    "", 0);
    uint32_t d[GS_TC_POW2_INTERVALS] = {0};
    size_t last = 0;
    int first = 1;
    const char *p = v + 1, *end = v + vn - 1;
    if (p == end)
        return fail(err, errsz, "roundup_power2_divisions: an empty list%.*s", "", 0);
    while (p < end) {
        size_t n = (size_t)(end - p), item = strcspn(p, ",");
        item = item < n ? item : n;
        size_t kn = strcspn(p, ":");
        if (kn >= item)
            return fail(err, errsz, "roundup_power2_divisions: %.*s is not SIZE:N", p, item);
        unsigned long long size, div;
        if (number(p + kn + 1, item - kn - 1, &div) != 0 || (div && (div & (div - 1))) ||
            div > (1u << 20))
            return fail(err, errsz, "roundup_power2_divisions: %.*s: N is 0 or a power of 2",
                        p, item);
        if (kn == 1 && p[0] == '>') {
            for (size_t i = last; i < GS_TC_POW2_INTERVALS; i++)
                d[i] = (uint32_t)div;
        } else {
            if (number(p, kn, &size) != 0 || !size || (size & (size - 1)))
                return fail(err, errsz, "roundup_power2_divisions: %.*s: SIZE (MiB) is a "
                                        "power of 2, or >", p, item);
            size_t index = (size_t)(63 - __builtin_clzll(size));
            index = index < GS_TC_POW2_INTERVALS ? index : GS_TC_POW2_INTERVALS - 1;
            if (first) {
                for (size_t i = 0; i < index; i++)
                    d[i] = (uint32_t)div;
                first = 0;
            }
            d[index] = (uint32_t)div;
            last = index;
        }
        p += item;
        if (p < end)
            p++; /* the comma */
    }
    memcpy(c->roundup_power2_divisions, d, sizeof d);
    return 0;
}

/* One option "key:value" (CUDAAllocatorConfig::parseArgs and the parsers it
 * calls: parseMaxSplitSize, parseMaxNonSplitRoundingSize,
 * parseGarbageCollectionThreshold, parseRoundUpPower2Divisions,
 * parseExpandableSegments, parsePerProcessMemoryFraction; from 2.10 the
 * first four in AcceleratorAllocatorConfig) as the version reads it. */
static int option(struct gs_wi_setting *s, const char *k, size_t kn, const char *v, size_t vn,
                  char *err, size_t errsz)
{
    unsigned long long n;
    struct gs_tc_config *c = &s->tc;
    int minor = gs_tc_torch_minor(c->torch), added = option_since(k, kn);
    if (added > minor) {
        snprintf(err, errsz, "%.*s: an option of PyTorch 2.%d and later; 2.%d (--torch) has none",
                 (int)kn, k, added, minor);
        return -1;
    }
    if (is(k, kn, "max_split_size_mb") || is(k, kn, "max_non_split_rounding_mb")) {
        unsigned least = gs_tc_torch_min_split_mb(c->torch);
        if (number(v, vn, &n) != 0 || n > (1ull << 40))
            return fail(err, errsz, "%.*s: a whole number of MiB expected", k, kn);
        if (n < least) {
            snprintf(err, errsz, "%.*s: %llu is under %u, which PyTorch 2.%d refuses (must be %s)",
                     (int)kn, k, n, least, minor, least == 20 ? ">= 20" : "> 20");
            return -1;
        }
        if (k[4] == 's') {
            c->max_split_size = n * MiB;
            s->costs |= GS_WI_SLOWER_SPLIT;
        } else {
            c->max_non_split_rounding = n * MiB;
        }
    } else if (is(k, kn, "garbage_collection_threshold")) {
        if (fraction(v, vn, &c->gc_threshold) != 0)
            return fail(err, errsz, "%.*s: a fraction between 0 and 1 expected", k, kn);
    } else if (is(k, kn, "memory_fraction") || is(k, kn, "per_process_memory_fraction")) {
        /* gpushim's memory_fraction, torch.cuda.set_per_process_memory_fraction;
         * from 2.10 the allocator's own per_process_memory_fraction, which
         * DeviceCachingAllocator's constructor hands setMemoryFraction */
        if (fraction(v, vn, &c->memory_fraction) != 0)
            return fail(err, errsz, "%.*s: a fraction between 0 and 1 expected", k, kn);
    } else if (is(k, kn, "roundup_power2_divisions")) {
        if (vn && v[0] == '[')
            return pow2_list(c, v, vn, err, errsz);
        /* the single number, for every interval: a power of two (0 refused) */
        if (number(v, vn, &n) != 0 || !n || (n & (n - 1)) || n > (1u << 20))
            return fail(err, errsz, "%.*s: a power of 2 (or a list [SIZE:N,...,>:N]) expected",
                        k, kn);
        gs_tc_config_pow2_all(c, (uint32_t)n);
    } else if (is(k, kn, "expandable_segments")) {
        if (is(v, vn, "True"))
            c->expandable_segments = 1;
        else if (is(v, vn, "False"))
            c->expandable_segments = 0;
        else
            return fail(err, errsz, "%.*s: True or False expected (as PyTorch spells them)", k,
                        kn);
        s->costs = c->expandable_segments ? s->costs | GS_WI_IPC_HANDLES
                                          : s->costs & ~GS_WI_IPC_HANDLES;
    } else if (is(k, kn, "backend")) {
        if (!is(v, vn, "native"))
            return fail(err, errsz, "backend:%.*s is not the caching allocator: only "
                                    "backend:native is modelled", v, vn);
    } else if (added >= 0 || (kn > 7 && !memcmp(k, "pinned_", 7))) {
        /* the lock, pinned host memory, graph capture: no change to device memory
         * outside a capture */
    } else {
        return fail(err, errsz, "unknown option %.*s (PyTorch's CUDA allocator options: "
                                "expandable_segments, max_split_size_mb, "
                                "roundup_power2_divisions, garbage_collection_threshold, "
                                "max_non_split_rounding_mb, per_process_memory_fraction; and "
                                "memory_fraction)", k, kn);
    }
    return 0;
}

/* Each "key<sep>value" of a comma-separated list to fn, as
 * CUDAAllocatorConfig's tokenizer splits PYTORCH_CUDA_ALLOC_CONF (a value
 * in brackets runs to its closing one). 0, or fn's -1, or -1 with why in
 * err when an option has no separator. */
typedef int (*option_fn)(struct gs_wi_setting *s, const char *k, size_t kn, const char *v,
                         size_t vn, char *err, size_t errsz);
static int each_option(const char *p, char sep, const char *form, option_fn fn,
                       struct gs_wi_setting *s, char *err, size_t errsz)
{
    const char seps[3] = {sep, ',', 0};
    while (*p) {
        while (*p == ',' || *p == ' ')
            p++;
        if (!*p)
            break;
        size_t n = strcspn(p, ","), kn = strcspn(p, seps);
        while (n && p[n - 1] == ' ')
            n--;
        if (kn >= n) {
            snprintf(err, errsz, "%.*s: %s", (int)n, p, form);
            return -1;
        }
        const char *v = p + kn + 1;
        size_t vn = n - kn - 1;
        if (vn && v[0] == '[') { /* a list: to its closing bracket */
            const char *close = strchr(v, ']');
            vn = close ? (size_t)(close - v) + 1 : strlen(v);
            n = kn + 1 + vn;
        }
        while (kn && p[kn - 1] == ' ')
            kn--;
        while (vn && *v == ' ')
            v++, vn--;
        if (fn(s, p, kn, v, vn, err, errsz) != 0)
            return -1;
        p += n;
        p += strcspn(p, ",");
    }
    return 0;
}

int gs_wi_parse_torch(const char *conf, enum gs_tc_torch torch, struct gs_wi_setting *s,
                      char *err, size_t errsz)
{
    memset(s, 0, sizeof *s);
    gs_tc_config_default(&s->tc);
    s->tc.torch = torch;
    if (!conf)
        conf = "";
    size_t len = strlen(conf);
    if (len >= sizeof s->name) {
        snprintf(err, errsz, "a setting of %zu characters is too long", len);
        return -1;
    }
    const char *p = conf;
    while (*p == ' ')
        p++;
    if (!*p || !strcmp(p, "default")) {
        snprintf(s->name, sizeof s->name, "default");
        return 0;
    }
    snprintf(s->name, sizeof s->name, "%s", p);
    if (each_option(p, ':', "an option is key:value", option, s, err, errsz) != 0)
        return -1;
    if (gs_tc_config_check(&s->tc) != 0) {
        snprintf(err, errsz, "%s: a value PyTorch refuses (garbage_collection_threshold "
                             "between 0 and 1, exclusive)", s->name);
        return -1;
    }
    return 0;
}

/* Besides the run's own: the default; each option that answers
 * fragmentation alone; and the pair of pytorch/pytorch#123548. Garbage
 * collection acts only under a memory fraction: before 2.10 any (1 sets
 * one), from 2.10 one below 1 (gs_tc_torch_fraction_optional), so 0.99. */
static const char *const compared[] = {
    "default",
    "expandable_segments:True",
    "max_split_size_mb:512",
    "roundup_power2_divisions:4",
    "garbage_collection_threshold:0.8,memory_fraction:1.0",
    "expandable_segments:True,max_split_size_mb:512",
};
#define GC_FROM_2_10 "garbage_collection_threshold:0.8,per_process_memory_fraction:0.99"

size_t gs_wi_default_settings(enum gs_tc_torch torch, const char *conf,
                              struct gs_wi_setting *out, size_t max)
{
    size_t n = 0;
    char err[256];
    if (conf && n < max && gs_wi_parse_torch(conf, torch, &out[n], err, sizeof err) == 0 &&
        strcmp(out[n].name, "default") != 0)
        n++;
    for (size_t i = 0; i < sizeof compared / sizeof compared[0] && n < max; i++) {
        const char *conf_i = compared[i];
        if (gs_tc_torch_fraction_optional(torch) && strstr(conf_i, "memory_fraction:1.0"))
            conf_i = GC_FROM_2_10;
        if (gs_wi_parse_torch(conf_i, torch, &out[n], err, sizeof err) != 0)
            continue;
        int twin = 0; /* the run's own may be one of these */
        for (size_t k = 0; k < n; k++)
            twin |= !strcmp(out[k].name, out[n].name);
        n += !twin;
    }
    return n;
}

int gs_wi_parse_torch_version(const char *s, enum gs_tc_torch *out)
{
    if (!s)
        return -1;
    if (!strcmp(s, "pr193400")) {
        *out = GS_TC_TORCH_PR193400;
        return 0;
    }
    unsigned major, minor;
    char tail;
    if (sscanf(s, "%u.%u%c", &major, &minor, &tail) != 2 &&
        !(sscanf(s, "%u.%u.%*u%c", &major, &minor, &tail) == 2))
        return -1;
    if (major != 2)
        return -1;
    /* a release after the newest modelled: read as the newest */
    *out = minor > 12 ? GS_TC_TORCH_2_12 : (enum gs_tc_torch)minor;
    return minor == 12 ? 0 : 1;
}

const char *gs_wi_torch_version_name(enum gs_tc_torch torch)
{
    static const char *const older[] = {
        "2.0", "2.1", "2.2", "2.3", "2.4", "2.5", "2.6", "2.7", "2.8", "2.9", "2.10", "2.11"};
    static char buf[160];
    if (torch == GS_TC_TORCH_PR193400)
        return "PyTorch 2.12's caching allocator with pytorch/pytorch#193400";
    if (torch == GS_TC_TORCH_2_12)
        return "PyTorch 2.12's caching allocator (c10/cuda/CUDACachingAllocator.cpp, 13eab2b)";
    snprintf(buf, sizeof buf, "PyTorch 2.12's caching allocator with %s's options and memory "
                              "fraction", older[(int)torch < 12 ? (int)torch : 11]);
    return buf;
}

const char *gs_wi_torch_version(enum gs_tc_torch torch)
{
    static const char *const names[] = {"2.0", "2.1", "2.2", "2.3", "2.4", "2.5", "2.6",
                                        "2.7", "2.8", "2.9", "2.10", "2.11", "2.12", "pr193400"};
    return (int)torch >= 0 && (int)torch <= GS_TC_TORCH_PR193400 ? names[torch] : "2.12";
}

/* A JAX setting's value: "true"/"false" (and 1/0) as xla_bridge.py's
 * bool_env reads them. */
static int truth(const char *v, size_t n, int *out)
{
    if (is(v, n, "true") || is(v, n, "1") || is(v, n, "True")) {
        *out = 1;
        return 0;
    }
    if (is(v, n, "false") || is(v, n, "0") || is(v, n, "False")) {
        *out = 0;
        return 0;
    }
    return -1;
}

/* One of JAX's settings, NAME=VALUE (jax/_src/xla_bridge.py reads them). */
static int xla_option(struct gs_wi_setting *s, const char *k, size_t kn, const char *v,
                      size_t vn, char *err, size_t errsz)
{
    if (is(k, kn, "XLA_PYTHON_CLIENT_MEM_FRACTION")) {
        if (fraction(v, vn, &s->bfc.memory_fraction) != 0 || s->bfc.memory_fraction <= 0.0)
            return fail(err, errsz, "%.*s: a fraction in (0, 1] expected", k, kn);
    } else if (is(k, kn, "XLA_PYTHON_CLIENT_PREALLOCATE")) {
        if (truth(v, vn, &s->bfc.preallocate) != 0)
            return fail(err, errsz, "%.*s: true or false expected", k, kn);
    } else {
        return fail(err, errsz, "unknown JAX setting %.*s (the BFC model takes "
                                "XLA_PYTHON_CLIENT_MEM_FRACTION and "
                                "XLA_PYTHON_CLIENT_PREALLOCATE)", k, kn);
    }
    return 0;
}

int gs_wi_parse_xla(const char *conf, struct gs_wi_setting *s, char *err, size_t errsz)
{
    memset(s, 0, sizeof *s);
    s->allocator = GS_WI_XLA;
    gs_bfc_config_default(&s->bfc);
    if (!conf)
        conf = "";
    if (strlen(conf) >= sizeof s->name) {
        snprintf(err, errsz, "a setting of %zu characters is too long", strlen(conf));
        return -1;
    }
    const char *p = conf;
    while (*p == ' ')
        p++;
    snprintf(s->name, sizeof s->name, "%s", *p && strcmp(p, "default") ? p : "default");
    if (!strcmp(s->name, "default"))
        return 0;
    return each_option(p, '=', "a JAX setting is NAME=VALUE", xla_option, s, err, errsz);
}

int gs_wi_parse(const char *conf, enum gs_wi_allocator allocator, enum gs_tc_torch torch,
                struct gs_wi_setting *s, char *err, size_t errsz)
{
    return allocator == GS_WI_XLA ? gs_wi_parse_xla(conf, s, err, errsz)
                                  : gs_wi_parse_torch(conf, torch, s, err, errsz);
}

enum gs_wi_allocator gs_wi_allocator_of(const char *conf)
{
    return conf && strchr(conf, '=') ? GS_WI_XLA : GS_WI_TORCH;
}

static const char *const compared_xla[] = {
    "default",
    "XLA_PYTHON_CLIENT_MEM_FRACTION=.9",
    "XLA_PYTHON_CLIENT_MEM_FRACTION=.95",
    "XLA_PYTHON_CLIENT_PREALLOCATE=false",
};

size_t gs_wi_default_xla_settings(const char *fraction_set, struct gs_wi_setting *out, size_t max)
{
    size_t n = 0;
    char err[256], own[96];
    if (fraction_set && n < max) {
        snprintf(own, sizeof own, "XLA_PYTHON_CLIENT_MEM_FRACTION=%s", fraction_set);
        n += gs_wi_parse_xla(own, &out[n], err, sizeof err) == 0;
    }
    for (size_t i = 0; i < sizeof compared_xla / sizeof compared_xla[0] && n < max; i++) {
        if (gs_wi_parse_xla(compared_xla[i], &out[n], err, sizeof err) != 0)
            continue;
        int twin = 0;
        for (size_t k = 0; k < n; k++)
            twin |= !strcmp(out[k].name, out[n].name);
        n += !twin;
    }
    return n;
}

const char *gs_wi_xla_name(void)
{
    return "XLA's BFC allocator as JAX builds it (xla/tsl/framework/bfc_allocator.cc, "
           "openxla/xla 00df9ee)";
}

const char *gs_wi_costs_text(unsigned costs)
{
    if ((costs & GS_WI_IPC_HANDLES) && (costs & GS_WI_SLOWER_SPLIT))
        return "CUDA IPC through exported handles (PyTorch 2.5 and later); large blocks "
               "unsplit: more cudaMalloc calls";
    if (costs & GS_WI_IPC_HANDLES)
        return "tensors shared with other processes go through exported handles, not "
               "cudaIpcGetMemHandle (PyTorch 2.5 and later, pytorch/pytorch#130890; before "
               "it, sharing them fails)";
    if (costs & GS_WI_SLOWER_SPLIT)
        return "large blocks unsplit: more cudaMalloc calls (pytorch/pytorch#113481)";
    return NULL;
}
