/*
 * test_symcache.c - the symbol cache's files (analyzer/symbols/symcache.c):
 * what is saved reads back, entry for entry and frame for frame, found by
 * offset; a save replaces the file whole and makes its folders; a file of
 * another build id, cut short, grown, or with any byte flipped is not used;
 * the folder comes from GPUSHIM_SYMBOL_CACHE, XDG_CACHE_HOME or HOME. A
 * file says what it was read from, and is trusted only for that file: at
 * the module's path or in a --symbols folder given now, unchanged, or gone
 * and owned by root or this user.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analyzer/symbols/symcache.h"

static char dir[256];

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

static void make_dir(void)
{
    const char *base = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/gs_symcache_XXXXXX", base && *base ? base : "/tmp");
    cr_assert_not_null(mkdtemp(dir), "mkdtemp: %s", strerror(errno));
}

static void remove_dir(void) { nftw(dir, remove_one, 16, FTW_DEPTH | FTW_PHYS); }

TestSuite(symcache, .init = make_dir, .fini = remove_dir);

static const uint8_t id[20] = {0x93, 0xac, 0x61, 0xec, 0x5a, 0x8e, 0xb1, 0x39, 0x6f, 0x9f,
                               0xbd, 0x35, 0x0e, 0x31, 0x69, 0xa5, 0x58, 0x52, 0x8a, 0x40};
static const char *hex = "93ac61ec5a8eb1396f9fbd350e3169a558528a40";

/* A frame per i: an inlined one (function, file, line) out to its
 * caller; i % 5 == 0 has no file, i % 7 == 0 names nothing at all. */
#define N 500
static struct gs_symcache_frame frames[N][2];
static struct gs_symcache_entry entries[N];
static char names[N][32];

static void make_entries(void)
{
    static const char *files[] = {"/src/a.c", "/src/b.h", "/usr/include/c++/12/bits/vector.tcc"};
    for (int i = 0; i < N; i++) {
        snprintf(names[i], sizeof names[i], "fn_%d", i % 60);
        frames[i][0] = (struct gs_symcache_frame){.function = names[i],
                                                  .file = i % 5 ? files[i % 3] : NULL,
                                                  .line = i % 5 ? 10 + i : 0};
        frames[i][1] = (struct gs_symcache_frame){.function = "caller", .file = files[0],
                                                  .line = 7};
        unsigned n = i % 7 == 0 ? 1 : 1 + (unsigned)(i % 2);
        if (i % 7 == 0)
            frames[i][0] = (struct gs_symcache_frame){0};
        /* offsets in no order, far apart and near */
        entries[i] = (struct gs_symcache_entry){.off = (uint64_t)(i * 7919 % N) * 0x10 + 0x1000,
                                                .n = n, .frames = frames[i]};
    }
    entries[N - 1].off = UINT64_MAX; /* the largest offset there is */
}

static void same(const struct gs_symcache_entry *got, const struct gs_symcache_entry *want)
{
    cr_assert_not_null(got, "no entry for offset %#llx", (unsigned long long)want->off);
    cr_assert_eq(got->off, want->off);
    cr_assert_eq(got->n, want->n, "offset %#llx: %u frames", (unsigned long long)want->off,
                 got->n);
    for (unsigned k = 0; k < want->n; k++) {
        const struct gs_symcache_frame *g = &got->frames[k], *w = &want->frames[k];
        cr_assert((g->function == NULL) == (w->function == NULL));
        cr_assert((g->file == NULL) == (w->file == NULL));
        if (w->function)
            cr_assert_str_eq(g->function, w->function);
        if (w->file)
            cr_assert_str_eq(g->file, w->file);
        cr_assert_eq(g->line, w->line);
    }
}

static void path_of(char *out, size_t n) { snprintf(out, n, "%s/sub/dir/%s.syms", dir, hex); }

static void write_file(const char *path, const uint8_t *buf, size_t len)
{
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f);
    cr_assert_eq(fwrite(buf, 1, len, f), len);
    fclose(f);
}

/* The module the answers are "read from": DIR/lib/libm.so, a small file. */
static char module[PATH_MAX];
static struct gs_symcache_source src;

static void make_module(void)
{
    char lib[512];
    snprintf(lib, sizeof lib, "%s/lib", dir);
    mkdir(lib, 0700);
    snprintf(module, sizeof module, "%s/libm.so", lib);
    write_file(module, (const uint8_t *)"\177ELF", 4);
    struct stat st;
    cr_assert_eq(stat(module, &st), 0);
    gs_symcache_source_of(&src, module, module, &st);
}

static void save(void)
{
    char sub[PATH_MAX];
    snprintf(sub, sizeof sub, "%s/sub/dir", dir);
    make_entries();
    make_module();
    cr_assert_eq(gs_symcache_save(sub, id, sizeof id, &src, entries, N), 0, "save: %s",
                 strerror(errno));
}

static struct gs_symcache *load(void)
{
    char sub[PATH_MAX];
    snprintf(sub, sizeof sub, "%s/sub/dir", dir);
    return gs_symcache_load(sub, id, sizeof id);
}

Test(symcache, what_is_saved_reads_back_by_offset)
{
    save();
    char path[PATH_MAX];
    path_of(path, sizeof path);
    struct stat st;
    cr_assert_eq(stat(path, &st), 0, "the file is named by its build id");
    cr_assert_eq(st.st_mode & 0777, 0600);
    struct gs_symcache *c = load();
    cr_assert_not_null(c);
    for (int i = 0; i < N; i++)
        same(gs_symcache_find(c, entries[i].off), &entries[i]);
    cr_assert_null(gs_symcache_find(c, 0x1008), "an offset never saved");
    cr_assert_null(gs_symcache_find(c, 0), "below them all");
    const struct gs_symcache_entry *all;
    cr_assert_eq(gs_symcache_entries(c, &all), N);
    for (int i = 1; i < N; i++)
        cr_assert_gt(all[i].off, all[i - 1].off, "by offset");
    gs_symcache_free(c);
}

Test(symcache, a_save_replaces_the_file_whole)
{
    save();
    char sub[PATH_MAX];
    snprintf(sub, sizeof sub, "%s/sub/dir", dir);
    cr_assert_eq(gs_symcache_save(sub, id, sizeof id, &src, entries + 10, 3), 0);
    struct gs_symcache *c = load();
    cr_assert_not_null(c);
    const struct gs_symcache_entry *all;
    cr_assert_eq(gs_symcache_entries(c, &all), 3);
    same(gs_symcache_find(c, entries[11].off), &entries[11]);
    gs_symcache_free(c);
    DIR *d = opendir(sub);
    int files = 0;
    for (struct dirent *de; (de = readdir(d));)
        files += de->d_name[0] != '.';
    closedir(d);
    cr_assert_eq(files, 1, "no temporary file left");
}

Test(symcache, two_entries_at_one_offset_are_refused)
{
    make_entries();
    make_module();
    struct gs_symcache_entry two[2] = {entries[3], entries[3]};
    cr_assert_eq(gs_symcache_save(dir, id, sizeof id, &src, two, 2), -1);
    cr_assert_eq(errno, EINVAL);
}

Test(symcache, another_build_id_or_none_is_not_used)
{
    save();
    uint8_t other[20];
    memcpy(other, id, sizeof other);
    other[19] ^= 1;
    char sub[PATH_MAX], from[PATH_MAX], to[PATH_MAX];
    snprintf(sub, sizeof sub, "%s/sub/dir", dir);
    cr_assert_null(gs_symcache_load(sub, other, sizeof other), "no file for that one");
    /* the file of id, under the other's name: its own build id says no */
    path_of(from, sizeof from);
    snprintf(to, sizeof to, "%s/sub/dir/93ac61ec5a8eb1396f9fbd350e3169a558528a41.syms", dir);
    cr_assert_eq(rename(from, to), 0);
    cr_assert_null(gs_symcache_load(sub, other, sizeof other), "its build id is id's");
    cr_assert_null(gs_symcache_load(sub, id, 0), "no build id");
    cr_assert_null(gs_symcache_load(sub, NULL, 20));
    cr_assert_eq(gs_symcache_save(sub, id, 0, &src, entries, 1), -1, "nothing saved without one");
    cr_assert_eq(gs_symcache_save(sub, id, sizeof id, NULL, entries, 1), -1, "nor without a source");
}

static uint8_t *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f);
    fseek(f, 0, SEEK_END);
    *len = (size_t)ftell(f);
    rewind(f);
    uint8_t *buf = malloc(*len + 16);
    cr_assert_eq(fread(buf, 1, *len, f), *len);
    fclose(f);
    return buf;
}

Test(symcache, a_damaged_file_is_not_used)
{
    save();
    char path[PATH_MAX];
    path_of(path, sizeof path);
    size_t len;
    uint8_t *good = read_file(path, &len);
    uint8_t *bad = malloc(len + 16);
    /* every byte flipped, one at a time: the head's checks or the CRC */
    for (size_t i = 0; i < len; i += (i < 200 ? 1 : 37)) {
        memcpy(bad, good, len);
        bad[i] ^= 0x20;
        write_file(path, bad, len);
        struct gs_symcache *c = load();
        cr_assert_null(c, "byte %zu of %zu flipped, and the file was used", i, len);
    }
    for (size_t cut = 0; cut < len; cut += (cut < 64 ? 1 : 101)) {
        write_file(path, good, cut);
        cr_assert_null(load(), "cut to %zu of %zu bytes, and the file was used", cut, len);
    }
    memcpy(bad, good, len);
    memset(bad + len, 0, 16);
    write_file(path, bad, len + 16);
    cr_assert_null(load(), "16 bytes more, and the file was used");
    write_file(path, good, len);
    struct gs_symcache *c = load();
    cr_assert_not_null(c, "whole again, it is used");
    gs_symcache_free(c);
    free(good);
    free(bad);
}

Test(symcache, a_folder_in_the_way_is_an_error)
{
    char file[PATH_MAX];
    snprintf(file, sizeof file, "%s/plain", dir);
    write_file(file, (const uint8_t *)"x", 1);
    make_entries();
    make_module();
    cr_assert_eq(gs_symcache_save(file, id, sizeof id, &src, entries, 2), -1);
    cr_assert_eq(errno, ENOTDIR);
}

Test(symcache, the_folder_from_the_environment)
{
    char out[PATH_MAX];
    int chosen;
    setenv("GPUSHIM_SYMBOL_CACHE", "/x/y", 1);
    cr_assert_eq(gs_symcache_dir(out, sizeof out, &chosen), 1);
    cr_assert_str_eq(out, "/x/y");
    cr_assert_eq(chosen, 1);
    setenv("GPUSHIM_SYMBOL_CACHE", "off", 1);
    cr_assert_eq(gs_symcache_dir(out, sizeof out, &chosen), 0, "off: none");
    unsetenv("GPUSHIM_SYMBOL_CACHE");
    setenv("XDG_CACHE_HOME", "/c", 1);
    setenv("HOME", "/h", 1);
    cr_assert_eq(gs_symcache_dir(out, sizeof out, &chosen), 1);
    cr_assert_str_eq(out, "/c/gpushim/symbols");
    cr_assert_eq(chosen, 0);
    setenv("XDG_CACHE_HOME", "relative", 1); /* not absolute: ignored, as the spec says */
    cr_assert_eq(gs_symcache_dir(out, sizeof out, &chosen), 1);
    cr_assert_str_eq(out, "/h/.cache/gpushim/symbols");
    unsetenv("XDG_CACHE_HOME");
    unsetenv("HOME");
    cr_assert_eq(gs_symcache_dir(out, sizeof out, &chosen), 0, "nowhere to keep it");
    char small[8];
    setenv("GPUSHIM_SYMBOL_CACHE", "/a/long/folder", 1);
    cr_assert_eq(gs_symcache_dir(small, sizeof small, &chosen), 0, "too long");
    unsetenv("GPUSHIM_SYMBOL_CACHE");
}

Test(symcache, a_file_says_what_it_was_read_from)
{
    save();
    struct gs_symcache *c = load();
    cr_assert_not_null(c);
    const struct gs_symcache_source *got = gs_symcache_made_from(c);
    cr_assert_str_eq(got->module, module);
    cr_assert_str_eq(got->file, module);
    cr_assert_eq(got->dev, src.dev);
    cr_assert_eq(got->ino, src.ino);
    cr_assert_eq(got->size, 4);
    cr_assert_eq(got->mtime_ns, src.mtime_ns);
    cr_assert_eq(got->uid, getuid());
    gs_symcache_free(c);
}

/* Saves with from (module's path named, file read), then asks whether the
 * file is trusted for path with the folders given. */
static int trusted_for(const struct gs_symcache_source *from, const char *path, char *const *search,
                       size_t nsearch)
{
    char sub[PATH_MAX];
    snprintf(sub, sizeof sub, "%s/sub/dir", dir);
    cr_assert_eq(gs_symcache_save(sub, id, sizeof id, from, entries, 4), 0);
    struct gs_symcache *c = load();
    cr_assert_not_null(c);
    int t = gs_symcache_trusted(c, path, search, nsearch);
    gs_symcache_free(c);
    return t;
}

Test(symcache, a_file_is_trusted_for_the_file_it_was_read_from_alone)
{
    save();
    cr_assert_eq(trusted_for(&src, module, NULL, 0), 1, "the same file, unchanged");
    char other[PATH_MAX];
    snprintf(other, sizeof other, "%s/lib/libother.so", dir);
    cr_assert_eq(trusted_for(&src, other, NULL, 0), 0, "made for another path");
    cr_assert_eq(gs_symcache_trusted(NULL, module, NULL, 0), 0, "no file");

    /* what a forged build id cannot match: the file at the module's path */
    struct gs_symcache_source moved = src;
    moved.ino ^= 1;
    cr_assert_eq(trusted_for(&moved, module, NULL, 0), 0, "another inode");
    moved = src;
    moved.dev ^= 1;
    cr_assert_eq(trusted_for(&moved, module, NULL, 0), 0, "another device");
    moved = src;
    moved.mtime_ns += 1;
    cr_assert_eq(trusted_for(&moved, module, NULL, 0), 0, "another mtime, by a nanosecond");
    moved = src;
    moved.size += 1;
    cr_assert_eq(trusted_for(&moved, module, NULL, 0), 0, "another size");

    /* read from a copy: trusted while its folder is given */
    char copy_dir[PATH_MAX], copy[PATH_MAX + 16];
    snprintf(copy_dir, sizeof copy_dir, "%s/image", dir);
    cr_assert_eq(mkdir(copy_dir, 0700), 0);
    snprintf(copy, sizeof copy, "%s/libm.so", copy_dir);
    write_file(copy, (const uint8_t *)"\177ELF!", 5);
    struct stat st;
    cr_assert_eq(stat(copy, &st), 0);
    struct gs_symcache_source from_copy;
    gs_symcache_source_of(&from_copy, module, copy, &st);
    char *search[] = {copy_dir};
    cr_assert_eq(trusted_for(&from_copy, module, search, 1), 1, "the copy, its folder given");
    cr_assert_eq(trusted_for(&from_copy, module, NULL, 0), 0, "its folder not given now");
    char near[PATH_MAX];
    snprintf(near, sizeof near, "%s/ima", dir); /* a prefix of the folder's name, no folder */
    char *wrong[] = {near};
    cr_assert_eq(trusted_for(&from_copy, module, wrong, 1), 0, "not inside /ima");
}

Test(symcache, a_file_read_from_a_module_since_gone_is_trusted_if_root_s_or_yours)
{
    save();
    cr_assert_eq(unlink(module), 0);
    cr_assert_eq(trusted_for(&src, module, NULL, 0), 1, "gone, and it was mine");
    struct gs_symcache_source theirs = src;
    theirs.uid = getuid() + 4242;
    cr_assert_eq(trusted_for(&theirs, module, NULL, 0), 0, "gone, and it was someone else's");
    theirs.uid = 0;
    cr_assert_eq(trusted_for(&theirs, module, NULL, 0), 1, "gone, and it was root's");
    /* there again, another file: not the one it was read from (of another
     * size: a new file may take the old one's inode, and the kernel's clock
     * for mtimes moves in ticks) */
    write_file(module, (const uint8_t *)"\177ELF\2", 5);
    cr_assert_eq(trusted_for(&src, module, NULL, 0), 0, "a new file in its place");
}
