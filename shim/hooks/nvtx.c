/*
 * nvtx.c - the shim as an NVTX injection library: a program's NVTX ranges,
 * marks and domains become GS_REC_RANGE and GS_REC_MARK events, with no
 * change to the program.
 *
 * How NVTX finds a tool (nvtxDetail/nvtxInit.h, load sequence version 2):
 * at a program's first NVTX call, its NVTX loader (compiled into each
 * library that uses NVTX, so a process may have several) dlopens the path
 * in NVTX_INJECTION64_PATH and calls its InitializeInjectionNvtx2 with the
 * loader's export table; the tool writes its functions into the slots the
 * table gives, and NVTX turns the slots it left empty into no-ops. `gpushim
 * run` sets the variable to libgpushim.so; dlopen of a library already
 * preloaded returns the one loaded. The memory extension has its own entry
 * point, InitializeInjectionNvtxExtension (nvtx_mem.c).
 *
 * What is recorded:
 *   nvtxRangePush* / nvtxDomainRangePushEx   PUSH (label, domain); the level
 *                                            returned is the thread's depth
 *                                            in that domain, from 0
 *   nvtxRangePop / nvtxDomainRangePop        POP; -1 when none is open
 *   nvtxRangeStart* / nvtxDomainRangeStartEx START with an id of ours,
 *                                            which is returned
 *   nvtxRangeEnd / nvtxDomainRangeEnd        END of that id
 *   nvtxMark* / nvtxDomainMarkEx             a mark (GS_REC_MARK, with the
 *                                            stack), "DOMAIN: message" in a
 *                                            named domain
 *   nvtxDomainCreate*                        DOMAIN, once per name; the
 *                                            handle is its number
 *   nvtxDomainRegisterString*                the string, kept; the handle
 *                                            is its number
 * A push or start on a thread with nothing pushed is flagged GS_RANGE_TOP:
 * the analyzer counts it as a mark too, so that a loop's outermost range
 * makes its steps; and so is the pop that leaves its thread nothing pushed,
 * where such a step ends. Messages are ASCII, wide (stored as UTF-8) or registered
 * strings; payloads, colors and categories are not kept. A message is read
 * as gpushim_mark reads a label (a pointer to nothing is the empty label,
 * never a crash); the attributes themselves NVTX requires to be valid.
 * Every function keeps errno.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

#include "gpushim_trace.h"
#include "shim/base/base.h"
#include "shim/hooks/hooks_int.h"
#include "shim/hooks/nvtx.h"
#include "shim/record/record.h"

#define DOMAINS 256        /* named domains kept; more share the default's number */
#define DEPTH_SLOTS 64     /* domains whose push depth a thread keeps apart */
#define STRING_CHUNKS 256  /* registered strings: chunks of STRING_CHUNK ... */
#define STRING_CHUNK 1024  /* ... made as needed, read without a lock */

/* ---- domains ---- */
static pthread_mutex_t names_lock = PTHREAD_MUTEX_INITIALIZER;
static char *domain_names[DOMAINS + 1]; /* [1..ndomains] */
static unsigned ndomains;               /* read without the lock: only grows */

/* The domain a handle names: 0 (the default) for NULL or one not ours. */
static uint32_t domain_of(const void *handle)
{
    uintptr_t id = (uintptr_t)handle;
    return id <= __atomic_load_n(&ndomains, __ATOMIC_ACQUIRE) ? (uint32_t)id : 0;
}

static void *domain_create(const char *name, uint32_t len)
{
    pthread_mutex_lock(&names_lock);
    unsigned id = 0;
    for (unsigned i = 1; i <= ndomains && !id; i++)
        if (strlen(domain_names[i]) == len && memcmp(domain_names[i], name, len) == 0)
            id = i;
    int made = 0;
    if (!id && ndomains < DOMAINS) {
        char *copy = malloc(len + 1);
        if (copy) {
            memcpy(copy, name, len);
            copy[len] = 0;
            id = ndomains + 1;
            domain_names[id] = copy;
            __atomic_store_n(&ndomains, id, __ATOMIC_RELEASE);
            made = 1;
        }
    }
    pthread_mutex_unlock(&names_lock);
    if (made)
        gs_record_range(GS_RANGE_DOMAIN, id, 0, 0, name, len);
    return (void *)(uintptr_t)id; /* 0 (more than DOMAINS): the default domain */
}

/* ---- registered strings ---- */
struct kept_string {
    uint32_t len;
    char text[];
};
static struct kept_string **string_chunks[STRING_CHUNKS];
static unsigned nstrings; /* under names_lock; handles 1..nstrings */

static void *string_register(const char *text, uint32_t len)
{
    struct kept_string *k = malloc(sizeof *k + len);
    if (!k)
        return NULL;
    k->len = len;
    memcpy(k->text, text, len);
    void *handle = NULL;
    pthread_mutex_lock(&names_lock);
    unsigned i = nstrings;
    struct kept_string **chunk = i / STRING_CHUNK < STRING_CHUNKS ? string_chunks[i / STRING_CHUNK]
                                                                  : NULL;
    if (!chunk && i / STRING_CHUNK < STRING_CHUNKS) {
        chunk = calloc(STRING_CHUNK, sizeof *chunk);
        __atomic_store_n(&string_chunks[i / STRING_CHUNK], chunk, __ATOMIC_RELEASE);
    }
    if (chunk) {
        __atomic_store_n(&chunk[i % STRING_CHUNK], k, __ATOMIC_RELEASE);
        nstrings++;
        handle = (void *)(uintptr_t)(i + 1);
    }
    pthread_mutex_unlock(&names_lock);
    if (!handle) {
        static int once;
        gs_warn_once(&once, "the program registered more NVTX strings than gpushim keeps (%d); "
                            "ranges named by the others have no label",
                     STRING_CHUNKS * STRING_CHUNK);
        free(k);
    }
    return handle;
}

static const struct kept_string *string_of(const void *handle)
{
    uintptr_t i = (uintptr_t)handle - 1;
    if (!handle || i >= (uintptr_t)STRING_CHUNKS * STRING_CHUNK)
        return NULL;
    struct kept_string **chunk = __atomic_load_n(&string_chunks[i / STRING_CHUNK],
                                                 __ATOMIC_ACQUIRE);
    return chunk ? __atomic_load_n(&chunk[i % STRING_CHUNK], __ATOMIC_ACQUIRE) : NULL;
}

/* ---- messages ---- */
/* A wide string as UTF-8, at most GS_MAX_LABEL bytes (a character that
 * would not fit whole is left out, as are the ones after it). */
static uint32_t wide_label(const wchar_t *w, char *out)
{
    wchar_t buf[GS_MAX_LABEL];
    uint32_t n = gs_read_string(w, buf, sizeof buf, 1) / sizeof(wchar_t), len = 0;
    for (uint32_t i = 0; i < n && buf[i]; i++) {
        uint32_t c = (uint32_t)buf[i];
        char enc[4];
        unsigned k;
        if (c < 0x80) {
            enc[0] = (char)c, k = 1;
        } else if (c < 0x800) {
            enc[0] = (char)(0xc0 | c >> 6), enc[1] = (char)(0x80 | (c & 0x3f)), k = 2;
        } else if (c < 0x10000) {
            enc[0] = (char)(0xe0 | c >> 12), enc[1] = (char)(0x80 | (c >> 6 & 0x3f));
            enc[2] = (char)(0x80 | (c & 0x3f)), k = 3;
        } else if (c < 0x110000) {
            enc[0] = (char)(0xf0 | c >> 18), enc[1] = (char)(0x80 | (c >> 12 & 0x3f));
            enc[2] = (char)(0x80 | (c >> 6 & 0x3f)), enc[3] = (char)(0x80 | (c & 0x3f)), k = 4;
        } else {
            enc[0] = '?', k = 1;
        }
        if (len + k > GS_MAX_LABEL)
            break;
        memcpy(out + len, enc, k);
        len += k;
    }
    return len;
}

static uint32_t text_label(const char *s, char *out)
{
    return gs_read_label(s, out, GS_MAX_LABEL, "an NVTX call");
}

/* The message of an event's attributes (NULL, or of a type not known: empty). */
static uint32_t attr_label(const struct gs_nvtx_attributes *a, char *out)
{
    if (!a || a->size < sizeof *a)
        return 0;
    switch (a->message_type) {
    case GS_NVTX_MESSAGE_ASCII:
        return text_label(a->message, out);
    case GS_NVTX_MESSAGE_UNICODE:
        return wide_label(a->message, out);
    case GS_NVTX_MESSAGE_REGISTERED: {
        const struct kept_string *k = string_of(a->message);
        if (!k)
            return 0;
        uint32_t len = k->len < GS_MAX_LABEL ? k->len : GS_MAX_LABEL;
        memcpy(out, k->text, len);
        return len;
    }
    default:
        return 0;
    }
}

/* ---- what a thread has pushed ---- */
static __thread struct {
    uint32_t total;               /* ranges pushed and not popped, all domains */
    uint32_t depth[DEPTH_SLOTS];  /* the same per domain (the last slot: the rest) */
} pushed;

static uint32_t *depth_of(uint32_t domain)
{
    return &pushed.depth[domain < DEPTH_SLOTS ? domain : DEPTH_SLOTS - 1];
}

static uint64_t next_id = 1;

/* ---- the events ---- */
static void append(char *out, uint32_t *n, const char *s, size_t len)
{
    size_t k = len < GS_MAX_LABEL - *n ? len : GS_MAX_LABEL - *n;
    memcpy(out + *n, s, k);
    *n += (uint32_t)k;
}

static void mark(uint32_t domain, const char *text, uint32_t len)
{
    const char *name = domain ? domain_names[domain] : NULL;
    if (!name) {
        gs_record_mark_flags(text, len, GS_MARK_NVTX);
        return;
    }
    char label[GS_MAX_LABEL];
    uint32_t n = 0;
    append(label, &n, name, strlen(name));
    append(label, &n, ": ", 2);
    append(label, &n, text, len);
    gs_record_mark_flags(label, n, GS_MARK_NVTX);
}

int gs_nvtx_push(uint32_t domain, const char *text, uint32_t len)
{
    uint32_t *d = depth_of(domain);
    gs_record_range(GS_RANGE_PUSH, domain, 0, pushed.total ? 0 : GS_RANGE_TOP, text, len);
    pushed.total++;
    return (int)(*d)++;
}

int gs_nvtx_pop(uint32_t domain)
{
    uint32_t *d = depth_of(domain);
    if (!*d)
        return -1; /* nothing of this domain pushed on this thread */
    pushed.total--;
    gs_record_range(GS_RANGE_POP, domain, 0, pushed.total ? 0 : GS_RANGE_TOP, NULL, 0);
    return (int)--(*d);
}

static uint64_t start(uint32_t domain, const char *text, uint32_t len)
{
    uint64_t id = __atomic_fetch_add(&next_id, 1, __ATOMIC_RELAXED);
    gs_record_range(GS_RANGE_START, domain, id, pushed.total ? 0 : GS_RANGE_TOP, text, len);
    return id;
}

static void end(uint32_t domain, uint64_t id)
{
    if (id)
        gs_record_range(GS_RANGE_END, domain, id, 0, NULL, 0);
}

/* ---- NVTX's slots: each keeps errno ---- */
#define KEEP_ERRNO(body)                                                                           \
    do {                                                                                           \
        int saved_ = errno;                                                                        \
        body;                                                                                      \
        errno = saved_;                                                                            \
    } while (0)

static void mark_ex(const struct gs_nvtx_attributes *a)
{
    KEEP_ERRNO(char l[GS_MAX_LABEL]; mark(0, l, attr_label(a, l)));
}
static void mark_a(const char *s) { KEEP_ERRNO(char l[GS_MAX_LABEL]; mark(0, l, text_label(s, l))); }
static void mark_w(const wchar_t *s)
{
    KEEP_ERRNO(char l[GS_MAX_LABEL]; mark(0, l, wide_label(s, l)));
}
static uint64_t start_ex(const struct gs_nvtx_attributes *a)
{
    uint64_t id;
    KEEP_ERRNO(char l[GS_MAX_LABEL]; id = start(0, l, attr_label(a, l)));
    return id;
}
static uint64_t start_a(const char *s)
{
    uint64_t id;
    KEEP_ERRNO(char l[GS_MAX_LABEL]; id = start(0, l, text_label(s, l)));
    return id;
}
static uint64_t start_w(const wchar_t *s)
{
    uint64_t id;
    KEEP_ERRNO(char l[GS_MAX_LABEL]; id = start(0, l, wide_label(s, l)));
    return id;
}
static void end_core(uint64_t id) { KEEP_ERRNO(end(0, id)); }
static int push_ex(const struct gs_nvtx_attributes *a)
{
    int level;
    KEEP_ERRNO(char l[GS_MAX_LABEL]; level = gs_nvtx_push(0, l, attr_label(a, l)));
    return level;
}
static int push_a(const char *s)
{
    int level;
    KEEP_ERRNO(char l[GS_MAX_LABEL]; level = gs_nvtx_push(0, l, text_label(s, l)));
    return level;
}
static int push_w(const wchar_t *s)
{
    int level;
    KEEP_ERRNO(char l[GS_MAX_LABEL]; level = gs_nvtx_push(0, l, wide_label(s, l)));
    return level;
}
static int pop_core(void)
{
    int level;
    KEEP_ERRNO(level = gs_nvtx_pop(0));
    return level;
}

static void domain_mark_ex(const void *dom, const struct gs_nvtx_attributes *a)
{
    KEEP_ERRNO(char l[GS_MAX_LABEL]; mark(domain_of(dom), l, attr_label(a, l)));
}
static uint64_t domain_start_ex(const void *dom, const struct gs_nvtx_attributes *a)
{
    uint64_t id;
    KEEP_ERRNO(char l[GS_MAX_LABEL]; id = start(domain_of(dom), l, attr_label(a, l)));
    return id;
}
static void domain_end(const void *dom, uint64_t id) { KEEP_ERRNO(end(domain_of(dom), id)); }
static int domain_push_ex(const void *dom, const struct gs_nvtx_attributes *a)
{
    int level;
    KEEP_ERRNO(char l[GS_MAX_LABEL]; level = gs_nvtx_push(domain_of(dom), l, attr_label(a, l)));
    return level;
}
static int domain_pop(const void *dom)
{
    int level;
    KEEP_ERRNO(level = gs_nvtx_pop(domain_of(dom)));
    return level;
}
static void *register_a(const void *dom, const char *s)
{
    (void)dom; /* one table for all domains: a handle is good in any */
    void *h;
    KEEP_ERRNO(char l[GS_MAX_LABEL]; h = string_register(l, text_label(s, l)));
    return h;
}
static void *register_w(const void *dom, const wchar_t *s)
{
    (void)dom;
    void *h;
    KEEP_ERRNO(char l[GS_MAX_LABEL]; h = string_register(l, wide_label(s, l)));
    return h;
}
static void *create_a(const char *s)
{
    void *h;
    KEEP_ERRNO(char l[GS_MAX_LABEL]; h = domain_create(l, text_label(s, l)));
    return h;
}
static void *create_w(const wchar_t *s)
{
    void *h;
    KEEP_ERRNO(char l[GS_MAX_LABEL]; h = domain_create(l, wide_label(s, l)));
    return h;
}

/* ---- attaching to a program's NVTX ---- */
struct slot {
    int module, id;
    gs_nvtx_fn fn;
};
#define SLOT(m, i, f) {GS_NVTX_MODULE_##m, GS_NVTX_##m##_##i, (gs_nvtx_fn)(f)}

/* Writes our functions into the slots of one module of the loader's table. */
static int fill(const struct gs_nvtx_callbacks_table *cb, const struct slot *slots, size_t n)
{
    int module = slots[0].module, filled = 0;
    gs_nvtx_fn **table = NULL;
    unsigned size = 0;
    if (!cb->get_module_function_table(module, &table, &size) || !table)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (slots[i].module == module && (unsigned)slots[i].id < size && table[slots[i].id]) {
            *table[slots[i].id] = slots[i].fn;
            filled++;
        }
    return filled;
}

/* NVTX's loader calls this once per NVTX instance in the process (each
 * library built with NVTX's headers has its own). Returns 1: attached. */
GS_EXPORT int InitializeInjectionNvtx2(gs_nvtx_export_table_fn get_table)
{
    static const struct slot core[] = {
        SLOT(CORE, MarkEx, mark_ex),           SLOT(CORE, MarkA, mark_a),
        SLOT(CORE, MarkW, mark_w),             SLOT(CORE, RangeStartEx, start_ex),
        SLOT(CORE, RangeStartA, start_a),      SLOT(CORE, RangeStartW, start_w),
        SLOT(CORE, RangeEnd, end_core),        SLOT(CORE, RangePushEx, push_ex),
        SLOT(CORE, RangePushA, push_a),        SLOT(CORE, RangePushW, push_w),
        SLOT(CORE, RangePop, pop_core),
    };
    static const struct slot core2[] = {
        SLOT(CORE2, DomainMarkEx, domain_mark_ex),
        SLOT(CORE2, DomainRangeStartEx, domain_start_ex),
        SLOT(CORE2, DomainRangeEnd, domain_end),
        SLOT(CORE2, DomainRangePushEx, domain_push_ex),
        SLOT(CORE2, DomainRangePop, domain_pop),
        SLOT(CORE2, DomainRegisterStringA, register_a),
        SLOT(CORE2, DomainRegisterStringW, register_w),
        SLOT(CORE2, DomainCreateA, create_a),
        SLOT(CORE2, DomainCreateW, create_w),
    };
    int saved = errno;
    const struct gs_nvtx_callbacks_table *cb =
        get_table ? get_table(GS_NVTX_ETID_CALLBACKS) : NULL;
    int ok = cb && cb->struct_size >= sizeof *cb && cb->get_module_function_table &&
             fill(cb, core, sizeof core / sizeof core[0]) > 0;
    if (ok) {
        fill(cb, core2, sizeof core2 / sizeof core2[0]);
        const struct gs_nvtx_version_table *v = get_table(GS_NVTX_ETID_VERSIONINFO);
        if (v && v->struct_size >= sizeof *v && v->set_injection_version)
            v->set_injection_version(3);
    } else {
        static int once;
        gs_warn_once(&once, "the program's NVTX gave no table of functions to fill in; its NVTX "
                            "ranges are not recorded");
    }
    errno = saved;
    return ok;
}
