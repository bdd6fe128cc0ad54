/*
 * hooks_threads.c - threads' names: pthread_setname_np and
 * prctl(PR_SET_NAME) pass on to the real function, and a rename that
 * succeeded is counted (gs_thread_renamed), so that each thread reads its
 * name again at its next event (record.c). The program gets the real
 * function's result and errno, untouched: nothing runs after the real call
 * but an atomic add.
 *
 * pthread_create passes on to the real function too; after a thread was
 * started, the name Python's threading gave it, if any, is noted for it
 * (pythreads.c): a few lookups in Python's dictionaries where the caller
 * holds the GIL, none elsewhere. Its result and errno are the real call's.
 *
 * Both are the ways a program names a thread through glibc (PyTorch's
 * c10::setThreadName, which names the autograd engine's threads, calls
 * pthread_setname_np; glibc's pthread_setname_np names another thread by
 * writing its /proc comm file, so prctl alone would not catch it). prctl is
 * variadic: its four further arguments are passed on as glibc's own prctl
 * reads them, as unsigned longs.
 *
 * A library preloaded before the shim that wraps these too (the sanitizers'
 * runtimes do) looks the next definition up with dlsym(RTLD_NEXT); the
 * exported dlsym gives it these wrappers, by hidden names (dlsym_hook.c),
 * so a rename through it is still counted.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <sys/prctl.h>

#include "shim/base/base.h"
#include "shim/record/record.h"
#include "shim/hooks/hooks.h"

typedef int (*setname_fn)(pthread_t, const char *);
typedef int (*create_fn)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);

int gs_create_wrapper(pthread_t *thread, const pthread_attr_t *attr, void *(*start)(void *),
                      void *arg)
{
    static void *cache;
    create_fn real = (create_fn)gs_real_next(&cache, "pthread_create");
    if (!real)
        return EAGAIN;
    int r = real(thread, attr, start, arg);
    if (r == 0 && thread) {
        int saved = errno;
        gs_pythreads_started(*thread);
        errno = saved;
    }
    return r;
}
typedef int (*prctl_fn)(int, unsigned long, unsigned long, unsigned long, unsigned long);

int gs_setname_wrapper(pthread_t thread, const char *name)
{
    static void *cache;
    setname_fn real = (setname_fn)gs_real_next(&cache, "pthread_setname_np");
    if (!real)
        return ENOSYS;
    int r = real(thread, name);
    if (r == 0)
        gs_thread_renamed();
    return r;
}

static int prctl5(int option, unsigned long a2, unsigned long a3, unsigned long a4,
                  unsigned long a5)
{
    static void *cache;
    prctl_fn real = (prctl_fn)gs_real_next(&cache, "prctl");
    if (!real) {
        errno = ENOSYS;
        return -1;
    }
    int r = real(option, a2, a3, a4, a5);
    if (option == PR_SET_NAME && r == 0)
        gs_thread_renamed();
    return r;
}

#define PRCTL_ARGS(option)                                                                         \
    va_list ap;                                                                                    \
    va_start(ap, option);                                                                          \
    unsigned long a2 = va_arg(ap, unsigned long), a3 = va_arg(ap, unsigned long),                  \
                  a4 = va_arg(ap, unsigned long), a5 = va_arg(ap, unsigned long);                  \
    va_end(ap)

int gs_prctl_wrapper(int option, ...)
{
    PRCTL_ARGS(option);
    return prctl5(option, a2, a3, a4, a5);
}

/* The exports: the same, under the names the program calls (the wrappers
 * above are what a lookup hands out, by addresses no other definition of
 * these names can stand in for). */
GS_EXPORT int pthread_setname_np(pthread_t thread, const char *name)
{
    return gs_setname_wrapper(thread, name);
}

GS_EXPORT int pthread_create(pthread_t *thread, const pthread_attr_t *attr,
                             void *(*start)(void *), void *arg)
{
    return gs_create_wrapper(thread, attr, start, arg);
}

GS_EXPORT int prctl(int option, ...)
{
    PRCTL_ARGS(option);
    return prctl5(option, a2, a3, a4, a5);
}
