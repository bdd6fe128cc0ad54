/*
 * test_perfetto.c - export --format=perfetto (analyzer/export/perfetto.c)
 * where the trace's times cannot order events: format 3 keeps an
 * allocation's time in microseconds, never before the record before it,
 * so the allocation just after a mark reads as the mark's own time.
 * Perfetto orders by time alone; the counter sample of that allocation
 * must come after the mark (1 ns after), and the samples before the mark
 * at it or before. The trace is written here as the shim's writer writes
 * one (shim/file/tracefile.c, the encoder's columns).
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analyzer/trace/encode.h"
#include "gpushim_trace.h"
#include "gpushim_ring.h"
#include "analyzer/export/export.h"
#include "shim/file/file.h"

static char dir[256], path[PATH_MAX];

static void make_dir(void)
{
    const char *base = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/gs_perfetto_XXXXXX", base && *base ? base : "/tmp");
    cr_assert_not_null(mkdtemp(dir), "mkdtemp: %s", strerror(errno));
    cr_redirect_stderr();
}

static void remove_dir(void)
{
    unlink(path);
    rmdir(dir);
}

TestSuite(perfetto, .init = make_dir, .fini = remove_dir);


static size_t put(struct gs_encoder *e, const void *body, uint32_t len, uint8_t *out)
{
    size_t n = gs_encode(e, body, len, out);
    cr_assert_gt(n, 0, "gs_encode refused a body of type %u", *(const uint8_t *)body);
    return n;
}

/* One chunk: a stack, then 1 MiB allocated at 3.2 us, a mark at 5.5 us,
 * 2 MiB allocated at 5.7 us (read as 5.5), 1 MiB freed at 9.1 us (9.0). */
static void write_trace(void)
{
    snprintf(path, sizeof path, "%s/t.trace", dir);
    int fd = gs_create_trace(path, sizeof path);
    cr_assert_geq(fd, 0, "gs_create_trace: %s", strerror(errno));
    cr_assert_eq(gs_write_header(fd, 0, 0, 48, 0, NULL), 0, "gs_write_header");
    struct gs_encoder e;
    gs_encoder_reset(&e);
    cr_assert_eq(gs_encoder_use_columns(&e), 0);
    static uint8_t recs[1 << 16], raw[1 << 17];
    size_t rlen = 0;
    uint64_t st[(sizeof(struct gs_stack_body) + 8 + 7) / 8] = {0};
    struct gs_stack_body *s = (struct gs_stack_body *)st;
    s->type = GS_REC_STACK;
    s->id = 1;
    s->n = 1;
    s->pcs[0] = 0x401000;
    rlen += put(&e, s, sizeof st, recs + rlen);
    struct gs_ev a1 = {.type = GS_REC_ALLOC, .api = GS_API_cuMemAlloc_v2, .tid = 7,
                       .stack_id = 1, .time_ns = 3200, .addr = 0x7f0000000000ull,
                       .size = 1 << 20};
    rlen += put(&e, &a1, sizeof a1, recs + rlen);
    uint64_t mk[(sizeof(struct gs_mark_body) + 8) / 8] = {0}; /* the body, then its label */
    struct gs_mark_body *m = (struct gs_mark_body *)mk;
    m->ev = (struct gs_ev){.type = GS_REC_MARK, .time_ns = 5500, .tid = 7, .stack_id = 1};
    m->label_len = 4;
    memcpy(m->label, "step", 4);
    rlen += put(&e, m, (uint32_t)(sizeof *m + 4), recs + rlen);
    struct gs_ev a2 = a1;
    a2.time_ns = 5700;
    a2.addr += 1 << 20;
    a2.size = 2 << 20;
    rlen += put(&e, &a2, sizeof a2, recs + rlen);
    struct gs_ev f1 = {.type = GS_REC_FREE, .api = GS_API_cuMemFree_v2, .tid = 7,
                       .time_ns = 9100, .addr = a1.addr};
    rlen += put(&e, &f1, sizeof f1, recs + rlen);
    struct gs_end_body end = {.type = GS_REC_END, .events = 4};
    rlen += put(&e, &end, sizeof end, recs + rlen);
    size_t len = gs_encode_columns(&e, raw);
    cr_assert_gt(len, 0, "the allocations went into columns");
    memcpy(raw + len, recs, rlen);
    len += rlen;
    size_t scratch_len = gs_chunk_scratch_size(len), written;
    uint8_t *scratch = malloc(scratch_len);
    cr_assert_not_null(scratch);
    cr_assert_eq(gs_write_chunk(fd, raw, len, scratch, scratch_len, &written), 0);
    free(scratch);
    close(fd);
    gs_encoder_free(&e);
}

/* The "ts" of the next event, after from, whose text holds what. */
static const char *ts_of(const char *json, const char *what, const char *from, char *out,
                         size_t n)
{
    const char *at = strstr(from, what);
    cr_assert_not_null(at, "no %s in:\n%s", what, json);
    const char *start = at;
    while (start > json && start[-1] != '\n')
        start--;
    const char *t = strstr(start, "\"ts\":");
    cr_assert_not_null(t);
    t += 5;
    size_t k = strcspn(t, ",}");
    cr_assert_lt(k, n);
    memcpy(out, t, k);
    out[k] = 0;
    return strchr(at, '\n') ? strchr(at, '\n') : at + strlen(at);
}

Test(perfetto, the_allocation_after_a_mark_is_sampled_after_it)
{
    write_trace();
    char *json = NULL;
    size_t jlen = 0;
    FILE *out = open_memstream(&json, &jlen);
    cr_assert_not_null(out);
    cr_assert_eq(gs_export_perfetto(out, path), 0, "the export");
    fclose(out);
    char t[4][32];
    const char *p = ts_of(json, "\"bytes\":1048576}", json, t[0], sizeof t[0]);
    p = ts_of(json, "\"cat\":\"mark\"", p, t[1], sizeof t[1]);
    p = ts_of(json, "\"bytes\":3145728}", p, t[2], sizeof t[2]);
    ts_of(json, "\"bytes\":2097152}", p, t[3], sizeof t[3]);
    cr_assert_str_eq(t[0], "3.000", "the first allocation, in its microsecond");
    cr_assert_str_eq(t[1], "5.500", "the mark, to the nanosecond");
    cr_assert_str_eq(t[2], "5.501", "the allocation after it read as 5.5 us: 1 ns after it");
    cr_assert_str_eq(t[3], "9.000", "the free, in its microsecond");
    free(json);
}
