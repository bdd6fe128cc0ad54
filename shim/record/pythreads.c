/*
 * pythreads.c - the names a Python program gives its threads
 * (threading.Thread(name="loader-3"), "Thread-2 (worker)" by default),
 * which CPython up to 3.13 never hands to the OS, so that every such
 * thread reads as the process ("python3").
 *
 * The pthread_create hook (hooks_threads.c) asks python.c for the name of
 * the threading.Thread being started, which it reads with the GIL the
 * starting thread holds, and notes it here by the new thread's pthread_t;
 * the new thread takes it at its first event (record.c), in place of its
 * OS name, and keeps it. A Python thread runs Python, and so allocates,
 * only once the starting thread lets the GIL go, after the note is made.
 *
 * Notes not taken (a thread that never allocates) are overwritten, oldest
 * first, after PENDING more; a pthread_t used again by a later thread is
 * noted anew by that thread's own start.
 */
#include <pthread.h>
#include <string.h>

#include "gpushim_trace.h"
#include "shim/record/record.h"
#include "shim/record/record_int.h"

#define PENDING 256

static struct {
    pthread_mutex_t lock;
    unsigned used; /* notes not yet taken; read without the lock to skip it */
    unsigned next; /* the slot the next note goes in */
    struct note {
        pthread_t thread;
        uint8_t len; /* 0: free */
        char name[GS_MAX_THREAD_NAME];
    } notes[PENDING];
} pending = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* The note of thread t, the lock held; NULL: none. */
static struct note *note_of(pthread_t t)
{
    for (unsigned i = 0; i < PENDING; i++)
        if (pending.notes[i].len && pthread_equal(pending.notes[i].thread, t))
            return &pending.notes[i];
    return NULL;
}

void gs_pythreads_started(pthread_t t)
{
    char name[GS_MAX_THREAD_NAME];
    size_t len = gs_python_starting_thread_name(name, sizeof name);
    if (!len && !__atomic_load_n(&pending.used, __ATOMIC_RELAXED))
        return; /* nothing to note, and no note of a thread gone to clear */
    pthread_mutex_lock(&pending.lock);
    struct note *n = note_of(t); /* a thread before it with this pthread_t, gone */
    if (!n && len) {
        n = &pending.notes[pending.next];
        pending.next = (pending.next + 1) % PENDING;
        if (!n->len)
            __atomic_add_fetch(&pending.used, 1, __ATOMIC_RELAXED);
    } else if (n && !len) {
        n->len = 0;
        __atomic_sub_fetch(&pending.used, 1, __ATOMIC_RELAXED);
        n = NULL;
    }
    if (n) {
        n->thread = t;
        n->len = (uint8_t)len;
        memcpy(n->name, name, len);
    }
    pthread_mutex_unlock(&pending.lock);
}

size_t gs_pythreads_take(char *out, size_t max)
{
    if (!__atomic_load_n(&pending.used, __ATOMIC_RELAXED))
        return 0;
    size_t len = 0;
    pthread_mutex_lock(&pending.lock);
    struct note *n = note_of(pthread_self());
    if (n) {
        len = n->len < max ? n->len : max;
        memcpy(out, n->name, len);
        n->len = 0;
        __atomic_sub_fetch(&pending.used, 1, __ATOMIC_RELAXED);
    }
    pthread_mutex_unlock(&pending.lock);
    return len;
}

void gs_pythreads_reset_after_fork(void)
{
    /* the child's one thread was not started by pthread_create there */
    pthread_mutex_init(&pending.lock, NULL);
    memset(pending.notes, 0, sizeof pending.notes);
    pending.used = pending.next = 0;
}
