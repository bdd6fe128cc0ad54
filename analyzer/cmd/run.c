/*
 * run.c - `gpushim run`: runs a command with libgpushim.so preloaded, waits
 * for it, exits with its status and says where the trace went.
 *
 * The library is the one installed next to this executable (build/ or
 * PREFIX/lib), by absolute path, so the command may change directory and
 * its children still find it.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <getopt.h> /* optind */
#include <glob.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gpushim_trace.h"
#include "analyzer/cmd/cmd.h"
#include "gpushim_size.h"
#include "gpushim_naming.h"

static const char usage_run[] =
    "usage: gpushim run [options] [--] CMD [ARGS...]\n"
    "\n"
    "Runs CMD with libgpushim.so preloaded (LD_PRELOAD), so that every GPU memory\n"
    "allocation and free it makes through the CUDA driver is recorded, with its\n"
    "call stack. Exits with CMD's exit status (128+N if a signal N ended it).\n"
    "SIGTERM, SIGHUP, SIGUSR1 and SIGUSR2 sent to gpushim are passed on to CMD.\n"
    "\n";

static const char closing_run[] =
    "Environment read by the recorder (set them yourself when you use LD_PRELOAD):\n"
    "  GPUSHIM_OUTPUT        as --output\n"
    "  GPUSHIM_STACK_DEPTH   as --stack-depth\n"
    "  GPUSHIM_FLUSH_MS      how often the trace is written, 10-10000 ms (default 100)\n"
    "  GPUSHIM_POOL_SAMPLE_MS  how often a memory pool's use is sampled, at most,\n"
    "                        0-60000 ms (default 10; 0: at every allocation and free)\n"
    "  GPUSHIM_BUFFER_MB     size of the ring file TRACE.ring, 1-1024 (default 8)\n"
    "  GPUSHIM_MAX_BYTES     as --max-size\n"
    "  GPUSHIM_COMMAND       the command line kept: 1 all (default), name (the\n"
    "                        program's name alone) or 0 (none)\n"
    "  GPUSHIM_VERBOSE=1     the recorder says on stderr where it writes\n"
    "  NVTX_INJECTION64_PATH the path of libgpushim.so: NVTX ranges and marks become\n"
    "                        gpushim's (set by gpushim run unless another tool has\n"
    "                        it, which it then keeps)\n"
    "\n"
    "Each process that allocates GPU memory writes its own trace; a process that\n"
    "never does leaves none. An existing file is never overwritten: a suffix is\n"
    "added (gpushim.123-1.trace). Until a trace is finished, the events not yet\n"
    "in it wait in TRACE.ring: if the process dies, keep that file next to the\n"
    "trace, and 'gpushim report' reads both.\n";

static const struct gs_command command = {.name = "run", .usage = usage_run,
                                          .closing = closing_run};

/* --per-tensor: PyTorch's allocator options as the user set them (the newer
 * name first), any backend option replaced by backend:cudaMallocAsync. */
static void torch_conf_per_tensor(char *out, size_t outsz)
{
    const char *user = getenv("PYTORCH_ALLOC_CONF");
    if (!user)
        user = getenv("PYTORCH_CUDA_ALLOC_CONF");
    size_t n = 0;
    out[0] = 0;
    for (const char *p = user; p && *p;) {
        while (*p == ',' || *p == ' ')
            p++;
        size_t len = strcspn(p, ",");
        while (len && p[len - 1] == ' ')
            len--;
        if (len && strncmp(p, "backend:", 8) != 0 && n + len + 2 < outsz) {
            n += (size_t)snprintf(out + n, outsz - n, "%.*s,", (int)len, p);
        }
        p += strcspn(p, ",");
    }
    snprintf(out + n, outsz - n, "backend:cudaMallocAsync");
}

/* Sets name=value and says so, as a shell would take it back: " NAME=VALUE",
 * the value in single quotes where a shell would need them. */
static void set_and_say(const char *name, const char *value)
{
    setenv(name, value, 1);
    int plain = value[0] != 0;
    for (const char *p = value; *p; p++)
        plain &= isalnum((unsigned char)*p) || strchr("_.,:/=+-%@", *p) != NULL;
    fprintf(stderr, " %s=", name);
    if (plain) {
        fputs(value, stderr);
        return;
    }
    fputc('\'', stderr);
    for (const char *p = value; *p; p++) {
        if (*p == '\'')
            fputs("'\\''", stderr);
        else if ((unsigned char)*p < 0x20 || *p == 0x7f)
            fputc('?', stderr); /* never a control byte on the terminal */
        else
            fputc(*p, stderr);
    }
    fputc('\'', stderr);
}

static void per_tensor(void)
{
    char conf[2048];
    torch_conf_per_tensor(conf, sizeof conf);
    fputs("gpushim: per tensor, set for the program:", stderr);
    set_and_say("PYTORCH_CUDA_ALLOC_CONF", conf);
    set_and_say("PYTORCH_ALLOC_CONF", conf);
    set_and_say("XLA_PYTHON_CLIENT_ALLOCATOR", "platform");
    set_and_say("XLA_PYTHON_CLIENT_PREALLOCATE", "false");
    set_and_say("TF_GPU_ALLOCATOR", "cuda_malloc_async");
    fputc('\n', stderr);
    /* What PyTorch's cudaMallocAsync backend refuses: its
     * checkPoolLiveAllocations, getIpcDevPtr, shareIpcHandle and recordHistory
     * raise "cudaMallocAsync does not yet support ..."
     * (c10/cuda/CUDAMallocAsyncAllocator.cpp); torch/_inductor/cudagraph_trees.py
     * (torch.compile(mode="reduce-overhead")) calls the first, sharing a CUDA
     * tensor with another process (torch.multiprocessing) the next two, and
     * torch.cuda.memory._record_memory_history the last. */
    fputs("gpushim: per tensor: under PyTorch's cudaMallocAsync backend, torch.compile(mode="
          "\"reduce-overhead\") and other CUDA graph trees, CUDA tensors shared between "
          "processes (torch.multiprocessing) and torch.cuda.memory._record_memory_history fail "
          "(\"cudaMallocAsync does not yet support ...\"): run a job that uses them without "
          "--per-tensor\n",
          stderr);
}

/* The directory of this executable, with a trailing slash. */
static int self_dir(char *out, size_t sz)
{
    ssize_t n = readlink("/proc/self/exe", out, sz - 1);
    if (n <= 0)
        return -1;
    out[n] = 0;
    char *slash = strrchr(out, '/');
    if (!slash)
        return -1;
    slash[1] = 0;
    return 0;
}

static int find_library(char *out, size_t sz)
{
    static const char *const places[] = {"libgpushim.so", "../lib/libgpushim.so",
                                         "../lib/gpushim/libgpushim.so"};
    char dir[PATH_MAX];
    if (self_dir(dir, sizeof dir) != 0)
        return -1;
    for (size_t i = 0; i < sizeof places / sizeof places[0]; i++) {
        char path[PATH_MAX + 64];
        snprintf(path, sizeof path, "%s%s", dir, places[i]);
        if (access(path, R_OK) == 0 && realpath(path, out) && strlen(out) < sz)
            return 0;
    }
    return -1;
}

/* LD_PRELOAD with lib added after what the user preloads already (a
 * sanitizer's runtime, for one, must stay first). */
static int set_preload(const char *lib)
{
    const char *old = getenv("LD_PRELOAD");
    size_t len = strlen(lib) + (old ? strlen(old) + 1 : 0) + 1;
    char *v = malloc(len);
    if (!v)
        return -1;
    snprintf(v, len, "%s%s%s", old ? old : "", old && *old ? ":" : "", lib);
    int r = setenv("LD_PRELOAD", v, 1);
    free(v);
    return r;
}

/* NVTX finds its tool through NVTX_INJECTION64_PATH (nvtxDetail/nvtxInit.h):
 * ours, unless another tool (Nsight) set it, which keeps it. */
static int set_nvtx(const char *lib)
{
    const char *old = getenv("NVTX_INJECTION64_PATH");
    char real[PATH_MAX];
    if (!old || !*old)
        return setenv("NVTX_INJECTION64_PATH", lib, 1);
    if (!realpath(old, real) || strcmp(real, lib) != 0)
        fprintf(stderr, "gpushim run: NVTX_INJECTION64_PATH is set to %s, another tool: its NVTX "
                        "ranges and marks go there, not into the trace\n", old);
    return 0;
}

/* The trace template as an absolute path, so the answer does not depend on
 * where the command goes. */
static int set_output(const char *tmpl)
{
    char abs[PATH_MAX * 2];
    if (tmpl[0] == '/') {
        snprintf(abs, sizeof abs, "%s", tmpl);
    } else {
        char cwd[PATH_MAX];
        if (!getcwd(cwd, sizeof cwd))
            return -1;
        snprintf(abs, sizeof abs, "%s/%s", cwd, tmpl);
    }
    return setenv("GPUSHIM_OUTPUT", abs, 1);
}

/* The trace of process pid, if it wrote one: the template expanded as the
 * shim did (a %t, unknown here, matched as any time). 0 if found. */
static int find_trace(const char *tmpl, pid_t pid, char *out, size_t outsz)
{
    char host[256], pattern[PATH_MAX * 2];
    if (gethostname(host, sizeof host) != 0)
        strcpy(host, "unknown-host");
    host[sizeof host - 1] = 0;
    struct gs_name_values v = {.pid = (long)pid, .host = host, .rank = gs_rank(),
                               .local_rank = gs_local_rank(), .start = "*"};
    glob_t g;
    if (gs_expand_output(tmpl, &v, pattern, sizeof pattern) != 0 ||
        glob(pattern, GLOB_NOSORT, NULL, &g) != 0)
        return -1;
    int found = g.gl_pathc > 0 && strlen(g.gl_pathv[g.gl_pathc - 1]) < outsz;
    if (found)
        snprintf(out, outsz, "%s", g.gl_pathv[g.gl_pathc - 1]);
    globfree(&g);
    return found ? 0 : -1;
}

static void tell(pid_t pid)
{
    const char *tmpl = getenv("GPUSHIM_OUTPUT");
    char path[PATH_MAX * 2];
    if (find_trace(tmpl, pid, path, sizeof path) == 0) {
        fprintf(stderr, "gpushim: trace written to %s\ngpushim: read it with: gpushim report %s\n",
                path, path);
        return;
    }
    if (strstr(tmpl, "%p"))
        fprintf(stderr, "gpushim: the command wrote no trace of its own: it made no GPU "
                        "allocation, or only its child processes did (look for %s with their "
                        "process ids)\n", tmpl);
    else
        fprintf(stderr, "gpushim: no trace at %s: the command made no GPU allocation\n", tmpl);
}

static volatile pid_t child;

/* What a scheduler or a container sends the launcher goes to the command. */
static void forward(int sig)
{
    if (child > 0)
        kill(child, sig);
}

static void forward_signals(void)
{
    static const int sigs[] = {SIGTERM, SIGHUP, SIGUSR1, SIGUSR2};
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = forward;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
        sigaction(sigs[i], &sa, NULL);
}

/* --stack-depth N: GPUSHIM_STACK_DEPTH for the command. */
static int take_stack_depth(void *to, const char *cmd, const char *arg)
{
    char *end;
    long d = strtol(arg, &end, 10);
    (void)to;
    if (*end || d < 1 || d > GS_MAX_FRAMES) {
        fprintf(stderr, "gpushim %s: --stack-depth needs 1 to %d, not '%s'\n", cmd, GS_MAX_FRAMES,
                arg);
        return -1;
    }
    setenv("GPUSHIM_STACK_DEPTH", arg, 1);
    return 0;
}

/* --max-size SIZE: GPUSHIM_MAX_BYTES for the command. */
static int take_max_size(void *to, const char *cmd, const char *arg)
{
    uint64_t v;
    (void)to;
    if (gs_parse_size(arg, &v) != 0 || v < (4ull << 20)) {
        fprintf(stderr, "gpushim %s: --max-size needs a size of at least 4M, not '%s'\n", cmd, arg);
        return -1;
    }
    setenv("GPUSHIM_MAX_BYTES", arg, 1);
    return 0;
}

int gs_cmd_run(int argc, char **argv)
{
    const char *output = NULL;
    int want_per_tensor = 0;
    const struct gs_opt opts[] = {
        {.name = "output", .letter = 'o', .arg = "FILE", .kind = GS_OPT_STRING, .to = &output,
         .help = "where the trace goes (default ./gpushim.%p.trace); %p is the process id, %h "
                 "the host name, %r the rank (RANK, OMPI_COMM_WORLD_RANK, SLURM_PROCID, "
                 "PMI_RANK), %l the local rank (LOCAL_RANK, ...), %t the start time (UTC, "
                 "20261202-153000), %% a percent sign; missing directories are created"},
        {.name = "stack-depth", .arg = "N", .kind = GS_OPT_CALL, .fn = take_stack_depth,
         .help = "frames recorded per stack, 1-256 (default 64)"},
        {.name = "per-tensor", .kind = GS_OPT_FLAG, .to = &want_per_tensor,
         .help = "make each tensor (buffer) a driver allocation, so the report shows tensors, "
                 "not a caching allocator's segments: PyTorch gets backend:cudaMallocAsync in "
                 "PYTORCH_CUDA_ALLOC_CONF and PYTORCH_ALLOC_CONF (merged with what is set "
                 "there), JAX XLA_PYTHON_CLIENT_ALLOCATOR=platform and "
                 "XLA_PYTHON_CLIENT_PREALLOCATE=false, TensorFlow "
                 "TF_GPU_ALLOCATOR=cuda_malloc_async"},
        {.name = "max-size", .arg = "SIZE", .kind = GS_OPT_CALL, .fn = take_max_size,
         .help = "keep each trace under SIZE bytes (K, M, G, T suffixes; at least 4M): full "
                 "detail for the most recent events, an exact summary of the rest (default: "
                 "no bound)"},
    };
    int rc = gs_opt_parse(&command, opts, sizeof opts / sizeof opts[0], argc, argv);
    if (rc != GS_OPT_GO)
        return rc;
    if (optind >= argc) {
        fputs("gpushim run: which command? (gpushim run -- CMD [ARGS...])\n", stderr);
        return 2;
    }
    char lib[PATH_MAX];
    if (find_library(lib, sizeof lib) != 0) {
        fputs("gpushim run: cannot find libgpushim.so next to this program or in ../lib\n",
              stderr);
        return 2;
    }
    if (want_per_tensor)
        per_tensor();
    const char *tmpl = output ? output : getenv("GPUSHIM_OUTPUT");
    if (set_preload(lib) != 0 || set_nvtx(lib) != 0 || set_output(tmpl && *tmpl ? tmpl : GS_DEFAULT_OUTPUT) != 0) {
        perror("gpushim run");
        return 2;
    }
    pid_t pid = fork();
    if (pid < 0) {
        perror("gpushim run: fork");
        return 2;
    }
    if (pid == 0) {
        execvp(argv[optind], argv + optind);
        fprintf(stderr, "gpushim run: cannot run %s: %s\n", argv[optind], strerror(errno));
        _exit(errno == ENOENT ? 127 : 126);
    }
    /* The terminal's ^C and ^\ reach the command itself; we wait for it to end.
     * Signals sent to us alone (SIGTERM from a scheduler) are passed on. */
    child = pid;
    signal(SIGINT, SIG_IGN);
    signal(SIGQUIT, SIG_IGN);
    forward_signals();
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR) {
            perror("gpushim run: waitpid");
            return 2;
        }
    tell(pid);
    if (WIFSIGNALED(status))
        return 128 + WTERMSIG(status);
    return WEXITSTATUS(status);
}
