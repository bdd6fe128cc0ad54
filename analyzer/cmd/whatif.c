/*
 * whatif.c - gpushim whatif: the options; the trace read once (report/load.c)
 * with the what-if replay (analyzer/whatif/answer.c) watching its events,
 * a second pass only for the run's own card, which its failures tell at the
 * end (over the bytes the first read: read.h's gs_read_seen); the answer in
 * text, JSON or HTML.
 */
#include <getopt.h> /* optind */
#include <stdio.h>
#include <string.h>

#include "analyzer/util/bytes.h"
#include "analyzer/findings/findings.h"
#include "analyzer/report/load.h"
#include "analyzer/report/whatif_report.h"
#include "analyzer/export/export.h"
#include "analyzer/cmd/cmd.h"
#include "analyzer/cmd/across_runs.h"

#define DEFAULT_CONTEXT (512ull << 20)

static const char usage_whatif[] =
    "usage: gpushim whatif [options] TRACE\n"
    "\n"
    "Replays the run's tensor-level allocations and frees, in their order and on\n"
    "their streams, through a model of PyTorch's CUDA caching allocator (or, for\n"
    "a JAX run, XLA's BFC allocator) under each setting, on each card, and says\n"
    "for each: peak reserved and allocated,\n"
    "memory reserved but unallocated at the peak (the least while reserved stood\n"
    "there), whether and where it runs out,\n"
    "the driver calls it makes (num_device_alloc and num_device_free, as PyTorch\n"
    "counts them; pages mapped with expandable segments), its OOM retries, what it\n"
    "breaks; then the best setting for each card.\n"
    "\n"
    "Tensor-level: recorded with gpushim run --per-tensor, with\n"
    "PYTORCH_NO_CUDA_MEMORY_CACHING=1 or XLA_PYTHON_CLIENT_ALLOCATOR=platform, by a\n"
    "program without a caching allocator, or by one that reports its blocks\n"
    "(gpushim_block_alloc).\n"
    "\n";

static const char closing_whatif[] =
    "Exit status: 0 when replayed, 1 when the trace could not be read or has no\n"
    "tensor-level allocations, 2 for a usage error, 4 when the trace is\n"
    "incomplete.\n";

static const struct gs_command command = {.name = "whatif", .usage = usage_whatif,
                                          .closing = closing_whatif, .permute = 1,
                                          .reads_traces = 1};

static int usage_error(const char *fmt, const char *arg)
{
    fputs("gpushim whatif: ", stderr);
    fprintf(stderr, fmt, arg);
    fputs("\nTry 'gpushim whatif --help'.\n", stderr);
    return 2;
}

/* The replay, watching the trace as gs_load reads it. */
struct pass {
    struct gs_wi_question *q;
    struct gs_wi_answer *a;
    int auto_allocator; /* the framework chooses the model */
    int begun, failed;
    char err[512];
};

static void begin(struct pass *p, struct gs_loaded *l)
{
    p->begun = 1;
    if (p->auto_allocator) {
        struct gs_alloc_mode m;
        gs_allocator_mode(&l->info, &l->r, &m);
        p->q->allocator = gs_alloc_mode_jax(&m) ? GS_WI_XLA : GS_WI_TORCH;
    }
    p->failed = gs_wi_answer_begin(p->a, p->q, &l->info, NULL, p->err, sizeof p->err) != 0;
}

static void on_event(void *ctx, struct gs_loaded *l, const struct gs_revent *e)
{
    struct pass *p = ctx;
    if (!p->begun)
        begin(p, l);
    if (!p->failed)
        gs_wi_answer_event(p->a, e);
}

/* --setting CONF: the settings given. */
struct confs {
    const char *v[GS_WI_SETTINGS];
    size_t n;
};

static int take_setting(void *to, const char *cmd, const char *arg)
{
    struct confs *c = to;
    (void)cmd;
    if (c->n == GS_WI_SETTINGS)
        return usage_error("at most %s settings", "16");
    c->v[c->n++] = arg;
    return 0;
}

/* --card SIZE (to: the question): one more card. */
static int take_card(void *to, const char *cmd, const char *arg)
{
    struct gs_wi_question *q = to;
    (void)cmd;
    if (q->ncards == GS_WI_CARDS)
        return usage_error("at most %s cards", "4");
    if (gs_multi_parse_size(arg, &q->cards[q->ncards].bytes) != 0 || !q->cards[q->ncards].bytes)
        return usage_error("--card needs a size (80GB, 81920M, bytes), not '%s'", arg);
    snprintf(q->cards[q->ncards].name, sizeof q->cards[q->ncards].name, "%s", arg);
    q->ncards++;
    return 0;
}

/* --context SIZE (to: a uint64_t). */
static int take_context(void *to, const char *cmd, const char *arg)
{
    (void)cmd;
    if (gs_multi_parse_size(arg, to) != 0)
        return usage_error("--context needs a size (512M, bytes), not '%s'", arg);
    return 0;
}

int gs_cmd_whatif(int argc, char **argv)
{
    static struct gs_wi_question q; /* large: not on the stack */
    const char *format = "text", *output = NULL, *torch = NULL;
    const char *allocator = NULL;
    struct confs confs = {.n = 0};
    enum gs_stack_view view = GS_VIEW_MERGED;
    memset(&q, 0, sizeof q);
    q.context = DEFAULT_CONTEXT;
    const struct gs_opt opts[] = {
        {.name = "allocator", .arg = "A", .kind = GS_OPT_STRING, .to = &allocator,
         .help = "torch or xla (default: xla for a JAX run, else torch)"},
        {.name = "setting", .arg = "CONF", .kind = GS_OPT_CALL, .to = &confs, .fn = take_setting,
         .help = "a PYTORCH_CUDA_ALLOC_CONF value to compare, e.g. "
                 "'expandable_segments:True,max_split_size_mb:256' (more than once; "
                 "memory_fraction:F stands for torch.cuda.set_per_process_memory_fraction(F), "
                 "from 2.10 also per_process_memory_fraction:F). Default: the run's own, "
                 "default, expandable_segments:True, max_split_size_mb:512, "
                 "roundup_power2_divisions:4, garbage_collection_threshold:0.8 under "
                 "per_process_memory_fraction:0.99 (before 2.10: memory_fraction:1.0) and "
                 "expandable_segments:True,max_split_size_mb:512. For xla, JAX's NAME=VALUE: "
                 "XLA_PYTHON_CLIENT_MEM_FRACTION=.9, XLA_PYTHON_CLIENT_PREALLOCATE=false "
                 "(default: the run's fraction, default, .9, .95, and no preallocation)"},
        {.name = "card", .arg = "SIZE", .kind = GS_OPT_CALL, .to = &q, .fn = take_card,
         .help = "a card: 24GB (a card as sold), or bytes with K, M, G, T (more than once, at "
                 "most 4). Default: the run's own, the memory the process had when an "
                 "allocation failed"},
        {.name = "context", .arg = "SIZE", .kind = GS_OPT_CALL, .to = &q.context,
         .fn = take_context,
         .help = "of each --card, memory the process cannot have (the CUDA context and others; "
                 "default 512M): allocations fail past the card less it. The fractions "
                 "(memory_fraction and garbage_collection_threshold, "
                 "XLA_PYTHON_CLIENT_MEM_FRACTION) are of the whole card, as the allocators "
                 "take them"},
        {.name = "torch", .arg = "VERSION", .kind = GS_OPT_STRING, .to = &torch,
         .help = "the allocator's rules: 2.12 (the default, the newest modelled), pr193400 "
                 "(2.12 with pytorch/pytorch#193400), or another 2.x, whose options and memory "
                 "fraction apply (the allocator read as 2.12's). Where versions differ:"
                 "\n2.10 and later: max_split_size_mb and max_non_split_rounding_mb from 20 "
                 "(before: over 20); per_process_memory_fraction; a memory fraction of 1 is no "
                 "limit, so garbage_collection_threshold needs one below 1; "
                 "pinned_reserve_segment_size_mb"
                 "\n2.9: graph_capture_record_stream_reuse"
                 "\n2.6: max_non_split_rounding_mb, pinned_use_background_threads"
                 "\n2.5: expandable segments shared by CUDA IPC"
                 "\n2.2: release_lock_on_cudamalloc, pinned_use_cuda_host_register, "
                 "pinned_num_register_threads"
                 "\n2.1: expandable_segments"
                 "\nAn option a version lacks is refused"},
        {.name = "format", .arg = "FMT", .kind = GS_OPT_STRING, .to = &format,
         .help = "text (the default), json (schema in docs/json.md), html"},
        GS_OPT_JSON_FORMAT(&format),
        {.name = "native", .kind = GS_OPT_CALL, .to = &view, .fn = gs_opt_native,
         .help = "call sites as native frames only"},
        GS_OPT_SYMBOLS,
        GS_OPT_OUTPUT(&output),
    };
    int rc = gs_opt_parse(&command, opts, sizeof opts / sizeof opts[0], argc, argv);
    if (rc != GS_OPT_GO)
        return rc;
    if (strcmp(format, "text") && strcmp(format, "json") && strcmp(format, "html"))
        return usage_error("--format is text, json or html, not '%s'", format);
    if (argc - optind != 1)
        return usage_error("%s", argc - optind ? "one trace at a time" : "a trace to replay");
    int approx = 0;
    q.torch = GS_TC_TORCH_NEWEST;
    if (torch && (approx = gs_wi_parse_torch_version(torch, &q.torch)) < 0)
        return usage_error("--torch is a PyTorch 2 version (2.9, 2.12) or pr193400, not '%s'",
                           torch);
    q.torch_before_2_5 = gs_tc_torch_minor(q.torch) < 5;
    if (allocator && strcmp(allocator, "torch") && strcmp(allocator, "xla"))
        return usage_error("--allocator is torch or xla, not '%s'", allocator);
    if (q.ncards * (confs.n ? confs.n : 7) + (confs.n ? confs.n : 7) > GS_WI_CASES)
        return usage_error("%s", "too many settings and cards at once (at most 64 pairs)");

    /* The settings' words say their allocator (JAX's are NAME=VALUE); read
     * them now, so that a mistake is told before the trace is. */
    if (allocator)
        q.allocator = !strcmp(allocator, "xla") ? GS_WI_XLA : GS_WI_TORCH;
    else if (confs.n)
        q.allocator = gs_wi_allocator_of(confs.v[0]);
    for (size_t i = 0; i < confs.n; i++) {
        char err[512];
        if (gs_wi_parse(confs.v[i], q.allocator, q.torch, &q.settings[i], err, sizeof err) != 0) {
            fprintf(stderr, "gpushim whatif: --setting '%s': %s\n", confs.v[i], err);
            return 2;
        }
    }
    q.nsettings = confs.n;

    /* One pass: the replay watches the trace being read, made at its first
     * event (the header and the modules loaded by then say the framework);
     * the run's own card, known only at the end, takes a second. */
    const char *path = argv[optind];
    static struct gs_wi_answer a;
    struct pass p = {.q = &q, .a = &a, .auto_allocator = !allocator && !confs.n};
    struct gs_event_watch watch = {.ctx = &p, .after = on_event};
    struct gs_loaded l;
    if (gs_load_watch("whatif", path, &l, &watch) != 0) {
        gs_wi_answer_free(&a);
        return 1;
    }
    char err[512];
    rc = 0;
    if (!p.begun)
        begin(&p, &l);
    if (!p.failed && gs_wi_answer_finish(&a, path, &l.seen, &l.r, err, sizeof err) != 0) {
        p.failed = 1;
        snprintf(p.err, sizeof p.err, "%s", err);
    }
    if (p.failed) {
        fprintf(stderr, "gpushim whatif: %s\n", p.err);
        gs_wi_answer_free(&a);
        gs_loaded_free(&l);
        return 1;
    }
    FILE *out = gs_cmd_open_output("whatif", output);
    if (!out) {
        rc = 1;
    } else {
        struct gs_wi_report rep = {.path = path, .a = &a, .r = &l.r, .sym = l.sym, .view = view,
                                   .torch_approx = approx > 0, .torch_asked = torch};
        if (!strcmp(format, "json"))
            gs_whatif_json(out, &rep);
        else if (!strcmp(format, "html"))
            gs_export_whatif_html(out, &rep);
        else
            gs_whatif_text(out, &rep);
        rc = gs_cmd_close_output("whatif", out, output);
        if (!rc && a.source == GS_WI_SRC_NONE) {
            fprintf(stderr, "gpushim whatif: %s has no tensor-level allocation to replay\n",
                    path);
            rc = 1;
        }
    }
    gs_wi_answer_free(&a);
    gs_loaded_free(&l);
    return rc;
}
