/*
 * threads_report.c - a site's threads in words: which threads allocated
 * there, by name (the main thread's name alone says nothing, unless a
 * backward is there to name), the backward node PyTorch's autograd was
 * running, and, where the site's Python lines are those of a thread that
 * waited for it, where that thread waited; for the text report and the
 * HTML page alike.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>

#include "analyzer/model/model.h"
#include "analyzer/read/read.h"
#include "analyzer/symbols/symbolize.h"
#include "analyzer/symbols/symbols.h"
#include "analyzer/findings/findings.h"
#include "analyzer/report/report.h"
#include "analyzer/report/threads_report.h"

struct text {
    char *buf;
    size_t sz, len;
};

static void say(struct text *t, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = t->len < t->sz ? vsnprintf(t->buf + t->len, t->sz - t->len, fmt, ap) : 0;
    va_end(ap);
    if (n > 0)
        t->len = t->len + (size_t)n < t->sz ? t->len + (size_t)n : t->sz;
}

/* The innermost Python frame's function: where the thread that waited was. */
static void innermost_python(void *ctx, const struct gs_frame *f, unsigned index)
{
    (void)index;
    const char **name = ctx;
    if (!*name && f->python)
        *name = f->function ? f->function : "?";
}

const char *gs_site_threads_text(const struct gs_report *rep, uint32_t stack_id,
                                 const struct gs_thread_tally *t, char *buf, size_t sz)
{
    if (!sz)
        return NULL;
    buf[0] = 0;
    const struct gs_replay *r = rep->replay;
    char op[128];
    int backward = gs_site_backward_of(r, rep->sym, stack_id, op, sizeof op);
    uint32_t main_name = rep->info->header.pid <= UINT32_MAX
                             ? gs_replay_thread_of(r, (uint32_t)rep->info->header.pid)
                             : 0;
    int named = t && t->other;
    for (unsigned i = 0; t && i < t->n; i++)
        named |= t->name[i] != main_name;
    const char *waiter = NULL;
    if (rep->opt->view == GS_VIEW_MERGED && gs_site_python(r, stack_id) == GS_PY_WAITER)
        gs_site_frames_unshown(r, rep->sym, stack_id, GS_VIEW_MERGED, UINT32_MAX,
                               innermost_python, &waiter);
    if (!named && !backward && !waiter)
        return NULL;
    struct text x = {.buf = buf, .sz = sz};
    if (t && t->n == 1 && !t->other) {
        say(&x, "thread %s", gs_replay_thread_name(r, t->name[0]));
    } else if (t && (t->n || t->other)) {
        say(&x, "threads");
        for (unsigned i = 0; i < t->n; i++)
            say(&x, "%s %s (%" PRIu64 "%s)", i ? "," : "", gs_replay_thread_name(r, t->name[i]),
                t->allocs[i], i ? "" : t->allocs[i] == 1 ? " allocation" : " allocations");
        if (t->other)
            say(&x, "%s%" PRIu64 " more by other threads", t->n ? ", " : " ", t->other);
    }
    if (backward)
        say(&x, "%sbackward of %s", t && (t->n || t->other) ? ": " : "", op);
    if (waiter)
        say(&x, "%sfor the thread that waited in %s (its Python lines)",
            backward ? ", " : t && (t->n || t->other) ? ": " : "", waiter);
    return buf;
}
