/*
 * python.c - the Python frames of the thread that allocates (or, where it
 * runs no Python and works for a thread that waits in a hand-off, such as
 * PyTorch's autograd engine threads, that thread's: "the thread that waits
 * for this one" below).
 *
 * A thread's Python stack (file, function, line of each frame) is recorded
 * after its native one, as Python pcs (include/gpushim_trace.h): a code id
 * and a line each, the code id defined once per code object by a
 * GS_REC_PYCODE record pushed to the ring before any stack names it.
 *
 * Two ways to read the frames:
 *
 * - From memory (pyread.c, with a layout from pylayout.c): the thread's own
 *   frame chain from its thread state (PyGILState_GetThisThreadState), with
 *   no GIL, no Python API, no reference count touched. This is what real
 *   frameworks need: PyTorch's bindings release the GIL before every op
 *   allocates, JAX around execution. Frames read while the thread did not
 *   hold the GIL follow a GS_PY_PC_RELEASED marker. The GIL is never taken
 *   here: a framework's allocator holds its own mutex inside cudaMalloc, and
 *   taking the GIL there deadlocks against a Python thread freeing a tensor.
 * - Through CPython's public API (PyEval_GetFrame, PyFrame_GetBack, ...),
 *   only where the thread holds the GIL: where no layout is known or the
 *   layout did not check out, and to check the layout.
 *
 * A layout is trusted step by step. Its first CHECKED_WALKS walks read with
 * checked loads (pyread.c: a wrong pointer fails instead of faulting), every
 * object's type is checked on every walk, and on events where the thread
 * holds the GIL the frames read from memory are compared with the API's
 * (the first CROSS_CHECKS such events, then one in CROSS_CHECK_EVERY). Any
 * difference turns the reading from memory off for the rest of the run, said
 * once on stderr: a wrong frame is worse than none. A thread without the GIL
 * then gets the GS_PY_PC_NO_GIL marker, as one where no frame can be read.
 *
 * Only CPython's exported symbols are used, looked up at run time with
 * dlsym(RTLD_DEFAULT) on the first event: the shim is not linked with
 * libpython, and in a process without Python the one failed lookup of
 * Py_IsInitialized is all that ever happens. Python 3.9 to 3.14 with the
 * GIL are read; 3.8, free-threaded builds and anything else get native
 * stacks and no marker.
 *
 * The API walk runs only when it is safe to touch Python objects, all of:
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
 * Code ids. Each code object is resolved once, its id kept in a hash table
 * keyed by its address. A code object seen by a thread that holds the GIL is
 * pinned (Py_IncRef), so that its address is never another code object's.
 * One seen only without the GIL cannot be pinned (no reference count is
 * touched then), and its address may be reused once it is freed: its slot
 * keeps a fingerprint of what the frame shows (file, name, first line, line
 * table), checked on every use, and a code object that does not match gets
 * an id of its own. The check compares bytes kept from the last frame that
 * matched (struct code_shape) before it fingerprints anything; from 3.12 it
 * is skipped while no code object has been destroyed (a code watcher counts
 * them: "code objects destroyed" below). A frame of a code object known by
 * its address is read no further than its code and instruction (pyread.h's
 * GS_PYREAD_WHERE). Lines are cached by (code id, instruction offset), which
 * therefore always name the same line table.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "shim/record/pyread.h"
#include "shim/base/base.h"
#include "shim/writer/writer.h"
#include "shim/record/record.h"
#include "shim/record/record_int.h"

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
    int (*add_pending_call)(int (*call)(void *), void *arg);
    int (*add_code_watcher)(int (*callback)(int event, pyobj *code)); /* 3.12 and later */
    int (*at_exit)(void (*func)(void));
    const char *function_attr; /* co_qualname (3.11 and later), else co_name */
    /* threading's names (gs_python_starting_thread_name); NULL: not read */
    pyobj *(*module_dict_of_sys)(void);                     /* PyImport_GetModuleDict */
    pyobj *(*module_dict)(pyobj *module);                   /* borrowed */
    pyobj *(*dict_get)(pyobj *dict, const char *key);       /* borrowed */
    ssize_t (*dict_size)(pyobj *dict);
    int (*dict_next)(pyobj *dict, ssize_t *pos, pyobj **key, pyobj **value);
    pyobj *(*instance_dict)(pyobj *o, void *context);       /* new reference */
    void *(*thread_head)(void *interp);                     /* PyInterpreterState_ThreadHead */
} py;

enum { UNKNOWN, LOOKING, ABSENT, READY };
static int state; /* read without a lock: UNKNOWN -> LOOKING -> ABSENT or READY */

static void *sym(const char *name) { return gs_real_dlsym(RTLD_DEFAULT, name); }

/* ---- reading frames from memory: whether, and how far it is trusted ---- */

#define CHECKED_WALKS 8        /* walks with checked loads before plain ones */
#define CROSS_CHECKS 16        /* events with the GIL compared with the API first, */
#define CROSS_CHECK_EVERY 1024 /* then one in so many */

enum { DIRECT_OFF, DIRECT_CHECKED, DIRECT_PLAIN };
static struct {
    struct gs_pylayout layout;
    int mode;          /* DIRECT_*, read and written atomically */
    unsigned walks;    /* walks that read with checked loads and passed */
    unsigned with_gil; /* events read from memory by a thread with the GIL */
    char version[16];  /* "3.11.2", for what is said on stderr */
} direct;

static void direct_init(int minor, const char *version)
{
    snprintf(direct.version, sizeof direct.version, "%.*s", (int)strcspn(version, " "), version);
    const char *why = NULL;
    if (gs_config()->python == 2)
        return; /* GPUSHIM_PYTHON=2: through the API only */
    if (gs_pylayout_init(&direct.layout, minor, sym, &why) != 0) {
        if (gs_config()->verbose)
            gs_say("Python %s: frames are read only where a thread holds the GIL (%s)",
                   direct.version, why);
        return;
    }
    /* For the tests of a layout that does not check out (docs/developing.md, Tests):
     * 1 misplaces the first line (the frames read, wrong lines), 2 the file
     * name (a str that is not one). */
    const char *b = getenv("GPUSHIM_TEST_BREAK_PYLAYOUT");
    if (b && *b == '1')
        direct.layout.co_firstlineno += 4;
    else if (b && *b == '2')
        direct.layout.co_filename += 8;
    if (gs_config()->verbose)
        gs_say("Python %s: frames read from memory, with or without the GIL", direct.version);
    __atomic_store_n(&direct.mode, DIRECT_CHECKED, __ATOMIC_RELEASE);
}

/* The layout did not check out: no more reading from memory, said once. */
static void direct_fail(const char *what)
{
    static int once;
    __atomic_store_n(&direct.mode, DIRECT_OFF, __ATOMIC_RELEASE);
    gs_warn_once(&once,
                 "Python %s: %s; Python frames are now recorded only where a thread holds the "
                 "GIL",
                 direct.version, what);
}

/* A walk with checked loads passed; enough of them and loads are plain. */
static void direct_passed(void)
{
    if (__atomic_add_fetch(&direct.walks, 1, __ATOMIC_RELAXED) == CHECKED_WALKS) {
        int expected = DIRECT_CHECKED;
        __atomic_compare_exchange_n(&direct.mode, &expected, DIRECT_PLAIN, 0, __ATOMIC_ACQ_REL,
                                    __ATOMIC_ACQUIRE);
    }
}

static int cross_check_due(void)
{
    unsigned k = __atomic_fetch_add(&direct.with_gil, 1, __ATOMIC_RELAXED);
    return k < CROSS_CHECKS || k % CROSS_CHECK_EVERY == 0;
}

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
    *(void **)&py.add_pending_call = sym("Py_AddPendingCall");
    *(void **)&py.at_exit = sym("Py_AtExit");
    if (minor >= 12)
        *(void **)&py.add_code_watcher = sym("PyCode_AddWatcher");
    *(void **)&py.module_dict_of_sys = sym("PyImport_GetModuleDict");
    *(void **)&py.module_dict = sym("PyModule_GetDict");
    *(void **)&py.dict_get = sym("PyDict_GetItemString");
    *(void **)&py.dict_size = sym("PyDict_Size");
    *(void **)&py.dict_next = sym("PyDict_Next");
    *(void **)&py.instance_dict = sym("PyObject_GenericGetDict");
    *(void **)&py.thread_head = sym("PyInterpreterState_ThreadHead");
    gs_handoff_init(gs_config()->handoff);
    direct_init(minor, v);
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
    uint64_t print;   /* unpinned: the fingerprint of what the code showed */
    uint32_t id;
    uint8_t pinned;   /* a reference is held: the address is this code's for good */
    uint8_t by_api;   /* its names were read through the API */
    struct code_shape *shape; /* unpinned: what the last frame that matched showed */
    uint64_t seen;    /* unpinned: watch.gone + 1 when the code at this address was
                       * last found to be the slot's (0: not while watching) */
};

/* What a frame of an unpinned code object showed, its bytes kept, so that
 * the next frame of it is checked by comparing them (memcmp) instead of
 * fingerprinting: hashing the whole line table, name and file on every
 * frame was, with the GIL released (every PyTorch op), the larger part of
 * what a Python frame cost. The comparison is exact, so it is at least as
 * sure as the fingerprint. */
#define SHAPE_MAX 4096 /* longer are fingerprinted each time */
struct code_shape {
    uint32_t file_bytes, name_bytes, table_len;
    int first_line;
    uint8_t file_kind, name_kind;
    uint8_t bytes[]; /* file, name, line table */
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

/* The slot of code, NULL if it has none. Call with codes_lock held. */
static struct code_slot *code_find(const void *code)
{
    if (!codes.nslots)
        return NULL;
    struct code_slot *s = code_probe(codes.slots, codes.nslots, code);
    return s->code ? s : NULL;
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

/* A new id for code, its PYCODE record (body, the names already in it)
 * pushed before anyone is handed the id; pinned with a reference where pin
 * is set (the GIL is held). 0 when the table is full or out of memory.
 * Call with codes_lock held. */
static uint32_t code_define(const void *code, struct gs_pycode_body *body, uint64_t print, int pin,
                            int by_api)
{
    struct code_slot *s = code_find(code);
    if (!s) {
        if (codes.next_id >= GS_PY_MAX_CODE || code_room() != 0)
            return 0;
        s = code_probe(codes.slots, codes.nslots, code);
        codes.used++;
    } else if (codes.next_id >= GS_PY_MAX_CODE) {
        return 0;
    }
    s->code = code;
    free(s->shape); /* what another code at this address showed */
    s->shape = NULL;
    s->seen = 0;
    s->id = body->id = ++codes.next_id;
    s->print = print;
    s->by_api = (uint8_t)by_api;
    if (pin && !s->pinned)
        py.incref((pyobj *)code); /* kept for good: its address is never another code's */
    s->pinned |= (uint8_t)pin;
    gs_emit(body, (uint32_t)(sizeof *body + body->file_len + body->name_len), 0);
    return s->id;
}

union pycode_record {
    struct gs_pycode_body b;
    uint8_t bytes[sizeof(struct gs_pycode_body) + GS_PY_MAX_FILE + GS_PY_MAX_NAME];
};

/* ---- code objects destroyed: when a known one needs no check ---- */

/* Since 3.12 an interpreter calls code watchers (PyCode_AddWatcher) after
 * it makes a code object and before it destroys one (Objects/codeobject.c,
 * code_dealloc: before anything is freed). Counting the destructions makes
 * an unpinned slot's check free while none happens: a slot found to hold
 * the code object at its address when watch.gone was G still holds it
 * while watch.gone is G, since no code object was destroyed and so none at
 * that address was replaced. A frame's code object lives as long as the
 * frame (the thread is inside the call recorded); one made at a destroyed
 * one's address was made after the count went up, and the thread that ran
 * the frame has seen the count since, through the GIL it took to run it.
 * Watchers are the main interpreter's, whose threads alone are read, and
 * only without the GIL: once a sub-interpreter exists, PyGILState_Check
 * answers 1 for good, and every code object read is pinned instead.
 *
 * A watcher is added only with the GIL held, never taken here: it is asked
 * for with Py_AddPendingCall, which a thread may call without the GIL, and
 * the main thread adds it when it next checks its eval loop's breaker: late,
 * or never, while it runs no Python (a join, an embedding program's C).
 * Until then, and where none can be added (3.11 and earlier; the
 * interpreter's 8 code watchers taken), a slot is checked by what the frame
 * shows (same_shape). It is asked for only by a thread with no thread state
 * attached: from 3.13 the pending calls' lock, when another thread holds
 * it, lets go of the GIL of an attached one and takes it again.
 *
 * Finalization clears the watchers (interpreter_clear) before Py_AtExit's
 * functions run: code objects destroyed in between are not counted, but by
 * then Py_IsInitialized() answers 0 and no frame is read. stop_watching
 * ends the counting for the rest of the process: an interpreter started
 * again gets no watcher. */
enum { WATCH_NONE, WATCH_ASKED, WATCH_ON, WATCH_NEVER };
static struct {
    int state;     /* WATCH_*, read and written atomically */
    uint64_t gone; /* at least the code objects destroyed while WATCH_ON */
} watch;

static int on_code_event(int event, pyobj *code)
{
    (void)code;
    if (event != 0) /* not PY_CODE_EVENT_CREATE (0 in 3.12 to 3.14): counted as gone */
        __atomic_add_fetch(&watch.gone, 1, __ATOMIC_RELEASE);
    return 0;
}

/* Py_AtExit's: Python is finalized. */
static void stop_watching(void)
{
    __atomic_store_n(&watch.state, WATCH_NEVER, __ATOMIC_RELEASE);
    __atomic_add_fetch(&watch.gone, 1, __ATOMIC_RELEASE);
}

/* Py_AddPendingCall's call: in the main thread, the GIL held. */
static int start_watching(void *arg)
{
    (void)arg;
    int on = py.at_exit(stop_watching) == 0; /* sets no exception */
    if (on && py.add_code_watcher(on_code_event) < 0) {
        py.err_clear(); /* what the refusal set */
        on = 0;
    }
    __atomic_store_n(&watch.state, on ? WATCH_ON : WATCH_NEVER, __ATOMIC_RELEASE);
    if (gs_config()->verbose)
        gs_say("Python %s: %s", direct.version,
               on ? "code objects watched: a code object seen before is not checked again"
                  : "no code watcher could be added; code objects are checked at each frame");
    return 0;
}

/* Asks once for the watcher (again where the pending calls were full),
 * from a thread with no thread state attached. */
static void ask_to_watch(void)
{
    int expected = WATCH_NONE;
    if (!py.add_code_watcher || !py.add_pending_call || !py.at_exit ||
        __atomic_load_n(&watch.state, __ATOMIC_RELAXED) != WATCH_NONE || py.tstate_unchecked() ||
        !__atomic_compare_exchange_n(&watch.state, &expected, WATCH_ASKED, 0, __ATOMIC_ACQ_REL,
                                     __ATOMIC_RELAXED))
        return;
    /* not after finalization, whose pending calls are gone with the runtime */
    if (!py.is_initialized() || py.add_pending_call(start_watching, NULL) != 0)
        __atomic_store_n(&watch.state, WATCH_NONE, __ATOMIC_RELEASE);
}

/* While watching, watch.gone + 1: what a slot found now is marked with
 * (struct code_slot's seen); 0 otherwise. */
static uint64_t watch_mark(void)
{
    if (__atomic_load_n(&watch.state, __ATOMIC_ACQUIRE) != WATCH_ON)
        return 0;
    return __atomic_load_n(&watch.gone, __ATOMIC_ACQUIRE) + 1;
}

/* ---- code objects through the API (the GIL held) ---- */

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

/* The id of the code object of a frame, resolving it the first time. 0 when
 * it cannot be had. Call with codes_lock held; it is let go meanwhile when
 * the code is new (its names are read with no shim lock held). Only a pinned
 * slot is taken as is (an unpinned one may be of a code object since freed),
 * and once reading from memory has failed, only one whose names the API read. */
static int api_slot(const struct code_slot *s)
{
    return s && s->pinned &&
           (s->by_api || __atomic_load_n(&direct.mode, __ATOMIC_ACQUIRE) != DIRECT_OFF);
}

static uint32_t code_id(pyobj *code)
{
    struct code_slot *s = code_find(code);
    if (api_slot(s))
        return s->id;
    pthread_mutex_unlock(&codes_lock);

    union pycode_record body;
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
    s = code_find(code); /* only the GIL's holder pins, but be sure */
    return api_slot(s) ? s->id : code_define(code, &body.b, 0, 1, 1);
}

/* ---- code objects read from memory ---- */

/* Does f show what the slot's code showed when its shape was kept? */
static int same_shape(const struct code_slot *s, const struct gs_pyframe *f)
{
    const struct code_shape *h = s->shape;
    if (!h || h->first_line != f->first_line || h->file_kind != f->file_kind ||
        h->name_kind != f->name_kind || h->table_len != f->table_len ||
        h->file_bytes != f->file_len * f->file_kind || h->name_bytes != f->name_len * f->name_kind)
        return 0;
    const uint8_t *b = h->bytes;
    return memcmp(b, f->file, h->file_bytes) == 0 &&
           memcmp(b + h->file_bytes, f->name, h->name_bytes) == 0 &&
           memcmp(b + h->file_bytes + h->name_bytes, f->table, h->table_len) == 0;
}

/* Keeps what f shows as the slot's shape (none where it cannot). */
static void keep_shape(struct code_slot *s, const struct gs_pyframe *f)
{
    free(s->shape);
    s->shape = NULL;
    size_t file = (size_t)f->file_len * f->file_kind, name = (size_t)f->name_len * f->name_kind;
    size_t n = file + name + f->table_len;
    if (n > SHAPE_MAX || !(s->shape = malloc(sizeof *s->shape + n)))
        return;
    *s->shape = (struct code_shape){(uint32_t)file, (uint32_t)name, f->table_len, f->first_line,
                                    f->file_kind, f->name_kind};
    if (file)
        memcpy(s->shape->bytes, f->file, file);
    if (name)
        memcpy(s->shape->bytes + file, f->name, name);
    if (f->table_len)
        memcpy(s->shape->bytes + file + name, f->table, f->table_len);
}

/* A fingerprint of what a frame shows of its code object. */
static uint64_t mix(uint64_t h, const void *p, size_t n)
{
    const uint8_t *b = p;
    for (; n >= 8; b += 8, n -= 8) {
        uint64_t v;
        memcpy(&v, b, 8);
        h = (h ^ v) * 0x9e3779b97f4a7c15ull;
        h ^= h >> 29;
    }
    uint64_t v = (uint64_t)n << 56;
    memcpy(&v, b, n);
    h = (h ^ v) * 0xff51afd7ed558ccdull;
    return h ^ (h >> 32);
}

static uint64_t fingerprint(const struct gs_pyframe *f)
{
    uint64_t h = mix((uint64_t)(uint32_t)f->first_line, f->file, (size_t)f->file_len * f->file_kind);
    h = mix(h, f->name, (size_t)f->name_len * f->name_kind);
    return mix(h, f->table, f->table_len);
}

/* Writes the characters of a str (n of them, kind bytes each) as UTF-8 into
 * out, at most max bytes and never half a character; returns the bytes. A
 * surrogate (which UTF-8 cannot hold) is written as '?'. */
static size_t utf8(const char *chars, uint32_t n, uint8_t kind, char *out, size_t max)
{
    size_t o = 0;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t c;
        if (kind == 1)
            c = (uint8_t)chars[i];
        else if (kind == 2) {
            uint16_t c2;
            memcpy(&c2, chars + 2 * (size_t)i, 2);
            c = c2;
        } else
            memcpy(&c, chars + 4 * (size_t)i, 4);
        if (c >= 0xd800 && c < 0xe000)
            c = '?';
        size_t len = c < 0x80 ? 1 : c < 0x800 ? 2 : c < 0x10000 ? 3 : 4;
        if (o + len > max)
            break;
        if (len == 1) {
            out[o++] = (char)c;
            continue;
        }
        static const uint8_t lead[5] = {0, 0, 0xc0, 0xe0, 0xf0};
        for (size_t k = len - 1; k > 0; k--) {
            out[o + k] = (char)(0x80 | (c & 0x3f));
            c >>= 6;
        }
        out[o] = (char)(lead[len] | c);
        o += len;
    }
    return o;
}

/* The id of a frame's code object, read from memory, into *id (0 when it
 * cannot be had); pinned where pin is set (the GIL is held). Its address is
 * enough where its slot is pinned, or was found to hold it when
 * watch_mark() was mark (not 0) and no pin is wanted; else the frame's
 * names are read (gs_pyread_code) and checked against the slot, which is
 * marked found at mark. 0, or -1 when the names cannot be read. Call with
 * codes_lock held. */
static int code_id_read(struct gs_pyframe *f, int pin, uint64_t mark, uint32_t *id)
{
    struct code_slot *s = code_find(f->code);
    *id = s ? s->id : 0;
    if (s && (s->pinned || (mark && !pin && s->seen == mark)))
        return 0;
    if (gs_pyread_code(&direct.layout, f) != 0)
        return -1;
    int same = s && same_shape(s, f);
    uint64_t print = same ? 0 : fingerprint(f);
    if (s && !same && s->print == print) {
        keep_shape(s, f); /* the same code, showing other objects: kept for next time */
        same = 1;
    }
    if (same) {
        if (pin) {
            py.incref((pyobj *)f->code);
            s->pinned = 1;
            free(s->shape); /* the address is this code's for good: no more checks */
            s->shape = NULL;
        }
        s->seen = mark;
        return 0;
    }
    union pycode_record body;
    memset(&body.b, 0, sizeof body.b);
    body.b.type = GS_REC_PYCODE;
    size_t flen = utf8(f->file, f->file_len, f->file_kind, body.b.data, GS_PY_MAX_FILE);
    size_t nlen = utf8(f->name, f->name_len, f->name_kind, body.b.data + flen, GS_PY_MAX_NAME);
    body.b.file_len = (uint16_t)flen;
    body.b.name_len = (uint16_t)nlen;
    body.b.first_line = f->first_line > 0 ? (uint32_t)f->first_line : 0;
    *id = code_define(f->code, &body.b, print, pin, 0);
    if (*id && !pin && (s = code_find(f->code)) != NULL) {
        keep_shape(s, f);
        s->seen = mark;
    }
    return 0;
}

/* ---- lines, by (code id, instruction offset in bytes) ---- */

/* Working out a line decodes the code's line table from its start: the
 * larger part of a walk's cost, hence the cache. A code id always names the
 * same line table (see the top of the file). Guarded by codes_lock. */
#define LINE_CACHE 4096
static struct line_slot {
    uint32_t id;
    int addr, line;
    int by_api; /* the API's answer (read from memory otherwise) */
} lines[LINE_CACHE];

static struct line_slot *line_slot(uint32_t id, int addr)
{
    return &lines[((size_t)id * 0x9e3779b1u ^ (size_t)addr * 0x85ebca6bu) & (LINE_CACHE - 1)];
}

/* The line of an API frame (f's code has id). */
static int api_line(pyobj *f, uint32_t id)
{
    int addr = id && py.frame_lasti ? py.frame_lasti(f) : -1; /* bytes, since 3.11 */
    if (addr < 0)
        return py.frame_line(f);
    struct line_slot *s = line_slot(id, addr);
    if (s->id != id || s->addr != addr ||
        (!s->by_api && __atomic_load_n(&direct.mode, __ATOMIC_ACQUIRE) == DIRECT_OFF)) {
        s->id = id;
        s->addr = addr;
        s->line = py.frame_line(f);
        s->by_api = 1;
    }
    return s->line;
}

/* The line of a frame read from memory (f's code has id) into *line; its
 * names are read where the line is not cached. 0, or -1 when they cannot
 * be (the layout is wrong: gs_pyread_code). */
static int read_line(struct gs_pyframe *f, uint32_t id, int *line)
{
    struct line_slot *s = line_slot(id, f->addr);
    if (s->id != id || s->addr != f->addr) {
        if (gs_pyread_code(&direct.layout, f) != 0)
            return -1;
        s->id = id;
        s->addr = f->addr;
        s->line = gs_pylines_line(direct.layout.lines, f->table, f->table_len, f->first_line,
                                  f->addr);
        s->by_api = 0;
    }
    *line = s->line;
    return 0;
}

/* ---- the walks ---- */

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

/* A walk through the API, the GIL held: the thread's exception state kept
 * aside, the collector off, codes_lock held; frames are new references. */
struct api_state {
    pyobj *type, *value, *tb;
    int collecting;
};

static pyobj *api_begin(struct api_state *w)
{
    py.err_fetch(&w->type, &w->value, &w->tb);
    w->collecting = py.gc_disable ? py.gc_disable() : 0;
    pyobj *f = py.get_frame();
    if (f)
        py.incref(f); /* borrowed; the frames from PyFrame_GetBack are new references */
    pthread_mutex_lock(&codes_lock);
    return f;
}

static pyobj *api_back(pyobj *f)
{
    pyobj *back = py.frame_back(f);
    py.decref(f);
    return back;
}

static void api_end(struct api_state *w, pyobj *f)
{
    pthread_mutex_unlock(&codes_lock);
    if (f)
        py.decref(f);
    if (w->collecting > 0)
        py.gc_enable();
    py.err_restore(w->type, w->value, w->tb);
}

/* Through the API, the GIL held: pcs[n..max) as Python pcs; returns the
 * new count. */
static unsigned api_walk(uint64_t *pcs, unsigned n, unsigned max)
{
    struct api_state w;
    pyobj *f = api_begin(&w);
    while (f && n < max) {
        pyobj *code = py.frame_code(f);
        uint32_t id = code ? code_id(code) : 0;
        int line = api_line(f, id);
        if (code)
            py.decref(code);
        if (id)
            pcs[n++] = gs_py_pc(id, line > 0 ? (uint32_t)line : 0);
        f = api_back(f);
    }
    api_end(&w, f);
    return n;
}

/* The frames of the thread whose state is ts, read as how says, as Python
 * pcs in pcs[n..max) (code objects pinned where pin is set, known by their
 * address alone where mark is not 0: code_id_read): the new count, or -1
 * when something read is not what the layout says. Takes codes_lock. */
static int walk_pcs(const void *ts, enum gs_pyread_mode how, int pin, uint64_t mark,
                    uint64_t *pcs, unsigned n, unsigned max)
{
    enum { BATCH = 16 }; /* frames read at a time: little stack for deep ones */
    struct gs_pyframe fr[BATCH];
    const void *next = NULL;
    int k, i, want;
    pthread_mutex_lock(&codes_lock); /* once a walk: the reads take less than the lock */
    do {
        want = (int)(max - n < BATCH ? max - n : BATCH);
        k = gs_pyread_frames(&direct.layout, how, ts, &next, fr, (unsigned)want);
        for (i = 0; i < k; i++) {
            struct gs_pyframe *f = &fr[i];
            uint32_t id;
            int line = 0;
            if (code_id_read(f, pin, mark, &id) != 0 || (id && read_line(f, id, &line) != 0))
                break;
            if (id)
                pcs[n++] = gs_py_pc(id, line > 0 ? (uint32_t)line : 0);
        }
    } while (i == k && k == want && next && n < max);
    pthread_mutex_unlock(&codes_lock);
    return k < 0 || i < k ? -1 : (int)n;
}

/* From memory: pcs[n..max) as Python pcs; returns the new count, or -1
 * when the layout did not check out (direct_fail said why). held: the GIL
 * is held (code objects are pinned). */
static int read_walk(const void *ts, int mode, int held, uint64_t *pcs, unsigned n, unsigned max)
{
    uint64_t mark = watch_mark();
    if (!mark && !held)
        ask_to_watch();
    /* Once proved, plain loads; and where a code object may be known by its
     * address alone (pinned with the GIL, or watched), not its names first. */
    enum gs_pyread_mode how = mode != DIRECT_PLAIN ? GS_PYREAD_CHECKED
                              : held || mark   ? GS_PYREAD_WHERE
                                               : GS_PYREAD_PLAIN;
    int got = walk_pcs(ts, how, held, mark, pcs, n, max);
    if (got < 0) {
        direct_fail("its frames do not read as this version's layout says");
        return -1;
    }
    if (how == GS_PYREAD_CHECKED)
        direct_passed();
    return got;
}

/* Is the string attribute attr of o the str read from memory? */
static int same_str(pyobj *o, const char *attr, const char *chars, uint32_t n, uint8_t kind)
{
    static char api[GS_PY_MAX_FILE], mem[GS_PY_MAX_FILE]; /* codes_lock held */
    size_t a = string_attr(o, attr, api, sizeof api);
    size_t m = utf8(chars, n, kind, mem, sizeof mem);
    return a == m && memcmp(api, mem, a) == 0;
}

static long long_attr(pyobj *o, const char *attr)
{
    pyobj *v = py.getattr(o, attr);
    long l = v ? py.as_long(v) : -1;
    if (v)
        py.decref(v);
    py.err_clear();
    return l;
}

/* The GIL held: do the frames read from memory, at most max of them, say
 * what the API says, frame by frame (code object, file, function, first
 * line, line)? 1 yes, 0 no. */
static int cross_check(const void *ts, int mode, unsigned max)
{
    enum { BATCH = 16 };
    struct gs_pyframe fr[BATCH];
    enum gs_pyread_mode how = mode == DIRECT_PLAIN ? GS_PYREAD_PLAIN : GS_PYREAD_CHECKED;
    struct api_state w;
    pyobj *f = api_begin(&w);
    const void *next = NULL;
    unsigned seen = 0;
    int same = 1;
    while (same && seen < max) {
        unsigned want = max - seen < BATCH ? max - seen : BATCH;
        int k = gs_pyread_frames(&direct.layout, how, ts, &next, fr, want);
        if (k < 0) {
            same = 0;
            break;
        }
        for (int i = 0; same && i < k; i++, seen++) {
            if (!f) {
                same = 0; /* more frames in memory than the API shows */
                break;
            }
            pyobj *code = py.frame_code(f);
            int line = gs_pylines_line(direct.layout.lines, fr[i].table, fr[i].table_len,
                                       fr[i].first_line, fr[i].addr);
            same = code == fr[i].code && py.frame_line(f) == line &&
                   long_attr(code, "co_firstlineno") == fr[i].first_line &&
                   same_str(code, "co_filename", fr[i].file, fr[i].file_len, fr[i].file_kind) &&
                   same_str(code, py.function_attr, fr[i].name, fr[i].name_len, fr[i].name_kind);
            if (code)
                py.decref(code);
            f = api_back(f);
        }
        if ((unsigned)k < want)
            break;
    }
    if (same && seen < max && f)
        same = 0; /* fewer frames in memory than the API shows */
    api_end(&w, f);
    return same;
}

/* ---- the thread that waits for this one ---- */

/* A thread with a thread state but no Python frame of its own (PyTorch's
 * autograd engine threads: PythonEngine::thread_init makes one for each,
 * then releases the GIL) works for a thread that waits in a hand-off
 * function (handoff.c). Its frames are read here: the main interpreter's
 * thread states, from PyInterpreterState_ThreadHead along tstate->next
 * (offset 8, after prev, in every CPython 3.9 to 3.14), each one's
 * innermost frame; exactly one of them in a hand-off, and its frames follow
 * a GS_PY_PC_WAITER marker; none, or several, and nothing is linked.
 *
 * Another thread's memory is read with checked loads only, and nothing is
 * turned off when one fails: the list may change as it is read (a thread
 * state is unlinked under HEAD_LOCK, which is not taken here). The waiter
 * is blocked in C with the GIL released, so its frames stay as they are
 * while it waits (what pyread.c's own walk relies on); its innermost frame
 * is read again after the walk, and a waiter that moved on is not linked.
 * Code objects seen this way are never pinned (no reference count is
 * touched without the GIL) and are checked by what they show, as for a
 * thread's own frames read without the GIL.
 *
 * Every one of those loads is a system call (process_vm_readv), a link
 * about a hundred of them: too dear for each gradient of a backward. So a
 * link is kept by the backward it is for, where libtorch says which:
 * torch::autograd::get_current_graph_task_id() (torch/csrc/autograd/
 * engine.cpp: the id of the GraphTask the calling engine thread runs, -1
 * when none; ids come from a counter and are never used again), looked up
 * once a waiter in torch's hand-off is first found. While its GraphTask
 * runs, the thread that started it waits in Engine::execute, its frames as
 * they were: the link holds for every allocation of that backward. */
#define LINKS 16 /* backwards whose link is kept */

static struct {
    int (*task_id)(void); /* get_current_graph_task_id, once looked up */
    int looked;           /* looked up (found or not) */
    struct link {
        int task;           /* -1: free */
        unsigned n;         /* pcs kept, the marker first */
        uint64_t pcs[GS_MAX_FRAMES + 1];
    } links[LINKS];
    unsigned next;          /* the slot the next link goes in */
} kept = {.links = {[0 ... LINKS - 1] = {.task = -1}}};

/* The task this thread runs for libtorch's engine, or -1. */
static int current_task(void)
{
    int (*id)(void) = __atomic_load_n(&kept.task_id, __ATOMIC_ACQUIRE);
    return id ? id() : -1;
}

static unsigned scan_link(const void *self, uint64_t *pcs, unsigned n, unsigned max);

static int is_libtorch(struct dl_phdr_info *info, size_t size, void *path)
{
    (void)size;
    const char *name = info->dlpi_name;
    const char *base = name ? strrchr(name, '/') : NULL;
    if (base && !strncmp(base, "/libtorch_cpu.so", 16)) {
        snprintf(path, 4096, "%s", name);
        return 1;
    }
    return 0;
}

/* get_current_graph_task_id: in the process's scope (a program that loaded
 * it globally), else in libtorch_cpu, which torch._C brings in RTLD_LOCAL. */
static void *task_id_function(void)
{
    static const char name[] = "_ZN5torch8autograd25get_current_graph_task_idEv";
    void *f = sym(name);
    char path[4096];
    if (!f && dl_iterate_phdr(is_libtorch, path)) {
        void *h = dlopen(path, RTLD_LAZY | RTLD_NOLOAD);
        if (h) {
            f = gs_real_dlsym(h, name);
            dlclose(h); /* libtorch stays: torch._C holds it */
        }
    }
    return f;
}

static unsigned handoff_link(const void *self, uint64_t *pcs, unsigned n, unsigned max)
{
    if (!py.thread_head || !gs_handoff_any() || n + 2 > max)
        return n;
    int task = current_task();
    if (task >= 0) {
        pthread_mutex_lock(&codes_lock);
        for (unsigned i = 0; i < LINKS; i++) {
            const struct link *l = &kept.links[i];
            if (l->task == task && l->n <= max - n) {
                memcpy(pcs + n, l->pcs, l->n * sizeof pcs[0]);
                n += l->n;
                pthread_mutex_unlock(&codes_lock);
                return n;
            }
        }
        pthread_mutex_unlock(&codes_lock);
    }
    unsigned got = scan_link(self, pcs, n, max);
    if (got == n)
        return n;
    if (!__atomic_load_n(&kept.looked, __ATOMIC_ACQUIRE)) {
        /* a waiter was found: if it is torch's, libtorch is loaded by now */
        void *id = task_id_function();
        __atomic_store_n(&kept.task_id, (int (*)(void))id, __ATOMIC_RELEASE);
        __atomic_store_n(&kept.looked, 1, __ATOMIC_RELEASE);
        task = current_task();
    }
    if (task >= 0 && got - n <= GS_MAX_FRAMES + 1) {
        pthread_mutex_lock(&codes_lock);
        struct link *l = &kept.links[kept.next];
        kept.next = (kept.next + 1) % LINKS;
        l->task = task;
        l->n = got - n;
        memcpy(l->pcs, pcs + n, l->n * sizeof pcs[0]);
        pthread_mutex_unlock(&codes_lock);
    }
    return got;
}

/* The scan, and the walk of the one thread it finds waiting: pcs[n..max)
 * as handoff_link says, or nothing. */
static unsigned scan_link(const void *self, uint64_t *pcs, unsigned n, unsigned max)
{
    const void *ts = py.thread_head(py.main_interp()), *found = NULL, *found_code = NULL;
    int many = 0;
    for (int k = 0; ts && k < 256 && !many; k++) {
        if (ts != self) {
            const void *next = NULL;
            struct gs_pyframe fr;
            if (gs_pyread_frames(&direct.layout, GS_PYREAD_CHECKED, ts, &next, &fr, 1) == 1 &&
                gs_handoff_is(&fr)) {
                many = found != NULL;
                found = ts;
                found_code = fr.code;
            }
        }
        if (gs_pyread_ptr(ts, 8, &ts) != 0) /* tstate->next, 3.9 to 3.14 */
            break;
    }
    if (!found || many)
        return n;
    unsigned start = n;
    pcs[n++] = GS_PY_PC_WAITER;
    int got = walk_pcs(found, GS_PYREAD_CHECKED, 0, 0, pcs, n, max);
    if (got < 0 || (unsigned)got == n)
        return start; /* unreadable, or nothing of its own read */
    struct gs_pyframe again;
    const void *next = NULL;
    if (gs_pyread_frames(&direct.layout, GS_PYREAD_CHECKED, found, &next, &again, 1) != 1 ||
        again.code != found_code || !gs_handoff_is(&again))
        return start; /* it moved on while it was read */
    return (unsigned)got;
}

/* Reads from memory, where the layout is trusted so far: the new count,
 * or -1 to fall back to the API. */
static int try_read(int held, uint64_t *pcs, unsigned n, unsigned max)
{
    int mode = __atomic_load_n(&direct.mode, __ATOMIC_ACQUIRE);
    if (mode == DIRECT_OFF)
        return -1;
    const void *ts = py.this_thread_state(); /* the thread's own, attached or not */
    if (!ts)
        return held ? -1 : (int)n; /* no Python on this thread */
    if (held && cross_check_due() && !cross_check(ts, mode, max - n)) {
        direct_fail("its frames read from memory differ from what its API says");
        return -1;
    }
    unsigned start = n;
    if (!held)
        pcs[n++] = GS_PY_PC_RELEASED;
    int got = read_walk(ts, mode, held, pcs, n, max);
    if (got < 0)
        return -1;
    if (!held && (unsigned)got == n) { /* nothing of its own: another's? */
        unsigned linked = handoff_link(ts, pcs, start, max);
        return (int)(linked > start ? linked : start); /* else the caller's marker */
    }
    return got;
}

unsigned gs_python_frames(uint64_t *pcs, unsigned n, unsigned max)
{
    if (n >= max || !python_ready())
        return n;
    int held = holds_gil();
    if (held < 0)
        return n;
    unsigned start = n, depth = gs_config()->stack_depth;
    if (max - n > depth + 1)
        max = n + depth + 1; /* the frames, and the marker of a thread without the GIL */
    int got = try_read(held, pcs, n, held ? max - 1 : max);
    if (got >= 0)
        n = (unsigned)got;
    else if (held)
        n = api_walk(pcs, n, max - 1);
    if (n == start)
        pcs[n++] = held ? GS_PY_PC_NO_FRAME : GS_PY_PC_NO_GIL;
    return n;
}

/* ---- the name of the threading.Thread being started ---- */

/* Python is ready, or running and now looked up: a thread started before
 * the first event must not make the one lookup too early (an embedding
 * program that loads libpython later would go without Python frames). */
static int python_running(void)
{
    if (__atomic_load_n(&state, __ATOMIC_ACQUIRE) == UNKNOWN) {
        int (*initialized)(void) = (int (*)(void))sym("Py_IsInitialized");
        if (!initialized || !initialized())
            return 0;
    }
    return python_ready();
}

/* threading.Thread.start puts the thread in threading._limbo (`_limbo[self]
 * = self`), then starts it (_start_new_thread, 3.13's
 * _start_joinable_thread) with the GIL held, and the thread takes itself
 * out of _limbo once it runs (_bootstrap_inner). So while the starting
 * thread is inside pthread_create, _limbo holds the thread it starts:
 * alone, unless another thread is being started at the same time, which is
 * then not told apart; and the calling thread runs Thread.start of
 * threading.py (its innermost frame), not some other code that starts a
 * thread of its own while a Thread.start waits for the GIL between
 * `_limbo[self] = self` and the start. Its name is the `_name` of its
 * instance dictionary (Thread.__init__: `self._name = str(name or
 * _newname())`), read without
 * the attribute lookup, which a subclass could take over with Python code:
 * only C runs, dictionaries and a str, the collector off and the thread's
 * exception state kept, as for the frames. */
size_t gs_python_starting_thread_name(char *out, size_t max)
{
    if (!max || !python_running() || !py.module_dict_of_sys || !py.module_dict || !py.dict_get ||
        !py.dict_size || !py.dict_next || !py.instance_dict || holds_gil() != 1)
        return 0;
    pyobj *type, *value, *tb;
    py.err_fetch(&type, &value, &tb);
    int collecting = py.gc_disable ? py.gc_disable() : 0;
    size_t n = 0;
    char function[8] = "";
    int starting = 0;
    pyobj *frame = py.get_frame(); /* borrowed */
    pyobj *code = frame ? py.frame_code(frame) : NULL;
    pyobj *file = code ? py.getattr(code, "co_filename") : NULL;
    if (code && string_attr(code, "co_name", function, sizeof function - 1) == 5 &&
        !strcmp(function, "start") && file) {
        ssize_t flen = 0;
        const char *f = py.utf8(file, &flen);
        starting = f && flen >= 12 && !memcmp(f + flen - 12, "threading.py", 12);
    }
    if (file)
        py.decref(file);
    if (code)
        py.decref(code);
    pyobj *modules = starting ? py.module_dict_of_sys() : NULL;
    pyobj *threading = modules ? py.dict_get(modules, "threading") : NULL;
    pyobj *names = threading ? py.module_dict(threading) : NULL;
    pyobj *limbo = names ? py.dict_get(names, "_limbo") : NULL;
    pyobj *key, *thread = NULL, *dict = NULL;
    ssize_t pos = 0;
    if (limbo && py.dict_size(limbo) == 1 && py.dict_next(limbo, &pos, &key, &thread))
        dict = py.instance_dict(thread, NULL);
    pyobj *name = dict ? py.dict_get(dict, "_name") : NULL;
    ssize_t len = 0;
    const char *chars = name ? py.utf8(name, &len) : NULL;
    if (chars && len > 0) {
        n = (size_t)len < max ? (size_t)len : max;
        while (n < (size_t)len && n && ((unsigned char)chars[n] & 0xc0) == 0x80)
            n--; /* cut before a character, not inside one */
        memcpy(out, chars, n);
    }
    if (dict)
        py.decref(dict);
    py.err_clear();
    if (collecting > 0)
        py.gc_enable();
    py.err_restore(type, value, tb);
    return n;
}

void gs_python_lock(void) { pthread_mutex_lock(&codes_lock); }
void gs_python_unlock(void) { pthread_mutex_unlock(&codes_lock); }

void gs_python_reset_after_fork(void)
{
    /* The child's trace starts afresh: its code objects are defined again.
     * The references held stay (the objects are the child's copies). */
    pthread_mutex_init(&codes_lock, NULL);
    for (size_t i = 0; i < codes.nslots; i++)
        free(codes.slots[i].shape);
    free(codes.slots);
    memset(&codes, 0, sizeof codes);
    memset(lines, 0, sizeof lines);
    for (unsigned i = 0; i < LINKS; i++) /* their code ids are the parent's trace's */
        kept.links[i].task = -1;
}
