/*
 * python.c - the Python frames of the thread that allocates.
 *
 * When the thread that allocates holds the GIL of the process's Python, its
 * Python stack (file, function, line of each frame) is recorded after its
 * native one, as Python pcs (include/gpushim_trace.h): a code id and a line
 * each, the code id defined once per code object by a GS_REC_PYCODE record
 * pushed to the ring before any stack names it. A thread that allocates
 * without the GIL in a process with Python gets the GS_PY_PC_NO_GIL marker
 * instead, so that reports can say why its stack is native only.
 *
 * Only CPython's public API is used, looked up at run time with
 * dlsym(RTLD_DEFAULT) on the first event: the shim is not linked with
 * libpython, and in a process without Python the one failed lookup of
 * Py_IsInitialized is all that ever happens. Python 3.9 and later (the
 * versions with PyFrame_GetCode and PyFrame_GetBack) are supported; 3.8,
 * free-threaded builds and anything else where a function is missing get
 * native stacks and no marker.
 *
 * Frames are walked only when it is safe to touch Python objects, all of:
 * Python is initialized; PyGILState_Check() says this thread holds the GIL
 * (it also answers 1 when it cannot tell: before initialization, or while
 * sub-interpreters exist); the thread state attached to this thread (the
 * unchecked getter, never PyThreadState_Get, which aborts when there is
 * none) is this thread's own (PyGILState_GetThisThreadState), of the main
 * interpreter. No Python code runs and the GIL is never taken: everything
 * called is C (frame and code object accessors, attribute getters of code
 * objects, which are C descriptors). Since 3.11 the public API makes frame
 * objects on demand, and 3.11 may start a garbage collection inside such an
 * allocation, whose finalizers would run Python code (and could free GPU
 * memory inside the very driver call we record): the walk runs with the
 * collector switched off (PyGC_Disable, PyGC_Enable after), so a collection
 * due then happens at the program's next allocation instead. The thread's
 * exception state is saved before and restored after, so nothing the walk
 * may raise (out of memory) is left for the program to see.
 *
 * Each code object is resolved once: its id is kept in a small hash table
 * keyed by its address, with a reference to it (Py_IncRef) so that the
 * address is never reused by another code object. Frames and codes handed
 * out as new references are released at once. Only the GIL's holder walks,
 * so the table's lock is never contended; it exists for fork (the child
 * starts a fresh trace and forgets the table).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "shim.h"

typedef void pyobj; /* PyObject, PyFrameObject, PyCodeObject: never looked into */

static struct {
    int (*is_initialized)(void);
    int (*gil_check)(void);
    void *(*tstate_unchecked)(void);
    void *(*this_thread_state)(void);
    void *(*tstate_interp)(void *tstate);
    void *(*main_interp)(void);
    pyobj *(*get_frame)(void);             /* borrowed */
    pyobj *(*frame_code)(pyobj *frame);    /* new reference */
    pyobj *(*frame_back)(pyobj *frame);    /* new reference, or NULL */
    int (*frame_line)(pyobj *frame);
    int (*frame_lasti)(pyobj *frame); /* 3.11 and later: the line cache's key */
    pyobj *(*getattr)(pyobj *o, const char *name); /* new reference */
    const char *(*utf8)(pyobj *s, ssize_t *len);
    long (*as_long)(pyobj *o);
    void (*incref)(pyobj *o);
    void (*decref)(pyobj *o);
    void (*err_fetch)(pyobj **type, pyobj **value, pyobj **tb);
    void (*err_restore)(pyobj *type, pyobj *value, pyobj *tb);
    void (*err_clear)(void);
    int (*gc_disable)(void); /* 3.10 and later */
    int (*gc_enable)(void);
    const char *function_attr; /* co_qualname (3.11 and later), else co_name */
} py;

enum { UNKNOWN, LOOKING, ABSENT, READY };
static int state; /* read without a lock: UNKNOWN -> LOOKING -> ABSENT or READY */

static void *sym(const char *name) { return gs_real_dlsym(RTLD_DEFAULT, name); }

/* The Python of the process, if it is one we can read. */
static int look_up(void)
{
    if (!gs_config()->python)
        return ABSENT; /* GPUSHIM_PYTHON=0: native stacks, nothing looked up */
    py.is_initialized = (int (*)(void))sym("Py_IsInitialized");
    if (!py.is_initialized)
        return ABSENT; /* no Python: the one lookup there is */
    const char *(*version)(void) = (const char *(*)(void))sym("Py_GetVersion");
    const char *v = version ? version() : NULL;
    int major = 0, minor = 0;
    if (!v || sscanf(v, "%d.%d", &major, &minor) != 2 || major != 3 || minor < 9 ||
        strstr(v, "free-threading")) {
        if (gs_config()->verbose)
            gs_say("Python %.*s: its frames are not recorded (3.9 or later with a GIL is "
                   "needed); stacks are native only",
                   v ? (int)strcspn(v, " ") : 1, v ? v : "?");
        return ABSENT;
    }
#define NEED(field, name)                                                                          \
    if (!(*(void **)&py.field = sym(name)))                                                        \
        return ABSENT;
    NEED(gil_check, "PyGILState_Check")
    NEED(this_thread_state, "PyGILState_GetThisThreadState")
    NEED(tstate_interp, "PyThreadState_GetInterpreter")
    NEED(main_interp, "PyInterpreterState_Main")
    NEED(get_frame, "PyEval_GetFrame")
    NEED(frame_code, "PyFrame_GetCode")
    NEED(frame_back, "PyFrame_GetBack")
    NEED(frame_line, "PyFrame_GetLineNumber")
    NEED(getattr, "PyObject_GetAttrString")
    NEED(utf8, "PyUnicode_AsUTF8AndSize")
    NEED(as_long, "PyLong_AsLong")
    NEED(incref, "Py_IncRef")
    NEED(decref, "Py_DecRef")
    NEED(err_fetch, "PyErr_Fetch")
    NEED(err_restore, "PyErr_Restore")
    NEED(err_clear, "PyErr_Clear")
#undef NEED
    /* 3.13 made the unchecked getter public; 3.9 to 3.12 export it by its old name. */
    *(void **)&py.tstate_unchecked = sym("PyThreadState_GetUnchecked");
    if (!py.tstate_unchecked)
        *(void **)&py.tstate_unchecked = sym("_PyThreadState_UncheckedGet");
    if (!py.tstate_unchecked)
        return ABSENT;
    *(void **)&py.frame_lasti = sym("PyFrame_GetLasti");
    *(void **)&py.gc_disable = sym("PyGC_Disable");
    *(void **)&py.gc_enable = sym("PyGC_Enable");
    if (minor >= 11 && (!py.gc_disable || !py.gc_enable))
        return ABSENT; /* frames are made on demand there: never without the collector off */
    py.function_attr = minor >= 11 ? "co_qualname" : "co_name";
    return READY;
}

/* Looked up once, by the first thread that gets here; a thread that finds
 * the lookup under way goes without Python frames this once (the lookup
 * takes the loader's lock, which a thread inside dlopen may hold). */
static int python_ready(void)
{
    int s = __atomic_load_n(&state, __ATOMIC_ACQUIRE);
    if (s == READY || s == ABSENT || s == LOOKING)
        return s == READY;
    int expected = UNKNOWN;
    if (!__atomic_compare_exchange_n(&state, &expected, LOOKING, 0, __ATOMIC_ACQ_REL,
                                     __ATOMIC_ACQUIRE))
        return 0;
    s = look_up();
    __atomic_store_n(&state, s, __ATOMIC_RELEASE);
    return s == READY;
}

/* ---- the code objects seen, by address ---- */

struct code_slot {
    const void *code; /* NULL: empty */
    uint32_t id;
};

static pthread_mutex_t codes_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
    struct code_slot *slots;
    size_t nslots, used;
    uint32_t next_id;
} codes;

static size_t code_hash(const void *code)
{
    uint64_t h = (uint64_t)(uintptr_t)code * 0x9e3779b97f4a7c15ull;
    return (size_t)(h >> 32);
}

static struct code_slot *code_probe(struct code_slot *slots, size_t nslots, const void *code)
{
    size_t mask = nslots - 1;
    for (size_t i = code_hash(code) & mask;; i = (i + 1) & mask)
        if (!slots[i].code || slots[i].code == code)
            return &slots[i];
}

/* The id of code, 0 if it has none yet. Call with codes_lock held. */
static uint32_t code_find(const void *code)
{
    return codes.nslots ? code_probe(codes.slots, codes.nslots, code)->id : 0;
}

/* Makes room for one more. Call with codes_lock held. */
static int code_room(void)
{
    if ((codes.used + 1) * 2 <= codes.nslots)
        return 0;
    size_t nslots = codes.nslots ? codes.nslots * 2 : 1024;
    struct code_slot *slots = calloc(nslots, sizeof *slots);
    if (!slots)
        return -1;
    for (size_t i = 0; i < codes.nslots; i++)
        if (codes.slots[i].code)
            *code_probe(slots, nslots, codes.slots[i].code) = codes.slots[i];
    free(codes.slots);
    codes.slots = slots;
    codes.nslots = nslots;
    return 0;
}

/* Copies the UTF-8 of the string attribute attr of o into out (at most max
 * bytes); returns its length, 0 when there is none. */
static size_t string_attr(pyobj *o, const char *attr, char *out, size_t max)
{
    pyobj *s = py.getattr(o, attr);
    size_t n = 0;
    if (s) {
        ssize_t len = 0;
        const char *u = py.utf8(s, &len);
        if (u && len > 0) {
            n = (size_t)len < max ? (size_t)len : max;
            memcpy(out, u, n);
        }
        py.decref(s);
    }
    py.err_clear(); /* the walk began with no exception set: whatever failed is ours */
    return n;
}

/* The id of the code object of a frame, resolving it the first time (its
 * PYCODE record pushed before the id is handed to anyone). 0 when it
 * cannot be had. Call with codes_lock held; it is let go meanwhile when
 * the code is new (its names are read with no shim lock held). */
static uint32_t code_id(pyobj *code)
{
    uint32_t id = code_find(code);
    if (id)
        return id;
    pthread_mutex_unlock(&codes_lock);

    union {
        struct gs_pycode_body b;
        uint8_t bytes[sizeof(struct gs_pycode_body) + GS_PY_MAX_FILE + GS_PY_MAX_NAME];
    } body;
    memset(&body.b, 0, sizeof body.b);
    body.b.type = GS_REC_PYCODE;
    size_t flen = string_attr(code, "co_filename", body.b.data, GS_PY_MAX_FILE);
    size_t nlen = string_attr(code, py.function_attr, body.b.data + flen, GS_PY_MAX_NAME);
    body.b.file_len = (uint16_t)flen;
    body.b.name_len = (uint16_t)nlen;
    pyobj *first = py.getattr(code, "co_firstlineno");
    if (first) {
        long l = py.as_long(first);
        body.b.first_line = l > 0 && l <= (long)UINT32_MAX ? (uint32_t)l : 0;
        py.decref(first);
    }
    py.err_clear();

    pthread_mutex_lock(&codes_lock);
    id = code_find(code); /* only the GIL's holder gets here, but be sure */
    if (!id && codes.next_id < GS_PY_MAX_CODE && code_room() == 0) {
        id = body.b.id = ++codes.next_id;
        py.incref(code); /* kept for good: its address is never another code's */
        struct code_slot *s = code_probe(codes.slots, codes.nslots, code);
        s->code = code;
        s->id = id;
        codes.used++;
        gs_emit(&body, (uint32_t)(sizeof body.b + flen + nlen), 0);
    }
    return id;
}

/* The line a frame is at. PyFrame_GetLineNumber decodes the code's line
 * table from its start each time, the larger part of a walk's cost, so its
 * answers are kept by (code, instruction offset) where the offset can be
 * had (3.11 and later). Only for codes with an id: those are kept alive,
 * so their addresses are never another code's. Only the GIL's holder
 * walks, so the GIL guards the cache. */
#define LINE_CACHE 4096
static struct line_slot {
    const void *code;
    int lasti, line;
} lines[LINE_CACHE];

static int frame_line(pyobj *f, const void *code, uint32_t id)
{
    int lasti = id && py.frame_lasti ? py.frame_lasti(f) : -1;
    if (lasti < 0)
        return py.frame_line(f);
    struct line_slot *s = &lines[(code_hash(code) ^ (size_t)lasti * 0x9e3779b1u) & (LINE_CACHE - 1)];
    if (s->code != code || s->lasti != lasti) {
        s->code = code;
        s->lasti = lasti;
        s->line = py.frame_line(f);
    }
    return s->line;
}

/* ---- the walk ---- */

/* Does this thread hold the GIL, for sure, in the main interpreter? 1 yes,
 * 0 no (it does not hold it), -1 cannot tell (frames are not read). */
static int holds_gil(void)
{
    if (!py.is_initialized())
        return -1;
    if (!py.gil_check())
        return 0;
    void *ts = py.tstate_unchecked();
    if (!ts || ts != py.this_thread_state() || py.tstate_interp(ts) != py.main_interp())
        return -1;
    return 1;
}

unsigned gs_python_frames(uint64_t *pcs, unsigned n, unsigned max)
{
    if (n >= max || !python_ready())
        return n;
    int held = holds_gil();
    if (held <= 0) {
        if (held == 0)
            pcs[n++] = GS_PY_PC_NO_GIL;
        return n;
    }
    unsigned start = n, depth = gs_config()->stack_depth;
    if (max - n > depth)
        max = n + depth;
    pyobj *type, *value, *tb;
    py.err_fetch(&type, &value, &tb);
    int collecting = py.gc_disable ? py.gc_disable() : 0;
    pyobj *f = py.get_frame();
    if (f)
        py.incref(f); /* borrowed; the frames from PyFrame_GetBack are new references */
    pthread_mutex_lock(&codes_lock);
    while (f && n < max) {
        pyobj *code = py.frame_code(f);
        uint32_t id = code ? code_id(code) : 0;
        int line = frame_line(f, code, id);
        if (code)
            py.decref(code);
        if (id)
            pcs[n++] = gs_py_pc(id, line > 0 ? (uint32_t)line : 0);
        pyobj *back = py.frame_back(f);
        py.decref(f);
        f = back;
    }
    pthread_mutex_unlock(&codes_lock);
    if (f)
        py.decref(f);
    if (collecting > 0)
        py.gc_enable();
    py.err_restore(type, value, tb);
    if (n == start)
        pcs[n++] = GS_PY_PC_NO_FRAME;
    return n;
}

void gs_python_lock(void) { pthread_mutex_lock(&codes_lock); }
void gs_python_unlock(void) { pthread_mutex_unlock(&codes_lock); }

void gs_python_reset_after_fork(void)
{
    /* The child's trace starts afresh: its code objects are defined again.
     * The references held stay (the objects are the child's copies). */
    pthread_mutex_init(&codes_lock, NULL);
    free(codes.slots);
    memset(&codes, 0, sizeof codes);
}
