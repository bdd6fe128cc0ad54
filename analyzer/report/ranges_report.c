/*
 * ranges_report.c - memory by NVTX range in the report (analyzer/findings/
 * ranges.c): in text, a table of the ranges as a tree and the ranges the
 * run was inside at its end and at each failure; in JSON, the object
 * "ranges" (docs/json.md) and each failure's "range".
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "analyzer/findings/ranges.h"
#include "analyzer/report/report.h"
#include "analyzer/report/ranges_report.h"
#include "analyzer/util/bytes.h"
#include "analyzer/util/json.h"

#define SHOWN_MIN 20 /* ranges in the text's table, at least (or --top) */

static double seconds(uint64_t ns) { return (double)ns / 1e9; }
static const char *plural(uint64_t n) { return n == 1 ? "" : "s"; }

/* Which ranges the table shows: the most shown by their peak inside, and
 * the ranges above each (so that the tree reads whole). */
static void choose(const struct gs_ranges *g, size_t most, unsigned char *show)
{
    size_t *order = malloc(g->nnodes * sizeof *order);
    if (!order) {
        memset(show, 1, g->nnodes);
        return;
    }
    for (size_t i = 0; i < g->nnodes; i++)
        order[i] = i;
    for (size_t i = 1; i < g->nnodes; i++) { /* by peak, the largest first; few nodes */
        size_t v = order[i], k = i;
        while (k > 0 && g->nodes[order[k - 1]].peak_max < g->nodes[v].peak_max) {
            order[k] = order[k - 1];
            k--;
        }
        order[k] = v;
    }
    memset(show, 0, g->nnodes);
    for (size_t i = 0; i < g->nnodes && i < most; i++)
        for (uint32_t k = (uint32_t)order[i]; k < g->nnodes && !show[k]; k = g->nodes[k].parent)
            show[k] = 1;
    free(order);
}

/* The rows of node's subtree that are shown, node first. */
static void rows(FILE *out, const struct gs_ranges *g, uint32_t node, const unsigned char *show)
{
    const struct gs_range_node *n = &g->nodes[node];
    char name[GS_MAX_LABEL + 80], cell[48], a[32], b[32], c[32];
    gs_range_name(g, node, name, sizeof name);
    snprintf(cell, sizeof cell, "%s (#%" PRIu64 ")", gs_human_bytes(n->peak_max, a, sizeof a),
             n->peak_nth);
    gs_int_bytes(n->kept_last, b, sizeof b);
    gs_int_bytes(n->kept_max, c, sizeof c);
    char made[32];
    gs_human_bytes(n->allocated_max, made, sizeof made);
    fprintf(out, "  %*s%-*s %7" PRIu64 "  %-20s %10s  %10s %10s  %" PRIu64 " of %" PRIu64 "\n",
            (int)(2 * n->depth), "", 28 - (int)(2 * n->depth) > 8 ? 28 - (int)(2 * n->depth) : 8,
            name, n->ended, n->ended ? cell : "-", made, b, c, n->kept_nonzero, n->ended);
    for (uint32_t k = node + 1; k < g->nnodes; k++) /* a child comes after its parent */
        if (g->nodes[k].parent == node && show[k])
            rows(out, g, k, show);
}

void gs_ranges_text(FILE *out, const struct gs_report *rep)
{
    const struct gs_ranges *g = rep->found->ranges;
    if (!g->pushes && !g->starts)
        return;
    fprintf(out, "\nNVTX ranges: %zu range%s, %" PRIu64 " ended; device memory inside each: "
                 "its peak, the most made in one, and what one made that was still live when "
                 "it ended (kept)\n",
            g->nnodes, plural(g->nnodes), g->ended);
    if (g->nnodes) {
        unsigned char *show = malloc(g->nnodes);
        if (!show)
            return;
        size_t most = rep->opt->top > SHOWN_MIN ? rep->opt->top : SHOWN_MIN, shown = 0;
        choose(g, most, show);
        fprintf(out, "  %-28s %7s  %-20s %10s  %10s %10s  %s\n", "range", "ended",
                "peak inside (which)", "made in one", "kept: last", "most", "kept in");
        for (uint32_t k = 0; k < g->nnodes; k++) {
            shown += show[k];
            if (g->nodes[k].parent == GS_RANGE_NONE && show[k])
                rows(out, g, k, show);
        }
        free(show);
        if (shown < g->nnodes)
            fprintf(out, "  ... and %zu more ranges (--top N shows more; --json has them all)\n",
                    g->nnodes - shown);
    }
    struct gs_range_instance x;
    size_t shown = 0, followed = 0;
    for (size_t i = 0; gs_ranges_open_at(g, i, &x); i++)
        followed += x.node != GS_RANGE_NONE;
    if (followed)
        fprintf(out, "  open at the end (the run stopped inside them):\n");
    for (size_t i = 0; shown < 16 && gs_ranges_open_at(g, i, &x); i++) {
        if (x.node == GS_RANGE_NONE)
            continue;
        shown++;
        char path[1024], a[32], b[32], c[32];
        gs_range_path(g, x.node, path, sizeof path);
        gs_int_bytes(x.kept, c, sizeof c);
        fprintf(out, "    %s #%" PRIu64 " since %.3f s: peak %s, made %s, %s of it live\n", path,
                x.nth, seconds(x.start_ns), gs_human_bytes(x.peak, a, sizeof a),
                gs_human_bytes(x.allocated, b, sizeof b), c);
    }
    if (followed > shown)
        fprintf(out, "    and %zu more\n", followed - shown);
    if (g->unmatched)
        fprintf(out, "  %" PRIu64 " pop%s or end%s ended no range open (opened before the trace "
                     "began, or not followed)\n",
                g->unmatched, plural(g->unmatched), plural(g->unmatched));
    if (g->dropped)
        fprintf(out, "  %" PRIu64 " range%s not followed: past %d ranges or %d open at once\n",
                g->dropped, plural(g->dropped), GS_RANGE_NODES, GS_RANGES_OPEN);
}

int gs_ranges_failure_path(const struct gs_report *rep, size_t idx, char *out, size_t outsz)
{
    const struct gs_ranges *g = rep->found->ranges;
    if (idx >= g->nfailure_nodes || g->failure_node[idx] == GS_RANGE_NONE)
        return 0;
    gs_range_path(g, g->failure_node[idx], out, outsz);
    return 1;
}

static void instance_json(struct gs_json *j, const struct gs_range_instance *x)
{
    gs_json_begin_object(j, NULL);
    gs_json_uint(j, "range", x->node);
    gs_json_uint(j, "nth", x->nth);
    gs_json_uint(j, "tid", x->tid);
    gs_json_uint(j, "start_ns", x->start_ns);
    if (x->end_ns)
        gs_json_uint(j, "end_ns", x->end_ns);
    else
        gs_json_null(j, "end_ns");
    gs_json_uint(j, "peak_bytes", x->peak);
    gs_json_uint(j, "allocated_bytes", x->allocated);
    gs_json_int(j, "kept_bytes", x->kept);
    gs_json_end_object(j);
}

void gs_ranges_json(struct gs_json *j, const struct gs_report *rep)
{
    const struct gs_ranges *g = rep->found->ranges;
    if (!g->pushes && !g->starts) {
        gs_json_null(j, "ranges");
        return;
    }
    char name[GS_MAX_LABEL + 80];
    static char path[4096];
    gs_json_begin_object(j, "ranges");
    gs_json_uint(j, "pushes", g->pushes);
    gs_json_uint(j, "pops", g->pops);
    gs_json_uint(j, "starts", g->starts);
    gs_json_uint(j, "ends", g->ends);
    gs_json_uint(j, "unmatched", g->unmatched);
    gs_json_uint(j, "dropped", g->dropped);
    gs_json_begin_array(j, "domains");
    for (size_t d = 1; d <= GS_RANGE_DOMAINS; d++)
        if (g->domains[d]) {
            gs_json_begin_object(j, NULL);
            gs_json_uint(j, "id", d);
            gs_json_string(j, "name", g->domains[d]);
            gs_json_end_object(j);
        }
    gs_json_end_array(j);
    gs_json_begin_array(j, "nodes");
    for (uint32_t k = 0; k < g->nnodes; k++) {
        const struct gs_range_node *n = &g->nodes[k];
        gs_json_begin_object(j, NULL);
        gs_json_string(j, "label", n->label);
        gs_json_string(j, "domain", n->domain ? g->domains[n->domain] : NULL);
        gs_range_name(g, k, name, sizeof name);
        gs_json_string(j, "name", name);
        gs_range_path(g, k, path, sizeof path);
        gs_json_string(j, "path", path);
        if (n->parent == GS_RANGE_NONE)
            gs_json_null(j, "parent");
        else
            gs_json_uint(j, "parent", n->parent);
        gs_json_uint(j, "depth", n->depth);
        gs_json_string(j, "kind", n->started ? "started" : "pushed");
        gs_json_uint(j, "ended", n->ended);
        gs_json_uint(j, "first_ns", n->first_ns);
        gs_json_uint(j, "peak_max_bytes", n->peak_max);
        gs_json_uint(j, "peak_max_nth", n->peak_nth);
        gs_json_uint(j, "peak_max_start_ns", n->peak_start_ns);
        gs_json_uint(j, "allocated_bytes", n->allocated);
        gs_json_uint(j, "allocated_max_bytes", n->allocated_max);
        gs_json_int(j, "kept_last_bytes", n->kept_last);
        gs_json_int(j, "kept_max_bytes", n->kept_max);
        gs_json_int(j, "kept_total_bytes", n->kept_total);
        gs_json_uint(j, "kept_instances", n->kept_nonzero);
        gs_json_end_object(j);
    }
    gs_json_end_array(j);
    gs_json_begin_array(j, "recent");
    uint64_t shown = g->ended < GS_RANGES_KEPT ? g->ended : GS_RANGES_KEPT;
    for (uint64_t k = g->ended - shown; k < g->ended; k++)
        instance_json(j, &g->recent[k % GS_RANGES_KEPT]);
    gs_json_end_array(j);
    gs_json_begin_array(j, "open");
    struct gs_range_instance x;
    for (size_t i = 0; gs_ranges_open_at(g, i, &x); i++)
        if (x.node != GS_RANGE_NONE)
            instance_json(j, &x);
    gs_json_end_array(j);
    gs_json_end_object(j);
}
