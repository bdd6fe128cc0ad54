/*
 * meta.c - the records that say what a trace is rather than what the
 * program did (include/gpushim_trace.h): the header's, both ways, from the
 * values the shim gathered (shim/file/tracefile.c) and back for the
 * analyzer's reader (analyzer/read/reader.c); and the writer's own in its
 * chunks (ring position, resumed, stopped), both ways too, which decode.c
 * hands on to what reading a trace counts.
 *
 * Each header record has its encoder beside its decoder, and one table
 * (records) ties its type to both and gives the order the header holds
 * them in; the limits of its strings are meta.h's. A header is untrusted
 * when it is read: every field is read through a cursor that stops at the
 * payload's end.
 */
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <zlib.h>

#include "gpushim_trace.h"
#include "analyzer/util/cursor.h"
#include "analyzer/trace/meta.h"

_Static_assert(sizeof((const char *[]){GS_ALLOCATOR_SETTINGS}) / sizeof(const char *) ==
                   GS_HEADER_SETTINGS,
               "a header holds each of GS_ALLOCATOR_SETTINGS");

static uint64_t u(struct gs_cursor *c) { return gs_cursor_u(c); }

static size_t put_string(uint8_t *p, const char *s, size_t len)
{
    size_t n = gs_put_varint(p, len);
    memcpy(p + n, s, len);
    return n + len;
}

/* ---- the header's records: each one's payload written (into p, which
 * has GS_HEADER_SCRATCH bytes; its length, 0 for a record not written) and
 * read ---- */

/* PROCESS: varint pid, varint ppid, string host, string shim version */
static size_t process_put(const struct gs_header_values *v, uint8_t *p)
{
    size_t n = gs_put_varint(p, v->pid);
    n += gs_put_varint(p + n, v->ppid);
    n += put_string(p + n, v->host, strnlen(v->host, GS_HEADER_HOST_MAX));
    return n + put_string(p + n, v->version, strnlen(v->version, GS_HEADER_VERSION_MAX));
}

static void process_get(struct gs_cursor *c, struct gs_header_info *h)
{
    h->pid = u(c);
    h->ppid = u(c);
    gs_cursor_text(c, h->host, sizeof h->host);
    gs_cursor_text(c, h->shim_version, sizeof h->shim_version);
}

/* CMDLINE: varint argc, then each argument (clipped to what room there is) */
static size_t cmdline_put(const struct gs_header_values *v, uint8_t *p)
{
    uint64_t argc = 0;
    for (size_t i = 0; i < v->args_len; i++)
        argc += v->args[i] == 0;
    size_t n = gs_put_varint(p, argc);
    for (size_t i = 0; i < v->args_len && n + 20 < GS_HEADER_SCRATCH;) {
        size_t whole = strnlen(v->args + i, v->args_len - i), alen = whole;
        if (n + alen + 10 > GS_HEADER_SCRATCH)
            alen = GS_HEADER_SCRATCH - n - 10;
        n += put_string(p + n, v->args + i, alen);
        i += whole + 1;
    }
    return n;
}

/* The arguments joined by spaces, as much as the command holds. */
static void cmdline_get(struct gs_cursor *c, struct gs_header_info *h)
{
    uint64_t argc = u(c);
    size_t n = 0;
    for (uint64_t i = 0; i < argc && !c->bad && n + 2 < sizeof h->command; i++) {
        char arg[sizeof h->command];
        gs_cursor_text(c, arg, sizeof arg);
        n += (size_t)snprintf(h->command + n, sizeof h->command - n, "%s%s", i ? " " : "", arg);
        if (n >= sizeof h->command)
            n = sizeof h->command - 1;
    }
}

/* CLOCK: varint start_ns, varint realtime_ns */
static size_t clock_put(const struct gs_header_values *v, uint8_t *p)
{
    size_t n = gs_put_varint(p, v->start_ns);
    return n + gs_put_varint(p + n, v->realtime_ns);
}

static void clock_get(struct gs_cursor *c, struct gs_header_info *h)
{
    h->start_ns = u(c);
    h->realtime_ns = u(c);
}

/* CONFIG: varint stack_depth */
static size_t config_put(const struct gs_header_values *v, uint8_t *p)
{
    return gs_put_varint(p, v->stack_depth);
}

static void config_get(struct gs_cursor *c, struct gs_header_info *h)
{
    h->stack_depth = u(c);
}

/* JOB: varint rank + 1, varint local rank + 1, varint world size (0: unknown) */
static size_t job_put(const struct gs_header_values *v, uint8_t *p)
{
    size_t n = gs_put_varint(p, v->rank_1);
    n += gs_put_varint(p + n, v->local_rank_1);
    return n + gs_put_varint(p + n, v->world_size);
}

/* Taken whole or not at all: a rank past 32 bits is unknown. */
static void job_get(struct gs_cursor *c, struct gs_header_info *h)
{
    uint64_t rank = u(c), local_rank = u(c), world = u(c);
    if (c->bad)
        return;
    h->job_seen = 1;
    h->rank = rank && rank <= UINT32_MAX ? (int64_t)rank - 1 : -1;
    h->local_rank = local_rank && local_rank <= UINT32_MAX ? (int64_t)local_rank - 1 : -1;
    h->world_size = world <= UINT32_MAX ? world : 0;
}

/* SETTINGS: varint n, n x (string name, string value); written when any is set */
static size_t settings_put(const struct gs_header_values *v, uint8_t *p)
{
    if (!v->nsettings)
        return 0;
    size_t n = gs_put_varint(p, v->nsettings);
    for (size_t i = 0; i < v->nsettings && n + 2 * (10 + GS_MAX_SETTING) < GS_HEADER_SCRATCH;
         i++) {
        n += put_string(p + n, v->setting_names[i],
                        strnlen(v->setting_names[i], GS_HEADER_SETTING_NAME_MAX));
        n += put_string(p + n, v->setting_values[i], strnlen(v->setting_values[i], GS_MAX_SETTING));
    }
    return n;
}

/* Each setting with its value, after those of any SETTINGS record before. */
static void settings_get(struct gs_cursor *c, struct gs_header_info *h)
{
    uint64_t n = u(c);
    for (uint64_t i = 0; i < n && !c->bad && h->nsettings < GS_HEADER_SETTINGS; i++) {
        gs_cursor_text(c, h->settings[h->nsettings].name, sizeof h->settings[0].name);
        gs_cursor_text(c, h->settings[h->nsettings].value, sizeof h->settings[0].value);
        if (!c->bad)
            h->nsettings++;
    }
}

/* RING: varint ring id, string ring file name; written when there is a ring file */
static size_t ring_put(const struct gs_header_values *v, uint8_t *p)
{
    if (!v->ring_name)
        return 0;
    size_t n = gs_put_varint(p, v->ring_id);
    return n + put_string(p + n, v->ring_name, strnlen(v->ring_name, GS_HEADER_RING_NAME_MAX));
}

static void ring_get(struct gs_cursor *c, struct gs_header_info *h)
{
    h->ring_id = u(c);
    gs_cursor_text(c, h->ring_name, sizeof h->ring_name);
}

/* The header's records, in the order a header holds them. */
static const struct {
    uint8_t type;
    size_t (*put)(const struct gs_header_values *v, uint8_t *p);
    void (*get)(struct gs_cursor *c, struct gs_header_info *h);
} records[] = {
    {GS_REC_PROCESS, process_put, process_get}, {GS_REC_CMDLINE, cmdline_put, cmdline_get},
    {GS_REC_CLOCK, clock_put, clock_get},       {GS_REC_CONFIG, config_put, config_get},
    {GS_REC_JOB, job_put, job_get},             {GS_REC_SETTINGS, settings_put, settings_get},
    {GS_REC_RING, ring_put, ring_get},
};
#define NRECORDS (sizeof records / sizeof records[0])

/* ---- the header ---- */

/* A record of payload[0..len) at out + *n, if it fits in out_len. */
static int put_record(uint8_t *out, size_t out_len, size_t *n, uint8_t type,
                      const uint8_t *payload, size_t len)
{
    if (*n + 1 + 10 + len + 4 > out_len)
        return -1;
    out[(*n)++] = type;
    *n += gs_put_varint(out + *n, len);
    memcpy(out + *n, payload, len);
    *n += len;
    return 0;
}

size_t gs_encode_header(const struct gs_header_values *v, uint8_t *out, size_t out_len,
                        uint8_t *scratch)
{
    size_t n = GS_PREAMBLE_LEN;
    if (out_len < GS_PREAMBLE_LEN + 4)
        return 0;
    for (size_t i = 0; i < NRECORDS; i++) {
        size_t len = records[i].put(v, scratch);
        if (len && put_record(out, out_len, &n, records[i].type, scratch, len) != 0)
            return 0;
    }
    memcpy(out, GS_TRACE_MAGIC, GS_TRACE_MAGIC_LEN);
    gs_put_u32le(out + 8, GS_TRACE_VERSION);
    gs_put_u32le(out + 12, (uint32_t)(n - GS_PREAMBLE_LEN));
    gs_put_u32le(out + n, (uint32_t)crc32(0, out, (uInt)n));
    return n + 4;
}

void gs_header_info_init(struct gs_header_info *h)
{
    memset(h, 0, sizeof *h);
    h->rank = h->local_rank = -1;
}

int gs_decode_header_record(uint8_t type, const uint8_t *payload, size_t len,
                            struct gs_header_info *h)
{
    struct gs_cursor c = {payload, payload + len, 0};
    for (size_t i = 0; i < NRECORDS; i++) {
        if (records[i].type == type) {
            records[i].get(&c, h);
            return c.bad ? -1 : 0;
        }
    }
    return 0;
}

/* ---- the writer's own records ---- */

/* A record of one varint, and its payload read back. */
static size_t one_varint(uint8_t type, uint64_t v, uint8_t *out)
{
    out[0] = type;
    out[1] = (uint8_t)gs_put_varint(out + 2, v);
    return 2u + out[1];
}

static int one_varint_get(const uint8_t *payload, size_t len, uint64_t *v)
{
    struct gs_cursor c = {payload, payload + len, 0};
    *v = u(&c);
    return c.bad ? -1 : 0;
}

size_t gs_encode_ring_pos(uint64_t pos, uint8_t *out)
{
    return one_varint(GS_REC_RING_POS, pos, out);
}

int gs_decode_ring_pos(const uint8_t *payload, size_t len, uint64_t *pos)
{
    return one_varint_get(payload, len, pos);
}

size_t gs_encode_resumed(uint64_t time_ns, uint8_t *out)
{
    return one_varint(GS_REC_RESUMED, time_ns, out);
}

int gs_decode_resumed(const uint8_t *payload, size_t len, uint64_t *time_ns)
{
    return one_varint_get(payload, len, time_ns);
}

/* STOPPED's fields, in their order in the record: each a varint, padded to
 * 10 bytes by the writer so that the record's size never changes. */
static const size_t stopped_fields[] = {
    offsetof(struct gs_stopped, err),    offsetof(struct gs_stopped, offset),
    offsetof(struct gs_stopped, time_ns), offsetof(struct gs_stopped, events),
    offsetof(struct gs_stopped, lost),   offsetof(struct gs_stopped, end_ns),
};
#define NSTOPPED (sizeof stopped_fields / sizeof stopped_fields[0])
_Static_assert(GS_STOPPED_RAW_LEN == 2 + 10 * NSTOPPED, "a STOPPED record of its fields");
_Static_assert(sizeof(struct gs_stopped) == 8 * NSTOPPED, "every field of struct gs_stopped");

void gs_encode_stopped(const struct gs_stopped *s, uint8_t *out)
{
    out[0] = GS_REC_STOPPED;
    out[1] = GS_STOPPED_RAW_LEN - 2;
    for (size_t i = 0; i < NSTOPPED; i++) {
        uint64_t v;
        memcpy(&v, (const uint8_t *)s + stopped_fields[i], sizeof v);
        gs_put_varint10(out + 2 + 10 * i, v);
    }
}

int gs_decode_stopped(const uint8_t *payload, size_t len, struct gs_stopped *s)
{
    struct gs_cursor c = {payload, payload + len, 0};
    for (size_t i = 0; i < NSTOPPED; i++) {
        uint64_t v = u(&c);
        memcpy((uint8_t *)s + stopped_fields[i], &v, sizeof v);
    }
    return c.bad || s->err > INT32_MAX ? -1 : 0;
}
