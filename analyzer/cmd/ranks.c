/*
 * ranks.c - gpushim report over the traces of a distributed job, one per
 * rank: a table of the ranks (host, process, peak per device, the rank's
 * largest peak, failures, whether its trace is complete), how unbalanced
 * the peaks are, and which rank failed an allocation first. Failures are
 * those the rank did not get past (outcome.c): a retry that succeeded, a
 * probe or a refusal is no failure of the job's.
 *
 * A rank is what its trace's JOB record says (the shim reads RANK and its
 * kin when the trace begins); traces without one (written before the record
 * existed, or by a process that no launcher gave a rank) are numbered in
 * the order they were given, and the report says so. Which rank failed
 * first is by wall-clock time: the trace's wall-clock start (CLOCK record)
 * plus the failure's time since then, so traces of different hosts compare
 * as far as their clocks agree.
 *
 * Traces are read one at a time: only each one's figures are kept.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "analyzer/util/bytes.h"
#include "analyzer/util/json.h"
#include "analyzer/util/names.h"
#include "analyzer/trace/trace.h"
#include "analyzer/read/read.h"
#include "analyzer/model/outcome.h"
#include "analyzer/findings/found.h"
#include "analyzer/report/load.h"
#include "analyzer/cmd/cmd.h"

struct rank_row {
    const char *path;
    int64_t rank;          /* as shown: recorded, or the order given */
    int64_t recorded_rank; /* -1: none */
    int64_t local_rank;    /* -1: unknown */
    uint64_t world_size;   /* 0: unknown */
    int job_seen;
    char host[256];
    int host_left_out; /* --redact */
    uint64_t pid;
    uint64_t dev_peak[GS_MAX_DEVICES + 1];
    uint8_t dev_present[GS_MAX_DEVICES + 1];
    uint64_t peak; /* the largest peak on one device */
    uint64_t failures;    /* failed allocations, all outcomes */
    uint64_t unrecovered; /* of them, those the rank did not get past (outcome.c) */
    int failed;    /* an unrecovered failure is kept, below */
    struct gs_failure first;
    uint64_t first_unix_ns;
    int complete;
    const char *ending;
};

static void take(struct rank_row *row, const char *path, const struct gs_loaded *l,
                 const struct gs_findings *f)
{
    const struct gs_header_info *h = &l->info.header;
    memset(row, 0, sizeof *row);
    row->path = path;
    row->recorded_rank = h->job_seen ? h->rank : -1;
    row->local_rank = h->job_seen ? h->local_rank : -1;
    row->world_size = h->job_seen ? h->world_size : 0;
    row->job_seen = h->job_seen;
    row->host_left_out = gs_shown_host(&l->info) == NULL;
    snprintf(row->host, sizeof row->host, "%s", row->host_left_out ? "(left out)" : h->host);
    row->pid = h->pid;
    for (int d = 0; d <= GS_MAX_DEVICES; d++) {
        row->dev_present[d] = (uint8_t)f->devices[d].present;
        row->dev_peak[d] = f->devices[d].peak_bytes;
    }
    row->peak = f->largest_device_peak;
    row->failures = f->failed;
    row->unrecovered = f->unrecovered;
    for (size_t i = 0; i < f->nfailures && !row->failed; i++) {
        if (f->failures[i].f->outcome != GS_OUTCOME_UNRECOVERED)
            continue;
        row->failed = 1;
        row->first = *f->failures[i].f;
        row->first_unix_ns = l->info.header.realtime_ns + row->first.time_ns;
    }
    row->complete = gs_trace_complete(&l->st);
    row->ending = gs_trace_ending(&l->info, &l->st); /* a string literal */
}

static int by_rank(const void *a, const void *b)
{
    const struct rank_row *x = a, *y = b;
    return x->rank < y->rank ? -1 : x->rank > y->rank;
}

struct job {
    struct rank_row *rows;
    size_t n;
    int from_trace;   /* ranks as recorded; else the order given */
    char note[256];   /* why not, when not */
    uint64_t world_size; /* all traces that say agree; 0: unknown or they differ */
    double mean_peak, imbalance;
    size_t highest;   /* index of the rank with the largest peak */
    long first_fail;  /* index of the rank that failed first, -1: none did */
    size_t failed_ranks;
};

static void summarize(struct job *j)
{
    size_t missing = 0;
    int64_t dup = -1;
    for (size_t i = 0; i < j->n; i++) {
        if (j->rows[i].recorded_rank < 0)
            missing++;
        for (size_t k = 0; k < i && dup < 0; k++)
            if (j->rows[i].recorded_rank >= 0 && j->rows[k].recorded_rank == j->rows[i].recorded_rank)
                dup = j->rows[i].recorded_rank;
    }
    j->from_trace = !missing && dup < 0;
    if (missing)
        snprintf(j->note, sizeof j->note,
                 "%zu of the %zu traces record no rank (written before gpushim recorded ranks, or "
                 "run without RANK and its kin): ranks are the order the traces were given",
                 missing, j->n);
    else if (dup >= 0)
        snprintf(j->note, sizeof j->note,
                 "rank %" PRId64 " is recorded by more than one trace: ranks are the order the "
                 "traces were given", dup);
    for (size_t i = 0; i < j->n; i++)
        j->rows[i].rank = j->from_trace ? j->rows[i].recorded_rank : (int64_t)i;
    if (j->from_trace)
        qsort(j->rows, j->n, sizeof *j->rows, by_rank);

    j->world_size = 0;
    for (size_t i = 0; i < j->n; i++) {
        uint64_t w = j->rows[i].world_size;
        if (!w)
            continue;
        if (j->world_size && j->world_size != w) {
            j->world_size = 0;
            break;
        }
        j->world_size = w;
    }

    double sum = 0;
    j->highest = 0;
    j->first_fail = -1;
    j->failed_ranks = 0;
    for (size_t i = 0; i < j->n; i++) {
        const struct rank_row *r = &j->rows[i];
        sum += (double)r->peak;
        if (r->peak > j->rows[j->highest].peak)
            j->highest = i;
        if (r->unrecovered)
            j->failed_ranks++;
        if (r->failed && (j->first_fail < 0 || r->first_unix_ns < j->rows[j->first_fail].first_unix_ns))
            j->first_fail = (long)i;
    }
    j->mean_peak = j->n ? sum / (double)j->n : 0;
    j->imbalance = j->mean_peak > 0 ? (double)j->rows[j->highest].peak / j->mean_peak : -1;
}

static void wall_clock(uint64_t unix_ns, char *buf, size_t sz)
{
    time_t secs = (time_t)(unix_ns / 1000000000u);
    struct tm tm;
    char day[32] = "?";
    if (gmtime_r(&secs, &tm))
        strftime(day, sizeof day, "%Y-%m-%d %H:%M:%S", &tm);
    snprintf(buf, sz, "%s.%06u UTC", day, (unsigned)(unix_ns % 1000000000u / 1000u));
}

static void job_text(FILE *out, const struct job *j)
{
    char b1[64], b2[64];
    fprintf(out, "Job: %zu trace%s", j->n, j->n == 1 ? "" : "s");
    if (j->world_size)
        fprintf(out, " of a world of %" PRIu64 " rank%s", j->world_size,
                j->world_size == 1 ? "" : "s");
    fputc('\n', out);
    if (!j->from_trace)
        fprintf(out, "note: %s\n", j->note);
    fprintf(out, "\n%4s  %-16s %8s  %12s  %8s  %-20s  %s\n", "rank", "host", "pid", "largest peak",
            "failures", "trace", "peak per device");
    /* failures: those the rank did not get past; the others are in its report */
    for (size_t i = 0; i < j->n; i++) {
        const struct rank_row *r = &j->rows[i];
        char trace[64];
        snprintf(trace, sizeof trace, "%s, %s", r->complete ? "complete" : "incomplete", r->ending);
        fprintf(out, "%4" PRId64 "  %-16s %8" PRIu64 "  %12s  %8" PRIu64 "  %-20s ", r->rank,
                r->host, r->pid, gs_human_bytes(r->peak, b1, sizeof b1), r->unrecovered, trace);
        int any = 0;
        for (int d = 0; d <= GS_MAX_DEVICES; d++) {
            if (!r->dev_present[d])
                continue;
            if (d == GS_MAX_DEVICES)
                fprintf(out, " ?: %s", gs_human_bytes(r->dev_peak[d], b1, sizeof b1));
            else
                fprintf(out, " %d: %s", d, gs_human_bytes(r->dev_peak[d], b1, sizeof b1));
            any = 1;
        }
        fprintf(out, "%s\n", any ? "" : " none");
    }
    fputc('\n', out);
    if (j->imbalance >= 0)
        fprintf(out, "imbalance  %.2f: rank %" PRId64 " peaks at %s; the mean of the ranks' peaks is %s\n",
                j->imbalance, j->rows[j->highest].rank,
                gs_human_bytes(j->rows[j->highest].peak, b1, sizeof b1),
                gs_human_bytes(gs_whole_bytes(j->mean_peak), b2, sizeof b2));
    else
        fputs("imbalance  none: no rank allocated device memory\n", out);
    if (j->first_fail >= 0) {
        const struct rank_row *r = &j->rows[j->first_fail];
        char when[64];
        wall_clock(r->first_unix_ns, when, sizeof when);
        fprintf(out, "first failure  rank %" PRId64 " at %s: %s of %s on device %d (%s)", r->rank,
                when, gs_api_name(r->first.api), gs_human_bytes(r->first.requested, b1, sizeof b1),
                (int)r->first.device, gs_result_name(r->first.result));
        fprintf(out, "; %zu rank%s failed\n", j->failed_ranks, j->failed_ranks == 1 ? "" : "s");
    } else {
        fputs("first failure  none: no rank failed an allocation it did not get past\n", out);
    }
}

static void job_json(FILE *out, const struct job *j)
{
    struct gs_json js = {.out = out};
    gs_json_begin_object(&js, NULL);
    gs_json_string(&js, "ranks_from", j->from_trace ? "trace" : "order");
    gs_json_string(&js, "note", j->from_trace ? NULL : j->note);
    if (j->world_size)
        gs_json_uint(&js, "world_size", j->world_size);
    else
        gs_json_null(&js, "world_size");
    gs_json_begin_array(&js, "ranks");
    for (size_t i = 0; i < j->n; i++) {
        const struct rank_row *r = &j->rows[i];
        gs_json_begin_object(&js, NULL);
        gs_json_int(&js, "rank", r->rank);
        if (r->local_rank >= 0)
            gs_json_int(&js, "local_rank", r->local_rank);
        else
            gs_json_null(&js, "local_rank");
        gs_json_string(&js, "path", r->path);
        gs_json_string(&js, "host", r->host_left_out ? NULL : r->host);
        gs_json_uint(&js, "pid", r->pid);
        gs_json_uint(&js, "peak_bytes", r->peak);
        gs_json_begin_array(&js, "devices");
        for (int d = 0; d <= GS_MAX_DEVICES; d++) {
            if (!r->dev_present[d])
                continue;
            gs_json_begin_object(&js, NULL);
            gs_json_int(&js, "device", d == GS_MAX_DEVICES ? -1 : d);
            gs_json_uint(&js, "peak_bytes", r->dev_peak[d]);
            gs_json_end_object(&js);
        }
        gs_json_end_array(&js);
        gs_json_uint(&js, "failures", r->failures);
        gs_json_uint(&js, "unrecovered_failures", r->unrecovered);
        if (r->failed) {
            gs_json_begin_object(&js, "first_failure");
            gs_json_uint(&js, "unix_ns", r->first_unix_ns);
            gs_json_uint(&js, "time_ns", r->first.time_ns);
            gs_json_string(&js, "api", gs_api_name(r->first.api));
            gs_json_int(&js, "device", r->first.device);
            gs_json_uint(&js, "requested_bytes", r->first.requested);
            gs_json_uint(&js, "result", r->first.result);
            gs_json_string(&js, "result_name", gs_result_name(r->first.result));
            gs_json_end_object(&js);
        } else {
            gs_json_null(&js, "first_failure");
        }
        gs_json_bool(&js, "complete", r->complete);
        gs_json_string(&js, "ending", r->ending);
        gs_json_end_object(&js);
    }
    gs_json_end_array(&js);
    gs_json_double(&js, "mean_peak_bytes", j->mean_peak);
    if (j->imbalance >= 0) {
        gs_json_double(&js, "imbalance", j->imbalance);
        gs_json_int(&js, "highest_rank", j->rows[j->highest].rank);
    } else {
        gs_json_null(&js, "imbalance");
        gs_json_null(&js, "highest_rank");
    }
    if (j->first_fail >= 0) {
        const struct rank_row *r = &j->rows[j->first_fail];
        gs_json_begin_object(&js, "first_failure");
        gs_json_int(&js, "rank", r->rank);
        gs_json_uint(&js, "unix_ns", r->first_unix_ns);
        gs_json_string(&js, "path", r->path);
        gs_json_end_object(&js);
    } else {
        gs_json_null(&js, "first_failure");
    }
    gs_json_uint(&js, "failed_ranks", j->failed_ranks);
    gs_json_end_object(&js);
}

int gs_report_ranks(char **paths, size_t n, int json, FILE *out)
{
    struct job j = {.n = n};
    j.rows = calloc(n ? n : 1, sizeof *j.rows);
    if (!j.rows) {
        fputs("gpushim report: out of memory\n", stderr);
        return 1;
    }
    for (size_t i = 0; i < n; i++) {
        struct gs_loaded l;
        if (gs_load("report", paths[i], &l) != 0) {
            free(j.rows);
            return 1;
        }
        struct gs_findings f; /* its figures: a rank's row needs no names */
        gs_findings_figures(&f, &l.info, &l.st, &l.r);
        take(&j.rows[i], paths[i], &l, &f);
        gs_findings_free(&f);
        gs_loaded_free(&l);
    }
    summarize(&j);
    if (json)
        job_json(out, &j);
    else
        job_text(out, &j);
    free(j.rows);
    return 0;
}
