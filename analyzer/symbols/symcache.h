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
 * A build id is only a claim: any ELF file can carry any id, so a trace
 * that names a forged one would, if the id were the key alone, put its
 * names in the answers for every later trace of the real build. So each
 * file also says which file its answers were read from (its path, device,
 * inode, size, mtime and owner: gs_symcache_source) and for which path the
 * trace named, and gs_symcache_trusted uses it only for that same file
 * (docs/limits.md, "What a trace can make the analyzer do").
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

/* The file a cache file's answers were read from. */
struct gs_symcache_source {
    const char *module; /* the module's path, as the trace named it */
    const char *file;   /* the file read: that path, or a copy in a --symbols folder */
    uint64_t dev, ino, size;
    int64_t mtime_ns;
    uint32_t uid; /* its owner */
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

/* The file its answers were read from (c's own strings). */
const struct gs_symcache_source *gs_symcache_made_from(const struct gs_symcache *c);

/*
 * Whether c's answers may be used for the module at path module, with the
 * --symbols folders search (real paths) given now: 1 only when c was made
 * for that module path, from that path or a copy inside one of the
 * folders, and that file is still there unchanged (same device, inode,
 * size and mtime) or, gone, was owned by root or by this user. 0 else:
 * the module is read as if there were no cache file, and the save then
 * replaces it.
 */
int gs_symcache_trusted(const struct gs_symcache *c, const char *module, char *const *search,
                        size_t nsearch);

/* src, for the file at file (module's path, or where it was found), from
 * its stat. The strings are borrowed. */
struct stat;
void gs_symcache_source_of(struct gs_symcache_source *src, const char *module, const char *file,
                           const struct stat *st);

/*
 * Writes DIR's file for build_id with the n entries (offsets all different,
 * in any order), read from src, making DIR (mode 0700) and its parents when
 * missing. 0, or -1 with errno (the old file, if any, is left as it was).
 */
int gs_symcache_save(const char *dir, const uint8_t *build_id, size_t len,
                     const struct gs_symcache_source *src,
                     const struct gs_symcache_entry *entries, size_t n);

#endif
