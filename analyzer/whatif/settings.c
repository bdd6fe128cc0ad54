/*
 * settings.c - owns the allocator settings a what-if replay compares: a
 * PYTORCH_CUDA_ALLOC_CONF value read as CUDAAllocatorConfig::parseArgs
 * reads it (c10/cuda/CUDAAllocatorConfig.cpp, torch 2.12: options
 * "key:value" separated by commas; the checks it makes on each value are
 * gs_tc_config_check's), the PyTorch versions the model knows, and the
 * settings compared when the user names none; and JAX's settings for the
 * model of XLA's BFC allocator, as jax/_src/xla_bridge.py reads them from
 * the environment.
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

/* One option "key:value" (CUDAAllocatorConfig::parseArgs and the parsers it
 * calls: parseMaxSplitSize, parseMaxNonSplitRoundingSize,
 * parseGarbageCollectionThreshold, parseRoundUpPower2Divisions,
 * parseExpandableSegments). */
static int option(struct gs_wi_setting *s, const char *k, size_t kn, const char *v, size_t vn,
                  char *err, size_t errsz)
{
    unsigned long long n;
    struct gs_tc_config *c = &s->tc;
    if (is(k, kn, "max_split_size_mb") || is(k, kn, "max_non_split_rounding_mb")) {
        if (number(v, vn, &n) != 0 || n > (1ull << 40))
            return fail(err, errsz, "%.*s: a whole number of MiB expected", k, kn);
        if (k[4] == 's') {
            c->max_split_size = n * MiB;
            s->costs |= GS_WI_SLOWER_SPLIT;
        } else {
            c->max_non_split_rounding = n * MiB;
        }
    } else if (is(k, kn, "garbage_collection_threshold")) {
        if (fraction(v, vn, &c->gc_threshold) != 0)
            return fail(err, errsz, "%.*s: a fraction between 0 and 1 expected", k, kn);
    } else if (is(k, kn, "memory_fraction")) {
        if (fraction(v, vn, &c->memory_fraction) != 0)
            return fail(err, errsz, "%.*s: a fraction between 0 and 1 expected", k, kn);
    } else if (is(k, kn, "roundup_power2_divisions")) {
        if (vn && v[0] == '[')
            return fail(err, errsz, "%.*s: the list form is not modelled; give one number of "
                                    "divisions for every size", k, kn);
        if (number(v, vn, &n) != 0 || n > (1u << 20))
            return fail(err, errsz, "%.*s: a number of divisions expected", k, kn);
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
    } else if (is(k, kn, "release_lock_on_cudamalloc") || (kn > 7 && !memcmp(k, "pinned_", 7))) {
        /* the lock and pinned host memory: no change to device memory */
    } else {
        return fail(err, errsz, "unknown option %.*s (PyTorch's CUDA allocator options: "
                                "expandable_segments, max_split_size_mb, "
                                "roundup_power2_divisions, garbage_collection_threshold, "
                                "max_non_split_rounding_mb; and memory_fraction)", k, kn);
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
        snprintf(err, errsz, "%s: a value PyTorch refuses (max_split_size_mb over 20, "
                             "roundup_power2_divisions a power of two, "
                             "garbage_collection_threshold between 0 and 1)", s->name);
        return -1;
    }
    return 0;
}

/* Besides the run's own: the default; each option that answers
 * fragmentation alone; and the pair of pytorch/pytorch#123548. */
static const char *const compared[] = {
    "default",
    "expandable_segments:True",
    "max_split_size_mb:512",
    "roundup_power2_divisions:4",
    "garbage_collection_threshold:0.8,memory_fraction:1.0",
    "expandable_segments:True,max_split_size_mb:512",
};

size_t gs_wi_default_settings(enum gs_tc_torch torch, const char *conf,
                              struct gs_wi_setting *out, size_t max)
{
    size_t n = 0;
    char err[256];
    if (conf && n < max && gs_wi_parse_torch(conf, torch, &out[n], err, sizeof err) == 0 &&
        strcmp(out[n].name, "default") != 0)
        n++;
    for (size_t i = 0; i < sizeof compared / sizeof compared[0] && n < max; i++) {
        if (gs_wi_parse_torch(compared[i], torch, &out[n], err, sizeof err) != 0)
            continue;
        int twin = 0; /* the run's own may be one of these */
        for (size_t k = 0; k < n; k++)
            twin |= !strcmp(out[k].name, out[n].name);
        n += !twin;
    }
    return n;
}

int gs_wi_torch_minor(const char *s)
{
    unsigned major, minor;
    return s && sscanf(s, "%u.%u", &major, &minor) == 2 && major == 2 ? (int)minor : -1;
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
    *out = GS_TC_TORCH_2_12;
    return minor == 12 ? 0 : 1;
}

const char *gs_wi_torch_version_name(enum gs_tc_torch torch)
{
    return torch == GS_TC_TORCH_PR193400
               ? "PyTorch 2.12's caching allocator with pytorch/pytorch#193400"
               : "PyTorch 2.12's caching allocator (c10/cuda/CUDACachingAllocator.cpp, 13eab2b)";
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
