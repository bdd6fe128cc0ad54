/*
 * fuzz_symcache.c - libFuzzer target: a symbol cache file
 * (analyzer/symbols/symcache.c) read as an analysis reads it. The input is
 * the file DIR/<build id>.syms, for the build id its head names (at most
 * 64 bytes at offset 40; 8 fixed bytes where it names none); when it loads,
 * every entry is looked up by its offset and its frames' strings read, the
 * trust check is run for the module it names, and it is saved again (in a
 * folder of its own, removed after) from what was read.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "analyzer/symbols/symcache.h"
#include "fuzz_file.h"

static const uint8_t fixed[8] = {0x93, 0xac, 0x61, 0xec, 0x5a, 0x8e, 0xb1, 0x39};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* the build id the file says it is of, so that real files are seeds */
    const uint8_t *id = fixed;
    size_t idlen = sizeof fixed;
    uint32_t said = size >= 20 ? (uint32_t)data[16] | (uint32_t)data[17] << 8 |
                                     (uint32_t)data[18] << 16 | (uint32_t)data[19] << 24
                               : 0;
    if (said >= 1 && said <= 64 && size >= 40 + said) {
        id = data + 40;
        idlen = said;
    }
    char name[2 * 64 + 8];
    for (size_t i = 0; i < idlen; i++)
        snprintf(name + 2 * i, 3, "%02x", id[i]);
    snprintf(name + 2 * idlen, 6, ".syms");
    const char *file = fuzz_file(name, data, size);
    struct gs_symcache *c = gs_symcache_load(fuzz_dir_path(), id, idlen);
    if (c == NULL) {
        fuzz_forget(file);
        return 0;
    }
    const struct gs_symcache_entry *all;
    size_t n = gs_symcache_entries(c, &all), chars = 0;
    for (size_t i = 0; i < n; i++) {
        const struct gs_symcache_entry *e = gs_symcache_find(c, all[i].off);
        if (e != &all[i])
            __builtin_trap(); /* each entry found at its own offset */
        for (unsigned k = 0; k < e->n; k++)
            chars += (e->frames[k].function ? strlen(e->frames[k].function) : 0) +
                     (e->frames[k].file ? strlen(e->frames[k].file) : 0);
    }
    (void)gs_symcache_find(c, 0);
    (void)gs_symcache_find(c, UINT64_MAX);
    const struct gs_symcache_source *src = gs_symcache_made_from(c);
    char *search[] = {(char *)fuzz_dir_path()};
    (void)gs_symcache_trusted(c, src->module, search, 1);
    char out[400];
    snprintf(out, sizeof out, "%s/saved", fuzz_dir_path());
    if (gs_symcache_save(out, id, idlen, src, all, n) == 0) {
        struct gs_symcache *again = gs_symcache_load(out, id, idlen);
        const struct gs_symcache_entry *back;
        if (again == NULL || gs_symcache_entries(again, &back) != n)
            __builtin_trap(); /* what was read, written, reads back */
        gs_symcache_free(again);
    }
    char saved[600];
    snprintf(saved, sizeof saved, "%s/%s", out, name);
    unlink(saved);
    rmdir(out);
    gs_symcache_free(c);
    fuzz_forget(file);
    return (int)(chars & 0);
}
