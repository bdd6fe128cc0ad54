/*
 * symbolize.c - owns the symbolizer: the registered modules, their libdwfl
 * sessions, the (module, pc) answer cache and the interned strings.
 *
 * Design:
 * - Each module gets its own offline Dwfl, opened on first use. One session
 *   per module keeps modules independent: ranges recorded over a process's
 *   life may overlap (dlclose, then dlopen at the same address), which one
 *   shared Dwfl address space would reject or confuse, and a bad file cannot
 *   affect the others. Every lookup goes to that module's Dwfl_Module, never
 *   through an address-to-module search.
 * - The file is reported with dwfl_report_elf(..., base = bias, add_p_vaddr =
 *   true): libdwfl then maps file vaddr V to bias + V, as the recording
 *   process did, so runtime addresses are used unchanged. (With add_p_vaddr
 *   false, base would instead be the address of the first PT_LOAD, which
 *   differs when that segment's p_vaddr is not 0; ET_EXEC ignores base.)
 *   Separate debug files are found by dwfl_standard_find_debuginfo (build
 *   id, .gnu_debuglink; debuginfod too when DEBUGINFOD_URLS is set).
 * - A recorded build id that differs from the file's makes the module
 *   unusable: nothing from the wrong file is returned. A module whose file
 *   is not at its path, or is another build, is looked for in the folders
 *   gs_sym_search names (a sysroot, a folder of copies, .build-id/), then
 *   asked of debuginfod by build id (DEBUGINFOD_URLS), and taken only with
 *   the recorded build id; each module keeps why it gave no names
 *   (gs_sym_unnamed).
 * - Frames come from the DIE chain around pc (dwarf_getscopes for the
 *   innermost scope, dwarf_getscopes_die for all its parents): the innermost
 *   frame takes its line from the line table, every outer frame takes its
 *   line from the call site (DW_AT_call_file/line) of the inlined subroutine
 *   just inside it. Without DWARF the ELF symbol table names the function.
 * - Two lookups libdwfl 0.188 does poorly are done here from sorted address
 *   indexes built once per module on first need: the CU for an address when
 *   there is no .debug_aranges (clang), and the ELF symbol for an address.
 * - Three open-addressing tables (modules by id, answers by (module, pc),
 *   strings) share one small implementation. Answers are allocated one per
 *   entry, so arrays handed out never move.
 * - Opening a module's debug information can cost more than reading the
 *   whole trace (its sections are often compressed: libc's separate debug
 *   file takes 60 ms here, a framework's seconds). So a module a stack
 *   names (gs_sym_open_ahead) is opened, its DWARF loaded, by a thread of
 *   the symbolizer's own while the trace is still being read; the first
 *   question about any module waits for that thread to finish (settle).
 *   Each module is a Dwfl of its own, and until then only that thread uses
 *   libdw.
 * - Program entry and thread start (gs_sym_plumbing: _start,
 *   __libc_start_call_main, glibc's start_thread and clone3...) are in
 *   every stack and in no report. A pc whose ELF symbol is one of them is
 *   named from the symbol table alone, and a module's DWARF is loaded only
 *   for a pc that is not: libc's, whose frames in GPU stacks are mostly
 *   those, is then never inflated. (The symbol index is built first for
 *   every module asked about; it is small beside DWARF.)
 * - With a cache folder (gs_sym_use_cache), a module with a build id first
 *   looks in its file there (symcache.c), by offset in the module: an
 *   address found there is answered without opening the module, and one
 *   that is not opens it as before. At the end (gs_sym_free) a module that
 *   answered from its DWARF, opened from the file of its recorded build id,
 *   has its file written again with what it had and what it found. Answers
 *   from a symbol table alone are not kept: debug information installed
 *   later must not be hidden by them.
 */
#include "analyzer/symbols/symbolize.h"
#include "analyzer/symbols/spans.h"
#include "analyzer/symbols/symcache.h"
#include "analyzer/util/text.h"

#include <dlfcn.h>
#include <errno.h>
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <gelf.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- open-addressing table of pointers ---------------------------------- */

struct table {
    void **slot; /* NULL = empty; cap is 0 or a power of two */
    size_t cap, used;
};

typedef uint64_t (*hash_fn)(const void *item);
typedef int (*eq_fn)(const void *item, const void *key);

static uint64_t mix64(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* The slot holding the item equal to key, or the empty slot where it goes. */
static void **tab_slot(const struct table *t, uint64_t h, eq_fn eq, const void *key)
{
    size_t mask = t->cap - 1;
    for (size_t i = h & mask;; i = (i + 1) & mask)
        if (t->slot[i] == NULL || eq(t->slot[i], key))
            return &t->slot[i];
}

static void *tab_find(const struct table *t, uint64_t h, eq_fn eq, const void *key)
{
    return t->cap ? *tab_slot(t, h, eq, key) : NULL;
}

static int tab_grow(struct table *t, hash_fn hash)
{
    size_t cap = t->cap ? t->cap * 2 : 64;
    void **slot = calloc(cap, sizeof *slot);
    if (slot == NULL)
        return -1;
    for (size_t i = 0; i < t->cap; i++) {
        if (t->slot[i] == NULL)
            continue;
        size_t j = hash(t->slot[i]) & (cap - 1);
        while (slot[j] != NULL)
            j = (j + 1) & (cap - 1);
        slot[j] = t->slot[i];
    }
    free(t->slot);
    t->slot = slot;
    t->cap = cap;
    return 0;
}

/* Adds item, which must not be present yet. */
static int tab_add(struct table *t, void *item, hash_fn hash, eq_fn eq, const void *key)
{
    if ((t->used + 1) * 4 > t->cap * 3 && tab_grow(t, hash) != 0)
        return -1;
    *tab_slot(t, hash(item), eq, key) = item;
    t->used++;
    return 0;
}

static void tab_free(struct table *t, void (*free_item)(void *))
{
    for (size_t i = 0; i < t->cap; i++)
        if (t->slot[i] != NULL)
            free_item(t->slot[i]);
    free(t->slot);
}

/* ---- types --------------------------------------------------------------- */

enum mod_state { MOD_UNOPENED, MOD_OPEN, MOD_UNUSABLE };

/* pcs of one module handed to the thread at most: a module whose DWARF no
 * stack needs (libc's) has a handful; past this many the module is opened
 * when first asked about. */
#define AHEAD_PCS 8

struct module {
    uint32_t id;
    char *path;
    char *found; /* where its file was found, when not at path (gs_sym_search) */
    enum gs_sym_why why; /* why it gives no names (GS_SYM_NAMED: it may) */
    unsigned unnamed;    /* addresses shown that it named no function for */
    uint64_t bias, lo, span;
    uint8_t *build_id;
    size_t build_id_len;
    enum mod_state state;
    int status; /* gs_sym_module_status's answer, once opened */
    /* gs_sym_open_ahead's (the caller's thread): the pcs handed to the
     * thread, which loads the DWARF for the first one that is not plumbing
     * and then sets dwarf_ahead (atomic) */
    uint64_t handed[AHEAD_PCS];
    unsigned nhanded;
    int dwarf_ahead;
    Dwfl *dwfl;
    Dwfl_Module *dmod;
    struct gs_span_index cus;  /* see cu_index_build */
    struct gs_span_index syms; /* see sym_index_build */
    int dwarf;              /* opened, with DWARF (set when first asked about) */
    int syms_debug;         /* its symbol table is in a file with DWARF (sym_index_build) */
    struct stat st;            /* the file it was opened from (open_module) */
    int have_st;
    struct gs_symcache *cache; /* its file in the cache folder, once read and trusted */
    int cache_read;         /* that file was looked for */
    int from_cache;         /* some answer came from it */
    unsigned fresh;         /* answers found in its DWARF, for the cache */
};

struct answer {
    uint32_t module_id;
    uint64_t pc;
    int fresh; /* found in the module's DWARF: to keep in the cache */
    int shown; /* counted in its module's unnamed (gs_sym_shown) */
    int n;
    struct gs_frame frame[];
};

struct answer_key {
    uint32_t module_id;
    uint64_t pc;
};

/* The modules registered while the symbolizer's thread may open them. */
struct ahead_pc {
    struct module *m;
    uint64_t pc;
};
struct ahead {
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    struct ahead_pc *queue; /* to open, in order; [next, n) still to come */
    size_t n, cap, next;
    int state;   /* AHEAD_NONE, AHEAD_RUNNING, AHEAD_SETTLED */
    int closing; /* nothing more will come: open the rest and end */
    int abandon; /* end at once (the symbolizer is freed) */
};
enum { AHEAD_NONE, AHEAD_RUNNING, AHEAD_SETTLED };

struct gs_symbolizer {
    struct table modules; /* struct module *, by id */
    struct table answers; /* struct answer *, by (module id, pc) */
    struct table strings; /* char *, interned */
    struct gs_frame scratch; /* the answer when allocation fails */
    struct ahead ahead;
    char *cache_dir;  /* the symbol cache's folder, or NULL for none */
    int cache_chosen; /* the user named it: say when it cannot be written */
};

static void open_soon(struct gs_symbolizer *s, struct module *m, uint64_t pc);
static int plumbing_pc(struct module *m, Dwarf_Addr addr);
static void settle(struct gs_symbolizer *s, int abandon);
static void save_caches(struct gs_symbolizer *s);

/* ---- the three tables' keys ---------------------------------------------- */

static uint64_t module_hash(const void *item)
{
    return mix64(((const struct module *)item)->id);
}

static int module_eq(const void *item, const void *key)
{
    return ((const struct module *)item)->id == *(const uint32_t *)key;
}

static uint64_t answer_key_hash(uint32_t module_id, uint64_t pc)
{
    return mix64(pc ^ mix64(module_id));
}

static uint64_t answer_hash(const void *item)
{
    const struct answer *a = item;
    return answer_key_hash(a->module_id, a->pc);
}

static int answer_eq(const void *item, const void *key)
{
    const struct answer *a = item;
    const struct answer_key *k = key;
    return a->module_id == k->module_id && a->pc == k->pc;
}

static uint64_t string_key_hash(const char *str)
{
    uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a */
    for (const unsigned char *p = (const unsigned char *)str; *p; p++)
        h = (h ^ *p) * 0x100000001b3ull;
    return h;
}

static uint64_t string_hash(const void *item)
{
    return string_key_hash(item);
}

static int string_eq(const void *item, const void *key)
{
    return strcmp(item, key) == 0;
}

/* A copy of str owned by s, shared by equal strings; NULL when str is NULL
 * or memory ran out (the caller then simply knows less). Every name a
 * module gives (its symbol table's, its DWARF's, the symbol cache's) comes
 * through here, and is as untrusted as the trace: its control bytes are
 * made '?', as gs_text_copy makes a trace's text, so that none reaches a
 * terminal (a title set, a report line forged) or an export. */
static const char *intern(struct gs_symbolizer *s, const char *str)
{
    if (str == NULL)
        return NULL;
    char *clean = NULL;
    for (const unsigned char *p = (const unsigned char *)str; *p; p++)
        if (*p < 0x20 || *p == 0x7f) {
            if ((clean = strdup(str)) == NULL)
                return NULL;
            gs_text_copy(clean, strlen(clean) + 1, str, strlen(str));
            str = clean;
            break;
        }
    uint64_t h = string_key_hash(str);
    char *found = tab_find(&s->strings, h, string_eq, str);
    if (found != NULL) {
        free(clean);
        return found;
    }
    char *copy = clean ? clean : strdup(str);
    if (copy == NULL || tab_add(&s->strings, copy, string_hash, string_eq, copy) != 0) {
        free(copy);
        return NULL;
    }
    return copy;
}

/* A function's name as people read it: a C++ linkage name ("_Z...")
 * demangled by the C++ runtime's own demangler (__cxa_demangle, from
 * libstdc++, opened on the first such name so that a trace of C code never
 * loads it), interned; any other name, or one it cannot demangle, as it is. */
typedef char *(*demangle_fn)(const char *mangled, char *buf, size_t *len, int *status);

static demangle_fn demangle_found;

static void open_demangler(void)
{
    void *h = dlopen("libstdc++.so.6", RTLD_NOW | RTLD_LOCAL);
    if (h != NULL)
        demangle_found = (demangle_fn)dlsym(h, "__cxa_demangle"); /* kept open */
}

static demangle_fn demangler(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, open_demangler);
    return demangle_found;
}

static const char *intern_function(struct gs_symbolizer *s, const char *name)
{
    demangle_fn demangle;
    if (name == NULL || strncmp(name, "_Z", 2) != 0 || (demangle = demangler()) == NULL)
        return intern(s, name);
    int status = -1;
    char *plain = demangle(name, NULL, NULL, &status);
    const char *out = intern(s, status == 0 && plain != NULL ? plain : name);
    free(plain);
    return out;
}

/* ---- lifetime ------------------------------------------------------------- */

struct gs_symbolizer *gs_sym_new(void)
{
    return calloc(1, sizeof(struct gs_symbolizer));
}

static void module_free(void *item)
{
    struct module *m = item;
    if (m->dwfl != NULL)
        dwfl_end(m->dwfl);
    gs_symcache_free(m->cache);
    free(m->path);
    free(m->found);
    free(m->build_id);
    free(m->cus.v);
    free(m->syms.v);
    free(m);
}

void gs_sym_free(struct gs_symbolizer *s)
{
    if (s == NULL)
        return;
    settle(s, 1);
    save_caches(s);
    free(s->cache_dir);
    tab_free(&s->modules, module_free);
    tab_free(&s->answers, free);
    tab_free(&s->strings, free);
    free(s);
}

static struct module *find_module(const struct gs_symbolizer *s, uint32_t id)
{
    return tab_find(&s->modules, mix64(id), module_eq, &id);
}

int gs_sym_add_module(struct gs_symbolizer *s, uint32_t id, const char *path, uint64_t bias,
                      uint64_t lo, uint64_t span, const uint8_t *build_id,
                      size_t build_id_len)
{
    if (s == NULL || path == NULL || (build_id == NULL && build_id_len != 0))
        return -1;
    if (find_module(s, id) != NULL)
        return -1;
    struct module *m = calloc(1, sizeof *m);
    if (m == NULL)
        return -1;
    *m = (struct module){.id = id, .bias = bias, .lo = lo, .span = span};
    m->path = strdup(path);
    m->build_id = build_id_len ? malloc(build_id_len) : NULL;
    m->build_id_len = build_id_len;
    if (m->path == NULL || (build_id_len && m->build_id == NULL) ||
        tab_add(&s->modules, m, module_hash, module_eq, &id) != 0) {
        module_free(m);
        return -1;
    }
    if (build_id_len)
        memcpy(m->build_id, build_id, build_id_len);
    return 0;
}

int gs_sym_use_cache(struct gs_symbolizer *s, const char *dir, int chosen)
{
    if (s == NULL || dir == NULL || dir[0] == '\0')
        return -1;
    free(s->cache_dir);
    s->cache_dir = strdup(dir);
    s->cache_chosen = chosen;
    return s->cache_dir ? 0 : -1;
}

/* Where a file is looked for when it is not at its path, or is another
 * build (gs_sym_search): for the process, as the command line says. */
#define SEARCH_DIRS 8
static char *search_dirs[SEARCH_DIRS];
static size_t nsearch;

/* The cache's answer for pc in m, or NULL. */
static const struct gs_symcache_entry *cached(struct gs_symbolizer *s, struct module *m,
                                              uint64_t pc)
{
    if (s->cache_dir == NULL || m->build_id_len == 0 || m->path[0] == '\0')
        return NULL;
    if (!m->cache_read) {
        m->cache_read = 1;
        m->cache = gs_symcache_load(s->cache_dir, m->build_id, m->build_id_len);
        if (!gs_symcache_trusted(m->cache, m->path, search_dirs, nsearch)) {
            gs_symcache_free(m->cache); /* another file's: read as if absent, then replaced */
            m->cache = NULL;
        }
    }
    return gs_symcache_find(m->cache, pc - m->bias);
}

int gs_sym_open_ahead(struct gs_symbolizer *s, uint32_t module_id, uint64_t pc)
{
    struct module *m = s ? find_module(s, module_id) : NULL;
    if (m == NULL || m->path[0] == '\0' || s->ahead.state == AHEAD_SETTLED ||
        __atomic_load_n(&m->dwarf_ahead, __ATOMIC_ACQUIRE))
        return 1; /* nothing to do for its next pcs either */
    if (cached(s, m, pc))
        return 0;
    for (unsigned i = 0; i < m->nhanded; i++)
        if (m->handed[i] == pc)
            return 0;
    if (m->nhanded == AHEAD_PCS)
        return 1;
    m->handed[m->nhanded++] = pc;
    open_soon(s, m, pc);
    return 0;
}

/* ---- opening a module ----------------------------------------------------- */

/* libdwfl's search path for separate debug files (NULL: its default), with
 * the search folders after the default's. */
static char *debuginfo_path;

static const Dwfl_Callbacks offline_callbacks = {
    .find_elf = dwfl_build_id_find_elf,
    .find_debuginfo = dwfl_standard_find_debuginfo,
    .section_address = dwfl_offline_section_address,
    .debuginfo_path = &debuginfo_path,
};

int gs_sym_search(const char *dir, char *err, size_t errsz)
{
    struct stat st;
    char *real = dir ? realpath(dir, NULL) : NULL;
    if (!real || stat(real, &st) != 0 || !S_ISDIR(st.st_mode)) {
        snprintf(err, errsz, "'%s' is not a folder", dir ? dir : "");
        free(real);
        return -1;
    }
    if (nsearch == SEARCH_DIRS) {
        snprintf(err, errsz, "at most %d folders", SEARCH_DIRS);
        free(real);
        return -1;
    }
    size_t len = strlen(":.debug:/usr/lib/debug") + 1;
    for (size_t i = 0; i < nsearch; i++)
        len += strlen(search_dirs[i]) + 1;
    char *path = malloc(len + strlen(real) + 1);
    if (!path) {
        snprintf(err, errsz, "out of memory");
        free(real);
        return -1;
    }
    search_dirs[nsearch++] = real;
    strcpy(path, ":.debug:/usr/lib/debug");
    for (size_t i = 0; i < nsearch; i++)
        strcat(strcat(path, ":"), search_dirs[i]);
    free(debuginfo_path);
    debuginfo_path = path;
    return 0;
}

int gs_sym_search_option(const char *cmd, const char *dir)
{
    char err[160];
    if (gs_sym_search(dir, err, sizeof err) == 0)
        return 0;
    fprintf(stderr, "gpushim %s: --symbols %s: %s\n", cmd, dir, err);
    return -1;
}

/* Compares the recorded build id with the file's: 1, 0 or -1 as in
 * gs_sym_module_status. */
static int check_build_id(const struct module *m)
{
    const unsigned char *bits;
    GElf_Addr vaddr;
    int len = dwfl_module_build_id(m->dmod, &bits, &vaddr);
    if (m->build_id_len == 0 || len <= 0)
        return 0;
    if ((size_t)len != m->build_id_len || memcmp(bits, m->build_id, m->build_id_len) != 0)
        return -1;
    return 1;
}

/* Reports the file at file (the module's path, or where it was found) at
 * the recorded bias into a fresh Dwfl of its own. Only regular files are
 * opened: a FIFO would block, a directory is not ELF. */
static enum gs_sym_why report_file(struct module *m, const char *file)
{
    struct stat st;
    if (stat(file, &st) != 0 || !S_ISREG(st.st_mode))
        return GS_SYM_NOT_FOUND;
    m->dwfl = dwfl_begin(&offline_callbacks);
    if (m->dwfl == NULL)
        return GS_SYM_NOT_ELF;
    dwfl_report_begin(m->dwfl);
    m->dmod = dwfl_report_elf(m->dwfl, m->path, file, -1, m->bias, true);
    dwfl_report_end(m->dwfl, NULL, NULL);
    return m->dmod != NULL ? GS_SYM_NAMED : GS_SYM_NOT_ELF;
}

/* The module's file at file, its build id checked: GS_SYM_NAMED and the
 * module open, or why not (and nothing open). */
static enum gs_sym_why try_file(struct module *m, const char *file)
{
    enum gs_sym_why why = report_file(m, file);
    if (why == GS_SYM_NAMED) {
        m->status = check_build_id(m);
        if (m->status >= 0)
            return GS_SYM_NAMED;
        why = GS_SYM_REBUILT;
    }
    if (m->dwfl != NULL)
        dwfl_end(m->dwfl);
    m->dwfl = NULL;
    m->dmod = NULL;
    return why;
}

/* a, b and c in one string (caller frees); NULL on no memory. */
static char *join3(const char *a, const char *b, const char *c)
{
    size_t n = strlen(a) + strlen(b) + strlen(c) + 1;
    char *s = malloc(n);
    if (s)
        snprintf(s, n, "%s%s%s", a, b, c);
    return s;
}

/* The places folder dir may hold the module's file: as under a sysroot,
 * by its file name, by its build id (.build-id/ab/cdef...); NULL past the
 * last (k counts from 0). Caller frees. */
static char *candidate(const struct module *m, const char *dir, int k)
{
    const char *base = strrchr(m->path, '/');
    char hex[2 * 64 + 1], tail[2 * 64 + 16];
    switch (k) {
    case 0: return join3(dir, m->path[0] == '/' ? "" : "/", m->path);
    case 1: return join3(dir, "/", base ? base + 1 : m->path);
    case 2:
        if (m->build_id_len < 2 || m->build_id_len > 64)
            return NULL;
        for (size_t i = 0; i < m->build_id_len; i++)
            snprintf(hex + 2 * i, 3, "%02x", m->build_id[i]);
        snprintf(tail, sizeof tail, ".build-id/%.2s/%s", hex, hex + 2);
        return join3(dir, "/", tail);
    default: return NULL;
    }
}

/* debuginfod's client (libdebuginfod.so.1, opened when first needed, as
 * libdw opens it for debug files): the module's own file by build id,
 * downloaded into its cache, when DEBUGINFOD_URLS names a server. The
 * path (the cache's copy; caller frees), or NULL. */
struct debuginfod_client;
static char *fetch_executable(const struct module *m)
{
    static int tried;
    static struct debuginfod_client *(*begin)(void);
    static int (*find)(struct debuginfod_client *, const unsigned char *, int, char **);
    static void (*end)(struct debuginfod_client *);
    const char *urls = getenv("DEBUGINFOD_URLS");
    if (!urls || !*urls || !m->build_id_len)
        return NULL;
    if (!tried) { /* (one thread at a time opens modules: see the top) */
        tried = 1;
        void *lib = dlopen("libdebuginfod.so.1", RTLD_LAZY);
        if (lib) {
            *(void **)&begin = dlsym(lib, "debuginfod_begin");
            *(void **)&find = dlsym(lib, "debuginfod_find_executable");
            *(void **)&end = dlsym(lib, "debuginfod_end");
        }
    }
    struct debuginfod_client *c = begin && find && end ? begin() : NULL;
    if (!c)
        return NULL;
    char *path = NULL;
    int fd = find(c, m->build_id, (int)m->build_id_len, &path);
    end(c);
    if (fd < 0) {
        free(path);
        return NULL;
    }
    close(fd);
    return path;
}

static void open_module(struct module *m)
{
    if (m->state != MOD_UNOPENED)
        return;
    m->state = MOD_UNUSABLE;
    m->status = 0;
    if (m->path[0] == '\0')
        return;
    m->why = try_file(m, m->path);
    /* not there, or another build: a copy in the search folders, with the
     * recorded build id (one without is only taken at its own path) */
    for (size_t d = 0; m->why != GS_SYM_NAMED && m->build_id_len && d < nsearch; d++)
        for (int k = 0; k < 3 && m->why != GS_SYM_NAMED; k++) {
            char *c = candidate(m, search_dirs[d], k);
            if (c && try_file(m, c) == GS_SYM_NAMED && m->status == 1) {
                m->why = GS_SYM_NAMED;
                m->found = c;
                c = NULL;
            } else if (m->dwfl != NULL) {
                dwfl_end(m->dwfl); /* (opened without a build id to compare) */
                m->dwfl = NULL;
                m->dmod = NULL;
            }
            free(c);
        }
    char *fetched = m->why != GS_SYM_NAMED ? fetch_executable(m) : NULL;
    if (fetched && try_file(m, fetched) == GS_SYM_NAMED && m->status == 1) {
        m->why = GS_SYM_NAMED;
        m->found = fetched;
    } else if (fetched) {
        free(fetched);
        if (m->dwfl != NULL) { /* (another build, served by mistake) */
            dwfl_end(m->dwfl);
            m->dwfl = NULL;
            m->dmod = NULL;
        }
    }
    if (m->why == GS_SYM_NAMED) {
        m->state = MOD_OPEN;
        m->have_st = stat(m->found ? m->found : m->path, &m->st) == 0;
    } else
        m->status = -1;
}

/* ---- opening modules ahead (see the top) ---------------------------------- */

static void *open_ahead(void *arg)
{
    struct ahead *a = arg;
    for (;;) {
        pthread_mutex_lock(&a->lock);
        while (a->next == a->n && !a->closing && !a->abandon)
            pthread_cond_wait(&a->cond, &a->lock);
        struct ahead_pc next = {NULL, 0};
        if (a->next < a->n && !a->abandon)
            next = a->queue[a->next++];
        pthread_mutex_unlock(&a->lock);
        struct module *m = next.m;
        if (m == NULL)
            return NULL;
        open_module(m);
        Dwarf_Addr bias;
        if (m->state == MOD_OPEN && !__atomic_load_n(&m->dwarf_ahead, __ATOMIC_RELAXED) &&
            next.pc != 0 && !plumbing_pc(m, next.pc - 1)) {
            (void)dwfl_module_getdwarf(m->dmod, &bias); /* the costly part, if any */
            __atomic_store_n(&m->dwarf_ahead, 1, __ATOMIC_RELEASE);
        }
    }
}

/* Hands m and a pc in it to the thread, started on the first one; without
 * a thread (none could start, or it has settled) m is opened when first
 * asked about. */
static void open_soon(struct gs_symbolizer *s, struct module *m, uint64_t pc)
{
    struct ahead *a = &s->ahead;
    if (a->state == AHEAD_SETTLED || m->path[0] == '\0')
        return;
    if (a->state == AHEAD_NONE) {
        a->state = AHEAD_SETTLED; /* unless all below works */
        if (pthread_mutex_init(&a->lock, NULL) != 0)
            return;
        if (pthread_cond_init(&a->cond, NULL) != 0) {
            pthread_mutex_destroy(&a->lock);
            return;
        }
        sigset_t all, old; /* signals (SIGINT, SIGPIPE) are the main thread's to take */
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old);
        int started = pthread_create(&a->thread, NULL, open_ahead, a) == 0;
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        if (!started) {
            pthread_cond_destroy(&a->cond);
            pthread_mutex_destroy(&a->lock);
            return;
        }
        a->state = AHEAD_RUNNING;
    }
    pthread_mutex_lock(&a->lock);
    if (a->n == a->cap) {
        size_t cap = a->cap ? a->cap * 2 : 16;
        struct ahead_pc *q = realloc(a->queue, cap * sizeof *q);
        if (q == NULL) { /* opened when first asked about */
            pthread_mutex_unlock(&a->lock);
            return;
        }
        a->queue = q;
        a->cap = cap;
    }
    a->queue[a->n++] = (struct ahead_pc){m, pc};
    pthread_cond_signal(&a->cond);
    pthread_mutex_unlock(&a->lock);
}

/* Ends the thread: after the modules handed to it are open, or at once
 * (abandon). From then on the symbolizer is this thread's alone. */
static void settle(struct gs_symbolizer *s, int abandon)
{
    struct ahead *a = &s->ahead;
    if (a->state == AHEAD_RUNNING) {
        pthread_mutex_lock(&a->lock);
        a->closing = 1;
        a->abandon = abandon;
        pthread_cond_signal(&a->cond);
        pthread_mutex_unlock(&a->lock);
        pthread_join(a->thread, NULL);
        pthread_cond_destroy(&a->cond);
        pthread_mutex_destroy(&a->lock);
    }
    a->state = AHEAD_SETTLED;
    free(a->queue);
    a->queue = NULL;
    a->n = a->cap = a->next = 0;
}

int gs_sym_module_status(struct gs_symbolizer *s, uint32_t module_id)
{
    if (s)
        settle(s, 0);
    struct module *m = s ? find_module(s, module_id) : NULL;
    if (m == NULL)
        return -1;
    open_module(m);
    return m->status;
}

/* ---- finding the CU ------------------------------------------------------- */

/* libdwfl finds CUs through .debug_aranges only (elfutils 0.188), which
 * clang does not emit by default. When it finds none, this index of every
 * CU's address ranges is searched instead. */
static void cu_index_build(struct module *m)
{
    Dwarf_Addr bias;
    Dwarf *dw = dwfl_module_getdwarf(m->dmod, &bias);
    Dwarf_CU *cu = NULL;
    Dwarf_Die cudie;
    uint8_t type;
    m->cus.built = 1;
    while (dw != NULL && dwarf_get_units(dw, cu, &cu, NULL, &type, &cudie, NULL) == 0) {
        if (type != DW_UT_compile && type != DW_UT_skeleton)
            continue;
        Dwarf_Addr base, lo, hi;
        ptrdiff_t off = 0;
        while ((off = dwarf_ranges(&cudie, off, &base, &lo, &hi)) > 0) {
            struct gs_span sp = {.lo = lo, .hi = hi, .u.cu = dwarf_dieoffset(&cudie)};
            if (lo < hi && gs_span_add(&m->cus, sp) != 0)
                goto done;
        }
    }
done:
    gs_span_finish(&m->cus);
}

static int cu_index_find(struct module *m, Dwarf_Addr addr, Dwarf_Die *cu, Dwarf_Addr *bias)
{
    if (!m->cus.built)
        cu_index_build(m);
    Dwarf *dw = dwfl_module_getdwarf(m->dmod, bias);
    const struct gs_span *sp = dw ? gs_span_find(&m->cus, addr - *bias) : NULL;
    return sp != NULL && dwarf_offdie(dw, sp->u.cu, cu) != NULL ? 0 : -1;
}

/* The CU covering runtime address addr, and the bias of its DWARF. */
static int find_cu(struct module *m, Dwarf_Addr addr, Dwarf_Die *cu, Dwarf_Addr *bias)
{
    Dwarf_Die *die = dwfl_module_addrdie(m->dmod, addr, bias);
    if (die != NULL) {
        *cu = *die;
        return 0;
    }
    return cu_index_find(m, addr, cu, bias);
}

/* ---- ELF symbols ---------------------------------------------------------- */

/* dwfl_module_addrname scans the whole symbol table on every call, too slow
 * for the large stripped libraries of GPU stacks; this sorted index of the
 * function symbols (global before weak before local at one address) is
 * searched instead. A symbol of size 0 reaches to the next one, or to the
 * end of its section. */

/* The runtime end address of section shndx of elf, or 0. */
static GElf_Addr section_end(Elf *elf, GElf_Word shndx, Dwarf_Addr bias)
{
    GElf_Shdr mem, *sh = elf ? gelf_getshdr(elf_getscn(elf, shndx), &mem) : NULL;
    return sh != NULL ? sh->sh_addr + sh->sh_size + bias : 0;
}

static void sym_index_add(struct module *m, int i)
{
    GElf_Sym sym;
    GElf_Addr addr;
    GElf_Word shndx;
    Elf *elf;
    Dwarf_Addr bias;
    const char *name = dwfl_module_getsym_info(m->dmod, i, &sym, &addr, &shndx, &elf, &bias);
    int type = GELF_ST_TYPE(sym.st_info), bind = GELF_ST_BIND(sym.st_info);
    if (name == NULL || name[0] == '\0' || sym.st_shndx == SHN_UNDEF ||
        shndx == (GElf_Word)-1 || (type != STT_FUNC && type != STT_GNU_IFUNC))
        return;
    struct gs_span sp = {.lo = addr, .hi = addr + sym.st_size, .u.name = name};
    if (sym.st_size == 0) {
        sp.hi = section_end(elf, shndx, bias);
        sp.open_end = 1;
    }
    sp.rank = bind == STB_GLOBAL ? 0 : bind == STB_WEAK ? 1 : 2;
    if (sp.hi > sp.lo)
        gs_span_add(&m->syms, sp);
}

/* Whether elf holds DWARF (a section .debug_info with its bytes). */
static int has_dwarf(Elf *elf)
{
    size_t shstrndx;
    if (elf == NULL || elf_getshdrstrndx(elf, &shstrndx) != 0)
        return 0;
    for (Elf_Scn *scn = elf_nextscn(elf, NULL); scn != NULL; scn = elf_nextscn(elf, scn)) {
        GElf_Shdr mem, *sh = gelf_getshdr(scn, &mem);
        const char *name = sh ? elf_strptr(elf, shstrndx, sh->sh_name) : NULL;
        if (name != NULL && strcmp(name, ".debug_info") == 0)
            return sh->sh_type != SHT_NOBITS;
    }
    return 0;
}

static void sym_index_build(struct module *m)
{
    int n = dwfl_module_getsymtab(m->dmod);
    m->syms.built = 1;
    for (int i = 1; i < n; i++)
        sym_index_add(m, i);
    GElf_Sym sym;
    Elf *elf = NULL;
    if (n > 1 && dwfl_module_getsym_info(m->dmod, 1, &sym, &(GElf_Addr){0}, &(GElf_Word){0}, &elf,
                                         &(Dwarf_Addr){0}) != NULL)
        m->syms_debug = has_dwarf(elf);
    gs_span_finish(&m->syms);
    for (size_t i = 0; i + 1 < m->syms.n; i++)
        if (m->syms.v[i].open_end && m->syms.v[i].hi > m->syms.v[i + 1].lo)
            m->syms.v[i].hi = m->syms.v[i + 1].lo;
}

/* The function symbol around runtime address addr, or NULL. */
static const char *symbol_name(struct module *m, Dwarf_Addr addr)
{
    if (!m->syms.built)
        sym_index_build(m);
    const struct gs_span *sp = gs_span_find(&m->syms, addr);
    return sp ? sp->u.name : NULL;
}

/* Whether path's file is glibc's libc or libpthread (start_thread's before
 * glibc 2.34): "libc.so.6", "libc-2.31.so", "libpthread.so.0"... */
static int glibc_threads_library(const char *path)
{
    static const char *const prefixes[] = {"libc.so.", "libc-", "libpthread.so.", "libpthread-"};
    if (path == NULL)
        return 0;
    const char *base = gs_basename(path);
    for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++)
        if (strncmp(base, prefixes[i], strlen(prefixes[i])) == 0)
            return 1;
    return 0;
}

/* Whether the first len bytes of function are one of the n names. */
static int named(const char *function, size_t len, const char *const *names, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (strlen(names[i]) == len && memcmp(function, names[i], len) == 0)
            return 1;
    return 0;
}

int gs_sym_plumbing(const char *function, const char *module_path)
{
    /* names reserved to the implementation (a leading underscore), then
     * names a program may give its own functions too */
    static const char *const reserved[] = {"_start", "__libc_start_main",
                                           "__libc_start_main_impl", "__libc_start_call_main",
                                           "__clone", "__clone3"};
    static const char *const glibc[] = {"start_thread", "clone", "clone3"};
    if (function == NULL)
        return 0;
    size_t len = strcspn(function, "@"); /* a versioned name: "__libc_start_main@@GLIBC_2.34" */
    return named(function, len, reserved, sizeof reserved / sizeof reserved[0]) ||
           (glibc_threads_library(module_path) &&
            named(function, len, glibc, sizeof glibc / sizeof glibc[0]));
}

/* Whether the function around addr (runtime) is plumbing, by its ELF symbol. */
static int plumbing_pc(struct module *m, Dwarf_Addr addr)
{
    return gs_sym_plumbing(symbol_name(m, addr), m->path);
}

/* ---- building frames ------------------------------------------------------ */

struct frames {
    struct gs_frame *f;
    int n, cap;
};

static struct gs_frame *push_frame(struct frames *fs)
{
    if (fs->n == fs->cap) {
        int cap = fs->cap ? fs->cap * 2 : 8;
        struct gs_frame *f = realloc(fs->f, (size_t)cap * sizeof *f);
        if (f == NULL)
            return NULL;
        fs->f = f;
        fs->cap = cap;
    }
    struct gs_frame *fr = &fs->f[fs->n++];
    memset(fr, 0, sizeof *fr);
    return fr;
}

static int is_function(Dwarf_Die *die)
{
    int tag = dwarf_tag(die);
    return tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine ||
           tag == DW_TAG_entry_point;
}

/* Linkage name if recorded, else DW_AT_name, following abstract_origin and
 * specification (an inlined or out-of-line instance names nothing itself). */
static const char *die_function_name(Dwarf_Die *die)
{
    static const int attrs[] = {DW_AT_linkage_name, DW_AT_MIPS_linkage_name, DW_AT_name};
    for (size_t i = 0; i < sizeof attrs / sizeof attrs[0]; i++) {
        Dwarf_Attribute mem;
        const char *name = dwarf_formstring(dwarf_attr_integrate(die, attrs[i], &mem));
        if (name != NULL)
            return name;
    }
    return NULL;
}

/* name, made absolute against the CU's compilation directory when
 * relative (clang's include directories are), interned. */
static const char *source_path(struct gs_symbolizer *s, Dwarf_Die *cu, const char *name)
{
    Dwarf_Attribute mem;
    const char *dir = NULL;
    if (name != NULL && name[0] != '/')
        dir = dwarf_formstring(dwarf_attr(cu, DW_AT_comp_dir, &mem));
    if (dir == NULL || dir[0] == '\0')
        return intern(s, name);
    while (name[0] == '.' && name[1] == '/')
        name += 2;
    size_t dlen = strlen(dir), len = dlen + strlen(name) + 2;
    char *path = malloc(len);
    if (path == NULL)
        return intern(s, name);
    snprintf(path, len, "%s%s%s", dir, dir[dlen - 1] == '/' ? "" : "/", name);
    const char *interned = intern(s, path);
    free(path);
    return interned;
}

/* The call site of an inlined subroutine: interned file name (or NULL) and
 * line. */
static const char *call_site(struct gs_symbolizer *s, Dwarf_Die *inl, int *line)
{
    Dwarf_Attribute mem;
    Dwarf_Word idx, ln;
    Dwarf_Die cu;
    Dwarf_Files *files;
    size_t nfiles;
    *line = 0;
    if (dwarf_formudata(dwarf_attr(inl, DW_AT_call_line, &mem), &ln) == 0 && ln <= INT32_MAX)
        *line = (int)ln;
    if (dwarf_formudata(dwarf_attr(inl, DW_AT_call_file, &mem), &idx) != 0 ||
        dwarf_diecu(inl, &cu, NULL, NULL) == NULL ||
        dwarf_getsrcfiles(&cu, &files, &nfiles) != 0 || idx >= nfiles)
        return NULL;
    const char *name = dwarf_filesrc(files, idx, NULL, NULL);
    if (name == NULL || strcmp(name, "???") == 0) /* "???": DWARF<5 index 0 */
        return NULL;
    return source_path(s, &cu, name);
}

/* The DIE chain from the innermost scope around addr (a DWARF address in
 * cu) out to its CU; the caller frees *chain. 0 when nothing covers addr. */
static int scope_chain(Dwarf_Die *cu, Dwarf_Addr addr, Dwarf_Die **chain)
{
    Dwarf_Die *scopes = NULL;
    *chain = NULL;
    if (dwarf_getscopes(cu, addr, &scopes) <= 0) {
        free(scopes);
        return 0;
    }
    /* dwarf_getscopes stops at the innermost inlined subroutine (continuing
     * with its abstract origin's scopes); the concrete callers come from
     * walking scopes[0]'s parents. */
    int n = dwarf_getscopes_die(&scopes[0], chain);
    free(scopes);
    if (n <= 0) {
        free(*chain);
        *chain = NULL;
        return 0;
    }
    return n;
}

static int next_function(Dwarf_Die *chain, int n, int from)
{
    while (from < n && !is_function(&chain[from]))
        from++;
    return from;
}

/* Frames for one address from its DIE chain: the innermost function, then
 * one frame per inlined subroutine boundary going out. */
static int frames_from_dwarf(struct gs_symbolizer *s, Dwarf_Die *chain, int n,
                             struct frames *fs)
{
    int cur = next_function(chain, n, 0);
    if (cur == n)
        return 0;
    struct gs_frame *fr = push_frame(fs);
    if (fr == NULL)
        return -1;
    fr->function = intern_function(s, die_function_name(&chain[cur]));
    while (dwarf_tag(&chain[cur]) == DW_TAG_inlined_subroutine) {
        int outer = next_function(chain, n, cur + 1);
        if (outer == n || (fr = push_frame(fs)) == NULL)
            break;
        fr->file = call_site(s, &chain[cur], &fr->line);
        fr->function = intern_function(s, die_function_name(&chain[outer]));
        cur = outer;
    }
    return 0;
}

/* Line table for the innermost frame. */
static void innermost_line(struct gs_symbolizer *s, Dwarf_Die *cu, Dwarf_Addr addr,
                           struct gs_frame *fr)
{
    Dwarf_Line *line = dwarf_getsrc_die(cu, addr);
    int lineno = 0;
    const char *file = line ? dwarf_linesrc(line, NULL, NULL) : NULL;
    if (file == NULL)
        return;
    fr->file = source_path(s, cu, file);
    fr->line = dwarf_lineno(line, &lineno) == 0 && lineno > 0 ? lineno : 0;
}

/* Frames from DWARF when a CU covers addr (a runtime address). */
static int dwarf_frames(struct gs_symbolizer *s, struct module *m, Dwarf_Addr addr,
                        struct frames *fs)
{
    Dwarf_Die cu;
    Dwarf_Addr bias;
    if (find_cu(m, addr, &cu, &bias) != 0)
        return 0;
    Dwarf_Die *chain;
    int n = scope_chain(&cu, addr - bias, &chain);
    int rc = n > 0 ? frames_from_dwarf(s, chain, n, fs) : 0;
    free(chain);
    if (rc != 0 || (fs->n == 0 && push_frame(fs) == NULL))
        return -1;
    innermost_line(s, &cu, addr - bias, &fs->f[0]);
    return 0;
}

/* Makes pc's frames in fs. Returns 1 when they came whole from a module
 * with DWARF, or are plumbing named by a symbol table that has DWARF beside
 * it (an answer for the symbol cache: its DWARF could name it no better
 * for a report), else 0. */
static int symbolize(struct gs_symbolizer *s, struct module *m, uint64_t pc,
                     struct frames *fs)
{
    open_module(m);
    if (m->state != MOD_OPEN || pc == 0)
        return 0;
    Dwarf_Addr addr = pc - 1, dwarf_bias;
    const char *name = symbol_name(m, addr);
    if (gs_sym_plumbing(name, m->path)) { /* (see the top) */
        struct gs_frame *fr = push_frame(fs);
        if (fr == NULL)
            return 0;
        fr->function = intern_function(s, name);
        return m->syms_debug;
    }
    if (!m->dwarf)
        m->dwarf = dwfl_module_getdwarf(m->dmod, &dwarf_bias) != NULL;
    if (dwarf_frames(s, m, addr, fs) != 0)
        return 0;
    if (fs->n == 0 && push_frame(fs) == NULL)
        return 0;
    struct gs_frame *outer = &fs->f[fs->n - 1];
    if (outer->function == NULL)
        outer->function = intern_function(s, name);
    return m->dwarf;
}

/* ---- answers -------------------------------------------------------------- */

/* Caches fs (at least one frame made up) and returns the cached answer, or
 * NULL when memory ran out. */
static struct answer *remember(struct gs_symbolizer *s, uint32_t module_id, uint64_t pc,
                               const struct module *m, const struct frames *fs)
{
    int n = fs->n ? fs->n : 1;
    struct answer *a = calloc(1, sizeof *a + (size_t)n * sizeof a->frame[0]);
    if (a == NULL)
        return NULL;
    a->module_id = module_id;
    a->pc = pc;
    a->n = n;
    if (fs->n)
        memcpy(a->frame, fs->f, (size_t)n * sizeof a->frame[0]);
    for (int i = 0; i < n; i++) {
        a->frame[i].module = m->path;
        a->frame[i].pc = pc;
    }
    struct answer_key key = {module_id, pc};
    if (tab_add(&s->answers, a, answer_hash, answer_eq, &key) != 0) {
        free(a);
        return NULL;
    }
    return a;
}

/* The frames of a cache's answer, as symbolize would have made them. */
static void from_cache(struct gs_symbolizer *s, struct module *m,
                       const struct gs_symcache_entry *ce, struct frames *fs)
{
    m->from_cache = 1;
    for (unsigned i = 0; i < ce->n; i++) {
        struct gs_frame *fr = push_frame(fs);
        if (fr == NULL)
            return;
        fr->function = intern(s, ce->frames[i].function);
        fr->file = intern(s, ce->frames[i].file);
        fr->line = ce->frames[i].line;
    }
}

/* Writes the cache's file of each module that found answers to keep (its
 * DWARF's, see symbolize): those, and the file's own (settled: the
 * symbolizer is this thread's). */
static void save_module(struct gs_symbolizer *s, struct module *m)
{
    const struct gs_symcache_entry *old;
    size_t nold = gs_symcache_entries(m->cache, &old), n = nold, nframes = 0;
    for (size_t i = 0; i < s->answers.cap; i++) {
        const struct answer *a = s->answers.slot[i];
        if (a && a->fresh && a->module_id == m->id)
            nframes += (size_t)a->n;
    }
    struct gs_symcache_entry *e = malloc((nold + m->fresh) * sizeof *e);
    struct gs_symcache_frame *f = malloc((nframes ? nframes : 1) * sizeof *f);
    int rc = -1;
    if (e && f) {
        if (nold)
            memcpy(e, old, nold * sizeof *e);
        struct gs_symcache_frame *next = f;
        for (size_t i = 0; i < s->answers.cap && n < nold + m->fresh; i++) {
            const struct answer *a = s->answers.slot[i];
            if (!a || !a->fresh || a->module_id != m->id)
                continue;
            e[n++] = (struct gs_symcache_entry){.off = a->pc - m->bias, .n = (unsigned)a->n,
                                                .frames = next};
            for (int k = 0; k < a->n; k++)
                *next++ = (struct gs_symcache_frame){.function = a->frame[k].function,
                                                     .file = a->frame[k].file,
                                                     .line = a->frame[k].line};
        }
        struct gs_symcache_source src;
        gs_symcache_source_of(&src, m->path, m->found ? m->found : m->path, &m->st);
        rc = gs_symcache_save(s->cache_dir, m->build_id, m->build_id_len, &src, e, n);
    }
    if (rc != 0 && s->cache_chosen) {
        fprintf(stderr, "gpushim: cannot write the symbol cache in %s: %s (GPUSHIM_SYMBOL_CACHE)\n",
                s->cache_dir, e && f ? strerror(errno) : "out of memory");
        s->cache_chosen = 0; /* said once */
    }
    free(e);
    free(f);
}

static void save_caches(struct gs_symbolizer *s)
{
    if (s->cache_dir == NULL)
        return;
    for (size_t i = 0; i < s->modules.cap; i++) {
        struct module *m = s->modules.slot[i];
        if (m && m->fresh && m->status == 1 && m->build_id_len && m->have_st)
            save_module(s, m);
    }
}

/* The one-frame "nothing known" answer, rewritten on each use. */
static int unknown(struct gs_symbolizer *s, const char *module, uint64_t pc,
                   const struct gs_frame **frames)
{
    s->scratch = (struct gs_frame){.module = module, .pc = pc};
    *frames = &s->scratch;
    return 1;
}

int gs_sym_resolve(struct gs_symbolizer *s, uint32_t module_id, uint64_t pc,
                   const struct gs_frame **frames)
{
    if (s == NULL || frames == NULL)
        return 0;
    settle(s, 0);
    struct answer_key key = {module_id, pc};
    struct answer *a = tab_find(&s->answers, answer_key_hash(module_id, pc), answer_eq, &key);
    if (a == NULL) {
        struct module *m = find_module(s, module_id);
        if (m == NULL)
            return unknown(s, "?", pc, frames);
        struct frames fs = {0};
        const struct gs_symcache_entry *ce = cached(s, m, pc);
        int keep = 0;
        if (ce)
            from_cache(s, m, ce, &fs);
        else
            keep = symbolize(s, m, pc, &fs);
        a = remember(s, module_id, pc, m, &fs);
        free(fs.f);
        if (a == NULL)
            return unknown(s, m->path, pc, frames);
        a->fresh = keep;
        m->fresh += (unsigned)a->fresh;
    }
    *frames = a->frame;
    return a->n;
}

/* ---- what gave no names, and why ------------------------------------------ */

void gs_sym_shown(struct gs_symbolizer *s, uint32_t module_id, uint64_t pc)
{
    if (s == NULL)
        return;
    struct answer_key key = {module_id, pc};
    struct answer *a = tab_find(&s->answers, answer_key_hash(module_id, pc), answer_eq, &key);
    struct module *m = a && !a->shown ? find_module(s, module_id) : NULL;
    if (!m || !m->path[0] || (a->n && a->frame[a->n - 1].function))
        return;
    a->shown = 1;
    m->unnamed++;
}

const char *gs_sym_why_text(enum gs_sym_why why)
{
    switch (why) {
    case GS_SYM_NOT_FOUND: return "not found at its path (moved, or read on another machine)";
    case GS_SYM_NOT_ELF: return "not an ELF file";
    case GS_SYM_REBUILT: return "another build at its path (its build id differs from the run's)";
    case GS_SYM_STRIPPED: return "no symbols (stripped, and no debug file found)";
    default: return "named";
    }
}

static int by_id(const void *a, const void *b)
{
    const struct gs_sym_unnamed *x = a, *y = b;
    return x->module_id < y->module_id ? -1 : x->module_id > y->module_id;
}

size_t gs_sym_unnamed(struct gs_symbolizer *s, struct gs_sym_unnamed *out, size_t max)
{
    size_t n = 0;
    if (s == NULL)
        return 0;
    settle(s, 0);
    for (size_t i = 0; i < s->modules.cap; i++) {
        const struct module *m = s->modules.slot[i];
        if (m == NULL || m->unnamed == 0)
            continue;
        if (n < max)
            out[n] = (struct gs_sym_unnamed){
                .module_id = m->id, .path = m->path, .unnamed = m->unnamed,
                .why = m->state == MOD_OPEN || m->from_cache ? GS_SYM_STRIPPED : m->why};
        n++;
    }
    qsort(out, n < max ? n : max, sizeof *out, by_id);
    return n;
}

const char *gs_sym_found_at(struct gs_symbolizer *s, uint32_t module_id)
{
    const struct module *m = s ? find_module(s, module_id) : NULL;
    return m ? m->found : NULL;
}
