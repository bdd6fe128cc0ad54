/*
 * test_meta.c - analyzer/trace/meta.c both ways: a header encoded from the
 * shim's values (gs_encode_header) and each of its records decoded back
 * (gs_decode_header_record), field by field, at ordinary and extreme
 * values; the records a header leaves out; strings cut to what a writer
 * records and a reader keeps; the writer's ring position, RESUMED and
 * STOPPED records the same way, and into what reading a trace counts
 * (gs_decode_chunk). Every record cut short, or forged, is refused
 * without a read past its payload (each payload is decoded from a copy of
 * exactly its length, so the sanitizers see any such read).
 */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "gpushim_trace.h"
#include "analyzer/trace/encode.h"
#include "analyzer/trace/meta.h"
#include "analyzer/trace/trace.h"

/* ---- a header's records, framed ---- */

#define MAX_RECORDS 16

struct record {
    uint8_t type;
    const uint8_t *payload;
    size_t len;
};

/* The records of the encoded header hdr (n bytes), after checking its
 * preamble, length and CRC-32; how many. */
static size_t records_of(const uint8_t *hdr, size_t n, struct record *out)
{
    cr_assert_geq(n, GS_PREAMBLE_LEN + 4);
    cr_assert_eq(memcmp(hdr, GS_TRACE_MAGIC, GS_TRACE_MAGIC_LEN), 0);
    cr_assert_eq(gs_get_u32le(hdr + 8), GS_TRACE_VERSION);
    uint32_t hlen = gs_get_u32le(hdr + 12);
    cr_assert_eq(GS_PREAMBLE_LEN + (size_t)hlen + 4, n);
    cr_assert_eq(crc32(0, hdr, GS_PREAMBLE_LEN + hlen), gs_get_u32le(hdr + GS_PREAMBLE_LEN + hlen));
    const uint8_t *p = hdr + GS_PREAMBLE_LEN, *end = p + hlen;
    size_t k = 0;
    while (p < end) {
        cr_assert_lt(k, MAX_RECORDS);
        out[k].type = *p++;
        uint64_t len;
        cr_assert_eq(gs_get_varint(&p, end, &len), 0);
        cr_assert_leq(len, (uint64_t)(end - p));
        out[k].payload = p;
        out[k++].len = (size_t)len;
        p += len;
    }
    return k;
}

/* The payload's first len bytes decoded from a copy of exactly that many. */
static int decode_cut(const struct record *r, size_t len, struct gs_header_info *h)
{
    uint8_t *copy = malloc(len ? len : 1);
    cr_assert_not_null(copy);
    memcpy(copy, r->payload, len);
    int rc = gs_decode_header_record(r->type, copy, len, h);
    free(copy);
    return rc;
}

/* Every record of v's header decoded into h, each one whole; their types
 * in order into types (up to MAX_RECORDS), their count returned. */
static size_t encode_decode(const struct gs_header_values *v, struct gs_header_info *h,
                            uint8_t *types)
{
    static uint8_t buf[GS_HEADER_MAX], scratch[GS_HEADER_SCRATCH];
    size_t n = gs_encode_header(v, buf, sizeof buf, scratch);
    cr_assert_gt(n, 0);
    struct record r[MAX_RECORDS];
    size_t k = records_of(buf, n, r);
    gs_header_info_init(h);
    for (size_t i = 0; i < k; i++) {
        types[i] = r[i].type;
        cr_assert_eq(decode_cut(&r[i], r[i].len, h), 0, "record %u decodes", r[i].type);
    }
    return k;
}

static const char *names[] = {"PYTORCH_CUDA_ALLOC_CONF", "TF_GPU_ALLOCATOR"};
static const char *values[] = {"expandable_segments:True", "cuda_malloc_async"};
static const char args[] = "python3\0train.py\0--lr=0.1";

static struct gs_header_values full_values(void)
{
    return (struct gs_header_values){
        .pid = 4242, .ppid = 7, .host = "node-3", .version = "9.9.9", .args = args,
        .args_len = sizeof args, .start_ns = 123456789, .realtime_ns = 1700000000000000000ull,
        .stack_depth = 48, .rank_1 = 4, .local_rank_1 = 2, .world_size = 16,
        .setting_names = names, .setting_values = values, .nsettings = 2, .ring_id = 0xabcdef,
        .ring_name = "t.trace.ring"};
}

/* ---- both ways ---- */

Test(meta, every_header_record_round_trips_field_by_field)
{
    struct gs_header_values v = full_values();
    struct gs_header_info h;
    uint8_t types[MAX_RECORDS];
    size_t k = encode_decode(&v, &h, types);
    static const uint8_t order[] = {GS_REC_PROCESS, GS_REC_CMDLINE, GS_REC_CLOCK, GS_REC_CONFIG,
                                    GS_REC_JOB, GS_REC_SETTINGS, GS_REC_RING};
    cr_assert_eq(k, sizeof order);
    cr_assert_arr_eq(types, order, sizeof order, "the header's records, in order");
    cr_assert_eq(h.pid, 4242);
    cr_assert_eq(h.ppid, 7);
    cr_assert_str_eq(h.host, "node-3");
    cr_assert_str_eq(h.shim_version, "9.9.9");
    cr_assert_str_eq(h.command, "python3 train.py --lr=0.1");
    cr_assert_eq(h.start_ns, 123456789);
    cr_assert_eq(h.realtime_ns, 1700000000000000000ull);
    cr_assert_eq(h.stack_depth, 48);
    cr_assert_eq(h.job_seen, 1);
    cr_assert_eq(h.rank, 3);
    cr_assert_eq(h.local_rank, 1);
    cr_assert_eq(h.world_size, 16);
    cr_assert_eq(h.nsettings, 2);
    cr_assert_str_eq(h.settings[0].name, "PYTORCH_CUDA_ALLOC_CONF");
    cr_assert_str_eq(h.settings[0].value, "expandable_segments:True");
    cr_assert_str_eq(h.settings[1].name, "TF_GPU_ALLOCATOR");
    cr_assert_str_eq(h.settings[1].value, "cuda_malloc_async");
    cr_assert_eq(h.ring_id, 0xabcdef);
    cr_assert_str_eq(h.ring_name, "t.trace.ring");
}

Test(meta, extreme_values_round_trip)
{
    struct gs_header_values v = full_values();
    v.pid = v.ppid = v.start_ns = v.realtime_ns = v.ring_id = UINT64_MAX;
    v.stack_depth = UINT32_MAX;
    v.rank_1 = v.local_rank_1 = v.world_size = UINT32_MAX; /* the largest ranks a reader takes */
    struct gs_header_info h;
    uint8_t types[MAX_RECORDS];
    encode_decode(&v, &h, types);
    cr_assert_eq(h.pid, UINT64_MAX);
    cr_assert_eq(h.ppid, UINT64_MAX);
    cr_assert_eq(h.start_ns, UINT64_MAX);
    cr_assert_eq(h.realtime_ns, UINT64_MAX);
    cr_assert_eq(h.stack_depth, UINT32_MAX);
    cr_assert_eq(h.ring_id, UINT64_MAX);
    cr_assert_eq(h.rank, (int64_t)UINT32_MAX - 1);
    cr_assert_eq(h.local_rank, (int64_t)UINT32_MAX - 1);
    cr_assert_eq(h.world_size, UINT32_MAX);
}

Test(meta, ranks_unknown_or_past_32_bits_read_as_unknown)
{
    struct gs_header_values v = full_values();
    v.rank_1 = 0; /* unknown */
    v.local_rank_1 = (uint64_t)UINT32_MAX + 1;
    v.world_size = (uint64_t)UINT32_MAX + 1;
    struct gs_header_info h;
    uint8_t types[MAX_RECORDS];
    encode_decode(&v, &h, types);
    cr_assert_eq(h.job_seen, 1);
    cr_assert_eq(h.rank, -1);
    cr_assert_eq(h.local_rank, -1);
    cr_assert_eq(h.world_size, 0);
}

Test(meta, a_header_without_settings_or_ring_leaves_their_records_out)
{
    struct gs_header_values v = full_values();
    v.nsettings = 0;
    v.ring_name = NULL;
    v.args_len = 0; /* no argument kept: argc 0 */
    struct gs_header_info h;
    uint8_t types[MAX_RECORDS];
    size_t k = encode_decode(&v, &h, types);
    static const uint8_t order[] = {GS_REC_PROCESS, GS_REC_CMDLINE, GS_REC_CLOCK, GS_REC_CONFIG,
                                    GS_REC_JOB};
    cr_assert_eq(k, sizeof order);
    cr_assert_arr_eq(types, order, sizeof order);
    cr_assert_eq(h.nsettings, 0);
    cr_assert_eq(h.ring_id, 0);
    cr_assert_str_eq(h.ring_name, "");
    cr_assert_str_eq(h.command, "");
}

Test(meta, before_any_record_no_rank_is_known)
{
    struct gs_header_info h;
    memset(&h, 0x5a, sizeof h);
    gs_header_info_init(&h);
    cr_assert_eq(h.pid, 0);
    cr_assert_str_eq(h.host, "");
    cr_assert_eq(h.job_seen, 0);
    cr_assert_eq(h.rank, -1);
    cr_assert_eq(h.local_rank, -1);
    cr_assert_eq(h.world_size, 0);
    cr_assert_eq(h.nsettings, 0);
}

/* Strings past what a writer records are cut there; a setting's value past
 * what a reader keeps, and control bytes, as a reader shows them. */
Test(meta, strings_are_cut_to_the_limits_of_meta_h)
{
    static char host[400], value[GS_MAX_SETTING + 100], ring[400], name[100];
    memset(host, 'h', sizeof host - 1);
    memset(value, 'v', sizeof value - 1);
    memset(ring, 'r', sizeof ring - 1);
    memset(name, 'n', sizeof name - 1);
    const char *snames[] = {name, "TAB"}, *svalues[] = {value, "a\tb"};
    struct gs_header_values v = full_values();
    v.host = host;
    v.ring_name = ring;
    v.setting_names = snames;
    v.setting_values = svalues;
    struct gs_header_info h;
    uint8_t types[MAX_RECORDS];
    encode_decode(&v, &h, types);
    cr_assert_eq(strlen(h.host), GS_HEADER_HOST_MAX);
    cr_assert_eq(strlen(h.ring_name), GS_HEADER_RING_NAME_MAX);
    cr_assert_eq(h.nsettings, 2);
    cr_assert_eq(strlen(h.settings[0].name), GS_HEADER_SETTING_NAME_MAX);
    cr_assert_eq(strlen(h.settings[0].value), GS_HEADER_SETTING_VALUE_KEPT);
    cr_assert_str_eq(h.settings[1].value, "a?b", "control bytes shown as '?'");
}

Test(meta, a_long_command_line_is_kept_up_to_what_a_reader_keeps)
{
    static char many[6000];
    for (size_t i = 0; i < sizeof many; i++)
        many[i] = i % 10 == 9 ? 0 : 'a';
    struct gs_header_values v = full_values();
    v.args = many;
    v.args_len = sizeof many;
    struct gs_header_info h;
    uint8_t types[MAX_RECORDS];
    encode_decode(&v, &h, types);
    cr_assert_eq(strlen(h.command), GS_HEADER_COMMAND_KEPT);
    cr_assert_eq(strncmp(h.command, "aaaaaaaaa aaaaaaaaa ", 20), 0);
}

/* ---- refused ---- */

/* Each record of the header cut anywhere short of its end: refused, and
 * no read past the cut. */
Test(meta, every_header_record_cut_short_is_refused)
{
    struct gs_header_values v = full_values();
    static uint8_t buf[GS_HEADER_MAX], scratch[GS_HEADER_SCRATCH];
    size_t n = gs_encode_header(&v, buf, sizeof buf, scratch);
    struct record r[MAX_RECORDS];
    size_t k = records_of(buf, n, r);
    for (size_t i = 0; i < k; i++) {
        for (size_t cut = 0; cut < r[i].len; cut++) {
            struct gs_header_info h;
            gs_header_info_init(&h);
            cr_assert_eq(decode_cut(&r[i], cut, &h), -1, "record %u cut at %zu of %zu",
                         r[i].type, cut, r[i].len);
            if (r[i].type == GS_REC_JOB)
                cr_assert_eq(h.job_seen, 0, "a JOB record is taken whole or not at all");
            if (r[i].type == GS_REC_SETTINGS)
                cr_assert_lt(h.nsettings, 2, "a setting without its value is not kept");
        }
    }
}

Test(meta, forged_header_records_are_refused)
{
    struct gs_header_info h;
    gs_header_info_init(&h);
    /* a varint of 11 bytes: past 64 bits */
    uint8_t overlong[11];
    memset(overlong, 0xff, sizeof overlong);
    struct record r = {GS_REC_CLOCK, overlong, sizeof overlong};
    cr_assert_eq(decode_cut(&r, sizeof overlong, &h), -1);
    /* a host whose length runs past the payload */
    uint8_t host_past[] = {1, 2, 200, 'a', 'b'};
    r = (struct record){GS_REC_PROCESS, host_past, sizeof host_past};
    cr_assert_eq(decode_cut(&r, sizeof host_past, &h), -1);
    cr_assert_str_eq(h.host, "", "no bytes taken from past the payload");
    /* many arguments said, one there */
    uint8_t argc_past[] = {0xff, 0xff, 0x03, 1, 'x'};
    r = (struct record){GS_REC_CMDLINE, argc_past, sizeof argc_past};
    cr_assert_eq(decode_cut(&r, sizeof argc_past, &h), -1);
    /* many settings said, one name there */
    uint8_t settings_past[] = {9, 1, 'N'};
    r = (struct record){GS_REC_SETTINGS, settings_past, sizeof settings_past};
    cr_assert_eq(decode_cut(&r, sizeof settings_past, &h), -1);
    cr_assert_eq(h.nsettings, 0);
    /* an empty payload for each header record */
    static const uint8_t types[] = {GS_REC_PROCESS, GS_REC_CMDLINE, GS_REC_CLOCK, GS_REC_CONFIG,
                                    GS_REC_JOB, GS_REC_SETTINGS, GS_REC_RING};
    for (size_t i = 0; i < sizeof types; i++) {
        r = (struct record){types[i], overlong, 0};
        cr_assert_eq(decode_cut(&r, 0, &h), -1, "record %u empty", types[i]);
    }
    cr_assert_eq(h.job_seen, 0);
}

Test(meta, settings_past_what_a_header_holds_are_left_out)
{
    const char *many_names[GS_HEADER_SETTINGS + 2], *many_values[GS_HEADER_SETTINGS + 2];
    for (size_t i = 0; i < GS_HEADER_SETTINGS + 2; i++) {
        many_names[i] = "N";
        many_values[i] = "V";
    }
    struct gs_header_values v = full_values();
    v.setting_names = many_names;
    v.setting_values = many_values;
    v.nsettings = GS_HEADER_SETTINGS + 2;
    struct gs_header_info h;
    uint8_t types[MAX_RECORDS];
    encode_decode(&v, &h, types);
    cr_assert_eq(h.nsettings, GS_HEADER_SETTINGS);
}

Test(meta, a_record_of_no_header_type_leaves_the_header_alone)
{
    struct gs_header_info h, before;
    gs_header_info_init(&h);
    memcpy(&before, &h, sizeof h);
    uint8_t payload[] = {1, 2, 3};
    struct record r = {GS_REC_ALLOC, payload, sizeof payload};
    cr_assert_eq(decode_cut(&r, sizeof payload, &h), 0);
    r.type = 200; /* a newer writer's */
    cr_assert_eq(decode_cut(&r, sizeof payload, &h), 0);
    cr_assert_eq(memcmp(&h, &before, sizeof h), 0);
}

/* ---- the writer's own records ---- */

/* A record's framing as gs_decode_chunk reads it: its type, then its
 * payload's length (one byte, for these); the payload's length. */
static size_t framed(const uint8_t *rec, size_t len, uint8_t type)
{
    cr_assert_geq(len, 2);
    cr_assert_eq(rec[0], type);
    cr_assert_eq(rec[1], len - 2);
    return len - 2;
}

static const uint64_t extremes[] = {0, 1, 127, 128, 16383, 16384, UINT32_MAX, UINT64_MAX - 1,
                                    UINT64_MAX};

/* The records of one varint: ring position and resumed. */
static const struct {
    uint8_t type;
    size_t (*encode)(uint64_t v, uint8_t *out);
    int (*decode)(const uint8_t *payload, size_t len, uint64_t *v);
} one_varint[] = {
    {GS_REC_RING_POS, gs_encode_ring_pos, gs_decode_ring_pos},
    {GS_REC_RESUMED, gs_encode_resumed, gs_decode_resumed},
};

Test(meta, ring_positions_and_resumptions_round_trip)
{
    for (size_t k = 0; k < sizeof one_varint / sizeof one_varint[0]; k++) {
        for (size_t i = 0; i < sizeof extremes / sizeof extremes[0]; i++) {
            uint8_t rec[12];
            size_t len = framed(rec, one_varint[k].encode(extremes[i], rec), one_varint[k].type);
            for (size_t cut = 0; cut <= len; cut++) {
                uint8_t *copy = malloc(cut ? cut : 1);
                memcpy(copy, rec + 2, cut);
                uint64_t v = 7;
                int rc = one_varint[k].decode(copy, cut, &v);
                free(copy);
                if (cut < len) {
                    cr_assert_eq(rc, -1, "record %u of %#llx cut at %zu", one_varint[k].type,
                                 (unsigned long long)extremes[i], cut);
                } else {
                    cr_assert_eq(rc, 0);
                    cr_assert_eq(v, extremes[i]);
                }
            }
        }
    }
}

/* The STOPPED payload's first len bytes decoded from a copy of exactly
 * that many. */
static int stopped_cut(const uint8_t *payload, size_t len, struct gs_stopped *s)
{
    uint8_t *copy = malloc(len ? len : 1);
    cr_assert_not_null(copy);
    memcpy(copy, payload, len);
    int rc = gs_decode_stopped(copy, len, s);
    free(copy);
    return rc;
}

static void same_stopped(const struct gs_stopped *got, const struct gs_stopped *want)
{
    cr_assert_eq(got->err, want->err);
    cr_assert_eq(got->offset, want->offset);
    cr_assert_eq(got->time_ns, want->time_ns);
    cr_assert_eq(got->events, want->events);
    cr_assert_eq(got->lost, want->lost);
    cr_assert_eq(got->end_ns, want->end_ns);
}

Test(meta, stopped_records_round_trip_field_by_field)
{
    const struct gs_stopped cases[] = {
        {.err = 28, .offset = 65536, .time_ns = 1234567, .events = 320024, .lost = 17, .end_ns = 0},
        {.err = 0, .offset = 0, .time_ns = 0, .events = 0, .lost = 0, .end_ns = 0},
        {.err = INT32_MAX, .offset = UINT64_MAX, .time_ns = UINT64_MAX, .events = UINT64_MAX,
         .lost = UINT64_MAX, .end_ns = UINT64_MAX},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint8_t rec[GS_STOPPED_RAW_LEN];
        gs_encode_stopped(&cases[i], rec);
        size_t len = framed(rec, sizeof rec, GS_REC_STOPPED);
        struct gs_stopped s;
        memset(&s, 0x5a, sizeof s);
        cr_assert_eq(stopped_cut(rec + 2, len, &s), 0);
        same_stopped(&s, &cases[i]);
        for (size_t cut = 0; cut < len; cut++)
            cr_assert_eq(stopped_cut(rec + 2, cut, &s), -1, "case %zu cut at %zu", i, cut);
    }
}

Test(meta, a_stopped_record_whose_errno_is_no_errno_is_refused)
{
    struct gs_stopped s = {.err = (uint64_t)INT32_MAX + 1, .offset = 1};
    uint8_t rec[GS_STOPPED_RAW_LEN];
    gs_encode_stopped(&s, rec);
    cr_assert_eq(stopped_cut(rec + 2, rec[1], &s), -1);
}

/* In a chunk, through gs_decode_chunk: the largest ring position, and what
 * the last STOPPED record says; one that does not parse is damaged. */
Test(meta, the_writers_records_reach_what_reading_counts)
{
    uint8_t raw[4 * GS_STOPPED_RAW_LEN];
    size_t n = gs_encode_ring_pos(900, raw);
    n += gs_encode_ring_pos(300, raw + n);
    struct gs_stopped s = {.err = 27, .offset = 4096, .time_ns = 55, .events = 9, .lost = 4,
                           .end_ns = 77};
    gs_encode_stopped(&s, raw + n);
    n += GS_STOPPED_RAW_LEN;
    struct gs_stopped bad = {.err = (uint64_t)INT32_MAX + 1};
    gs_encode_stopped(&bad, raw + n);
    n += GS_STOPPED_RAW_LEN;
    struct gs_reader_ops ops = {0};
    struct gs_reader_stats st = {0};
    cr_assert_eq(gs_decode_chunk(raw, n, &ops, NULL, &st), 4);
    cr_assert_eq(st.ring_pos, 900);
    cr_assert_eq(st.damaged_records, 1);
    cr_assert_eq(st.write_failed, 1);
    cr_assert_eq(st.end_seen, 1);
    struct gs_stopped got = {.err = (uint64_t)st.fail_errno, .offset = st.fail_offset,
                             .time_ns = st.fail_time_ns, .events = st.end_events,
                             .lost = st.end_lost, .end_ns = st.end_time_ns};
    same_stopped(&got, &s);
}

/* A RESUMED record undoes the END before it; one whose time does not parse
 * is damaged, and the END stands. */
Test(meta, a_resumed_record_undoes_the_end_before_it)
{
    struct gs_end_body end = {.type = GS_REC_END, .events = 3, .time_ns = 10};
    uint8_t raw[3 * GS_MAX_RECORD];
    struct gs_encoder e;
    gs_encoder_reset(&e);
    size_t n = gs_encode(&e, &end, sizeof end, raw);
    size_t cut_at = n;
    n += gs_encode_resumed(11, raw + n);
    struct gs_reader_ops ops = {0};
    struct gs_reader_stats st = {0};
    cr_assert_eq(gs_decode_chunk(raw, n, &ops, NULL, &st), 2);
    cr_assert_eq(st.damaged_records, 0);
    cr_assert_eq(st.end_seen, 0, "it goes on");
    cr_assert_eq(st.end_time_ns, 0);
    const uint8_t cut[] = {GS_REC_RESUMED, 1, 0x80}; /* its varint cut short */
    memcpy(raw + cut_at, cut, sizeof cut);
    memset(&st, 0, sizeof st);
    cr_assert_eq(gs_decode_chunk(raw, cut_at + sizeof cut, &ops, NULL, &st), 2);
    cr_assert_eq(st.damaged_records, 1);
    cr_assert_eq(st.end_seen, 1, "the END stands");
    cr_assert_eq(st.end_time_ns, 10);
}
