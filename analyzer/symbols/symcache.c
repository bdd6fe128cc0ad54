/*
 * symcache.c - owns the symbol cache's files (symcache.h): where they are,
 * their layout, reading one as untrusted input, and writing one whole.
 *
 * A file, in the machine's byte order (the head says which, and a file of
 * another order or version is simply not used):
 *
 *   head     magic "GSSYMS\r\n", version, byte-order word, build id
 *            length, entries, frames, string bytes, CRC-32 of all after
 *            the head, pad                                          40 bytes
 *   build id its bytes, padded to 8
 *   source   the file the answers were read from (symcache.h): device,
 *            inode, size, mtime (ns), owner, the lengths of the module's
 *            path and the file's, pad                               48 bytes;
 *            then the two paths, each NUL-terminated, padded to 8
 *   entries  per address, by offset ascending: offset (u64), first frame
 *            (u32), frames (u32)                                 16 bytes each
 *   frames   function and file (u32 offsets into the strings,
 *            UINT32_MAX: none), line (i32)                       12 bytes each
 *   strings  NUL-terminated, the last byte a NUL
 */
#define _GNU_SOURCE
#include "analyzer/symbols/symcache.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#define MAGIC "GSSYMS\r\n"
#define VERSION 2u /* 1: without the source */
#define ORDER 0x01020304u
#define NONE UINT32_MAX
#define MAX_BUILD_ID 64u
#define MAX_FRAMES_PER_ENTRY 4096u
#define MAX_PATH 4096u
#define MAX_FILE (1ull << 30) /* past it a file is not read, nor written */

struct head {
    char magic[8];
    uint32_t version, order, build_id_len, entries, frames, strings, crc, pad;
};

struct disk_source {
    uint64_t dev, ino, size;
    int64_t mtime_ns;
    uint32_t uid, module_len, file_len, pad; /* lengths without the NUL */
};

struct disk_entry {
    uint64_t off;
    uint32_t first, n;
};

struct disk_frame {
    uint32_t function, file;
    int32_t line;
};

struct gs_symcache {
    struct gs_symcache_source source;
    char *paths; /* source.module's and source.file's bytes */
    struct gs_symcache_entry *entries;
    size_t n;
    struct gs_symcache_frame *frames;
    char *strings;
};

static size_t pad8(size_t n) { return (n + 7) & ~(size_t)7; }

/* ---- where ------------------------------------------------------------------ */

int gs_symcache_dir(char *out, size_t outsz, int *chosen)
{
    const char *set = getenv("GPUSHIM_SYMBOL_CACHE");
    *chosen = set && *set;
    int n;
    if (*chosen) {
        if (strcmp(set, "off") == 0)
            return 0;
        n = snprintf(out, outsz, "%s", set);
    } else {
        const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
        if (xdg && xdg[0] == '/')
            n = snprintf(out, outsz, "%s/gpushim/symbols", xdg);
        else if (home && home[0] == '/')
            n = snprintf(out, outsz, "%s/.cache/gpushim/symbols", home);
        else
            return 0;
    }
    return n > 0 && (size_t)n < outsz;
}

static int file_name(char *out, size_t outsz, const char *dir, const uint8_t *id, size_t len)
{
    if (len == 0 || len > MAX_BUILD_ID)
        return -1;
    char hex[2 * MAX_BUILD_ID + 1];
    for (size_t i = 0; i < len; i++)
        snprintf(hex + 2 * i, 3, "%02x", id[i]);
    int n = snprintf(out, outsz, "%s/%s.syms", dir, hex);
    return n > 0 && (size_t)n < outsz ? 0 : -1;
}

/* ---- reading ---------------------------------------------------------------- */

/* The whole file, at most MAX_FILE bytes; NULL when it cannot be read. */
static uint8_t *slurp(const char *path, size_t *len)
{
    /* not blocking: a FIFO in its place would wait for a writer forever */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    FILE *f = fd >= 0 ? fdopen(fd, "rb") : NULL;
    if (f == NULL) {
        if (fd >= 0)
            close(fd);
        return NULL;
    }
    struct stat st;
    uint8_t *buf = NULL;
    if (fstat(fileno(f), &st) == 0 && S_ISREG(st.st_mode) &&
        st.st_size >= (off_t)sizeof(struct head) && (uint64_t)st.st_size <= MAX_FILE &&
        (buf = malloc((size_t)st.st_size)) != NULL) {
        *len = fread(buf, 1, (size_t)st.st_size, f);
        if (*len != (size_t)st.st_size) {
            free(buf);
            buf = NULL;
        }
    }
    fclose(f);
    return buf;
}

static const char *string_at(const struct gs_symcache *c, const struct head *h, uint32_t off,
                             int *bad)
{
    if (off == NONE)
        return NULL;
    if (off >= h->strings) {
        *bad = 1;
        return NULL;
    }
    return c->strings + off;
}

/* The source block at buf + at (len bytes in all): its size, or 0 when
 * it is not whole and well formed. */
static size_t parse_source(struct gs_symcache *c, const uint8_t *buf, size_t len, uint64_t at)
{
    struct disk_source d;
    if (at + sizeof d > len)
        return 0;
    memcpy(&d, buf + at, sizeof d);
    uint64_t paths = (uint64_t)d.module_len + 1 + d.file_len + 1;
    if (d.pad != 0 || d.module_len == 0 || d.file_len == 0 || d.module_len > MAX_PATH ||
        d.file_len > MAX_PATH || at + sizeof d + pad8(paths) > len)
        return 0;
    const uint8_t *p = buf + at + sizeof d;
    if (p[d.module_len] != '\0' || p[d.module_len + 1 + d.file_len] != '\0' ||
        memchr(p, '\0', d.module_len) || memchr(p + d.module_len + 1, '\0', d.file_len) ||
        (c->paths = malloc(paths)) == NULL)
        return 0;
    memcpy(c->paths, p, paths);
    c->source = (struct gs_symcache_source){.module = c->paths,
                                            .file = c->paths + d.module_len + 1,
                                            .dev = d.dev, .ino = d.ino, .size = d.size,
                                            .mtime_ns = d.mtime_ns, .uid = d.uid};
    return sizeof d + pad8(paths);
}

/* Checks and converts the file's body; 0, or -1 when it cannot be used. */
static int parse(struct gs_symcache *c, const uint8_t *buf, size_t len, const uint8_t *id,
                 size_t id_len)
{
    struct head h;
    memcpy(&h, buf, sizeof h);
    if (memcmp(h.magic, MAGIC, 8) != 0 || h.version != VERSION || h.order != ORDER ||
        h.build_id_len != id_len || id_len > MAX_BUILD_ID || h.pad != 0 ||
        len < sizeof h + pad8(id_len) || memcmp(buf + sizeof h, id, id_len) != 0 ||
        crc32(0, buf + sizeof h, (uInt)(len - sizeof h)) != h.crc)
        return -1;
    size_t source = parse_source(c, buf, len, sizeof h + pad8(id_len));
    if (source == 0)
        return -1;
    uint64_t entries_at = sizeof h + pad8(id_len) + source;
    uint64_t frames_at = entries_at + (uint64_t)h.entries * sizeof(struct disk_entry);
    uint64_t strings_at = frames_at + (uint64_t)h.frames * sizeof(struct disk_frame);
    if (strings_at + h.strings != len || (h.strings && buf[len - 1] != '\0'))
        return -1;
    c->strings = malloc(h.strings ? h.strings : 1);
    c->entries = calloc(h.entries ? h.entries : 1, sizeof *c->entries);
    c->frames = calloc(h.frames ? h.frames : 1, sizeof *c->frames);
    if (!c->strings || !c->entries || !c->frames)
        return -1;
    memcpy(c->strings, buf + strings_at, h.strings);
    int bad = 0;
    for (uint32_t i = 0; i < h.frames && !bad; i++) {
        struct disk_frame f;
        memcpy(&f, buf + frames_at + (uint64_t)i * sizeof f, sizeof f);
        c->frames[i] = (struct gs_symcache_frame){.function = string_at(c, &h, f.function, &bad),
                                                  .file = string_at(c, &h, f.file, &bad),
                                                  .line = f.line};
        bad |= f.line < 0;
    }
    for (uint32_t i = 0; i < h.entries && !bad; i++) {
        struct disk_entry e;
        memcpy(&e, buf + entries_at + (uint64_t)i * sizeof e, sizeof e);
        bad = e.n == 0 || e.n > MAX_FRAMES_PER_ENTRY || (uint64_t)e.first + e.n > h.frames ||
              (i > 0 && e.off <= c->entries[i - 1].off);
        c->entries[i] = (struct gs_symcache_entry){.off = e.off, .n = e.n,
                                                   .frames = c->frames + (bad ? 0 : e.first)};
    }
    c->n = h.entries;
    return bad ? -1 : 0;
}

struct gs_symcache *gs_symcache_load(const char *dir, const uint8_t *build_id, size_t len)
{
    char path[4096];
    size_t flen = 0;
    if (dir == NULL || build_id == NULL || file_name(path, sizeof path, dir, build_id, len) != 0)
        return NULL;
    uint8_t *buf = slurp(path, &flen);
    if (buf == NULL)
        return NULL;
    struct gs_symcache *c = calloc(1, sizeof *c);
    if (c && parse(c, buf, flen, build_id, len) != 0) {
        gs_symcache_free(c);
        c = NULL;
    }
    free(buf);
    return c;
}

void gs_symcache_free(struct gs_symcache *c)
{
    if (c == NULL)
        return;
    free(c->entries);
    free(c->frames);
    free(c->strings);
    free(c->paths);
    free(c);
}

const struct gs_symcache_entry *gs_symcache_find(const struct gs_symcache *c, uint64_t off)
{
    size_t lo = 0, hi = c ? c->n : 0;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (c->entries[mid].off < off)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < (c ? c->n : 0) && c->entries[lo].off == off ? &c->entries[lo] : NULL;
}

size_t gs_symcache_entries(const struct gs_symcache *c, const struct gs_symcache_entry **out)
{
    *out = c ? c->entries : NULL;
    return c ? c->n : 0;
}

const struct gs_symcache_source *gs_symcache_made_from(const struct gs_symcache *c)
{
    return c ? &c->source : NULL;
}

/* ---- trust ------------------------------------------------------------------ */

static int64_t mtime_ns(const struct stat *st)
{
    return (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;
}

void gs_symcache_source_of(struct gs_symcache_source *src, const char *module, const char *file,
                           const struct stat *st)
{
    *src = (struct gs_symcache_source){.module = module, .file = file, .dev = st->st_dev,
                                       .ino = st->st_ino, .size = (uint64_t)st->st_size,
                                       .mtime_ns = mtime_ns(st), .uid = st->st_uid};
}

/* Whether path is in one of the folders (each a real path, no slash at
 * its end but for "/"). */
static int inside(const char *path, char *const *dirs, size_t ndirs)
{
    for (size_t i = 0; i < ndirs; i++) {
        size_t n = strlen(dirs[i]);
        if (strncmp(path, dirs[i], n) == 0 && (path[n] == '/' || (n == 1 && dirs[i][0] == '/')))
            return 1;
    }
    return 0;
}

int gs_symcache_trusted(const struct gs_symcache *c, const char *module, char *const *search,
                        size_t nsearch)
{
    if (c == NULL || module == NULL || strcmp(c->source.module, module) != 0)
        return 0;
    const struct gs_symcache_source *src = &c->source;
    if (strcmp(src->file, module) != 0 && !inside(src->file, search, nsearch))
        return 0;
    struct stat st;
    if (stat(src->file, &st) == 0)
        return S_ISREG(st.st_mode) && src->dev == (uint64_t)st.st_dev &&
               src->ino == (uint64_t)st.st_ino && src->size == (uint64_t)st.st_size &&
               src->mtime_ns == mtime_ns(&st);
    return (errno == ENOENT || errno == ENOTDIR) && (src->uid == 0 || src->uid == getuid());
}

/* ---- writing ---------------------------------------------------------------- */

/* The file's strings, each once: the symbolizer's strings are interned, so
 * one pointer is one string (a string given twice is only written twice). */
struct strings {
    const char **key;
    uint32_t *off;
    size_t cap, used;
    char *blob;
    size_t len, blob_cap;
};

static int strings_add(struct strings *t, const char *s, uint32_t *off)
{
    if (s == NULL) {
        *off = NONE;
        return 0;
    }
    if ((t->used + 1) * 2 > t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 256;
        const char **key = calloc(cap, sizeof *key);
        uint32_t *o = calloc(cap, sizeof *o);
        if (!key || !o) {
            free(key);
            free(o);
            return -1;
        }
        for (size_t i = 0; i < t->cap; i++)
            if (t->key[i]) {
                size_t j = ((uintptr_t)t->key[i] >> 3) * 0x9e3779b97f4a7c15ull & (cap - 1);
                while (key[j])
                    j = (j + 1) & (cap - 1);
                key[j] = t->key[i];
                o[j] = t->off[i];
            }
        free(t->key);
        free(t->off);
        t->key = key;
        t->off = o;
        t->cap = cap;
    }
    size_t j = ((uintptr_t)s >> 3) * 0x9e3779b97f4a7c15ull & (t->cap - 1);
    while (t->key[j] && t->key[j] != s)
        j = (j + 1) & (t->cap - 1);
    if (t->key[j]) {
        *off = t->off[j];
        return 0;
    }
    size_t n = strlen(s) + 1;
    if (t->len + n >= MAX_FILE)
        return -1;
    if (t->len + n > t->blob_cap) {
        size_t cap = t->blob_cap ? t->blob_cap : 4096;
        while (cap < t->len + n)
            cap *= 2;
        char *b = realloc(t->blob, cap);
        if (!b)
            return -1;
        t->blob = b;
        t->blob_cap = cap;
    }
    memcpy(t->blob + t->len, s, n);
    t->key[j] = s;
    t->off[j] = *off = (uint32_t)t->len;
    t->len += n;
    t->used++;
    return 0;
}

static int by_off(const void *a, const void *b)
{
    const struct gs_symcache_entry *x = *(const struct gs_symcache_entry *const *)a;
    const struct gs_symcache_entry *y = *(const struct gs_symcache_entry *const *)b;
    return x->off < y->off ? -1 : x->off > y->off;
}

/* mkdir -p, each folder made 0700. */
static int make_dirs(const char *dir)
{
    char p[4096];
    size_t n = strlen(dir);
    if (n == 0 || n >= sizeof p)
        return errno = ENAMETOOLONG, -1;
    memcpy(p, dir, n + 1);
    for (size_t i = 1; i <= n; i++)
        if (p[i] == '/' || p[i] == '\0') {
            char c = p[i];
            p[i] = '\0';
            if (mkdir(p, 0700) != 0 && errno != EEXIST)
                return -1;
            p[i] = c;
        }
    struct stat st;
    if (stat(dir, &st) != 0)
        return -1;
    return S_ISDIR(st.st_mode) ? 0 : (errno = ENOTDIR, -1);
}

/* The body after the head (entries sorted by offset): its bytes, or NULL. */
static uint8_t *body(const struct gs_symcache_entry **sorted, size_t n, const uint8_t *id,
                     size_t id_len, const struct gs_symcache_source *src, struct head *h,
                     size_t *len)
{
    struct strings st = {0};
    size_t frames = 0;
    for (size_t i = 0; i < n; i++)
        frames += sorted[i]->n;
    struct disk_source ds = {.dev = src->dev, .ino = src->ino, .size = src->size,
                             .mtime_ns = src->mtime_ns, .uid = src->uid,
                             .module_len = (uint32_t)strlen(src->module),
                             .file_len = (uint32_t)strlen(src->file)};
    if (ds.module_len == 0 || ds.module_len > MAX_PATH || ds.file_len == 0 ||
        ds.file_len > MAX_PATH)
        return NULL;
    size_t source = sizeof ds + pad8((size_t)ds.module_len + 1 + ds.file_len + 1);
    size_t fixed = pad8(id_len) + source + n * sizeof(struct disk_entry) +
                   frames * sizeof(struct disk_frame);
    if (fixed >= MAX_FILE || frames > UINT32_MAX)
        return NULL;
    uint8_t *buf = calloc(1, fixed);
    if (buf == NULL)
        return NULL;
    memcpy(buf, id, id_len);
    uint8_t *at = buf + pad8(id_len);
    memcpy(at, &ds, sizeof ds);
    memcpy(at + sizeof ds, src->module, ds.module_len + 1);
    memcpy(at + sizeof ds + ds.module_len + 1, src->file, ds.file_len + 1);
    uint8_t *e = at + source, *f = e + n * sizeof(struct disk_entry);
    int bad = 0;
    uint32_t first = 0;
    for (size_t i = 0; i < n && !bad; i++) {
        const struct gs_symcache_entry *en = sorted[i];
        bad = en->n == 0 || en->n > MAX_FRAMES_PER_ENTRY;
        struct disk_entry de = {.off = en->off, .first = first, .n = en->n};
        memcpy(e + i * sizeof de, &de, sizeof de);
        for (unsigned k = 0; k < en->n && !bad; k++, first++) {
            struct disk_frame df = {.line = en->frames[k].line < 0 ? 0 : en->frames[k].line};
            bad = strings_add(&st, en->frames[k].function, &df.function) != 0 ||
                  strings_add(&st, en->frames[k].file, &df.file) != 0;
            memcpy(f + (size_t)first * sizeof df, &df, sizeof df);
        }
    }
    uint8_t *out = bad ? NULL : realloc(buf, fixed + st.len);
    if (out) {
        if (st.len)
            memcpy(out + fixed, st.blob, st.len);
        *len = fixed + st.len;
        *h = (struct head){.version = VERSION, .order = ORDER, .build_id_len = (uint32_t)id_len,
                           .entries = (uint32_t)n, .frames = (uint32_t)frames,
                           .strings = (uint32_t)st.len, .crc = (uint32_t)crc32(0, out, (uInt)*len)};
        memcpy(h->magic, MAGIC, 8);
    } else {
        free(buf);
    }
    free(st.key);
    free(st.off);
    free(st.blob);
    return out;
}

int gs_symcache_save(const char *dir, const uint8_t *build_id, size_t len,
                     const struct gs_symcache_source *src,
                     const struct gs_symcache_entry *entries, size_t n)
{
    char path[4096], tmp[4200];
    static unsigned serial;
    if (dir == NULL || build_id == NULL || src == NULL || src->module == NULL ||
        src->file == NULL || (n && entries == NULL) || n > UINT32_MAX ||
        file_name(path, sizeof path, dir, build_id, len) != 0)
        return errno = EINVAL, -1;
    const struct gs_symcache_entry **sorted = malloc((n ? n : 1) * sizeof *sorted);
    if (sorted == NULL)
        return -1;
    for (size_t i = 0; i < n; i++)
        sorted[i] = &entries[i];
    qsort(sorted, n, sizeof *sorted, by_off);
    for (size_t i = 1; i < n; i++)
        if (sorted[i]->off == sorted[i - 1]->off) {
            free(sorted);
            return errno = EINVAL, -1;
        }
    struct head h;
    size_t blen = 0;
    uint8_t *b = body(sorted, n, build_id, len, src, &h, &blen);
    free(sorted);
    if (b == NULL)
        return errno = ENOMEM, -1;
    snprintf(tmp, sizeof tmp, "%s.%ld.%u.tmp", path, (long)getpid(), serial++);
    int fd = -1, rc = -1;
    FILE *f = NULL;
    if (make_dirs(dir) == 0 &&
        (fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600)) >= 0) {
        if ((f = fdopen(fd, "wb")) == NULL)
            close(fd);
        else if (fwrite(&h, sizeof h, 1, f) == 1 && fwrite(b, 1, blen, f) == blen &&
                 fflush(f) == 0)
            rc = 0;
        int saved = errno;
        if (f && fclose(f) != 0 && rc == 0)
            rc = -1, saved = errno;
        if (rc == 0 && rename(tmp, path) != 0)
            rc = -1, saved = errno;
        if (rc != 0)
            unlink(tmp);
        errno = saved;
    }
    free(b);
    return rc;
}
