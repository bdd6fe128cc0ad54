/*
 * test_gate.c - analyzer/findings/gate.c: --fail-if limits read (metrics,
 * sizes, counts, changes, percentages; what is refused), and checked
 * against a run's figures or their change, one line per limit broken,
 * word for word.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyzer/findings/gate.h"
#include "analyzer/findings/roles.h"

#define MiB (1024.0 * 1024.0)
#define GiB (1024.0 * MiB)

static struct gs_gate_limit parsed(const char *text)
{
    struct gs_gate_limit l;
    char err[160];
    cr_assert_eq(gs_gate_parse(text, &l, err, sizeof err), 0, "%s: %s", text, err);
    return l;
}

static void refused(const char *text, const char *why)
{
    struct gs_gate_limit l;
    char err[160] = "";
    cr_assert_eq(gs_gate_parse(text, &l, err, sizeof err), -1, "%s", text);
    cr_assert(strstr(err, why), "%s: '%s' does not say '%s'", text, err, why);
}

Test(gate, limits_read)
{
    struct gs_gate_limit l = parsed("peak>20GiB");
    cr_assert_eq(l.metric, GS_GATE_PEAK);
    cr_assert(!l.change && !l.percent);
    cr_assert_eq(l.value, 20 * GiB);
    l = parsed(" peak > +5% ");
    cr_assert(l.change && l.percent);
    cr_assert_eq(l.value, 5.0);
    cr_assert_str_eq(l.text, "peak>+5%", "kept as given, less its spaces");
    l = parsed("unfreed>+512M");
    cr_assert_eq(l.metric, GS_GATE_UNFREED);
    cr_assert(l.change && !l.percent);
    cr_assert_eq(l.value, 512 * MiB);
    l = parsed("leak>1MiB");
    cr_assert_eq(l.metric, GS_GATE_LEAK);
    l = parsed("unrecovered>0");
    cr_assert_eq(l.metric, GS_GATE_UNRECOVERED);
    cr_assert_eq(l.value, 0.0);
    l = parsed("unrecovered>+2");
    cr_assert(l.change);
    cr_assert_eq(l.value, 2.0);
    l = parsed("peak>+2.5%");
    cr_assert_eq(l.value, 2.5);
    l = parsed("peak>1.5G");
    cr_assert_eq(l.value, 1.5 * GiB, "a size with a fraction");
    l = parsed("unfreed>4096");
    cr_assert_eq(l.value, 4096.0, "bytes");
    l = parsed("activations>8GiB");
    cr_assert_eq(l.metric, GS_GATE_ROLE + GS_ROLE_ACTIVATIONS, "a role's bytes at the peak");
    l = parsed("optimizer_state>+10%");
    cr_assert_eq(l.metric, GS_GATE_ROLE + GS_ROLE_OPTIMIZER_STATE);
    cr_assert(l.change && l.percent);
}

Test(gate, limits_refused)
{
    refused("peak", "METRIC>VALUE");
    refused("peak<5G", "METRIC>VALUE");
    refused("pek>5G", "no metric 'pek'");
    refused("peak>5%", "a percentage is a change");
    refused("peak>+x%", "not a percentage");
    refused("peak>+-3%", "not a percentage");
    refused("peak>lots", "not a size");
    refused("peak>", "not a size");
    refused("peak>1.5X", "not a size");
    refused("peak>1..5G", "not a size");
    refused("peak>G", "not a size");
    refused("unrecovered>1G", "takes a count");
    refused("unrecovered>-1", "takes a count");
}

/* The lines gs_gate_check writes, and how many. */
static char *check(const char *const *texts, size_t n, const struct gs_gate_run *a,
                   const struct gs_gate_run *b, const char *const grew[GS_GATE_METRICS],
                   size_t *broken)
{
    struct gs_gate_limit l[GS_GATE_LIMITS];
    for (size_t i = 0; i < n; i++)
        l[i] = parsed(texts[i]);
    char *buf = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&buf, &len);
    cr_assert_not_null(out);
    *broken = gs_gate_check(out, "gpushim x", l, n, a, b, grew);
    fclose(out);
    return buf;
}

static struct gs_gate_run run(uint64_t peak, uint64_t unfreed, uint64_t leak, int leak_known,
                              uint64_t unrecovered)
{
    struct gs_gate_run g;
    memset(&g, 0, sizeof g);
    g.v[GS_GATE_PEAK] = peak;
    g.v[GS_GATE_UNFREED] = unfreed;
    g.v[GS_GATE_LEAK] = leak;
    g.v[GS_GATE_UNRECOVERED] = unrecovered;
    for (int m = 0; m < GS_GATE_METRICS; m++)
        g.known[m] = 1;
    g.known[GS_GATE_LEAK] = leak_known;
    snprintf(g.site[GS_GATE_PEAK], sizeof g.site[0], "fwd (m.py:3), 8.00 GiB");
    snprintf(g.site[GS_GATE_UNRECOVERED], sizeof g.site[0], "step (m.py:9)");
    return g;
}

Test(gate, one_run_over_its_limits)
{
    struct gs_gate_run b = run((uint64_t)(21 * GiB), 0, 0, 0, 1);
    const char *texts[] = {"peak>20GiB", "peak>21GiB", "unfreed>0", "unrecovered>0",
                           "leak>1MiB"};
    size_t broken;
    char *s = check(texts, 5, NULL, &b, NULL, &broken);
    cr_assert_eq(broken, 3, "%s", s);
    cr_assert_str_eq(s,
                     "gpushim x: --fail-if 'peak>20GiB' broken: peak 21.00 GiB, over 20.00 GiB; "
                     "most at the peak: fwd (m.py:3), 8.00 GiB\n"
                     "gpushim x: --fail-if 'unrecovered>0' broken: unrecovered 1, over 0; "
                     "first failed at: step (m.py:9)\n"
                     "gpushim x: --fail-if 'leak>1MiB' cannot be checked: no steps marked "
                     "(gpushim_mark)\n",
                     "a limit at the figure is not broken; one not known is: %s", s);
    free(s);
}

Test(gate, changes_from_run_a)
{
    struct gs_gate_run a = run((uint64_t)(10 * GiB), 0, 0, 1, 0);
    struct gs_gate_run b = run((uint64_t)(11 * GiB), (uint64_t)(1 * GiB), 0, 1, 0);
    const char *grew[GS_GATE_METRICS] = {[GS_GATE_PEAK] = "attn (m.py:7), +1.00 GiB"};
    const char *texts[] = {"peak>+5%", "peak>+10%", "peak>+512M", "unfreed>+10%",
                           "peak>+1GiB"};
    size_t broken;
    char *s = check(texts, 5, &a, &b, grew, &broken);
    cr_assert_eq(broken, 3, "%s", s);
    cr_assert_str_eq(s,
                     "gpushim x: --fail-if 'peak>+5%' broken: peak 10.00 GiB -> 11.00 GiB "
                     "(+10.0%), over +5%; grew most: attn (m.py:7), +1.00 GiB\n"
                     "gpushim x: --fail-if 'peak>+512M' broken: peak 10.00 GiB -> 11.00 GiB "
                     "(+1.00 GiB), over +512.00 MiB; grew most: attn (m.py:7), +1.00 GiB\n"
                     "gpushim x: --fail-if 'unfreed>+10%' broken: unfreed 0 B -> 1.00 GiB "
                     "(from none), over +10%\n",
                     "+10%% is not over +10%%, nor +1 GiB over +1 GiB: %s", s);
    free(s);
    /* shrinking breaks no limit on growth */
    s = check(texts, 5, &b, &a, grew, &broken);
    cr_assert_eq(broken, 0, "%s", s);
    free(s);
}

Test(gate, a_change_needs_two_runs)
{
    struct gs_gate_run b = run(1, 0, 0, 1, 0);
    const char *texts[] = {"peak>+0%"};
    size_t broken;
    char *s = check(texts, 1, NULL, &b, NULL, &broken);
    cr_assert_eq(broken, 1);
    cr_assert(strstr(s, "cannot be checked: a change needs two runs"), "%s", s);
    free(s);
}
