/*
 * whatif.c - gpushim whatif: the options; the trace read once (report/load.c)
 * with the what-if replay (analyzer/whatif/answer.c) watching its events,
 * a second pass only for the run's own card, which its failures tell at the
 * end; the answer in text, JSON or HTML.
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "analyzer/util/bytes.h"
#include "analyzer/util/output.h"
#include "analyzer/symbols/symbolize.h"
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
    "\n"
    "options:\n"
    "  --allocator A    torch or xla (default: xla for a JAX run, else torch)\n"
    "  --setting CONF   a PYTORCH_CUDA_ALLOC_CONF value to compare, e.g.\n"
    "                   'expandable_segments:True,max_split_size_mb:256' (more than\n"
    "                   once; memory_fraction:F stands for\n"
    "                   torch.cuda.set_per_process_memory_fraction(F), from 2.10\n"
    "                   also per_process_memory_fraction:F). Default: the\n"
    "                   run's own, default, expandable_segments:True,\n"
    "                   max_split_size_mb:512, roundup_power2_divisions:4,\n"
    "                   garbage_collection_threshold:0.8 under\n"
    "                   per_process_memory_fraction:0.99 (before 2.10:\n"
    "                   memory_fraction:1.0) and\n"
    "                   expandable_segments:True,max_split_size_mb:512. For xla,\n"
    "                   JAX's NAME=VALUE: XLA_PYTHON_CLIENT_MEM_FRACTION=.9,\n"
    "                   XLA_PYTHON_CLIENT_PREALLOCATE=false (default: the run's\n"
    "                   fraction, default, .9, .95, and no preallocation)\n"
    "  --card SIZE      a card: 24GB (a card as sold), or bytes with K, M, G, T\n"
    "                   (more than once, at most 4). Default: the run's own, the\n"
    "                   memory the process had when an allocation failed\n"
    "  --context SIZE   of each --card, memory the process cannot have (the CUDA\n"
    "                   context and others; default 512M): allocations fail past the\n"
    "                   card less it. The fractions (memory_fraction and\n"
    "                   garbage_collection_threshold, XLA_PYTHON_CLIENT_MEM_FRACTION)\n"
    "                   are of the whole card, as the allocators take them\n"
    "  --torch VERSION  the allocator's rules: 2.12 (the default, the newest\n"
    "                   modelled), pr193400 (2.12 with pytorch/pytorch#193400), or\n"
    "                   another 2.x, whose options and memory fraction apply (the\n"
    "                   allocator read as 2.12's). Where versions differ:\n"
    "                   2.10 and later: max_split_size_mb and\n"
    "                     max_non_split_rounding_mb from 20 (before: over 20);\n"
    "                     per_process_memory_fraction; a memory fraction of 1 is\n"
    "                     no limit, so garbage_collection_threshold needs one\n"
    "                     below 1; pinned_reserve_segment_size_mb\n"
    "                   2.9: graph_capture_record_stream_reuse\n"
    "                   2.6: max_non_split_rounding_mb,\n"
    "                     pinned_use_background_threads\n"
    "                   2.5: expandable segments shared by CUDA IPC\n"
    "                   2.2: release_lock_on_cudamalloc, pinned_use_cuda_host_register,\n"
    "                     pinned_num_register_threads\n"
    "                   2.1: expandable_segments\n"
    "                   An option a version lacks is refused\n"
    "  --format FMT     text (the default), json (schema in docs/json.md), html\n"
    "  --json           the same as --format json\n"
    "  --native         call sites as native frames only\n"
    "  --symbols DIR    where to find a module not at its recorded path, or\n"
    "                   another build (see gpushim report --help)\n"
    "  -o FILE          write to FILE instead of standard output\n"
    "  --partial        exit 0, not 4, when a trace read is incomplete (each\n"
    "                   warning is said on stderr all the same)\n"
    "  --redact         leave the host and the command line out (to share it)\n"
    "  -h, --help       this text\n"
    "\n"
    "Exit status: 0 when replayed, 1 when the trace could not be read or has no\n"
    "tensor-level allocations, 2 for a usage error, 4 when the trace is\n"
    "incomplete.\n";

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

int gs_cmd_whatif(int argc, char **argv)
{
    static const struct option longopts[] = {{"allocator", required_argument, NULL, 'a'},
                                             {"setting", required_argument, NULL, 's'},
                                             {"card", required_argument, NULL, 'c'},
                                             {"context", required_argument, NULL, 'x'},
                                             {"torch", required_argument, NULL, 't'},
                                             {"format", required_argument, NULL, 'f'},
                                             {"json", no_argument, NULL, 'j'},
                                             {"native", no_argument, NULL, 'n'},
                                             {"symbols", required_argument, NULL, 'S'},
                                             {"help", no_argument, NULL, 'h'},
                                             {NULL, 0, NULL, 0}};
    static struct gs_wi_question q; /* large: not on the stack */
    const char *confs[GS_WI_SETTINGS], *format = "text", *output = NULL, *torch = NULL;
    const char *allocator = NULL;
    size_t nconfs = 0;
    enum gs_stack_view view = GS_VIEW_MERGED;
    int c;
    memset(&q, 0, sizeof q);
    q.context = DEFAULT_CONTEXT;
    optind = 1;
    while ((c = getopt_long(argc, argv, "ho:", longopts, NULL)) != -1) {
        switch (c) {
        case 's':
            if (nconfs == GS_WI_SETTINGS)
                return usage_error("at most %s settings", "16");
            confs[nconfs++] = optarg;
            break;
        case 'c':
            if (q.ncards == GS_WI_CARDS)
                return usage_error("at most %s cards", "4");
            if (gs_multi_parse_size(optarg, &q.cards[q.ncards].bytes) != 0 ||
                !q.cards[q.ncards].bytes)
                return usage_error("--card needs a size (80GB, 81920M, bytes), not '%s'", optarg);
            snprintf(q.cards[q.ncards].name, sizeof q.cards[q.ncards].name, "%s", optarg);
            q.ncards++;
            break;
        case 'x':
            if (gs_multi_parse_size(optarg, &q.context) != 0)
                return usage_error("--context needs a size (512M, bytes), not '%s'", optarg);
            break;
        case 't': torch = optarg; break;
        case 'a': allocator = optarg; break;
        case 'f': format = optarg; break;
        case 'j': format = "json"; break;
        case 'n': view = GS_VIEW_NATIVE; break;
        case 'S': if (gs_sym_search_option("whatif", optarg)) return 2; break;
        case 'o': output = optarg; break;
        case 'h': fputs(usage_whatif, stdout); return 0;
        default: fputs("Try 'gpushim whatif --help'.\n", stderr); return 2;
        }
    }
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
    if (q.ncards * (nconfs ? nconfs : 7) + (nconfs ? nconfs : 7) > GS_WI_CASES)
        return usage_error("%s", "too many settings and cards at once (at most 64 pairs)");

    /* The settings' words say their allocator (JAX's are NAME=VALUE); read
     * them now, so that a mistake is told before the trace is. */
    if (allocator)
        q.allocator = !strcmp(allocator, "xla") ? GS_WI_XLA : GS_WI_TORCH;
    else if (nconfs)
        q.allocator = gs_wi_allocator_of(confs[0]);
    for (size_t i = 0; i < nconfs; i++) {
        char err[512];
        if (gs_wi_parse(confs[i], q.allocator, q.torch, &q.settings[i], err, sizeof err) != 0) {
            fprintf(stderr, "gpushim whatif: --setting '%s': %s\n", confs[i], err);
            return 2;
        }
    }
    q.nsettings = nconfs;

    /* One pass: the replay watches the trace being read, made at its first
     * event (the header and the modules loaded by then say the framework);
     * the run's own card, known only at the end, takes a second. */
    const char *path = argv[optind];
    static struct gs_wi_answer a;
    struct pass p = {.q = &q, .a = &a, .auto_allocator = !allocator && !nconfs};
    struct gs_event_watch watch = {.ctx = &p, .after = on_event};
    struct gs_loaded l;
    if (gs_load_watch("whatif", path, &l, &watch) != 0) {
        gs_wi_answer_free(&a);
        return 1;
    }
    char err[512];
    int rc = 0;
    if (!p.begun)
        begin(&p, &l);
    if (!p.failed && gs_wi_answer_finish(&a, path, &l.r, err, sizeof err) != 0) {
        p.failed = 1;
        snprintf(p.err, sizeof p.err, "%s", err);
    }
    if (p.failed) {
        fprintf(stderr, "gpushim whatif: %s\n", p.err);
        gs_wi_answer_free(&a);
        gs_loaded_free(&l);
        return 1;
    }
    FILE *out = output ? gs_open_output(output) : stdout;
    if (!out) {
        fprintf(stderr, "gpushim whatif: cannot write %s: %m\n", output);
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
        if ((out == stdout ? fflush(out) : fclose(out)) != 0) {
            fprintf(stderr, "gpushim whatif: cannot write %s\n", output ? output : "the answer");
            rc = 1;
        }
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
