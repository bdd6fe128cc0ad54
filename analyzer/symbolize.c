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
 *   true): libdwfl then maps file vaddr V to bias + V, the same as the
 *   recording process did, so runtime addresses are used unchanged. (With
 *   add_p_vaddr false, base would instead be the address of the first
 *   PT_LOAD; for ET_EXEC files libdwfl ignores base.)
 * - A recorded build id that differs from the file's makes the module
 *   unusable: nothing from the wrong file is returned.
 * - Frames come from the DIE chain around pc (dwarf_getscopes for the
 *   innermost scope, dwarf_getscopes_die for all its parents): the innermost
 *   frame takes its line from the line table, every outer frame takes its
 *   line from the call site (DW_AT_call_file/line) of the inlined subroutine
 *   just inside it. Without DWARF the ELF symbol table names the function.
 * - Three open-addressing tables (modules by id, answers by (module, pc),
 *   strings) share one small implementation. Answers are allocated one per
 *   entry, so arrays handed out never move.
 */
#include "symbolize.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

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

struct cu_range {
    Dwarf_Addr lo, hi; /* DWARF addresses */
    Dwarf_Off off;     /* of the CU DIE */
};

struct module {
    uint32_t id;
    char *path;
    uint64_t bias, lo, span;
    uint8_t *build_id;
    size_t build_id_len;
    enum mod_state state;
    int status; /* gs_sym_module_status's answer, once opened */
    Dwfl *dwfl;
    Dwfl_Module *dmod;
    struct cu_range *cus; /* sorted by lo; see cu_index_build */
    size_t ncus, cus_cap;
    int cus_built;
};

struct answer {
    uint32_t module_id;
    uint64_t pc;
    int n;
    struct gs_frame frame[];
};

struct answer_key {
    uint32_t module_id;
    uint64_t pc;
};

struct gs_symbolizer {
    struct table modules; /* struct module *, by id */
    struct table answers; /* struct answer *, by (module id, pc) */
    struct table strings; /* char *, interned */
    struct gs_frame scratch; /* the answer when allocation fails */
};

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
 * or memory ran out (the caller then simply knows less). */
static const char *intern(struct gs_symbolizer *s, const char *str)
{
    if (str == NULL)
        return NULL;
    uint64_t h = string_key_hash(str);
    char *found = tab_find(&s->strings, h, string_eq, str);
    if (found != NULL)
        return found;
    char *copy = strdup(str);
    if (copy == NULL || tab_add(&s->strings, copy, string_hash, string_eq, copy) != 0) {
        free(copy);
        return NULL;
    }
    return copy;
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
    free(m->path);
    free(m->build_id);
    free(m->cus);
    free(m);
}

void gs_sym_free(struct gs_symbolizer *s)
{
    if (s == NULL)
        return;
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

/* ---- opening a module ----------------------------------------------------- */

static char *no_debuginfo_path; /* libdwfl's default search path */

static const Dwfl_Callbacks offline_callbacks = {
    .find_elf = dwfl_build_id_find_elf,
    .find_debuginfo = dwfl_standard_find_debuginfo,
    .section_address = dwfl_offline_section_address,
    .debuginfo_path = &no_debuginfo_path,
};

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

/* Reports the file at the recorded bias into a fresh Dwfl of its own. Only
 * regular files are opened: a FIFO would block, a directory is not ELF. */
static int report_file(struct module *m)
{
    struct stat st;
    if (stat(m->path, &st) != 0 || !S_ISREG(st.st_mode))
        return -1;
    m->dwfl = dwfl_begin(&offline_callbacks);
    if (m->dwfl == NULL)
        return -1;
    dwfl_report_begin(m->dwfl);
    m->dmod = dwfl_report_elf(m->dwfl, m->path, m->path, -1, m->bias, true);
    dwfl_report_end(m->dwfl, NULL, NULL);
    return m->dmod != NULL ? 0 : -1;
}

static void open_module(struct module *m)
{
    if (m->state != MOD_UNOPENED)
        return;
    m->state = MOD_UNUSABLE;
    m->status = 0;
    if (m->path[0] == '\0')
        return;
    m->status = report_file(m) == 0 ? check_build_id(m) : -1;
    if (m->status >= 0) {
        m->state = MOD_OPEN;
        return;
    }
    if (m->dwfl != NULL)
        dwfl_end(m->dwfl);
    m->dwfl = NULL;
    m->dmod = NULL;
}

int gs_sym_module_status(struct gs_symbolizer *s, uint32_t module_id)
{
    struct module *m = s ? find_module(s, module_id) : NULL;
    if (m == NULL)
        return -1;
    open_module(m);
    return m->status;
}

/* ---- finding the CU ------------------------------------------------------- */

/* libdwfl finds CUs through .debug_aranges only (elfutils 0.188), which
 * clang does not emit by default. When it finds none, this index of every
 * CU's address ranges, built once per module, is searched instead. */

static int cu_range_cmp(const void *a, const void *b)
{
    const struct cu_range *x = a, *y = b;
    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

static int cu_range_add(struct module *m, Dwarf_Addr lo, Dwarf_Addr hi, Dwarf_Off off)
{
    if (m->ncus == m->cus_cap) {
        size_t cap = m->cus_cap ? m->cus_cap * 2 : 16;
        struct cu_range *c = realloc(m->cus, cap * sizeof *c);
        if (c == NULL)
            return -1;
        m->cus = c;
        m->cus_cap = cap;
    }
    m->cus[m->ncus++] = (struct cu_range){lo, hi, off};
    return 0;
}

static void cu_index_build(struct module *m)
{
    Dwarf_Addr bias;
    Dwarf *dw = dwfl_module_getdwarf(m->dmod, &bias);
    Dwarf_CU *cu = NULL;
    Dwarf_Die cudie;
    uint8_t type;
    m->cus_built = 1;
    while (dw != NULL && dwarf_get_units(dw, cu, &cu, NULL, &type, &cudie, NULL) == 0) {
        if (type != DW_UT_compile && type != DW_UT_skeleton)
            continue;
        Dwarf_Addr base, lo, hi;
        ptrdiff_t off = 0;
        while ((off = dwarf_ranges(&cudie, off, &base, &lo, &hi)) > 0)
            if (lo < hi && cu_range_add(m, lo, hi, dwarf_dieoffset(&cudie)) != 0)
                return;
    }
    if (m->ncus > 1)
        qsort(m->cus, m->ncus, sizeof m->cus[0], cu_range_cmp);
}

static int cu_index_find(struct module *m, Dwarf_Addr addr, Dwarf_Die *cu, Dwarf_Addr *bias)
{
    if (!m->cus_built)
        cu_index_build(m);
    Dwarf *dw = dwfl_module_getdwarf(m->dmod, bias);
    if (dw == NULL || m->ncus == 0)
        return -1;
    Dwarf_Addr a = addr - *bias;
    size_t lo = 0, hi = m->ncus; /* first range starting above a */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (m->cus[mid].lo <= a)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0 || a >= m->cus[lo - 1].hi)
        return -1;
    return dwarf_offdie(dw, m->cus[lo - 1].off, cu) != NULL ? 0 : -1;
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

/* The call site of an inlined subroutine: file name (or NULL) and line. */
static const char *call_site(Dwarf_Die *inl, int *line)
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
    return name != NULL && strcmp(name, "???") != 0 ? name : NULL; /* "???": DWARF<5 index 0 */
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
    fr->function = intern(s, die_function_name(&chain[cur]));
    while (dwarf_tag(&chain[cur]) == DW_TAG_inlined_subroutine) {
        int outer = next_function(chain, n, cur + 1);
        if (outer == n || (fr = push_frame(fs)) == NULL)
            break;
        fr->file = intern(s, call_site(&chain[cur], &fr->line));
        fr->function = intern(s, die_function_name(&chain[outer]));
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
    fr->file = intern(s, file);
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

static void symbolize(struct gs_symbolizer *s, struct module *m, uint64_t pc,
                      struct frames *fs)
{
    open_module(m);
    if (m->state != MOD_OPEN || pc == 0)
        return;
    Dwarf_Addr addr = pc - 1;
    if (dwarf_frames(s, m, addr, fs) != 0)
        return;
    if (fs->n == 0 && push_frame(fs) == NULL)
        return;
    struct gs_frame *outer = &fs->f[fs->n - 1];
    if (outer->function == NULL)
        outer->function = intern(s, dwfl_module_addrname(m->dmod, addr));
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
    struct answer_key key = {module_id, pc};
    struct answer *a = tab_find(&s->answers, answer_key_hash(module_id, pc), answer_eq, &key);
    if (a == NULL) {
        struct module *m = find_module(s, module_id);
        if (m == NULL)
            return unknown(s, "?", pc, frames);
        struct frames fs = {0};
        symbolize(s, m, pc, &fs);
        a = remember(s, module_id, pc, m, &fs);
        free(fs.f);
        if (a == NULL)
            return unknown(s, m->path, pc, frames);
    }
    *frames = a->frame;
    return a->n;
}
