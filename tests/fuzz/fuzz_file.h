/*
 * fuzz_file.h - what the fuzz harnesses share: the analyzer reads traces
 * (and ring files) from paths, by the one code path the command uses, so a
 * harness writes its input to a file of its own in a private directory
 * (kept open and rewritten in place for each input), and sends what the
 * analyzer prints to /dev/null, with the symbol cache off; and which of
 * the reader's two ways reads it.
 */
#ifndef GPUSHIM_FUZZ_FILE_H
#define GPUSHIM_FUZZ_FILE_H

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analyzer/read/read.h"

static char fuzz_dir[256];

/* The private directory, made on first use (under $TMPDIR, else /tmp) and
 * removed at exit; standard output goes to /dev/null from then on. */
static void fuzz_cleanup(void);
static const char *fuzz_dir_path(void)
{
    if (fuzz_dir[0])
        return fuzz_dir;
    const char *tmp = getenv("TMPDIR");
    snprintf(fuzz_dir, sizeof fuzz_dir, "%s/gpushim-fuzz-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(fuzz_dir)) {
        perror("gpushim fuzz: mkdtemp");
        abort();
    }
    atexit(fuzz_cleanup);
    /* no symbol cache: an input is read as a first analysis reads it, and
     * nothing is written in the home folder */
    setenv("GPUSHIM_SYMBOL_CACHE", "off", 1);
    int null = open("/dev/null", O_WRONLY);
    if (null >= 0) {
        dup2(null, STDOUT_FILENO);
        close(null);
    }
    return fuzz_dir;
}

#define FUZZ_MAX_FILES 4
static struct {
    char name[160];
    char path[448];
    int fd;
} fuzz_files[FUZZ_MAX_FILES];

static void fuzz_cleanup(void)
{
    for (int i = 0; i < FUZZ_MAX_FILES; i++)
        if (fuzz_files[i].name[0])
            unlink(fuzz_files[i].path);
    rmdir(fuzz_dir);
}

/* Writes size bytes to the file called name in the private directory (the
 * same path each time: "x" and "x.ring" stand side by side) and returns its
 * path. */
static inline const char *fuzz_file(const char *name, const uint8_t *data, size_t size)
{
    const char *dir = fuzz_dir_path();
    int i = 0;
    while (i < FUZZ_MAX_FILES && fuzz_files[i].name[0] && strcmp(fuzz_files[i].name, name))
        i++;
    if (i == FUZZ_MAX_FILES)
        abort();
    if (!fuzz_files[i].name[0]) {
        snprintf(fuzz_files[i].name, sizeof fuzz_files[i].name, "%s", name);
        snprintf(fuzz_files[i].path, sizeof fuzz_files[i].path, "%s/%s", dir, name);
        fuzz_files[i].fd = -1;
    }
    if (fuzz_files[i].fd < 0)
        fuzz_files[i].fd = open(fuzz_files[i].path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    int fd = fuzz_files[i].fd;
    if (fd < 0 || ftruncate(fd, 0) != 0) {
        perror("gpushim fuzz: cannot write the input");
        abort();
    }
    size_t done = 0;
    while (done < size) {
        ssize_t w = pwrite(fd, data + done, size - done, (off_t)done);
        if (w <= 0) {
            perror("gpushim fuzz: cannot write the input");
            abort();
        }
        done += (size_t)w;
    }
    return fuzz_files[i].path;
}

/* Removes the file fuzz_file wrote at path (a name that changes with the
 * input: at most FUZZ_MAX_FILES at once). */
static inline void fuzz_forget(const char *path)
{
    for (int i = 0; i < FUZZ_MAX_FILES; i++)
        if (fuzz_files[i].name[0] && fuzz_files[i].path == path) {
            if (fuzz_files[i].fd >= 0)
                close(fuzz_files[i].fd);
            unlink(fuzz_files[i].path);
            fuzz_files[i].name[0] = '\0';
        }
}

/* Where reports go: /dev/null, through stdio as the command writes. */
static inline FILE *fuzz_null(void)
{
    static FILE *f;
    if (!f)
        f = fopen("/dev/null", "w");
    if (!f)
        abort();
    return f;
}

/* Odd-sized inputs are read with reader.c's read-ahead thread, even-sized
 * ones on one thread, so both ways are fuzzed (the command reads traces
 * under 2 MiB, as big as fuzz inputs get, on one). Of the odd sizes, half
 * hand each decoded record on by itself (gs_read_tape_bytes 1), so that a
 * tape is handed on inside a chunk, as on a large trace. */
static inline void fuzz_pick_reader(size_t size)
{
    static uint64_t usual;
    static size_t usual_tape;
    if (!usual) {
        usual = gs_read_ahead_from;
        usual_tape = gs_read_tape_bytes;
    }
    gs_read_ahead_from = size & 1 ? 0 : usual;
    gs_read_cpus = 2; /* read ahead on a machine of one CPU too */
    gs_read_tape_bytes = size % 4 == 3 ? 1 : usual_tape;
}

/* A u32 little-endian length at data that splits the rest in two parts
 * (the first clipped to what there is): 0, or -1 when there are not 4 bytes. */
static inline int fuzz_split(const uint8_t *data, size_t size, const uint8_t **a, size_t *alen,
                      const uint8_t **b, size_t *blen)
{
    if (size < 4)
        return -1;
    uint32_t n = (uint32_t)data[0] | (uint32_t)data[1] << 8 | (uint32_t)data[2] << 16 |
                 (uint32_t)data[3] << 24;
    data += 4;
    size -= 4;
    if (n > size)
        n = (uint32_t)size;
    *a = data;
    *alen = n;
    *b = data + n;
    *blen = size - n;
    return 0;
}

#endif
