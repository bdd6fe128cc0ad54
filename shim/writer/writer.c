/*
 * writer.c - the trace's life: created on the first event, drained from the
 * ring into chunks by a thread every GPUSHIM_FLUSH_MS (100 ms) and at exit,
 * let go of in a forked child.
 *
 * gs_emit is the one door into the ring. The first call creates the trace
 * and its ring file "<trace>.ring" (so a process that never touches CUDA
 * leaves nothing) and starts the writer thread. A producer that finds the
 * ring full drains it itself, so nothing is dropped and nothing depends on
 * the thread being scheduled.
 *
 * The ring file is what makes a death lose nothing: an event is in its
 * pages when the hook returns. Each chunk ends with the ring position it
 * covers (GS_REC_RING_POS), and the ring's tail moves only after the chunk
 * is in the file, so the trace and the ring together always hold every
 * event once; the analyzer joins them. A clean finish (the END record at
 * exit or exec) removes the ring file.
 *
 * When the trace cannot be written (disk full, quota, I/O error), the shim
 * says so once, cuts the file back to its last whole chunk, notes where and
 * why in the ring's header, and stops writing; events then go on into the
 * ring (allocated on disk in advance) until it is full, and after that are
 * counted as lost. The program runs on unharmed. Without a ring file (it
 * could not be made), where and why go into a small chunk of their own at
 * the cut (GS_REC_STOPPED), for which room is kept past every chunk
 * written; it is rewritten in place as events are lost, and at exit with
 * the end's time, so the trace says it stopped, not that the process died.
 *
 * A forked child inherits the parent's ring mapping and file descriptor;
 * both are the parent's, so the child lets go of them and starts its own
 * trace on its own first event (gs_writer_reset_after_fork, called by the
 * pthread_atfork handlers of fork.c, which take every shim lock across the
 * fork so none is left held in the child).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "analyzer/trace/encode.h"
#include "analyzer/trace/meta.h"
#include "shim/base/base.h"
#include "shim/file/file.h"
#include "shim/bound/bound.h"
#include "shim/writer/writer.h"


enum state { NONE, OPEN, FINISHED, FAILED };

static struct {
    pthread_mutex_t lock;      /* the file and the drain; before ring_lock */
    pthread_mutex_t ring_lock; /* the ring's head; the wake condition */
    pthread_cond_t wake;
    struct gs_ring ring;
    int state; /* enum state; read without the lock as a hint */
    struct gs_trace_file tf;
    pid_t pid; /* the process that created the trace */
    char ring_path[4096 + 8]; /* "" when the ring is not in a file */
    int ring_removed;         /* the trace was finished and the ring file removed */
    uint64_t chunk_pos;  /* the ring position after the last entry in raw */
    struct gs_encoder enc;     /* with columns when they could be had */
    uint8_t *raw, *scratch, *body;
    uint8_t *whole; /* the chunk: the encoder's columns, then the records in raw */
    size_t raw_len, scratch_len;
    int thread_running;
    int stop;
    /* events in the chunk in the making, and in the file (drain_locked) */
    uint64_t chunk_events, events_written;
    /* without a ring file, once the file took no more: the GS_REC_STOPPED
     * chunk at stopped_at, and what it says */
    int stopped;
    uint64_t stopped_at, stopped_errno, stopped_time_ns, stopped_lost;
} w = {
    .lock = PTHREAD_MUTEX_INITIALIZER,
    .ring_lock = PTHREAD_MUTEX_INITIALIZER,
    .tf.fd = -1,
};


static __thread int in_writer_thread;

static void fail(const char *what)
{
    static int once;
    gs_warn_once(&once, "cannot %s trace %s: %s; recording stops, the program goes on", what,
                 w.tf.path, strerror(errno));
    __atomic_store_n(&w.state, FAILED, __ATOMIC_RELEASE);
}

/* Is w.tf.fd still our file? A program may close descriptors it does not know
 * (a daemon closing them all) and reuse the number for a file of its own. */
static int still_ours(void)
{
    struct stat sb;
    if (fstat(w.tf.fd, &sb) == 0 && sb.st_dev == w.tf.dev && sb.st_ino == w.tf.ino)
        return 1;
    errno = EBADF;
    return 0;
}

/* Writes (again) the GS_REC_STOPPED chunk: the events the program made
 * and those not in the file so far; end_ns: the end's time, 0 before it. */
static void stopped_write(uint64_t end_ns)
{
    if (w.stopped != 1) /* (and no ring header before the trace was made) */
        return;
    uint64_t made = __atomic_load_n(&w.ring.hdr->events, __ATOMIC_RELAXED) +
                    __atomic_load_n(&w.ring.hdr->lost, __ATOMIC_RELAXED);
    uint64_t lost = made - w.events_written;
    if ((lost == w.stopped_lost && !end_ns) || !still_ours())
        return;
    struct gs_stopped s = {.err = w.stopped_errno, .offset = w.stopped_at,
                           .time_ns = w.stopped_time_ns, .events = made, .lost = lost,
                           .end_ns = end_ns};
    if (gs_write_stopped(w.tf.fd, w.stopped_at, &s) == 0)
        w.stopped_lost = lost;
    else
        w.stopped = 2; /* no room even for it: the trace ends as a death would */
}

/* The trace file could not take a chunk: said once; the file is cut back
 * to its last whole chunk, and the ring keeps what follows, with where and
 * why in its header, as long as it has room; without a ring file, the
 * GS_REC_STOPPED chunk says so. */
static void write_failed(void)
{
    int e = errno;
    static int once;
    if (w.ring.shared) {
        gs_warn_once(&once, "cannot write trace %s: %s; it stops at %llu bytes, the next events "
                            "are kept in %s while it has room; the program goes on",
                     w.tf.path, strerror(e), (unsigned long long)w.tf.size, w.ring_path);
        struct gs_ring_header *h = w.ring.hdr;
        h->fail_errno = e;
        h->fail_offset = w.tf.size;
        h->fail_time_ns = gs_now_ns() - w.tf.start_ns;
        __atomic_store_n(&h->state, GS_RING_FAILED, __ATOMIC_RELEASE);
    } else {
        gs_warn_once(&once, "cannot write trace %s: %s; recording stops, the program goes on",
                     w.tf.path, strerror(e));
    }
    if (still_ours() && ftruncate(w.tf.fd, (off_t)w.tf.size) != 0) {
        /* the reader skips a partial last chunk anyway */
    }
    if (!w.ring.shared && !w.stopped) {
        w.stopped = 1;
        w.stopped_at = w.tf.size;
        w.stopped_errno = (uint64_t)e;
        w.stopped_time_ns = gs_now_ns() - w.tf.start_ns;
        w.stopped_lost = UINT64_MAX; /* written whatever it is */
        stopped_write(0);
    }
    __atomic_store_n(&w.state, FAILED, __ATOMIC_RELEASE);
}

/* Writes the records in raw as one chunk, ending with the ring position
 * they reach; then the ring may reuse what they came from. */
static void write_chunk(void)
{
    if (!w.raw_len)
        return;
    if (w.ring.shared)
        w.raw_len += gs_encode_ring_pos(w.chunk_pos, w.raw + w.raw_len);
    const uint8_t *chunk = w.raw;
    size_t len = w.raw_len, cols = gs_encode_columns(&w.enc, w.whole);
    if (cols) {
        memcpy(w.whole + cols, w.raw, w.raw_len);
        chunk = w.whole;
        len += cols;
    }
    gs_bound_feed_chunk(chunk, len);
    size_t written;
    if (w.state != FAILED) {
        if (!still_ours() ||
            gs_write_chunk(w.tf.fd, chunk, len, w.scratch, w.scratch_len, &written) != 0)
            write_failed();
        else if (!w.ring.shared && !gs_fsize_room(w.tf.size + written + GS_STOPPED_CHUNK_LEN))
            write_failed(); /* (no room left for saying so: this chunk is cut too) */
        else {
            w.tf.size += written;
            w.events_written += w.chunk_events;
            __atomic_store_n(&w.ring.hdr->tail, w.chunk_pos, __ATOMIC_RELEASE);
            gs_bound_after_chunk(&w.tf, w.chunk_pos, in_writer_thread);
            if (!w.ring.shared) /* room on the disk for GS_REC_STOPPED, if it comes to that */
                (void)fallocate(w.tf.fd, FALLOC_FL_KEEP_SIZE, (off_t)w.tf.size,
                                GS_STOPPED_CHUNK_LEN);
        }
    }
    w.chunk_events = 0;
    w.raw_len = 0;
    gs_encoder_new_chunk(&w.enc);
}

/* Adds a record to the chunk in the making; next: the ring position after
 * the entry it came from. The chunk's records and columns together stay
 * within GS_WRITER_CHUNK_RAW (and the ring position's record after them). */
static void add_record(const void *body, uint32_t len, uint64_t next)
{
    uint32_t events;
    size_t held = gs_encoder_held(&w.enc, &events);
    if (w.raw_len + held + GS_MAX_RECORD + GS_COLUMN_EVENT_MAX + 16 > GS_WRITER_CHUNK_RAW ||
        events == GS_COLUMN_EVENTS)
        write_chunk();
    w.raw_len += gs_encode(&w.enc, body, len, w.raw + w.raw_len);
    w.chunk_pos = next;
}

/* record_body's events (gs_emit's timed ones, counted in the ring's
 * header) are every body but the modules, stacks, Python code and threads
 * named. */
static int is_event(uint8_t type)
{
    return type != GS_REC_MODULE && type != GS_REC_STACK && type != GS_REC_PYCODE &&
           type != GS_REC_THREAD;
}

/* Moves everything in the ring into the file. Call with w.lock held. */
static void drain_locked(void)
{
    if (w.state == FAILED)
        return; /* what is in the ring stays there */
    uint64_t pos = __atomic_load_n(&w.ring.hdr->tail, __ATOMIC_ACQUIRE);
    uint64_t head = __atomic_load_n(&w.ring.hdr->head, __ATOMIC_ACQUIRE);
    while (pos < head && w.state != FAILED) {
        uint64_t next;
        uint32_t len = gs_ring_read(&w.ring, pos, w.body, GS_RING_MAX_BODY, &next);
        if (!len)
            break; /* cannot happen: only gs_emit writes the ring */
        add_record(w.body, len, next);
        /* after: a chunk add_record wrote holds the records before it */
        w.chunk_events += is_event(w.body[0]);
        pos = next;
    }
    write_chunk();
    if (!w.ring.shared && w.state == FAILED) /* nowhere to keep it: let producers go on */
        __atomic_store_n(&w.ring.hdr->tail, head, __ATOMIC_RELEASE);
}

static void *writer_main(void *arg)
{
    (void)arg;
    in_writer_thread = 1;
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL); /* signals are the program's, not ours */
    unsigned ms = gs_config()->flush_ms;
    for (;;) {
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        until.tv_sec += ms / 1000;
        until.tv_nsec += (long)(ms % 1000) * 1000000L;
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
        pthread_mutex_lock(&w.ring_lock);
        if (!w.stop)
            pthread_cond_timedwait(&w.wake, &w.ring_lock, &until);
        int stop = w.stop;
        pthread_mutex_unlock(&w.ring_lock);
        if (stop)
            return NULL;
        pthread_mutex_lock(&w.lock);
        if (w.state == OPEN)
            drain_locked();
        else if (w.state == FAILED)
            stopped_write(0); /* the events lost since, if any */
        pthread_mutex_unlock(&w.lock);
    }
}

static void start_thread(void)
{
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&w.wake, &attr);
    pthread_condattr_destroy(&attr);
    pthread_t t;
    pthread_attr_t ta;
    pthread_attr_init(&ta);
    pthread_attr_setdetachstate(&ta, PTHREAD_CREATE_DETACHED);
    w.stop = 0;
    /* The process's pthread_create, as the program's own threads are
     * started: a sanitizer's runtime before the shim must know every thread
     * (glibc's, called directly, would start one it does not know). That is
     * the first definition in the process (RTLD_DEFAULT): the sanitizer's,
     * or our hook (hooks_threads.c), which names no thread here, this one
     * being in no threading.Thread.start. */
    int (*create)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
    *(void **)&create = gs_real_dlsym(RTLD_DEFAULT, "pthread_create");
    if (create && create(&t, &ta, writer_main, NULL) == 0) {
        /* glibc's own, not our hook (hooks_threads.c): the writer records nothing */
        static void *setname;
        int (*real_setname)(pthread_t, const char *) =
            (int (*)(pthread_t, const char *))gs_real_next(&setname, "pthread_setname_np");
        if (real_setname)
            real_setname(t, "gpushim-writer");
        w.thread_running = 1;
    } else {
        static int once;
        gs_warn_once(&once, "cannot start the writer thread; the trace is written at exit "
                            "and whenever the buffer fills");
    }
    pthread_attr_destroy(&ta);
}

static uint64_t random_id(void)
{
    uint64_t id = 0;
    if (getrandom(&id, sizeof id, GRND_NONBLOCK) != (ssize_t)sizeof id)
        id = gs_now_ns() ^ (uint64_t)getpid() << 32;
    return id | 1; /* 0 means none */
}

/* Maps the ring: in "<trace>.ring" when it can be made, else in memory
 * (said once: the program still runs, but a death may lose what the writer
 * had not yet written). */
static int ring_open(uint64_t id)
{
    size_t cap = (size_t)gs_config()->buffer_mb << 20;
    /* "<trace>.ring"; if a file of that name is left from a trace removed
     * since, "<trace>.ring.1" and so on (the trace's header names it). */
    for (int i = 0; i < 10; i++) {
        int n = i ? snprintf(w.ring_path, sizeof w.ring_path, "%s.ring.%d", w.tf.path, i)
                  : snprintf(w.ring_path, sizeof w.ring_path, "%s.ring", w.tf.path);
        if (n < 0 || (size_t)n >= sizeof w.ring_path) {
            errno = ENAMETOOLONG; /* never a name cut short: it would be another file's */
            break;
        }
        if (gs_ring_init(&w.ring, w.ring_path, cap, id) == 0)
            return 0;
        if (errno != EEXIST)
            break;
    }
    static int once;
    gs_warn_once(&once, "cannot make %s: %s; events are buffered in memory, and those not yet "
                        "written when the process dies are lost",
                 w.ring_path, strerror(errno));
    w.ring_path[0] = 0;
    return gs_ring_init(&w.ring, NULL, cap, id);
}

static void ring_remove(void)
{
    if (w.ring_path[0] && !w.ring_removed)
        unlink(w.ring_path);
    w.ring_removed = 1;
}

/* Creates the trace. Call with w.lock held and w.state == NONE. */
static void open_locked(void)
{
    const struct gs_config *c = gs_config();
    if (gs_expand_path(c->output, w.tf.path, sizeof w.tf.path) != 0) {
        snprintf(w.tf.path, sizeof w.tf.path, "%s", c->output);
        errno = ENAMETOOLONG;
        fail("name");
        return;
    }
    if (w.tf.path[0] != '/') { /* absolute: the program may change directory later */
        static char cwd[4096], rel[sizeof w.tf.path]; /* w.lock held; not on the stack */
        snprintf(rel, sizeof rel, "%s", w.tf.path);
        if (getcwd(cwd, sizeof cwd) &&
            (size_t)snprintf(w.tf.path, sizeof w.tf.path, "%s/%s", cwd, rel) >= sizeof w.tf.path)
            snprintf(w.tf.path, sizeof w.tf.path, "%s", rel); /* too long: as given */
    }
    w.scratch_len = gs_chunk_scratch_size(GS_WRITER_CHUNK_MAX);
    if (!w.raw)
        w.raw = malloc(GS_WRITER_CHUNK_RAW);
    if (!w.whole)
        w.whole = malloc(GS_WRITER_CHUNK_MAX);
    if (!w.scratch)
        w.scratch = malloc(w.scratch_len);
    if (!w.body)
        w.body = malloc(GS_RING_MAX_BODY);
    if (!w.raw || !w.whole || !w.scratch || !w.body) {
        errno = ENOMEM;
        fail("allocate a buffer for");
        return;
    }
    if (gs_encoder_use_columns(&w.enc) != 0) {
        /* each event a record of its own: a larger trace, nothing lost */
    }
    w.pid = getpid();
    w.tf.fd = gs_create_trace(w.tf.path, sizeof w.tf.path);
    if (w.tf.fd < 0) {
        fail("create");
        return;
    }
    w.tf.ring_id = random_id();
    if (ring_open(w.tf.ring_id) != 0) {
        fail("allocate a buffer for");
        return;
    }
    struct timespec rt;
    clock_gettime(CLOCK_REALTIME, &rt);
    w.tf.start_ns = gs_now_ns();
    w.tf.realtime_ns = (uint64_t)rt.tv_sec * 1000000000u + (uint64_t)rt.tv_nsec;
    w.tf.stack_depth = c->stack_depth;
    const char *slash = strrchr(w.ring_path, '/');
    w.tf.ring_name = !w.ring_path[0] ? NULL : slash ? slash + 1 : w.ring_path;
    struct stat sb;
    if (fstat(w.tf.fd, &sb) != 0 ||
        gs_write_header(w.tf.fd, w.tf.start_ns, w.tf.realtime_ns, w.tf.stack_depth, w.tf.ring_id,
                        w.tf.ring_name) != 0) {
        fail("write");
        ring_remove();
        return;
    }
    w.tf.dev = sb.st_dev;
    w.tf.ino = sb.st_ino;
    off_t size = lseek(w.tf.fd, 0, SEEK_CUR);
    w.tf.size = size > 0 ? (uint64_t)size : 0;
    if (c->max_bytes)
        gs_bound_start(c->max_bytes);
    if (c->verbose)
        gs_say("recording to %s", w.tf.path);
    __atomic_store_n(&w.state, OPEN, __ATOMIC_RELEASE);
    start_thread();
}

/* Pushes under the ring lock; counts an event pushed, or one lost when the
 * trace has failed and the ring is full too. *finished says whether the
 * trace was finished by then: finish_locked stores FINISHED and then takes
 * this lock before it drains, so an event pushed before that is drained by
 * it, and one pushed after sees FINISHED here. */
static int push(void *body, uint32_t len, int timed, int failed, int *finished)
{
    pthread_mutex_lock(&w.ring_lock);
    struct gs_ring_header *h = w.ring.hdr; /* under the lock: a failed exec may move it */
    if (timed)
        ((struct gs_ev *)body)->time_ns = gs_now_ns() - w.tf.start_ns;
    int pushed = gs_ring_push(&w.ring, body, len) == 0;
    if (pushed && timed)
        h->events++;
    else if (!pushed && failed && timed)
        h->lost++;
    int wake = pushed && h->head - __atomic_load_n(&h->tail, __ATOMIC_RELAXED) > w.ring.cap / 4;
    *finished = __atomic_load_n(&w.state, __ATOMIC_RELAXED) == FINISHED;
    pthread_mutex_unlock(&w.ring_lock);
    if (wake && w.thread_running && !failed)
        pthread_cond_signal(&w.wake);
    return pushed;
}

int gs_emit(void *body, uint32_t len, int timed)
{
    int saved = errno;
    int state = __atomic_load_n(&w.state, __ATOMIC_ACQUIRE);
    if (state == NONE) {
        pthread_mutex_lock(&w.lock);
        if (w.state == NONE)
            open_locked();
        state = w.state;
        pthread_mutex_unlock(&w.lock);
    }
    int finished = 0;
    for (;;) {
        if (state == FAILED) {
            /* The trace takes no more; a ring file keeps what it has room for. */
            int kept = w.ring.shared && push(body, len, timed, 1, &finished);
            if (!w.ring.shared && timed) /* counted for GS_REC_STOPPED */
                gs_count_lost();
            errno = saved;
            return kept ? 0 : -1;
        }
        if (push(body, len, timed, 0, &finished))
            break;
        pthread_mutex_lock(&w.lock); /* full: make room ourselves */
        drain_locked();
        state = w.state;
        pthread_mutex_unlock(&w.lock);
    }
    if (finished) { /* a late event, after the exit-time flush */
        pthread_mutex_lock(&w.lock);
        drain_locked();
        pthread_mutex_unlock(&w.lock);
    }
    errno = saved;
    return 0;
}

int gs_recording_off(void)
{
    gs_lineage_check(); /* asked before a record, by hooks that sample first */
    if (__atomic_load_n(&w.state, __ATOMIC_ACQUIRE) != FAILED)
        return 0;
    /* A ring file keeps events after the trace failed, until it is full. */
    return !w.ring.shared || __atomic_load_n(&w.ring.hdr->lost, __ATOMIC_RELAXED) != 0;
}

void gs_count_lost(void)
{
    /* (a trace that failed without a ring file counts them too, for
     * GS_REC_STOPPED: its header is in memory) */
    if (w.ring.hdr && __atomic_load_n(&w.state, __ATOMIC_ACQUIRE) == FAILED)
        __atomic_add_fetch(&w.ring.hdr->lost, 1, __ATOMIC_RELAXED);
}

/* A clean end that the failed trace cannot record: noted in the ring file. */
static void end_in_ring(void)
{
    if (w.state == FAILED && w.ring.shared && w.pid == getpid())
        __atomic_store_n(&w.ring.hdr->end_time_ns, gs_now_ns() - w.tf.start_ns, __ATOMIC_RELEASE);
}

/* Everything still in the ring, then the END record. Call with w.lock held;
 * returns whether this process had a trace open to finish. */
static int finish_locked(int for_exec)
{
    /* A vfork child shares our memory but is not the process that owns it. */
    if (w.state != OPEN || w.pid != getpid())
        return 0;
    /* FINISHED first, then the ring lock once: an event pushed before is
     * in the ring for the drain below, one pushed after sees FINISHED under
     * that lock and drains itself (push). */
    __atomic_store_n(&w.state, FINISHED, __ATOMIC_RELEASE);
    pthread_mutex_lock(&w.ring_lock);
    pthread_mutex_unlock(&w.ring_lock);
    drain_locked();
    pthread_mutex_lock(&w.ring_lock);
    struct gs_end_body end = {.type = GS_REC_END,
                              .events = w.ring.hdr->events,
                              .lost = w.ring.hdr->lost,
                              .time_ns = gs_now_ns() - w.tf.start_ns};
    pthread_mutex_unlock(&w.ring_lock);
    add_record(&end, sizeof end, w.chunk_pos);
    write_chunk();
    if (w.state == FAILED) /* in this drain: without a ring, its stopped chunk says the end */
        stopped_write(end.time_ns);
    gs_bound_finish(for_exec);
    if (w.state != FAILED)
        ring_remove(); /* the trace is whole without it */
    end_in_ring();
    return 1;
}

/* At exit. The writer thread is told to stop; late events (from other
 * libraries' destructors) are written as they come. */
__attribute__((destructor)) static void writer_fini(void)
{
    int saved = errno;
    gs_lineage_check(); /* a clone() child that never recorded: not the parent's locks */
    pthread_mutex_lock(&w.lock);
    end_in_ring();
    if (w.state == FAILED && w.pid == getpid())
        stopped_write(gs_now_ns() - w.tf.start_ns);
    if (finish_locked(0)) {
        pthread_mutex_lock(&w.ring_lock);
        w.stop = 1;
        pthread_mutex_unlock(&w.ring_lock);
        if (w.thread_running)
            pthread_cond_signal(&w.wake);
    }
    pthread_mutex_unlock(&w.lock);
    errno = saved;
}

int gs_writer_finish_for_exec(void)
{
    /* A vfork child shares our memory but not our trace: leave it alone. */
    int state = __atomic_load_n(&w.state, __ATOMIC_ACQUIRE);
    if ((state != OPEN && state != FAILED) || w.pid != getpid())
        return 0;
    int saved = errno;
    /* The writer thread may be draining: wait for it a while (it takes
     * milliseconds), but not forever, since the holder may be the very code
     * a signal handler interrupted. */
    int locked = 0;
    for (int tries = 0; tries < 2000 && !(locked = pthread_mutex_trylock(&w.lock) == 0); tries++) {
        struct timespec pause = {0, 100000}; /* 0.1 ms */
        nanosleep(&pause, NULL);
    }
    if (!locked) {
        errno = saved;
        return 0;
    }
    if (w.state == FAILED) /* the old image's end, said where the trace stopped */
        stopped_write(gs_now_ns() - w.tf.start_ns);
    int finished = finish_locked(1);
    pthread_mutex_unlock(&w.lock);
    errno = saved;
    return finished;
}

void gs_writer_exec_failed(int finished)
{
    if (!finished)
        return;
    pthread_mutex_lock(&w.lock);
    if (w.ring.shared) /* a failed trace's end, noted in the ring: it was not the end */
        __atomic_store_n(&w.ring.hdr->end_time_ns, 0, __ATOMIC_RELEASE);
    if (w.state == FINISHED) {
        /* More events, and another END at exit; they need a ring file again. */
        pthread_mutex_lock(&w.ring_lock);
        if (w.ring.shared && w.ring_removed) {
            if (gs_ring_move_to_file(&w.ring, w.ring_path) == 0) {
                w.ring_removed = 0;
            } else {
                static int once;
                gs_warn_once(&once, "cannot make %s again after a failed exec: %s; events not "
                                    "yet written when the process dies are lost",
                             w.ring_path, strerror(errno));
            }
        }
        pthread_mutex_unlock(&w.ring_lock);
        /* The END record just written does not end the trace: say so next. */
        w.raw_len += gs_encode_resumed(gs_now_ns() - w.tf.start_ns, w.raw + w.raw_len);
        write_chunk();
        __atomic_store_n(&w.state, OPEN, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&w.lock);
}

void gs_writer_flush(void)
{
    if (__atomic_load_n(&w.state, __ATOMIC_ACQUIRE) != OPEN || w.pid != getpid())
        return; /* no trace yet (it starts on the first event), or not ours */
    int saved = errno;
    pthread_mutex_lock(&w.lock);
    if (w.state == OPEN && w.pid == getpid())
        drain_locked();
    pthread_mutex_unlock(&w.lock);
    errno = saved;
}

void gs_writer_lock(void)
{
    pthread_mutex_lock(&w.lock);
    pthread_mutex_lock(&w.ring_lock);
}

void gs_writer_unlock(void)
{
    pthread_mutex_unlock(&w.ring_lock);
    pthread_mutex_unlock(&w.lock);
}

void gs_writer_reset_after_fork(void)
{
    pthread_mutex_init(&w.lock, NULL);
    pthread_mutex_init(&w.ring_lock, NULL);
    if (w.tf.fd >= 0 && w.state != FAILED && still_ours())
        close(w.tf.fd); /* the parent's trace; a number the program reused is left alone */
    w.tf.fd = -1;
    w.state = NONE;
    gs_ring_forget_in_child(&w.ring); /* the parent's, in a file the parent still writes */
    w.ring_path[0] = 0;
    w.ring_removed = 0;
    w.raw_len = 0;
    w.thread_running = 0;
    w.chunk_events = w.events_written = 0;
    w.stopped = 0;
    gs_encoder_new_chunk(&w.enc); /* its columns stay: no lock was held across the fork */
}
