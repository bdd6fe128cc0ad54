/*
 * tracefile.c - the trace file itself: its name, its creation, its header
 * and its framed chunks (the layout is in include/gpushim_trace.h).
 *
 * The file is the user's data: created with O_EXCL | O_NOFOLLOW and mode
 * 0600, so it never replaces an existing file and never writes through a
 * symlink someone else planted. When the name is taken, a suffix is added.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "analyzer/trace/meta.h"
#include "gpushim_naming.h"
#include "shim/base/base.h"
#include "shim/file/file.h"

#define GPUSHIM_VERSION_STRING "0.1.0"

int gs_expand_path(const char *tmpl, char *out, size_t outsz)
{
    char host[256], start[32] = "0";
    if (gethostname(host, sizeof host) != 0)
        strcpy(host, "unknown-host");
    host[sizeof host - 1] = 0;
    time_t now = time(NULL);
    struct tm tm;
    if (gmtime_r(&now, &tm))
        strftime(start, sizeof start, "%Y%m%d-%H%M%S", &tm);
    struct gs_name_values v = {.pid = (long)getpid(), .host = host, .rank = gs_rank(),
                               .local_rank = gs_local_rank(), .start = start};
    return gs_expand_output(tmpl, &v, out, outsz);
}

/* Creates the directories above path that are missing (as mkdir -p). */
static void make_parents(const char *path)
{
    static char dir[4096]; /* not on the stack (gs_create_trace) */
    snprintf(dir, sizeof dir, "%s", path);
    for (char *p = dir + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = 0;
        if (mkdir(dir, 0777) != 0 && errno != EEXIST)
            return; /* the open that follows says why */
        *p = '/';
    }
}

static int create_exclusive(const char *path)
{
    /* read too: a bounded trace copies its recent chunks into the next file */
    return open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
}

/* NAME.trace -> NAME-i.trace; any other name -> NAME-i. */
static int with_suffix(const char *path, unsigned i, char *out, size_t outsz)
{
    size_t len = strlen(path);
    const char *ext = ".trace";
    size_t elen = strlen(ext);
    int n;
    if (len > elen && strcmp(path + len - elen, ext) == 0)
        n = snprintf(out, outsz, "%.*s-%u%s", (int)(len - elen), path, i, ext);
    else
        n = snprintf(out, outsz, "%s-%u", path, i);
    return n < 0 || (size_t)n >= outsz ? -1 : 0;
}

int gs_create_trace(char *path, size_t outsz)
{
    int fd = create_exclusive(path);
    if (fd < 0 && errno == ENOENT) {
        make_parents(path);
        fd = create_exclusive(path);
    }
    if (fd >= 0 || errno != EEXIST)
        return fd;
    static char alt[4096]; /* not on the stack (gs_create_trace) */
    for (unsigned i = 1; i < 10000; i++) {
        if (with_suffix(path, i, alt, sizeof alt) != 0)
            break;
        fd = create_exclusive(alt);
        if (fd >= 0) {
            gs_say("%s exists; writing %s instead", path, alt);
            snprintf(path, outsz, "%s", alt);
            return fd;
        }
        if (errno != EEXIST)
            return -1;
    }
    errno = EEXIST;
    return -1;
}

int gs_fsize_room(uint64_t end)
{
    struct rlimit lim;
    if (getrlimit(RLIMIT_FSIZE, &lim) != 0 || lim.rlim_cur == RLIM_INFINITY ||
        end <= (uint64_t)lim.rlim_cur)
        return 1;
    errno = EFBIG;
    return 0;
}

int gs_write_all(int fd, const void *buf, size_t len)
{
    off_t at = lseek(fd, 0, SEEK_CUR);
    if (at >= 0 && !gs_fsize_room((uint64_t)at + len))
        return -1;
    const uint8_t *p = buf;
    while (len) {
        ssize_t w = write(fd, p, len);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w;
        len -= (size_t)w;
    }
    return 0;
}

/* The arguments the trace keeps (GPUSHIM_COMMAND), from /proc/self/cmdline,
 * each NUL-terminated, into args (size bytes); their length. */
static size_t kept_args(char *args, size_t size)
{
    ssize_t len = 0;
    int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        len = read(fd, args, size - 1); /* room for a NUL after argv[0] */
        close(fd);
    }
    if (len < 0)
        len = 0;
    unsigned kept = gs_config()->command;
    if (kept == GS_COMMAND_NONE) {
        len = 0;
    } else if (kept == GS_COMMAND_NAME) { /* argv[0]'s last part alone */
        ssize_t end = (ssize_t)strnlen(args, (size_t)len), from = end;
        while (from > 0 && args[from - 1] != '/')
            from--;
        memmove(args, args + from, (size_t)(end - from));
        len = end - from;
        args[len] = '\0';
        len += len > 0 || end > 0; /* its NUL: one argument, even if empty */
    }
    return (size_t)len;
}

int gs_write_header(int fd, uint64_t start_ns, uint64_t realtime_ns, unsigned stack_depth,
                    uint64_t ring_id, const char *ring_name)
{
    /* Not on the stack: the first event of a process opens the trace, on
     * whatever thread made it, which may have a stack of 16 KiB (a thread's
     * least); the caller holds the writer's lock. */
    static uint8_t buf[GS_HEADER_MAX], scratch[GS_HEADER_SCRATCH];
    static char args[8192];
    char host[256];
    if (gethostname(host, sizeof host) != 0)
        strcpy(host, "unknown-host");
    host[sizeof host - 1] = 0;
    /* the job: rank + 1, local rank + 1, world size (0: unknown) */
    static const char *const ranks[] = {GS_RANK_VARS, NULL};
    static const char *const local_ranks[] = {GS_LOCAL_RANK_VARS, NULL};
    static const char *const world_sizes[] = {GS_WORLD_SIZE_VARS, NULL};
    unsigned long long world = gs_env_number_plus1(world_sizes);
    static const char *const settings[] = {GS_ALLOCATOR_SETTINGS};
    const char *names[sizeof settings / sizeof settings[0]];
    const char *values[sizeof settings / sizeof settings[0]];
    size_t nset = 0;
    for (size_t i = 0; i < sizeof settings / sizeof settings[0]; i++)
        if ((values[nset] = getenv(settings[i])) != NULL)
            names[nset++] = settings[i];
    struct gs_header_values v = {
        .pid = (uint64_t)getpid(), .ppid = (uint64_t)getppid(), .host = host,
        .version = GPUSHIM_VERSION_STRING, .args = args, .args_len = kept_args(args, sizeof args),
        .start_ns = start_ns, .realtime_ns = realtime_ns, .stack_depth = stack_depth,
        .rank_1 = gs_env_number_plus1(ranks), .local_rank_1 = gs_env_number_plus1(local_ranks),
        .world_size = world ? world - 1 : 0, .setting_names = names, .setting_values = values,
        .nsettings = nset, .ring_id = ring_id, .ring_name = ring_name};
    size_t n = gs_encode_header(&v, buf, sizeof buf, scratch);
    if (n == 0)
        return errno = EOVERFLOW, -1;
    return gs_write_all(fd, buf, n);
}

size_t gs_chunk_scratch_size(size_t raw_len)
{
    return GS_CHUNK_HEADER_LEN + compressBound((uLong)raw_len);
}

/* raw[0..len) as one chunk (its head, zlib at level, the CRC-32) into out
 * (outsz bytes): its size, 0 when it does not fit. */
static size_t frame_chunk(const uint8_t *raw, size_t len, int level, uint8_t *out, size_t outsz)
{
    uLongf clen = (uLongf)(outsz - GS_CHUNK_HEADER_LEN);
    if (compress2(out + GS_CHUNK_HEADER_LEN, &clen, raw, (uLong)len, level) != Z_OK)
        return 0;
    gs_put_u32le(out, GS_CHUNK_MAGIC);
    gs_put_u32le(out + 4, (uint32_t)clen);
    gs_put_u32le(out + 8, (uint32_t)len);
    uLong crc = crc32(crc32(0, out, 12), out + GS_CHUNK_HEADER_LEN, (uInt)clen);
    gs_put_u32le(out + 12, (uint32_t)crc);
    return GS_CHUNK_HEADER_LEN + clen;
}

int gs_write_stopped(int fd, uint64_t at, const struct gs_stopped *s)
{
    uint8_t raw[GS_STOPPED_RAW_LEN], chunk[GS_STOPPED_CHUNK_LEN + 16];
    gs_encode_stopped(s, raw);
    /* level 0: stored, its size fixed */
    if (frame_chunk(raw, sizeof raw, 0, chunk, sizeof chunk) != GS_STOPPED_CHUNK_LEN)
        return errno = EINVAL, -1;
    if (!gs_fsize_room(at + GS_STOPPED_CHUNK_LEN))
        return -1;
    for (size_t done = 0; done < GS_STOPPED_CHUNK_LEN;) {
        ssize_t n = pwrite(fd, chunk + done, GS_STOPPED_CHUNK_LEN - done, (off_t)(at + done));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return n == 0 ? (errno = ENOSPC, -1) : -1;
        done += (size_t)n;
    }
    return 0;
}

int gs_write_chunk(int fd, const uint8_t *raw, size_t len, uint8_t *scratch, size_t scratch_len,
                   size_t *written)
{
    *written = frame_chunk(raw, len, 1, scratch, scratch_len);
    if (*written == 0)
        return errno = ENOMEM, -1;
    return gs_write_all(fd, scratch, *written);
}
