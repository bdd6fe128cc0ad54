/*
 * across_runs.c - what the commands over several traces share (diff.c, ranks.c,
 * plan.c): a call site named so that it is the same site in another run of
 * the program, a site's frames in text and JSON, sizes for people and from
 * the command line.
 *
 * Addresses and stack ids differ between runs (address space layout
 * randomization, the order stacks were first seen), so a site is named by
 * its source frames as gs_rank_sites merges them: function, file and line
 * of each, innermost first. A frame nothing is known of is named by its
 * module's file name and its offset in that module, which is the same in
 * every run of the same build.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "analyzer/util/bytes.h"
#include "analyzer/model/model.h"
#include "analyzer/symbols/symbolize.h"
#include "analyzer/symbols/symbols.h"
#include "analyzer/findings/findings.h"
#include "analyzer/cmd/across_runs.h"
#include "analyzer/util/text.h"
#include "gpushim_size.h"

const char *gs_multi_signed_bytes(int64_t v, char *buf, size_t sz)
{
    char b[32];
    uint64_t mag = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    snprintf(buf, sz, "%s%s", v < 0 ? "-" : v > 0 ? "+" : "", gs_human_bytes(mag, b, sizeof b));
    return buf;
}

int gs_multi_parse_size(const char *s, uint64_t *out)
{
    char buf[64]; /* without its spaces: "80 GB" */
    size_t n = 0;
    for (; s && *s && n + 1 < sizeof buf; s++)
        if (*s != ' ')
            buf[n++] = *s;
    if (!s || *s)
        return -1;
    buf[n] = 0;
    if (n > 2 && (!strcmp(buf + n - 2, "GB") || !strcmp(buf + n - 2, "gb"))) {
        uint64_t gib; /* a card as sold: what it reports, else N GiB */
        if (gs_parse_size(buf, &gib) != 0)
            return -1;
        for (int i = 0; i < GS_NCARDS; i++)
            if (strtoull(gs_cards[i].name, NULL, 10) << 30 == gib) {
                *out = gs_cards[i].bytes;
                return 0;
            }
    }
    return gs_parse_size(buf, out);
}

/* ---- a site's key ---- */

struct key_buf {
    const struct gs_replay *r;
    char *s;
    size_t n, cap;
    int failed;
};

static void key_add(struct key_buf *k, const char *piece)
{
    size_t len = strlen(piece);
    if (k->n + len + 1 > k->cap) {
        size_t cap = k->cap ? k->cap : 256;
        while (cap < k->n + len + 1)
            cap *= 2;
        char *s = realloc(k->s, cap);
        if (!s) {
            k->failed = 1;
            return;
        }
        k->s = s;
        k->cap = cap;
    }
    memcpy(k->s + k->n, piece, len + 1);
    k->n += len;
}

static void key_frame(void *ctx, const struct gs_frame *f, unsigned index)
{
    struct key_buf *k = ctx;
    char num[64];
    (void)index;
    if (f->function || f->file) {
        key_add(k, f->function ? f->function : "?");
        key_add(k, "\t");
        key_add(k, f->file ? f->file : "?");
        snprintf(num, sizeof num, "\t%d\n", f->line);
        key_add(k, num);
    } else if (f->python) { /* a code object the trace does not define */
        snprintf(num, sizeof num, "?python\t%d\n", f->line);
        key_add(k, num);
    } else {
        const struct gs_module *m = gs_replay_module_at(k->r, f->pc);
        const char *base = m && m->path ? gs_basename(m->path) : "?";
        snprintf(num, sizeof num, "+0x%" PRIx64 "\n", m ? f->pc - m->bias : f->pc);
        key_add(k, "?\t");
        key_add(k, base);
        key_add(k, num);
    }
}

char *gs_multi_site_key(const struct gs_replay *r, struct gs_symbolizer *sym,
                        enum gs_stack_view view, uint32_t stack_id)
{
    struct key_buf k = {.r = r};
    key_add(&k, "");
    if (!gs_site_frames_unshown(r, sym, stack_id, view, UINT32_MAX, key_frame, &k))
        key_add(&k, "(unknown stack)\n");
    if (view == GS_VIEW_MERGED) {
        char py[32];
        snprintf(py, sizeof py, "py%d", (int)gs_site_python(r, stack_id));
        key_add(&k, py);
    }
    if (k.failed) {
        free(k.s);
        return NULL;
    }
    return k.s;
}

/* ---- a site's frames, shown ---- */

struct text_frames {
    FILE *out;
    const char *lead;
};

static void text_frame(void *ctx, const struct gs_frame *f, unsigned index)
{
    struct text_frames *t = ctx;
    fprintf(t->out, "%s%s ", t->lead, index ? "  from" : "at");
    if (f->function)
        fputs(f->function, t->out);
    else if (f->python)
        fputs("(Python code not in the trace)", t->out);
    else
        fprintf(t->out, "0x%" PRIx64, f->pc);
    if (f->file) {
        fprintf(t->out, "  %s:%d", gs_basename(f->file), f->line);
    } else if (!f->python) {
        const char *base = f->module ? gs_basename(f->module) : "?";
        fprintf(t->out, "  (%s)", base[0] ? base : "?");
    }
    fputc('\n', t->out);
}

void gs_multi_frames_text(FILE *out, const struct gs_replay *r, struct gs_symbolizer *sym,
                          enum gs_stack_view view, uint32_t stack_id, unsigned max,
                          const char *lead)
{
    struct text_frames t = {out, lead};
    if (!gs_site_frames(r, sym, stack_id, view, max, text_frame, &t))
        fprintf(out, "%sat (stack not in the trace)\n", lead);
}
