/*
 * hooks_process.c - exec: the old image's trace is finished before the new
 * image replaces it (no destructor of ours runs across exec), so it ends
 * with everything recorded and its END record. If exec fails, the trace goes
 * on. The new image, still preloaded, writes a trace of its own.
 *
 * The execl* forms are variadic and glibc implements them without going
 * through the exported execv*, so each is wrapped here and passed on as the
 * matching execv* call. fork needs nothing here (fork.c's pthread_atfork
 * handlers); posix_spawn and system() start new processes whose images are
 * new from the start.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <unistd.h>

#include "shim/base/base.h"
#include "shim/writer/writer.h"

typedef int (*execve_fn)(const char *, char *const[], char *const[]);
typedef int (*execv_fn)(const char *, char *const[]);
typedef int (*fexecve_fn)(int, char *const[], char *const[]);
typedef int (*execveat_fn)(int, const char *, char *const[], char *const[], int);

static void *real_fn(const char *name)
{
    void *p = gs_real_dlsym(RTLD_NEXT, name);
    if (!p)
        errno = ENOSYS;
    return p;
}

/* Runs exec as the call; the trace is finished before and reopened after a failure. */
#define AROUND_EXEC(call)                                                                          \
    do {                                                                                           \
        int finished = gs_writer_finish_for_exec();                                                \
        int r = (call);                                                                            \
        int saved = errno;                                                                         \
        gs_writer_exec_failed(finished);                                                           \
        errno = saved;                                                                             \
        return r;                                                                                  \
    } while (0)

GS_EXPORT int execve(const char *path, char *const argv[], char *const envp[])
{
    execve_fn real = (execve_fn)real_fn("execve");
    if (!real)
        return -1;
    AROUND_EXEC(real(path, argv, envp));
}

GS_EXPORT int execv(const char *path, char *const argv[])
{
    execv_fn real = (execv_fn)real_fn("execv");
    if (!real)
        return -1;
    AROUND_EXEC(real(path, argv));
}

GS_EXPORT int execvp(const char *file, char *const argv[])
{
    execv_fn real = (execv_fn)real_fn("execvp");
    if (!real)
        return -1;
    AROUND_EXEC(real(file, argv));
}

GS_EXPORT int execvpe(const char *file, char *const argv[], char *const envp[])
{
    execve_fn real = (execve_fn)real_fn("execvpe");
    if (!real)
        return -1;
    AROUND_EXEC(real(file, argv, envp));
}

GS_EXPORT int fexecve(int fd, char *const argv[], char *const envp[])
{
    fexecve_fn real = (fexecve_fn)real_fn("fexecve");
    if (!real)
        return -1;
    AROUND_EXEC(real(fd, argv, envp));
}

GS_EXPORT int execveat(int dirfd, const char *path, char *const argv[], char *const envp[],
                       int flags)
{
    execveat_fn real = (execveat_fn)real_fn("execveat");
    if (!real)
        return -1;
    AROUND_EXEC(real(dirfd, path, argv, envp, flags));
}

/* The execl* forms: the arguments after arg0, up to the NULL, into argv (on
 * the caller's stack, as glibc does: no malloc, which may be unusable after
 * vfork or in a signal handler); for execle also the environment after the
 * NULL. */
#define EXECL_ARGV(arg, argv, envp, with_env)                                                      \
    va_list ap;                                                                                    \
    va_start(ap, arg);                                                                             \
    size_t n = 1;                                                                                  \
    while (va_arg(ap, char *))                                                                     \
        n++;                                                                                       \
    va_end(ap);                                                                                    \
    char *argv[n + 1];                                                                             \
    va_start(ap, arg);                                                                             \
    argv[0] = (char *)arg;                                                                         \
    for (size_t i = 1; i <= n; i++)                                                                \
        argv[i] = va_arg(ap, char *); /* the last one read is the NULL */                          \
    char **envp = (with_env) ? va_arg(ap, char **) : NULL;                                         \
    va_end(ap)

GS_EXPORT int execl(const char *path, const char *arg, ...)
{
    EXECL_ARGV(arg, argv, envp, 0);
    (void)envp;
    return execv(path, argv);
}

GS_EXPORT int execlp(const char *file, const char *arg, ...)
{
    EXECL_ARGV(arg, argv, envp, 0);
    (void)envp;
    return execvp(file, argv);
}

GS_EXPORT int execle(const char *path, const char *arg, ...)
{
    EXECL_ARGV(arg, argv, envp, 1);
    return execve(path, argv, envp);
}
