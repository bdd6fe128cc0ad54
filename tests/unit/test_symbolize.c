/*
 * test_symbolize.c - what the symbolizer (analyzer/symbols/symbolize.c)
 * names from where, on this test program itself, which has DWARF: a pc in
 * a function of a plumbing name reserved to the implementation
 * (__libc_start_call_main, here a function of this file) is named from the
 * ELF symbol table alone, with no file or line, while a pc in any other
 * function is named from DWARF, file and line; the answer is the same
 * whichever was asked first, and whether or not the module was handed to
 * the thread that opens modules ahead. Such an answer is kept in the symbol
 * cache (this program's symbol table has DWARF beside it) and read back
 * from there. The program's own start_thread is not plumbing: it is named
 * from DWARF with what was inlined into it, while glibc's is. Which
 * names are plumbing in which module: the lists, with or without a symbol
 * version.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <pthread.h>
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analyzer/symbols/symbolize.h"
#include "analyzer/symbols/symcache.h"

/* Functions kept whole under their own names (gcc clones a function as
 * "name.constprop.0"; clang has no such attribute and does not). */
#ifdef __clang__
#define KEPT __attribute__((noinline))
#else
#define KEPT __attribute__((noinline, noclone))
#endif

/* The return address of the call to here(): a pc in its caller. */
static KEPT uintptr_t here(void)
{
    return (uintptr_t)__builtin_return_address(0);
}

static int ordinary_line;

static KEPT uintptr_t ordinary(void)
{
    ordinary_line = __LINE__ + 1;
    uintptr_t pc = here();
    __asm__ volatile("" ::: "memory"); /* no tail call: the pc stays in ordinary */
    return pc;
}

/* A function of this program with a plumbing name reserved to the
 * implementation (static: libc's own is not touched). */
static KEPT uintptr_t __libc_start_call_main(void)
{
    uintptr_t pc = here();
    __asm__ volatile("" ::: "memory");
    return pc;
}

static int inlined_line;

static inline __attribute__((always_inline)) uintptr_t inlined_step(void)
{
    inlined_line = __LINE__ + 1;
    uintptr_t pc = here();
    __asm__ volatile("" ::: "memory");
    return pc;
}

/* This program's own start_thread, a name glibc's thread start has too,
 * with a function inlined into it. */
static KEPT uintptr_t start_thread(void)
{
    uintptr_t pc = inlined_step();
    __asm__ volatile("" ::: "memory");
    return pc;
}

/* This program's load bias and GNU build id. */
struct self {
    uint64_t bias;
    uint8_t id[64];
    size_t id_len;
};

static int first_object(struct dl_phdr_info *info, size_t size, void *out)
{
    (void)size;
    struct self *me = out; /* the program's own object comes first */
    me->bias = info->dlpi_addr;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_NOTE)
            continue;
        const uint8_t *p = (const uint8_t *)(info->dlpi_addr + ph->p_vaddr), *end = p + ph->p_memsz;
        while (p + sizeof(ElfW(Nhdr)) <= end) {
            const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *)(const void *)p;
            const uint8_t *desc = p + sizeof *nh + ((nh->n_namesz + 3) & ~3u);
            if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 &&
                memcmp(p + sizeof *nh, "GNU", 4) == 0 && nh->n_descsz <= sizeof me->id) {
                memcpy(me->id, desc, nh->n_descsz);
                me->id_len = nh->n_descsz;
            }
            p = desc + ((nh->n_descsz + 3) & ~3u);
        }
    }
    return 1;
}

static struct self me;

/* A symbolizer that knows this program as module 1 (with a symbol cache in
 * cache, unless NULL). */
static struct gs_symbolizer *program_cached(const char *cache)
{
    char path[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
    cr_assert_gt(n, 0, "readlink /proc/self/exe");
    path[n] = '\0';
    dl_iterate_phdr(first_object, &me);
    struct gs_symbolizer *s = gs_sym_new();
    cr_assert_not_null(s);
    if (cache)
        cr_assert_eq(gs_sym_use_cache(s, cache, 1), 0);
    cr_assert_eq(gs_sym_add_module(s, 1, path, me.bias, 0, UINT64_MAX, me.id, me.id_len), 0);
    return s;
}

static struct gs_symbolizer *program(void) { return program_cached(NULL); }

static void is_plumbing_answer(struct gs_symbolizer *s, uintptr_t pc)
{
    const struct gs_frame *f;
    int n = gs_sym_resolve(s, 1, pc, &f);
    cr_assert_eq(n, 1, "one frame for __libc_start_call_main's pc, not %d", n);
    cr_assert_str_eq(f[0].function, "__libc_start_call_main");
    cr_assert_null(f[0].file, "named from the symbol table: no file (%s)", f[0].file);
    cr_assert_eq(f[0].line, 0);
}

static void is_dwarf_answer(struct gs_symbolizer *s, uintptr_t pc)
{
    const struct gs_frame *f;
    int n = gs_sym_resolve(s, 1, pc, &f);
    cr_assert_geq(n, 1);
    cr_assert_str_eq(f[n - 1].function, "ordinary");
    cr_assert_not_null(f[n - 1].file, "named from DWARF: a file");
    const char *base = strrchr(f[n - 1].file, '/');
    cr_assert_str_eq(base ? base + 1 : f[n - 1].file, "test_symbolize.c");
    cr_assert_eq(f[n - 1].line, ordinary_line);
}

Test(symbolize, a_plumbing_function_is_named_from_the_symbol_table_alone)
{
    uintptr_t plumbing = __libc_start_call_main(), other = ordinary();
    struct gs_symbolizer *s = program();
    is_plumbing_answer(s, plumbing);
    is_dwarf_answer(s, other);
    gs_sym_free(s);

    s = program(); /* the other order: DWARF loaded first */
    is_dwarf_answer(s, other);
    is_plumbing_answer(s, plumbing);
    gs_sym_free(s);
}

Test(symbolize, the_same_when_the_module_was_opened_ahead)
{
    uintptr_t plumbing = __libc_start_call_main(), other = ordinary();
    for (int order = 0; order < 2; order++) {
        struct gs_symbolizer *s = program();
        /* a plumbing pc alone never asks for the DWARF: hand the next one too */
        cr_assert_eq(gs_sym_open_ahead(s, 1, plumbing), 0);
        cr_assert_eq(gs_sym_open_ahead(s, 1, plumbing), 0, "handed once, asked again");
        if (order)
            gs_sym_open_ahead(s, 1, other);
        is_plumbing_answer(s, plumbing);
        is_dwarf_answer(s, other);
        cr_assert_eq(gs_sym_open_ahead(s, 1, other), 1, "asked about: nothing to hand over");
        gs_sym_free(s);
    }
}

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

Test(symbolize, a_plumbing_answer_is_kept_in_the_symbol_cache)
{
    uintptr_t plumbing = __libc_start_call_main(), other = ordinary();
    const char *base = getenv("TMPDIR");
    char dir[256];
    snprintf(dir, sizeof dir, "%s/gs_symbolize_XXXXXX", base && *base ? base : "/tmp");
    cr_assert_not_null(mkdtemp(dir), "mkdtemp: %s", strerror(errno));
    struct gs_symbolizer *s = program_cached(dir);
    cr_assert_gt(me.id_len, 0, "this program has a build id");
    is_plumbing_answer(s, plumbing);
    is_dwarf_answer(s, other);
    gs_sym_free(s); /* writes the cache */

    struct gs_symcache *c = gs_symcache_load(dir, me.id, me.id_len);
    cr_assert_not_null(c, "the program's answers kept");
    const struct gs_symcache_entry *e = gs_symcache_find(c, plumbing - me.bias);
    cr_assert_not_null(e, "__libc_start_call_main's answer kept");
    cr_assert_eq(e->n, 1);
    cr_assert_str_eq(e->frames[0].function, "__libc_start_call_main");
    cr_assert_null(e->frames[0].file);
    cr_assert_not_null(gs_symcache_find(c, other - me.bias), "ordinary's answer kept");
    gs_symcache_free(c);

    s = program_cached(dir); /* answered from the cache: the same */
    is_plumbing_answer(s, plumbing);
    is_dwarf_answer(s, other);
    gs_sym_free(s);
    nftw(dir, remove_one, 16, FTW_DEPTH | FTW_PHYS);
}

Test(symbolize, the_program_s_own_start_thread_is_named_from_its_dwarf)
{
    uintptr_t pc = start_thread();
    struct gs_symbolizer *s = program();
    gs_sym_open_ahead(s, 1, pc); /* not plumbing here: its DWARF is loaded ahead */
    const struct gs_frame *f;
    int n = gs_sym_resolve(s, 1, pc, &f);
    cr_assert_eq(n, 2, "the inlined function and start_thread, not %d frames", n);
    cr_assert_str_eq(f[0].function, "inlined_step");
    cr_assert_eq(f[0].line, inlined_line);
    cr_assert_str_eq(f[1].function, "start_thread");
    cr_assert_not_null(f[1].file, "named from DWARF: a file");
    gs_sym_free(s);
}

/* A loaded object, found by its file name: its path, load bias and build id. */
struct object {
    const char *base; /* the file name looked for */
    char path[PATH_MAX];
    struct self at;
};

static int find_object(struct dl_phdr_info *info, size_t size, void *out)
{
    struct object *o = out;
    const char *slash = strrchr(info->dlpi_name, '/');
    if (strcmp(slash ? slash + 1 : info->dlpi_name, o->base) != 0)
        return 0;
    snprintf(o->path, sizeof o->path, "%s", info->dlpi_name);
    first_object(info, size, &o->at);
    return 1;
}

/* A thread's function: the return address it is given, in the function
 * that started the thread (glibc's start_thread). */
static void *thread_main(void *out)
{
    *(uintptr_t *)out = (uintptr_t)__builtin_return_address(0);
    __asm__ volatile("" ::: "memory");
    return NULL;
}

Test(symbolize, glibc_s_start_thread_is_plumbing)
{
    uintptr_t pc = 0;
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, thread_main, &pc), 0);
    cr_assert_eq(pthread_join(t, NULL), 0);
    Dl_info where;
    cr_assert(dladdr((void *)pc, &where) && where.dli_fname, "the thread's start is in a library");
    const char *slash = strrchr(where.dli_fname, '/');
    struct object lib = {.base = slash ? slash + 1 : where.dli_fname};
    cr_assert(dl_iterate_phdr(find_object, &lib), "%s is loaded", lib.base);
    struct gs_symbolizer *s = gs_sym_new();
    cr_assert_not_null(s);
    cr_assert_eq(
        gs_sym_add_module(s, 2, lib.path, lib.at.bias, 0, UINT64_MAX, lib.at.id, lib.at.id_len), 0);
    const struct gs_frame *f;
    int n = gs_sym_resolve(s, 2, pc, &f);
    cr_assert_eq(n, 1, "one frame for a pc in start_thread, not %d", n);
    cr_assert_str_eq(f[0].function, "start_thread", "in %s", lib.path);
    /* with libc6-dbg installed, its DWARF would have named a file */
    cr_assert_null(f[0].file, "named from the symbol table: no file (%s)", f[0].file);
    gs_sym_free(s);
}

Test(symbolize, which_names_are_plumbing_in_which_module)
{
    static const char *const reserved[] = {"_start", "__libc_start_main",
                                           "__libc_start_main_impl", "__libc_start_call_main",
                                           "__clone", "__clone3",
                                           "__libc_start_main@@GLIBC_2.34"};
    static const char *const glibc[] = {"start_thread", "clone", "clone3", "clone@GLIBC_2.2.5"};
    static const char *const no[] = {"", "main", "start_threads", "start_thread_", "_start_",
                                     "clone4", "@clone", "__libc_start", "pthread_create"};
    static const char *const glibc_paths[] = {"/lib/x86_64-linux-gnu/libc.so.6", "libc.so.6",
                                              "/lib64/libc-2.31.so",
                                              "/lib/x86_64-linux-gnu/libpthread.so.0",
                                              "/usr/lib/libpthread-2.28.so"};
    static const char *const other_paths[] = {"/usr/bin/python3.12", "/opt/app/train",
                                              "/usr/lib/x86_64-linux-gnu/libcudart.so.13",
                                              "/usr/lib/libcuda.so.1", "/x/libc_extra.so",
                                              "/x/libc.so.6/train", "", NULL};
    for (size_t p = 0; p < sizeof glibc_paths / sizeof glibc_paths[0]; p++) {
        for (size_t i = 0; i < sizeof reserved / sizeof reserved[0]; i++)
            cr_assert(gs_sym_plumbing(reserved[i], glibc_paths[p]), "%s in %s", reserved[i],
                      glibc_paths[p]);
        for (size_t i = 0; i < sizeof glibc / sizeof glibc[0]; i++)
            cr_assert(gs_sym_plumbing(glibc[i], glibc_paths[p]), "%s in %s", glibc[i],
                      glibc_paths[p]);
        for (size_t i = 0; i < sizeof no / sizeof no[0]; i++)
            cr_assert(!gs_sym_plumbing(no[i], glibc_paths[p]), "not %s in %s", no[i],
                      glibc_paths[p]);
        cr_assert(!gs_sym_plumbing(NULL, glibc_paths[p]));
    }
    for (size_t p = 0; p < sizeof other_paths / sizeof other_paths[0]; p++) {
        const char *path = other_paths[p];
        for (size_t i = 0; i < sizeof reserved / sizeof reserved[0]; i++)
            cr_assert(gs_sym_plumbing(reserved[i], path), "%s in %s", reserved[i], path);
        for (size_t i = 0; i < sizeof glibc / sizeof glibc[0]; i++)
            cr_assert(!gs_sym_plumbing(glibc[i], path), "not %s in %s", glibc[i], path);
        for (size_t i = 0; i < sizeof no / sizeof no[0]; i++)
            cr_assert(!gs_sym_plumbing(no[i], path), "not %s in %s", no[i], path);
    }
}
