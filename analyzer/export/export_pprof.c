/*
 * export_pprof.c - owns the pprof export (gpushim export --format=pprof):
 * the device call sites as a gzipped profile.proto
 * (github.com/google/pprof/proto/profile.proto), which `go tool pprof`,
 * speedscope and other tools read.
 *
 * One sample per call site as the report merges them (gs_rank_sites), its
 * values in the order of the sample types: inuse_space/bytes,
 * inuse_objects/count (what was live at the end of the trace, or at the
 * device peak), alloc_space/bytes, alloc_objects/count (all the run
 * allocated). Its locations go from the program's own call site outwards,
 * the shim's and the CUDA libraries' frames trimmed as the report trims
 * them. A location is one recorded pc: its mapping (the module it lies in),
 * its address (the return address less 1, inside the call, where pprof
 * would look it up) and its lines, innermost first, one per function
 * inlined at that pc, the last the function it was inlined into. A Python
 * frame is a location of its own, with no mapping and no address.
 *
 * Strings, functions, locations and mappings are made once, on first use,
 * and numbered from 1 (strings from 0, string 0 being ""); everything is
 * built in memory, written with protobuf.c, then gzipped with zlib.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "gpushim_trace.h"
#include "analyzer/util/idmap.h"
#include "analyzer/util/names.h"
#include "analyzer/util/protobuf.h"
#include "analyzer/util/reserve.h"
#include "analyzer/read/read.h"
#include "analyzer/model/model.h"
#include "analyzer/symbols/symbolize.h"
#include "analyzer/symbols/symbols.h"
#include "analyzer/report/report.h"
#include "analyzer/export/export.h"

/* profile.proto's field numbers. */
enum {
    PROFILE_SAMPLE_TYPE = 1, PROFILE_SAMPLE = 2, PROFILE_MAPPING = 3, PROFILE_LOCATION = 4,
    PROFILE_FUNCTION = 5, PROFILE_STRING_TABLE = 6, PROFILE_TIME_NANOS = 9,
    PROFILE_DURATION_NANOS = 10, PROFILE_PERIOD_TYPE = 11, PROFILE_PERIOD = 12,
    PROFILE_COMMENT = 13, PROFILE_DEFAULT_SAMPLE_TYPE = 14,
    VALUE_TYPE_TYPE = 1, VALUE_TYPE_UNIT = 2,
    SAMPLE_LOCATION_ID = 1, SAMPLE_VALUE = 2, SAMPLE_LABEL = 3,
    LABEL_KEY = 1, LABEL_STR = 2,
    MAPPING_ID = 1, MAPPING_MEMORY_START = 2, MAPPING_MEMORY_LIMIT = 3, MAPPING_FILE_OFFSET = 4,
    MAPPING_FILENAME = 5, MAPPING_BUILD_ID = 6, MAPPING_HAS_FUNCTIONS = 7,
    MAPPING_HAS_FILENAMES = 8, MAPPING_HAS_LINE_NUMBERS = 9, MAPPING_HAS_INLINE_FRAMES = 10,
    LOCATION_ID = 1, LOCATION_MAPPING_ID = 2, LOCATION_ADDRESS = 3, LOCATION_LINE = 4,
    LINE_FUNCTION_ID = 1, LINE_LINE = 2,
    FUNCTION_ID = 1, FUNCTION_NAME = 2, FUNCTION_SYSTEM_NAME = 3, FUNCTION_FILENAME = 4,
    FUNCTION_START_LINE = 5,
};

#define NVALUES 4 /* inuse_space, inuse_objects, alloc_space, alloc_objects */

struct pline {
    uint64_t function; /* id */
    int64_t line;
};

struct pfunction {
    uint64_t name, system_name, filename; /* string ids */
    int64_t start_line;
};

struct plocation {
    uint64_t mapping, address; /* mapping id, 0 for none */
    size_t first, nlines;      /* in builder.lines */
};

struct pmapping {
    const struct gs_module *m;
    int functions, filenames, line_numbers; /* every line of every location has one */
};

struct psample {
    uint32_t stack_id, api;
    uint64_t v[NVALUES];
    size_t first, nlocs; /* in builder.sample_locs */
};

struct builder {
    const struct gs_replay *r;
    int failed;
    char **strings;
    size_t nstrings, strings_cap;
    struct gs_idmap *string_ix; /* hash (probed) -> index */
    struct pfunction *functions;
    size_t nfunctions, functions_cap;
    struct gs_idmap *function_ix;
    struct plocation *locations;
    size_t nlocations, locations_cap;
    struct gs_idmap *location_ix;
    struct pline *lines;
    size_t nlines, lines_cap;
    struct pmapping *mappings;
    size_t nmappings, mappings_cap;
    struct gs_idmap *mapping_ix; /* module id -> index */
    struct psample *samples;
    size_t nsamples, samples_cap;
    struct gs_idmap *sample_ix; /* site key -> index */
    uint64_t *sample_locs;
    size_t nsample_locs, sample_locs_cap;
};

static uint64_t mix(uint64_t h, uint64_t v)
{
    h ^= v;
    h *= 0xff51afd7ed558ccdull;
    return h ^ (h >> 32);
}

static int grow(struct builder *b, void **arr, size_t *cap, size_t n, size_t sz)
{
    if (b->failed || gs_reserve(arr, cap, n, sz) != 0) {
        b->failed = 1;
        return -1;
    }
    return 0;
}

/* ---- interning: a hash probed from its value until the entry matches ---- */

static uint64_t string_id(struct builder *b, const char *s)
{
    if (!s || !*s)
        return 0;
    uint64_t h = 0xcbf29ce484222325ull, at;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        h = (h ^ *p) * 0x100000001b3ull;
    for (;; h++) {
        if (gs_idmap_get(b->string_ix, h, &at) != 0)
            break;
        if (strcmp(b->strings[at], s) == 0)
            return at;
    }
    char *copy = strdup(s);
    if (!copy || grow(b, (void **)&b->strings, &b->strings_cap, b->nstrings, sizeof(char *)) ||
        gs_idmap_put(b->string_ix, h, b->nstrings) != 0) {
        free(copy);
        b->failed = 1;
        return 0;
    }
    b->strings[b->nstrings] = copy;
    return b->nstrings++;
}

/* A native function's system name is its name as the symbolizer gives it
 * (demangled: pprof leaves it so); a Python function (plain set)
 * has none, so that pprof leaves its name alone: it would take the
 * "<module>" of a Python module's code for a C++ template and erase it. */
static uint64_t function_id(struct builder *b, const char *name, const char *file,
                            int64_t start_line, int plain)
{
    struct pfunction f = {string_id(b, name), 0, string_id(b, file), start_line};
    f.system_name = plain ? 0 : f.name;
    uint64_t h = mix(mix(mix(mix(0x6a09e667f3bcc908ull, f.name), f.system_name), f.filename),
                     (uint64_t)start_line),
             at;
    for (;; h++) {
        if (gs_idmap_get(b->function_ix, h, &at) != 0)
            break;
        const struct pfunction *g = &b->functions[at];
        if (g->name == f.name && g->system_name == f.system_name && g->filename == f.filename &&
            g->start_line == f.start_line)
            return at + 1;
    }
    if (grow(b, (void **)&b->functions, &b->functions_cap, b->nfunctions, sizeof f) ||
        gs_idmap_put(b->function_ix, h, b->nfunctions) != 0) {
        b->failed = 1;
        return 0;
    }
    b->functions[b->nfunctions++] = f;
    return b->nfunctions;
}

static size_t mapping_index(struct builder *b, const struct gs_module *m)
{
    uint64_t at;
    if (gs_idmap_get(b->mapping_ix, m->id, &at) == 0)
        return at;
    if (grow(b, (void **)&b->mappings, &b->mappings_cap, b->nmappings, sizeof *b->mappings) ||
        gs_idmap_put(b->mapping_ix, m->id, b->nmappings) != 0) {
        b->failed = 1;
        return SIZE_MAX;
    }
    b->mappings[b->nmappings] = (struct pmapping){m, 1, 1, 1};
    return b->nmappings++;
}

/* The location of lines[first..] (just added to b->lines) at address in
 * mapping: an earlier equal one, or this one made (the lines kept). */
static uint64_t location_id(struct builder *b, uint64_t mapping, uint64_t address, size_t first)
{
    size_t n = b->nlines - first;
    uint64_t h = mix(mix(0xbb67ae8584caa73bull, mapping), address), at;
    for (size_t i = first; i < b->nlines; i++)
        h = mix(mix(h, b->lines[i].function), (uint64_t)b->lines[i].line);
    for (;; h++) {
        if (gs_idmap_get(b->location_ix, h, &at) != 0)
            break;
        const struct plocation *l = &b->locations[at];
        if (l->mapping == mapping && l->address == address && l->nlines == n &&
            (n == 0 || !memcmp(&b->lines[l->first], &b->lines[first], n * sizeof *b->lines))) {
            b->nlines = first; /* the same lines are there already */
            return at + 1;
        }
    }
    if (grow(b, (void **)&b->locations, &b->locations_cap, b->nlocations, sizeof *b->locations) ||
        gs_idmap_put(b->location_ix, h, b->nlocations) != 0) {
        b->failed = 1;
        return 0;
    }
    b->locations[b->nlocations++] = (struct plocation){mapping, address, first, n};
    return b->nlocations;
}

static void add_line(struct builder *b, uint64_t function, int64_t line)
{
    if (grow(b, (void **)&b->lines, &b->lines_cap, b->nlines, sizeof *b->lines) == 0)
        b->lines[b->nlines++] = (struct pline){function, line};
}

/* ---- a sample's stack ---- */

struct frame_list {
    struct gs_frame *f;
    size_t n, cap;
    int failed;
};

static void collect(void *ctx, const struct gs_frame *f, unsigned index)
{
    (void)index;
    struct frame_list *l = ctx;
    if (gs_reserve((void **)&l->f, &l->cap, l->n, sizeof *l->f) != 0) {
        l->failed = 1;
        return;
    }
    l->f[l->n++] = *f;
}

/* The location of the frames f[0..n), which stand for one recorded pc. */
static uint64_t frames_location(struct builder *b, const struct gs_frame *f, size_t n)
{
    size_t first = b->nlines;
    if (f[0].python) {
        const struct gs_pycode *c = gs_replay_pycode(b->r, gs_py_pc_code(f[0].pc));
        if (!f[0].function) /* a code object the trace does not define */
            return location_id(b, 0, f[0].pc, first);
        add_line(b, function_id(b, f[0].function, f[0].file, c ? c->first_line : 0, 1),
                 f[0].line);
        return location_id(b, 0, 0, first);
    }
    const struct gs_module *m = gs_replay_module_at(b->r, f[0].pc);
    size_t mi = m ? mapping_index(b, m) : SIZE_MAX;
    struct pmapping *pm = mi != SIZE_MAX ? &b->mappings[mi] : NULL;
    for (size_t i = 0; i < n; i++) {
        if (pm) {
            pm->functions &= f[i].function != NULL;
            pm->filenames &= f[i].file != NULL;
            pm->line_numbers &= f[i].line > 0;
        }
        if (f[i].function) /* a line names a function; without one the address is all */
            add_line(b, function_id(b, f[i].function, f[i].file, 0, 0), f[i].line);
    }
    return location_id(b, pm ? mi + 1 : 0, f[0].pc ? f[0].pc - 1 : 0, first);
}

static void add_stack(struct builder *b, struct psample *s, enum gs_stack_view view,
                      struct gs_symbolizer *sym)
{
    struct frame_list fl = {0};
    gs_site_frames(b->r, sym, s->stack_id, view, UINT32_MAX, collect, &fl);
    s->first = b->nsample_locs;
    if (fl.failed)
        b->failed = 1;
    for (size_t i = 0; i < fl.n && !b->failed;) {
        size_t j = i + 1;
        while (j < fl.n && fl.f[j].stack_index == fl.f[i].stack_index &&
               fl.f[j].python == fl.f[i].python)
            j++;
        uint64_t id = frames_location(b, &fl.f[i], j - i);
        if (grow(b, (void **)&b->sample_locs, &b->sample_locs_cap, b->nsample_locs,
                 sizeof *b->sample_locs) == 0)
            b->sample_locs[b->nsample_locs++] = id;
        i = j;
    }
    if (!fl.n && !b->failed) { /* nothing known of the stack */
        size_t first = b->nlines;
        add_line(b, function_id(b, "[unknown]", NULL, 0, 1), 0);
        uint64_t id = location_id(b, 0, 0, first);
        if (grow(b, (void **)&b->sample_locs, &b->sample_locs_cap, b->nsample_locs,
                 sizeof *b->sample_locs) == 0)
            b->sample_locs[b->nsample_locs++] = id;
    }
    s->nlocs = b->nsample_locs - s->first;
    free(fl.f);
}

/* ---- the samples ---- */

static struct psample *sample_for(struct builder *b, uint64_t key, uint32_t stack_id, uint32_t api)
{
    uint64_t at;
    if (gs_idmap_get(b->sample_ix, key, &at) == 0)
        return &b->samples[at];
    if (grow(b, (void **)&b->samples, &b->samples_cap, b->nsamples, sizeof *b->samples) ||
        gs_idmap_put(b->sample_ix, key, b->nsamples) != 0) {
        b->failed = 1;
        return NULL;
    }
    struct psample *s = &b->samples[b->nsamples++];
    memset(s, 0, sizeof *s);
    s->stack_id = stack_id;
    s->api = api;
    return s;
}

/* Adds the sites ranked by metric to the samples, into values v and v + 1. */
static void add_sites(struct builder *b, const struct gs_report *rep, enum gs_site_metric metric,
                      unsigned v)
{
    size_t n;
    struct gs_report_site *sites;
    const struct gs_report_site *ranked = gs_export_sites(rep, metric, &n, &sites);
    if (!ranked && metric == GS_METRIC_ALLOCATED)
        b->failed = 1;
    for (size_t i = 0; i < n && !b->failed; i++) {
        uint64_t key = gs_site_key(b->r, rep->sym, rep->opt->view, ranked[i].stack_id);
        struct psample *s = sample_for(b, key, ranked[i].stack_id, ranked[i].api);
        if (s) {
            s->v[v] = ranked[i].bytes;
            s->v[v + 1] = ranked[i].count;
        }
    }
    free(sites);
}

/* ---- writing ---- */

static void write_value_type(struct gs_pb *pb, unsigned field, uint64_t type, uint64_t unit)
{
    size_t at = gs_pb_begin(pb, field);
    gs_pb_uint(pb, VALUE_TYPE_TYPE, type);
    gs_pb_uint(pb, VALUE_TYPE_UNIT, unit);
    gs_pb_end(pb, at);
}

static int64_t clamp(uint64_t v) { return v > INT64_MAX ? INT64_MAX : (int64_t)v; }

static void write_mapping(struct builder *b, struct gs_pb *pb, size_t i)
{
    const struct pmapping *pm = &b->mappings[i];
    const struct gs_module *m = pm->m;
    char hex[2 * GS_MAX_BUILD_ID + 1];
    size_t n = m->build_id_len < GS_MAX_BUILD_ID ? m->build_id_len : GS_MAX_BUILD_ID;
    for (size_t k = 0; k < n; k++)
        snprintf(hex + 2 * k, 3, "%02x", m->build_id[k]);
    hex[2 * n] = 0;
    size_t at = gs_pb_begin(pb, PROFILE_MAPPING);
    gs_pb_uint(pb, MAPPING_ID, i + 1);
    gs_pb_uint(pb, MAPPING_MEMORY_START, m->lo);
    gs_pb_uint(pb, MAPPING_MEMORY_LIMIT, m->lo + m->span < m->lo ? UINT64_MAX : m->lo + m->span);
    /* The lowest loadable segment, where the module's range starts, begins
     * the file as linkers lay ELF files out: file offset 0. */
    gs_pb_uint(pb, MAPPING_FILE_OFFSET, 0);
    gs_pb_int(pb, MAPPING_FILENAME, (int64_t)string_id(b, m->path));
    gs_pb_int(pb, MAPPING_BUILD_ID, (int64_t)string_id(b, hex));
    gs_pb_bool(pb, MAPPING_HAS_FUNCTIONS, pm->functions);
    gs_pb_bool(pb, MAPPING_HAS_FILENAMES, pm->functions && pm->filenames);
    gs_pb_bool(pb, MAPPING_HAS_LINE_NUMBERS, pm->functions && pm->line_numbers);
    gs_pb_bool(pb, MAPPING_HAS_INLINE_FRAMES, pm->functions);
    gs_pb_end(pb, at);
}

static void write_profile(struct builder *b, struct gs_pb *pb, const struct gs_report *rep,
                          enum gs_pprof_inuse inuse)
{
    static const char *const types[NVALUES][2] = {{"inuse_space", "bytes"},
                                                  {"inuse_objects", "count"},
                                                  {"alloc_space", "bytes"},
                                                  {"alloc_objects", "count"}};
    for (unsigned i = 0; i < NVALUES; i++)
        write_value_type(pb, PROFILE_SAMPLE_TYPE, string_id(b, types[i][0]),
                         string_id(b, types[i][1]));
    uint64_t api_key = string_id(b, "api");
    for (size_t i = 0; i < b->nsamples; i++) {
        const struct psample *s = &b->samples[i];
        size_t at = gs_pb_begin(pb, PROFILE_SAMPLE), run = gs_pb_begin(pb, SAMPLE_LOCATION_ID);
        for (size_t k = 0; k < s->nlocs; k++)
            gs_pb_varint(pb, b->sample_locs[s->first + k]);
        gs_pb_end(pb, run);
        run = gs_pb_begin(pb, SAMPLE_VALUE);
        for (unsigned k = 0; k < NVALUES; k++)
            gs_pb_varint(pb, (uint64_t)clamp(s->v[k]));
        gs_pb_end(pb, run);
        run = gs_pb_begin(pb, SAMPLE_LABEL);
        gs_pb_uint(pb, LABEL_KEY, api_key);
        gs_pb_uint(pb, LABEL_STR, string_id(b, gs_api_name(s->api)));
        gs_pb_end(pb, run);
        gs_pb_end(pb, at);
    }
    for (size_t i = 0; i < b->nmappings; i++)
        write_mapping(b, pb, i);
    for (size_t i = 0; i < b->nlocations; i++) {
        const struct plocation *l = &b->locations[i];
        size_t at = gs_pb_begin(pb, PROFILE_LOCATION);
        gs_pb_uint(pb, LOCATION_ID, i + 1);
        gs_pb_uint(pb, LOCATION_MAPPING_ID, l->mapping);
        gs_pb_uint(pb, LOCATION_ADDRESS, l->address);
        for (size_t k = 0; k < l->nlines; k++) {
            size_t ln = gs_pb_begin(pb, LOCATION_LINE);
            gs_pb_uint(pb, LINE_FUNCTION_ID, b->lines[l->first + k].function);
            gs_pb_int(pb, LINE_LINE, b->lines[l->first + k].line);
            gs_pb_end(pb, ln);
        }
        gs_pb_end(pb, at);
    }
    for (size_t i = 0; i < b->nfunctions; i++) {
        const struct pfunction *f = &b->functions[i];
        size_t at = gs_pb_begin(pb, PROFILE_FUNCTION);
        gs_pb_uint(pb, FUNCTION_ID, i + 1);
        gs_pb_uint(pb, FUNCTION_NAME, f->name);
        gs_pb_uint(pb, FUNCTION_SYSTEM_NAME, f->system_name);
        gs_pb_uint(pb, FUNCTION_FILENAME, f->filename);
        gs_pb_int(pb, FUNCTION_START_LINE, f->start_line);
        gs_pb_end(pb, at);
    }

    /* Comments: what was profiled, and what inuse means here. */
    const struct gs_header_info *in = &rep->info->header;
    char text[4096 + 128];
    uint64_t comments[4];
    unsigned nc = 0;
    const char *command = gs_shown_command(rep->info), *host = gs_shown_host(rep->info);
    snprintf(text, sizeof text, "command: %s",
             !command ? "(left out: --redact)" : command[0] ? command : "(not recorded)");
    comments[nc++] = string_id(b, text);
    snprintf(text, sizeof text, "pid %" PRIu64 " on %s, trace %s", in->pid,
             host ? host : "(left out: --redact)", rep->path);
    comments[nc++] = string_id(b, text);
    if (inuse == GS_PPROF_INUSE_PEAK)
        snprintf(text, sizeof text,
                 "inuse: device memory live at the process's peak, %" PRIu64 " bytes at %.6f s",
                 rep->found->peak_bytes, (double)rep->found->peak_time_ns / 1e9);
    else
        snprintf(text, sizeof text, "inuse: device memory live at the end of the trace (never freed)");
    comments[nc++] = string_id(b, text);
    comments[nc++] = string_id(b, "alloc: device memory allocated over the run");
    uint64_t space = string_id(b, "space"), bytes = string_id(b, "bytes");
    uint64_t inuse_space = string_id(b, "inuse_space");

    /* Every string is known now. */
    for (size_t i = 0; i < b->nstrings; i++)
        gs_pb_string(pb, PROFILE_STRING_TABLE, b->strings[i]);
    gs_pb_int(pb, PROFILE_TIME_NANOS, clamp(in->realtime_ns));
    gs_pb_int(pb, PROFILE_DURATION_NANOS, clamp(rep->found->duration_ns));
    write_value_type(pb, PROFILE_PERIOD_TYPE, space, bytes);
    gs_pb_int(pb, PROFILE_PERIOD, 1); /* every allocation is recorded: no sampling */
    size_t run = gs_pb_begin(pb, PROFILE_COMMENT);
    for (unsigned i = 0; i < nc; i++)
        gs_pb_varint(pb, comments[i]);
    gs_pb_end(pb, run);
    gs_pb_int(pb, PROFILE_DEFAULT_SAMPLE_TYPE, (int64_t)inuse_space);
}

static int gzip_out(FILE *out, const struct gs_pb *pb, char *err, size_t errsz)
{
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    if (deflateInit2(&zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) !=
        Z_OK) {
        snprintf(err, errsz, "zlib cannot start compressing");
        return -1;
    }
    uint8_t chunk[65536];
    zs.next_in = pb->buf;
    int rc;
    size_t left = pb->len;
    do {
        uInt take = left > (1u << 30) ? (1u << 30) : (uInt)left;
        zs.avail_in = take;
        left -= take;
        do {
            zs.next_out = chunk;
            zs.avail_out = sizeof chunk;
            rc = deflate(&zs, left ? Z_NO_FLUSH : Z_FINISH);
            if (rc == Z_STREAM_ERROR)
                break;
            fwrite(chunk, 1, sizeof chunk - zs.avail_out, out);
        } while (zs.avail_out == 0);
    } while (left && rc != Z_STREAM_ERROR);
    deflateEnd(&zs);
    if (rc != Z_STREAM_END) {
        snprintf(err, errsz, "zlib failed to compress the profile");
        return -1;
    }
    return 0;
}

int gs_export_pprof(FILE *out, const struct gs_report *rep, enum gs_pprof_inuse inuse, char *err,
                    size_t errsz)
{
    struct builder b = {.r = rep->replay};
    b.string_ix = gs_idmap_new();
    b.function_ix = gs_idmap_new();
    b.location_ix = gs_idmap_new();
    b.mapping_ix = gs_idmap_new();
    b.sample_ix = gs_idmap_new();
    if (!b.string_ix || !b.function_ix || !b.location_ix || !b.mapping_ix || !b.sample_ix ||
        grow(&b, (void **)&b.strings, &b.strings_cap, 0, sizeof(char *)) ||
        !(b.strings[0] = strdup("")))
        b.failed = 1;
    else
        b.nstrings = 1; /* string 0 is "" (string_id never looks it up) */

    /* Every site by what it allocated, the largest first; then what each
     * held at the end or at the peak, matched by the key sites merge by. */
    if (!b.failed)
        add_sites(&b, rep, GS_METRIC_ALLOCATED, 2);
    if (!b.failed)
        add_sites(&b, rep, inuse == GS_PPROF_INUSE_PEAK ? GS_METRIC_PEAK : GS_METRIC_LEAK, 0);
    for (size_t i = 0; i < b.nsamples && !b.failed; i++)
        add_stack(&b, &b.samples[i], rep->opt->view, rep->sym);

    struct gs_pb pb = {0};
    int rc = -1;
    if (!b.failed)
        write_profile(&b, &pb, rep, inuse);
    if (b.failed || pb.failed)
        snprintf(err, errsz, "out of memory building the profile");
    else
        rc = gzip_out(out, &pb, err, errsz);

    gs_pb_free(&pb);
    for (size_t i = 0; i < b.nstrings; i++)
        free(b.strings[i]);
    free(b.strings);
    free(b.functions);
    free(b.locations);
    free(b.lines);
    free(b.mappings);
    free(b.samples);
    free(b.sample_locs);
    gs_idmap_free(b.string_ix);
    gs_idmap_free(b.function_ix);
    gs_idmap_free(b.location_ix);
    gs_idmap_free(b.mapping_ix);
    gs_idmap_free(b.sample_ix);
    return rc;
}
