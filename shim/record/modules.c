/*
 * modules.c - the images (executable, shared libraries) loaded in the process.
 *
 * A stack is only useful later if the analyzer knows which file each
 * address came from. Before a new stack goes to the ring, every frame must
 * lie in a module already written; if one does not (a library dlopened
 * since the last look), the loaded images are listed again and the new
 * ones written: path, load bias, address range and GNU build id, which the
 * analyzer checks against the file it finds on disk.
 *
 * dl_iterate_phdr takes the loader's lock, so it runs with no shim lock
 * held (a thread inside dlopen may be waiting for one of ours).
 */
#define _GNU_SOURCE
#include <elf.h>
#include <link.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "shim/base/base.h"
#include "shim/writer/writer.h"
#include "shim/record/record.h"
#include "shim/record/record_int.h"

struct module {
    uint64_t lo, hi, bias;
    uint32_t id;
};

struct image {
    struct module m;
    uint8_t build_id[GS_MAX_BUILD_ID];
    size_t build_id_len;
    char path[4096];
};

static pthread_mutex_t modules_lock = PTHREAD_MUTEX_INITIALIZER;
static struct module *known; /* sorted by lo */
static size_t nknown, known_cap;
static uint32_t next_id;
static unsigned long long last_adds = ~0ull, last_subs = ~0ull;

/* Index of the module holding pc, or -1. Call with modules_lock held. */
static long find(uint64_t pc)
{
    size_t a = 0, b = nknown;
    while (a < b) {
        size_t mid = (a + b) / 2;
        if (known[mid].hi <= pc)
            a = mid + 1;
        else
            b = mid;
    }
    return a < nknown && known[a].lo <= pc ? (long)a : -1;
}

static int all_covered(const uint64_t *pcs, unsigned n)
{
    for (unsigned i = 0; i < n; i++)
        if (find(pcs[i]) < 0)
            return 0;
    return 1;
}

static void image_range(const struct dl_phdr_info *info, uint64_t *lo, uint64_t *hi)
{
    uint64_t l = UINT64_MAX, h = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD)
            continue;
        if (ph->p_vaddr < l)
            l = ph->p_vaddr;
        if (ph->p_vaddr + ph->p_memsz > h)
            h = ph->p_vaddr + ph->p_memsz;
    }
    if (l > h)
        l = h = 0;
    *lo = info->dlpi_addr + l;
    *hi = info->dlpi_addr + h;
}

static size_t build_id(const struct dl_phdr_info *info, uint8_t *out, size_t max)
{
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_NOTE)
            continue;
        const uint8_t *p = (const uint8_t *)(info->dlpi_addr + ph->p_vaddr);
        const uint8_t *end = p + ph->p_memsz;
        while (p + sizeof(ElfW(Nhdr)) <= end) {
            const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *)p;
            size_t name = (nh->n_namesz + 3) & ~(size_t)3, desc = (nh->n_descsz + 3) & ~(size_t)3;
            const uint8_t *d = p + sizeof *nh + name;
            if (d + nh->n_descsz > end)
                break;
            if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 &&
                memcmp(p + sizeof *nh, "GNU", 4) == 0 && nh->n_descsz <= max) {
                memcpy(out, d, nh->n_descsz);
                return nh->n_descsz;
            }
            p = d + desc;
        }
    }
    return 0;
}

struct scan {
    struct image *images;
    size_t n, cap;
    unsigned long long adds, subs;
};

static int collect(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    struct scan *s = arg;
    s->adds = info->dlpi_adds;
    s->subs = info->dlpi_subs;
    if (!s->images)
        return 1; /* only the counters were wanted */
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 64;
        struct image *im = realloc(s->images, cap * sizeof *im);
        if (!im)
            return 1;
        s->images = im;
        s->cap = cap;
    }
    struct image *im = &s->images[s->n];
    image_range(info, &im->m.lo, &im->m.hi);
    if (im->m.lo == im->m.hi)
        return 0;
    im->m.bias = info->dlpi_addr;
    im->build_id_len = build_id(info, im->build_id, sizeof im->build_id);
    const char *name = info->dlpi_name;
    if (name && name[0]) {
        strncpy(im->path, name, sizeof im->path - 1);
        im->path[sizeof im->path - 1] = 0;
    } else {
        ssize_t len = readlink("/proc/self/exe", im->path, sizeof im->path - 1);
        im->path[len > 0 ? len : 0] = 0;
    }
    s->n++;
    return 0;
}

static void emit_module(const struct image *im, uint32_t id)
{
    /* modules_lock held (add): not on the stack, which may be a small one */
    static union {
        struct gs_module_body b;
        uint8_t bytes[sizeof(struct gs_module_body) + sizeof im->path + sizeof im->build_id];
    } body;
    size_t path_len = strlen(im->path);
    memset(&body.b, 0, sizeof body.b);
    body.b.type = GS_REC_MODULE;
    body.b.id = id;
    body.b.bias = im->m.bias;
    body.b.lo = im->m.lo;
    body.b.span = im->m.hi - im->m.lo;
    body.b.path_len = (uint16_t)path_len;
    body.b.build_id_len = (uint8_t)im->build_id_len;
    memcpy(body.b.data, im->path, path_len);
    memcpy(body.b.data + path_len, im->build_id, im->build_id_len);
    gs_emit(&body, (uint32_t)(sizeof body.b + path_len + im->build_id_len), 0);
}

/* Adds an image not seen before. Call with modules_lock held. */
static void add(const struct image *im)
{
    long at = find(im->m.lo);
    if (at >= 0 && known[at].lo == im->m.lo && known[at].hi == im->m.hi)
        return;
    if (nknown == known_cap) {
        size_t cap = known_cap ? known_cap * 2 : 128;
        struct module *k = realloc(known, cap * sizeof *k);
        if (!k)
            return;
        known = k;
        known_cap = cap;
    }
    size_t pos = 0;
    while (pos < nknown && known[pos].lo < im->m.lo)
        pos++;
    if (pos < nknown && known[pos].lo < im->m.hi) /* replaced by an image at its place */
        memmove(&known[pos], &known[pos + 1], (--nknown - pos) * sizeof *known);
    memmove(&known[pos + 1], &known[pos], (nknown - pos) * sizeof *known);
    known[pos] = im->m;
    known[pos].id = ++next_id;
    nknown++;
    emit_module(im, known[pos].id);
}

void gs_modules_cover(const uint64_t *pcs, unsigned n)
{
    pthread_mutex_lock(&modules_lock);
    int covered = all_covered(pcs, n);
    unsigned long long adds = last_adds, subs = last_subs;
    pthread_mutex_unlock(&modules_lock);
    if (covered)
        return;

    struct scan s = {0};
    dl_iterate_phdr(collect, &s); /* counters only */
    if (s.adds == adds && s.subs == subs)
        return; /* nothing loaded since the last look: a JIT frame, say */
    s.images = malloc(64 * sizeof *s.images);
    s.cap = s.images ? 64 : 0;
    if (!s.images)
        return;
    dl_iterate_phdr(collect, &s);

    pthread_mutex_lock(&modules_lock);
    for (size_t i = 0; i < s.n; i++)
        add(&s.images[i]);
    last_adds = s.adds;
    last_subs = s.subs;
    pthread_mutex_unlock(&modules_lock);
    free(s.images);
}

void gs_modules_lock(void) { pthread_mutex_lock(&modules_lock); }
void gs_modules_unlock(void) { pthread_mutex_unlock(&modules_lock); }

void gs_modules_reset(void)
{
    pthread_mutex_init(&modules_lock, NULL);
    free(known);
    known = NULL;
    nknown = known_cap = 0;
    next_id = 0;
    last_adds = last_subs = ~0ull;
}
