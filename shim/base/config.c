/*
 * config.c - the shim's settings, read once from the environment, and the
 * one way the shim talks to the user: a line on stderr, said once.
 *
 * Nothing here allocates or can fail: a bad value is reported and the
 * default is used, so a typo never stops the program being profiled.
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpushim_naming.h"
#include "gpushim_size.h"
#include "gpushim_trace.h" /* GS_MAX_FRAMES */
#include "shim/base/base.h"

static struct gs_config config;
static pthread_once_t config_once = PTHREAD_ONCE_INIT;

/* One line on stderr in one write, so lines never interleave; keeps errno. */
static void vsay(const char *fmt, va_list ap)
{
    int saved = errno;
    char line[512];
    int n = snprintf(line, sizeof line, "gpushim: ");
    int m = vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
    size_t len = (size_t)n + (m < 0 ? 0 : (size_t)m);
    if (len > sizeof line - 2)
        len = sizeof line - 2;
    line[len++] = '\n';
    ssize_t w = write(STDERR_FILENO, line, len);
    (void)w;
    errno = saved;
}

void gs_say(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsay(fmt, ap);
    va_end(ap);
}

void gs_warn_once(int *once, const char *fmt, ...)
{
    if (__atomic_exchange_n(once, 1, __ATOMIC_RELAXED))
        return;
    va_list ap;
    va_start(ap, fmt);
    vsay(fmt, ap);
    va_end(ap);
}

/* Reads an unsigned setting in [lo, hi], or says why not and keeps def. */
static unsigned env_uint(const char *name, unsigned def, unsigned lo, unsigned hi)
{
    const char *s = getenv(name);
    if (!s || !*s)
        return def;
    char *end;
    errno = 0;
    unsigned long v = strtoul(s, &end, 10);
    if (errno || *end || v < lo || v > hi) {
        gs_say("%s=%s is not a number from %u to %u; using %u", name, s, lo, hi, def);
        return def;
    }
    return (unsigned)v;
}

/* Reads a size in bytes, with an optional K, M or G (powers of 1024): 0,
 * or from lo up; else says why not and keeps 0 (no bound). */
static uint64_t env_bytes(const char *name, uint64_t lo)
{
    const char *s = getenv(name);
    uint64_t v;
    if (!s || !*s)
        return 0;
    if (gs_parse_size(s, &v) != 0 || (v && v < lo)) {
        gs_say("%s=%s is not a size of at least %llu MiB (a number, optionally with K, M or G); "
               "the trace is not bounded",
               name, s, (unsigned long long)(lo >> 20));
        return 0;
    }
    return v;
}

/* Reads a setting that is one of names (its index), or says why not, and
 * what then, and keeps def. */
static unsigned env_choice(const char *name, const char *const *names, unsigned def,
                           const char *instead)
{
    const char *s = getenv(name);
    if (!s || !*s)
        return def;
    for (unsigned i = 0; names[i]; i++)
        if (strcmp(s, names[i]) == 0)
            return i;
    char all[128] = "";
    for (unsigned i = 0, n = 0; names[i] && n < sizeof all; i++)
        n += (unsigned)snprintf(all + n, sizeof all - n, "%s%s", i ? (names[i + 1] ? ", " : " or ")
                                                                   : "", names[i]);
    gs_say("%s=%s is not %s; %s", name, s, all, instead);
    return def;
}

static void config_read(void)
{
    int saved = errno;
    const char *out = getenv("GPUSHIM_OUTPUT");
    config.output = out && *out ? out : GS_DEFAULT_OUTPUT;
    config.stack_depth = env_uint("GPUSHIM_STACK_DEPTH", 64, 1, GS_MAX_FRAMES);
    config.flush_ms = env_uint("GPUSHIM_FLUSH_MS", 100, 10, 10000);
    config.pool_sample_ms = env_uint("GPUSHIM_POOL_SAMPLE_MS", 10, 0, 60000);
    config.buffer_mb = env_uint("GPUSHIM_BUFFER_MB", 8, 1, 1024);
    config.max_bytes = env_bytes("GPUSHIM_MAX_BYTES", 4u << 20);
    config.python = env_uint("GPUSHIM_PYTHON", 1, 0, 2);
    static const char *const unwind[] = {[GS_UNWIND_FAST] = "fast",
                                         [GS_UNWIND_LIBUNWIND] = "libunwind",
                                         [GS_UNWIND_CHECK] = "check", NULL};
    config.unwind = env_choice("GPUSHIM_UNWIND", unwind, GS_UNWIND_FAST, "using fast");
    static const char *const command[] = {[GS_COMMAND_NONE] = "0", [GS_COMMAND_NAME] = "name",
                                          [GS_COMMAND_ALL] = "1", NULL};
    config.command = env_choice("GPUSHIM_COMMAND", command, GS_COMMAND_ALL,
                                "the whole command line is kept");
    config.handoff = getenv("GPUSHIM_HANDOFF");
    const char *v = getenv("GPUSHIM_VERBOSE");
    config.verbose = v && strcmp(v, "0") != 0 && *v;
    errno = saved;
}

const struct gs_config *gs_config(void)
{
    pthread_once(&config_once, config_read);
    return &config;
}
