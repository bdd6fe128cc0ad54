/*
 * symcache.h - the symbol cache on disk (symcache.c): the frames the
 * symbolizer found for a module's addresses, kept per GNU build id, so that
 * the next analysis of a run of the same build reads them instead of the
 * module's debug information (libc's takes 60 ms to inflate, a framework's
 * seconds).
 *
 * One file per build id, DIR/<build id in hex>.syms. Addresses are offsets
 * in the module (the recorded pc less its load bias), which stay the same
 * from run to run. A file is read as untrusted: anything short, out of
 * range, out of order or failing its CRC-32 is not used (and the next save
 * replaces it). A save writes a new file and renames it over the old one,
 * so a reader sees the whole old file or the whole new one.
 *
 * Included by: symbolize.c; report/load.c (gs_symcache_dir); its unit test.
 */
#ifndef GPUSHIM_SYMBOLS_SYMCACHE_H
#define GPUSHIM_SYMBOLS_SYMCACHE_H

#include <stddef.h>
#include <stdint.h>

/* One source-level frame as the file keeps it. */
struct gs_symcache_frame {
    const char *function; /* NULL when unknown */
    const char *file;     /* NULL when unknown */
    int line;
};

/* One address's answer: n frames, innermost first. */
struct gs_symcache_entry {
    uint64_t off; /* the address, less the module's load bias */
    unsigned n;
    const struct gs_symcache_frame *frames;
};

struct gs_symcache; /* one file, read */

/*
 * The folder of the cache, from the environment: GPUSHIM_SYMBOL_CACHE (a
 * folder; "off" for none), else $XDG_CACHE_HOME/gpushim/symbols, else
 * $HOME/.cache/gpushim/symbols. Returns 1 and the folder in out, 0 for none
 * (off, or no HOME, or too long). *chosen: 1 when GPUSHIM_SYMBOL_CACHE named it.
 */
int gs_symcache_dir(char *out, size_t outsz, int *chosen);

/* Reads DIR's file for build_id: NULL when there is none, or it cannot be
 * used (damaged, another build id, another format). */
struct gs_symcache *gs_symcache_load(const char *dir, const uint8_t *build_id, size_t len);
void gs_symcache_free(struct gs_symcache *c);

/* The answer for off, or NULL when the file has none. */
const struct gs_symcache_entry *gs_symcache_find(const struct gs_symcache *c, uint64_t off);
/* Its entries, by offset (for a save that keeps them). */
size_t gs_symcache_entries(const struct gs_symcache *c, const struct gs_symcache_entry **out);

/*
 * Writes DIR's file for build_id with the n entries (offsets all different,
 * in any order), making DIR (mode 0700) and its parents when missing.
 * 0, or -1 with errno (the old file, if any, is left as it was).
 */
int gs_symcache_save(const char *dir, const uint8_t *build_id, size_t len,
                     const struct gs_symcache_entry *entries, size_t n);

#endif
