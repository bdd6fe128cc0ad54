/*
 * dlsym_hook.c - the exported dlsym.
 *
 * Programs that dlopen the driver and look its functions up by name (XLA,
 * TensorFlow, the static CUDA runtime) reach our wrappers through here. The
 * shim exports dlsym under both glibc symbol versions: GLIBC_2.2.5 (binaries
 * linked against libdl before glibc 2.34) and GLIBC_2.34 (everything since).
 *
 * Names in our table are looked up for real with the caller's own handle and
 * swapped for our wrapper; everything else is forwarded untouched.
 *
 * RTLD_NEXT means "after the object that called dlsym". Forwarded from here
 * it would mean "after the shim", so for callers outside the shim we walk the
 * link map ourselves: starting after the caller's object, the first object
 * whose own symbol table defines the name.
 *
 * This file and real.c run when a sanitizer's runtime looks up its own
 * functions, before it is ready: on that path they call nothing it
 * intercepts, and the Makefile builds them without AddressSanitizer.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <string.h>

#include "shim/base/base.h"
#include "shim/hooks/hooks.h"
#include "shim/entry/entry.h"

/* name defined by l itself (not by one of its dependencies), or NULL. */
static void *own_definition(struct link_map *l, const char *name)
{
    if (!l->l_name || !l->l_name[0])
        return NULL;
    void *p = gs_lookup_in_scope(l, name);
    return p && gs_link_map_of(p) == l ? p : NULL;
}

/* The first definition of name in an object loaded after the one holding
 * caller, as glibc's RTLD_NEXT would find it for that caller. */
static void *next_after(const void *caller, const char *name)
{
    struct link_map *from = gs_link_map_of(caller), *shim = gs_link_map_of((const void *)next_after);
    if (!from || !shim)
        return gs_real_dlsym(RTLD_NEXT, name);
    int after_shim = 0;
    for (struct link_map *l = shim->l_next; l; l = l->l_next)
        after_shim |= l == from;
    if (!after_shim) {
        /* A caller before the shim: what follows the shim is what glibc
         * would search (the shim's own names hooked_dlsym substitutes).
         * For the program itself, first the libraries preloaded before the
         * shim. Not for a preloaded library: a sanitizer's runtime asks
         * from there before it can bear the dlopen this walk makes. */
        int program = !from->l_name || !from->l_name[0];
        for (struct link_map *l = from->l_next; program && l && l != shim; l = l->l_next) {
            void *p = own_definition(l, name);
            if (p)
                return p;
        }
        return gs_real_dlsym(RTLD_NEXT, name);
    }
    for (struct link_map *l = from->l_next; l; l = l->l_next) {
        void *p = own_definition(l, name);
        if (p)
            return p;
    }
    return NULL;
}

/* Whether name is s (not strcmp: a sanitizer intercepts it, and this runs
 * before it is ready). */
static int named(const char *name, const char *s)
{
    while (*name && *name == *s) {
        name++;
        s++;
    }
    return *name == *s;
}

/* The C library's functions the shim wraps itself (hooks_threads.c): a
 * lookup that found what our wrapper passes on to gets our wrapper, as
 * gs_substitute does for the driver's, so a caller before the shim that
 * wraps them too (a sanitizer's runtime) passes on to ours. */
static void *libc_substitute(const char *name, void *p)
{
    void *ours = name[0] == 'p' && named(name, "prctl")                ? (void *)gs_prctl_wrapper
                 : name[0] == 'p' && named(name, "pthread_setname_np") ? (void *)gs_setname_wrapper
                 : name[0] == 'p' && named(name, "pthread_create")     ? (void *)gs_create_wrapper
                                                                       : NULL;
    return ours && p == gs_real_dlsym(RTLD_NEXT, name) ? ours : p;
}

static void *hooked_dlsym(void *handle, const char *name, const void *caller)
{
    void *p;
    if (handle == RTLD_NEXT && !gs_in_shim(caller)) {
        int saved = errno; /* our walk through the loaded objects is not the program's */
        p = next_after(caller, name);
        errno = saved;
    } else {
        p = gs_real_dlsym(handle, name);
    }
    if (!p || gs_in_shim(caller) || !name)
        return p;
    int fn = gs_fn_by_name(name);
    return fn < 0 ? libc_substitute(name, p) : gs_substitute((enum gs_fn)fn, p);
}

/* The two versions of the same function, bound by the version script. (An
 * alias takes its visibility from the name it aliases, so these names are
 * exported too.) */
GS_EXPORT void *gs_dlsym_2_34(void *handle, const char *name)
{
    return hooked_dlsym(handle, name, __builtin_return_address(0));
}

GS_EXPORT void *gs_dlsym_2_2_5(void *handle, const char *name)
{
    return hooked_dlsym(handle, name, __builtin_return_address(0));
}

__asm__(".symver gs_dlsym_2_34, dlsym@@GLIBC_2.34");
__asm__(".symver gs_dlsym_2_2_5, dlsym@GLIBC_2.2.5");
