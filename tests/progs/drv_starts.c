/*
 * drv_starts.c - every way a process or a thread starts, each allocating
 * under the shim a size of its own, so that each trace can be told to hold
 * its own events and no other's (test_lifecycle.py).
 *
 * The parent allocates 1 MiB (parent_alloc), then, one at a time, waiting
 * for each:
 *   fork                           the child allocates 2 MiB and exits
 *   vfork, then execv              the new image ("drv_starts child N")
 *                                  allocates N MiB: 3
 *   clone(CLONE_VM | CLONE_VFORK)  as posix_spawn makes its child, on a
 *     then execve                  stack of its own: 4
 *   clone(SIGCHLD), no CLONE_VM    the child allocates 5 MiB, runs no
 *                                  pthread_atfork handler, and exits
 *   posix_spawn, posix_spawnp      6 and 7
 *   system("... child 8")          through /bin/sh: 8
 *   fork, then each exec form      execl 9, execlp 10, execle 11, execv 12,
 *                                  execvp 13, execvpe 14, fexecve 15,
 *                                  execveat 16
 *   a thread of 16 KiB of stack    in the parent: 17 MiB (small_thread; the
 *                                  stack's KiB from DRV_STARTS_STACK_KIB
 *                                  where set: a sanitizer needs more)
 *   a signal handler               SIGUSR1 raised, on an alternate stack of
 *                                  its own: 18 MiB (handler_alloc), in the
 *                                  parent
 * Nothing is freed. The parent prints how many of the 15 children exited
 * 0, and its own sizes are 1 + 17 + 18 MiB.
 *
 * usage: drv_starts            (all of the above)
 *        drv_starts child N    (an image started by one of them)
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "progs.h"

extern char **environ;
static char self[4096];

NOINLINE static void alloc_mib(unsigned n)
{
    gs_cudeviceptr p;
    EXPECT(cuMemAlloc_v2(&p, (size_t)n * MiB), GS_CUDA_SUCCESS);
}

NOINLINE static void parent_alloc(void) { alloc_mib(1); }

static int reap(pid_t pid)
{
    int status;
    if (pid <= 0 || waitpid(pid, &status, 0) != pid)
        return 0;
    return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

/* "drv_starts child N" as argv, N in buf. */
static char **child_argv(char *buf, unsigned n)
{
    static char *argv[4];
    snprintf(buf, 16, "%u", n);
    argv[0] = self;
    argv[1] = "child";
    argv[2] = buf;
    argv[3] = NULL;
    return argv;
}

static char clone_buf[16];

static int exec_in_clone(void *arg)
{
    (void)arg;
    execve(self, child_argv(clone_buf, 4), environ);
    _exit(127);
}

static int alloc_in_clone(void *arg)
{
    (void)arg;
    alloc_mib(5);
    exit(0); /* the shim's exit handlers finish the child's trace */
}

/* fork, then exec form k (0..7) of "drv_starts child 9+k". */
static int exec_form(int k)
{
    char n[16];
    char **argv = child_argv(n, 9 + (unsigned)k);
    pid_t pid = fork();
    if (pid != 0)
        return reap(pid);
    const char *base = strrchr(self, '/') + 1;
    char dir[4096];
    snprintf(dir, sizeof dir, "%.*s", (int)(base - self), self);
    setenv("PATH", dir, 1); /* for the p forms: the program by its name */
    switch (k) {
    case 0: execl(self, self, "child", n, (char *)NULL); break;
    case 1: execlp(base, base, "child", n, (char *)NULL); break;
    case 2: execle(self, self, "child", n, (char *)NULL, environ); break;
    case 3: execv(self, argv); break;
    case 4: execvp(base, argv); break;
    case 5: execvpe(base, argv, environ); break;
    case 6: {
        int fd = open(self, O_RDONLY | O_CLOEXEC);
        fexecve(fd, argv, environ);
        break;
    }
    case 7: {
        int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        execveat(fd, base, argv, environ, 0);
        break;
    }
    }
    _exit(127);
}

static void *small_thread(void *arg)
{
    (void)arg;
    use_device(0);
    alloc_mib(17);
    return NULL;
}

NOINLINE static void handler_alloc(void) { alloc_mib(18); }

static void on_usr1(int sig)
{
    (void)sig;
    handler_alloc();
}

int main(int argc, char **argv)
{
    EXPECT(cuInit(0), GS_CUDA_SUCCESS);
    use_device(0);
    if (argc == 3 && strcmp(argv[1], "child") == 0) {
        alloc_mib((unsigned)atoi(argv[2]));
        return 0;
    }
    ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    if (len <= 0)
        return 2;
    self[len] = '\0';
    parent_alloc();
    int ok = 0;
    char n[16];

    pid_t pid = fork();
    if (pid == 0) {
        alloc_mib(2);
        exit(0);
    }
    ok += reap(pid);

    char **cargv = child_argv(n, 3);
    pid = vfork();
    if (pid == 0) {
        execv(self, cargv);
        _exit(127);
    }
    ok += reap(pid);

    static char stack[256 * 1024] __attribute__((aligned(16)));
    ok += reap(clone(exec_in_clone, stack + sizeof stack, CLONE_VM | CLONE_VFORK | SIGCHLD, NULL));
    ok += reap(clone(alloc_in_clone, stack + sizeof stack, SIGCHLD, NULL));

    pid_t spawned;
    cargv = child_argv(n, 6);
    ok += posix_spawn(&spawned, self, NULL, NULL, cargv, environ) == 0 && reap(spawned);
    cargv = child_argv(n, 7);
    ok += posix_spawnp(&spawned, self, NULL, NULL, cargv, environ) == 0 && reap(spawned);

    char cmd[4200];
    snprintf(cmd, sizeof cmd, "'%s' child 8", self);
    int st = system(cmd);
    ok += st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0;

    for (int k = 0; k < 8; k++)
        ok += exec_form(k);

    pthread_attr_t attr;
    pthread_attr_init(&attr);
    const char *kib = getenv("DRV_STARTS_STACK_KIB");
    pthread_attr_setstacksize(&attr, (size_t)(kib ? atoi(kib) : 16) * 1024);
    pthread_t t;
    EXPECT(pthread_create(&t, &attr, small_thread, NULL), 0);
    EXPECT(pthread_join(t, NULL), 0);
    pthread_attr_destroy(&attr);

    static char alt[64 * 1024];
    stack_t ss = {.ss_sp = alt, .ss_size = sizeof alt};
    EXPECT(sigaltstack(&ss, NULL), 0);
    struct sigaction sa = {.sa_handler = on_usr1, .sa_flags = SA_ONSTACK};
    sigemptyset(&sa.sa_mask);
    EXPECT(sigaction(SIGUSR1, &sa, NULL), 0);
    EXPECT(raise(SIGUSR1), 0);

    printf("%d of 15 children exited 0\n", ok);
    return ok == 15 ? 0 : 1;
}
