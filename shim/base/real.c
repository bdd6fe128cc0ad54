/*
 * real.c - the real functions behind the hooks: the CUDA ones, one slot per
 * exported name, and glibc's (dlsym, and what hooks_threads.c wraps).
 *
 * A program reaches a driver function in three ways (docs/design.md,
 * "Interception at the driver"): by symbol,
 * by dlsym, or through cuGetProcAddress. The last two give us the real
 * pointer the program asked for, and we keep it: it is what our wrapper must
 * call. For callers that bound to our exported symbol directly we look the
 * real one up ourselves: first the next definition after the shim
 * (RTLD_NEXT), then the libcuda.so.1 already loaded in the process (opened
 * with RTLD_NOLOAD: the shim never loads the driver itself).
 *
 * One slot per exported function name, filled by the first lookup
 * (gs_real_offer). Which of our wrappers the shim hands out for a lookup,
 * and what it does when a lookup's result differs from the slot's (a second
 * driver in the process), is the top layer's: shim/entry/getproc_hook.c,
 * with the table of our wrappers. This file takes no address of a wrapper,
 * so nothing here calls up into the hooks.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <string.h>

#include "shim/base/base.h"

static const char *const fn_names[GS_FN_COUNT] = {
#define GS_FN_NAME(name, ret, params) #name,
    GS_DRIVER_HOOKED(GS_FN_NAME) GS_DRIVER_GETTERS(GS_FN_NAME) GS_DRIVER_USED(GS_FN_NAME)
        GS_RUNTIME_HOOKED(GS_FN_NAME)
#undef GS_FN_NAME
};

/* Which functions the shim wraps (the rest, GS_DRIVER_USED, it only calls). */
static const char wrapped[GS_FN_COUNT] = {
#define GS_FN_WRAPPED(name, ret, params) [GS_FN_##name] = 1,
    GS_DRIVER_HOOKED(GS_FN_WRAPPED) GS_DRIVER_GETTERS(GS_FN_WRAPPED)
        GS_RUNTIME_HOOKED(GS_FN_WRAPPED)
#undef GS_FN_WRAPPED
};

void *gs_real_fns[GS_FN_COUNT];    /* accessed atomically; gs_real reads it inline */
static char absent[GS_FN_COUNT];   /* the loaded driver lacks it: not looked up again */
static void *driver;               /* the loaded libcuda.so.1, once found */

typedef void *(*dlsym_fn)(void *, const char *);
static dlsym_fn real_dlsym; /* accessed atomically; set once, to the same value by any thread */

/* The linker marks where our image starts and ends. */
extern const char __ehdr_start[] __attribute__((visibility("hidden")));
extern const char _end[] __attribute__((visibility("hidden")));

/* Runs before anything else in the process may have been set up (a
 * sanitizer's runtime asks dlsym for its functions during its own start):
 * only glibc calls that nothing intercepts. So not pthread_once, which
 * ThreadSanitizer intercepts; threads that race here find the same function
 * and none waits for another (a first lookup from inside a library's
 * constructor holds the loader lock that another thread's lookup needs). */
static dlsym_fn real_init(void)
{
    dlsym_fn f = __atomic_load_n(&real_dlsym, __ATOMIC_ACQUIRE);
    if (f)
        return f;
    /* dlvsym is not hooked, so it reaches glibc's own dlsym. glibc 2.34 moved
     * dlsym into libc under a new version; older ones have only 2.2.5. */
    f = (dlsym_fn)dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
    if (!f)
        f = (dlsym_fn)dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
    __atomic_store_n(&real_dlsym, f, __ATOMIC_RELEASE);
    return f;
}

/* Everything the lookups need, found before any program thread can ask. */
__attribute__((constructor)) static void real_early(void) { (void)real_init(); }

void *gs_real_dlsym(void *handle, const char *name)
{
    dlsym_fn real = real_init();
    if (!real) {
        static int once;
        gs_warn_once(&once, "cannot find glibc's dlsym; lookups by dlsym are not recorded");
        return NULL;
    }
    return real(handle, name);
}

int gs_in_shim(const void *addr)
{
    uintptr_t a = (uintptr_t)addr;
    return a >= (uintptr_t)__ehdr_start && a < (uintptr_t)_end;
}

const char *gs_fn_name(enum gs_fn fn) { return fn_names[fn]; }

struct link_map *gs_link_map_of(const void *addr)
{
    Dl_info info;
    struct link_map *lm = NULL;
    if (!dladdr1(addr, &info, (void **)&lm, RTLD_DL_LINKMAP))
        return NULL;
    return lm;
}

void *gs_lookup_in_scope(struct link_map *l, const char *name)
{
    /* the program itself has no name: its handle is dlopen(NULL)'s */
    void *h = dlopen(l->l_name && l->l_name[0] ? l->l_name : NULL, RTLD_NOLOAD | RTLD_LAZY);
    if (!h)
        return NULL;
    void *p = gs_real_dlsym(h, name);
    dlclose(h);
    return p;
}

int gs_fn_by_name(const char *name)
{
    if (!name || name[0] != 'c' || name[1] != 'u')
        return -1;
    for (int i = 0; i < GS_FN_COUNT; i++)
        if (wrapped[i] && strcmp(name, fn_names[i]) == 0)
            return i;
    return -1;
}

static int is_driver_fn(enum gs_fn fn) { return fn < GS_FN_cudaMalloc; }

/* The libcuda.so.1 the program loaded, if it did; never loads it. Found once:
 * the one reference taken is kept (a driver is never unloaded anyway). */
static void *loaded_driver(void)
{
    void *h = __atomic_load_n(&driver, __ATOMIC_ACQUIRE);
    if (h)
        return h;
    h = dlopen("libcuda.so.1", RTLD_NOLOAD | RTLD_LAZY);
    void *expected = NULL;
    if (h && !__atomic_compare_exchange_n(&driver, &expected, h, 0, __ATOMIC_ACQ_REL,
                                          __ATOMIC_ACQUIRE))
        dlclose(h); /* another thread found it first */
    return __atomic_load_n(&driver, __ATOMIC_ACQUIRE);
}

void *gs_real_find(enum gs_fn fn)
{
    void *p = __atomic_load_n(&gs_real_fns[fn], __ATOMIC_ACQUIRE);
    if (p || __atomic_load_n(&absent[fn], __ATOMIC_RELAXED))
        return p;
    int saved = errno; /* the lookups below must not show in the program's errno */
    char *err = NULL;  /* nor in its dlerror(): a failed lookup sets it */
    p = gs_real_dlsym(RTLD_NEXT, fn_names[fn]);
    void *h = NULL;
    if ((!p || gs_in_shim(p)) && is_driver_fn(fn)) {
        h = loaded_driver();
        p = h ? gs_real_dlsym(h, fn_names[fn]) : NULL;
    }
    if (!p)
        err = dlerror(); /* consumed: the program sees no error of ours */
    (void)err;
    errno = saved;
    if (!p && h) /* a driver that lacks it (older than the function) will not gain it */
        __atomic_store_n(&absent[fn], 1, __ATOMIC_RELAXED);
    if (!p || gs_in_shim(p))
        return NULL;
    void *expected = NULL;
    if (!__atomic_compare_exchange_n(&gs_real_fns[fn], &expected, p, 0, __ATOMIC_ACQ_REL,
                                     __ATOMIC_ACQUIRE))
        p = expected;
    return p;
}

void *gs_real_offer(enum gs_fn fn, void *real)
{
    void *expected = NULL;
    if (__atomic_compare_exchange_n(&gs_real_fns[fn], &expected, real, 0, __ATOMIC_ACQ_REL,
                                    __ATOMIC_ACQUIRE))
        return real;
    return expected;
}

void *gs_real_next(void **cache, const char *name)
{
    void *p = __atomic_load_n(cache, __ATOMIC_ACQUIRE);
    if (!p) {
        int saved = errno;
        p = gs_real_dlsym(RTLD_NEXT, name);
        errno = saved;
        __atomic_store_n(cache, p, __ATOMIC_RELEASE);
    }
    return p;
}
