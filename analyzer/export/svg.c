/*
 * svg.c - the chart of one device's memory over time in the HTML export:
 * inline SVG, drawn from the device's timeline buckets (timeline.c) as a
 * stepped line over a filled area, with its peak marked and labelled, the
 * program's marks as thin vertical lines, its failed allocations on the
 * device as red dots (at the bytes the process held then), and axes in
 * bytes and seconds.
 *
 * The <svg> carries what a reader of the file needs to turn coordinates
 * back into figures: data-plot (the plot area: left top right bottom),
 * data-ymax-bytes (the bytes at its top; its bottom is 0) and data-end-ns
 * (the time at its right; its left is 0).
 */
#include <inttypes.h>
#include <stdio.h>

#include "analyzer/util/bytes.h"
#include "analyzer/util/escape.h"
#include "analyzer/util/names.h"
#include "analyzer/trace/trace.h"
#include "analyzer/model/model.h"
#include "analyzer/findings/found.h"
#include "analyzer/export/html.h"

#define W 960
#define H 270
#define LEFT 90.0
#define RIGHT 940.0
#define TOP 24.0
#define BOTTOM 236.0

struct scale {
    uint64_t ymax, end_ns;
};

static double x_at(const struct scale *s, uint64_t t)
{
    if (t > s->end_ns)
        t = s->end_ns;
    return LEFT + (RIGHT - LEFT) * ((double)t / (double)s->end_ns);
}

static double y_at(const struct scale *s, uint64_t b)
{
    if (b > s->ymax)
        b = s->ymax;
    return BOTTOM - (BOTTOM - TOP) * ((double)b / (double)s->ymax);
}

/* A step for 4 to 5 ticks up to most: 1, 2 or 5 times a power of ten of
 * unit (1024^k for bytes, 1 for nanoseconds). */
static uint64_t nice_step(uint64_t most, uint64_t unit)
{
    static const uint64_t m[] = {1, 2, 5};
    uint64_t p = 1;
    for (int k = 0; k < 19; k++, p *= 10)
        for (int i = 0; i < 3; i++) {
            uint64_t step = m[i] * p;
            if (step > UINT64_MAX / unit)
                return UINT64_MAX / 8;
            if (step * unit >= most / 5 + (most % 5 != 0))
                return step * unit;
        }
    return UINT64_MAX / 8;
}

static uint64_t byte_unit(uint64_t b)
{
    uint64_t u = 1;
    while (u < (1ull << 60) && b / u >= 1024)
        u <<= 10;
    return u;
}

static void tick_bytes(FILE *out, uint64_t v, uint64_t unit)
{
    static const char *const names[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    int k = 0;
    for (uint64_t u = unit; u > 1; u >>= 10)
        k++;
    if (v % unit == 0)
        fprintf(out, "%" PRIu64 " %s", v / unit, names[k]);
    else
        fprintf(out, "%.1f %s", (double)v / (double)unit, names[k]);
}

/* Seconds with as many decimals as the step needs. */
static void tick_seconds(FILE *out, uint64_t ns, uint64_t step)
{
    int decimals = 9;
    for (uint64_t p = 10; decimals > 0 && step % p == 0; p *= 10)
        decimals--;
    fprintf(out, "%.*f s", decimals, (double)ns / 1e9);
}

static void axes(FILE *out, const struct scale *s, uint64_t ystep, uint64_t yunit, uint64_t tstep)
{
    fprintf(out, "<g class=\"axis\">\n");
    for (uint64_t v = 0; v <= s->ymax; v += ystep) {
        double y = y_at(s, v);
        fprintf(out, "<line class=\"grid\" x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\"/>",
                LEFT, y, RIGHT, y);
        fprintf(out, "<text class=\"ylabel\" x=\"%.2f\" y=\"%.2f\">", LEFT - 8, y + 4);
        tick_bytes(out, v, yunit);
        fputs("</text>\n", out);
        if (s->ymax - v < ystep)
            break;
    }
    for (uint64_t t = 0; t <= s->end_ns; t += tstep) {
        double x = x_at(s, t);
        fprintf(out, "<line class=\"tick\" x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\"/>", x,
                BOTTOM, x, BOTTOM + 5);
        fprintf(out, "<text class=\"xlabel\" x=\"%.2f\" y=\"%.2f\">", x, BOTTOM + 20);
        tick_seconds(out, t, tstep);
        fputs("</text>\n", out);
        if (s->end_ns - t < tstep)
            break;
    }
    fprintf(out, "<line class=\"frame\" x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\"/>", LEFT,
            BOTTOM, RIGHT, BOTTOM);
    fprintf(out, "<line class=\"frame\" x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\"/>\n",
            LEFT, TOP, LEFT, BOTTOM);
    fputs("</g>\n", out);
}

/* The steps: each bucket flat at the most it held, then after the last
 * bucket what its last change left, to the end. */
static void series(FILE *out, const struct scale *s, const struct gs_timeline *t)
{
    if (!t->n || !t->width_ns)
        return;
    fputs("<path class=\"area\" d=\"", out);
    fprintf(out, "M%.2f %.2f", LEFT, BOTTOM);
    for (unsigned i = 0; i < t->n; i++) {
        uint64_t a = i * t->width_ns, b = a + t->width_ns;
        fprintf(out, " L%.2f %.2f L%.2f %.2f", x_at(s, a), y_at(s, t->hi[i]), x_at(s, b),
                y_at(s, t->hi[i]));
    }
    uint64_t tail = (uint64_t)t->n * t->width_ns;
    if (tail < s->end_ns)
        fprintf(out, " L%.2f %.2f L%.2f %.2f", x_at(s, tail), y_at(s, t->end[t->n - 1]),
                RIGHT, y_at(s, t->end[t->n - 1]));
    fprintf(out, " L%.2f %.2f Z\"/>\n", tail < s->end_ns ? RIGHT : x_at(s, tail), BOTTOM);
    fputs("<polyline class=\"line\" points=\"", out);
    for (unsigned i = 0; i < t->n; i++) {
        uint64_t a = i * t->width_ns, b = a + t->width_ns;
        fprintf(out, "%s%.2f,%.2f %.2f,%.2f", i ? " " : "", x_at(s, a), y_at(s, t->hi[i]),
                x_at(s, b), y_at(s, t->hi[i]));
    }
    if (tail < s->end_ns)
        fprintf(out, " %.2f,%.2f %.2f,%.2f", x_at(s, tail), y_at(s, t->end[t->n - 1]), RIGHT,
                y_at(s, t->end[t->n - 1]));
    fputs("\"/>\n", out);
}

static void marks(FILE *out, const struct scale *s, const struct gs_marks *m)
{
    char when[64];
    for (uint64_t i = m->marks > GS_MARKS_KEPT ? m->marks - GS_MARKS_KEPT : 0;
         m->recent && i < m->marks; i++) {
        const struct gs_mark_item *it = &m->recent[i % GS_MARKS_KEPT];
        double x = x_at(s, it->time_ns);
        fprintf(out, "<line class=\"mark\" data-time-ns=\"%" PRIu64 "\" x1=\"%.2f\" y1=\"%.2f\" "
                     "x2=\"%.2f\" y2=\"%.2f\"><title>mark ",
                it->time_ns, x, TOP, x, BOTTOM);
        gs_html_escape(out, it->label < m->nlabels ? m->labels[it->label].label
                                                   : "(a label past the first 256)");
        snprintf(when, sizeof when, " at %.6f s", (double)it->time_ns / 1e9);
        gs_html_escape(out, when);
        fputs("</title></line>\n", out);
    }
}

static void failures(FILE *out, const struct scale *s, const struct gs_findings *fd,
                     int32_t device)
{
    char a[32], b[32], text[160];
    for (size_t i = 0; i < fd->nfailures; i++) {
        const struct gs_failure *f = fd->failures[i].f;
        int32_t on = f->device >= 0 && f->device < GS_MAX_DEVICES ? f->device : -1;
        if (on != device || f->outcome != GS_OUTCOME_UNRECOVERED)
            continue; /* those the program got past are no dots of its chart */
        fprintf(out, "<circle class=\"failure\" data-time-ns=\"%" PRIu64 "\" cx=\"%.2f\" "
                     "cy=\"%.2f\" r=\"5\"><title>",
                f->time_ns, x_at(s, f->time_ns), y_at(s, f->process_live_bytes));
        snprintf(text, sizeof text, "%s of %s failed at %.6f s, holding %s",
                 gs_api_name(f->api), gs_human_bytes(f->requested, a, sizeof a),
                 (double)f->time_ns / 1e9, gs_human_bytes(f->process_live_bytes, b, sizeof b));
        gs_html_escape(out, text);
        fputs("</title></circle>\n", out);
    }
}

static void peak(FILE *out, const struct scale *s, const struct gs_device_usage *u)
{
    char a[32];
    double x = x_at(s, u->peak_time_ns), y = y_at(s, u->peak_bytes);
    fprintf(out, "<circle class=\"peak\" data-bytes=\"%" PRIu64 "\" data-time-ns=\"%" PRIu64
                 "\" cx=\"%.2f\" cy=\"%.2f\" r=\"4\"/>",
            u->peak_bytes, u->peak_time_ns, x, y);
    int right = x > LEFT + (RIGHT - LEFT) * 0.7;
    fprintf(out, "<text class=\"peaklabel\" x=\"%.2f\" y=\"%.2f\" text-anchor=\"%s\">peak %s at "
                 "%.3f s</text>\n",
            right ? x - 8 : x + 8, y < TOP + 12 ? y + 14 : y - 8, right ? "end" : "start",
            gs_human_bytes(u->peak_bytes, a, sizeof a), (double)u->peak_time_ns / 1e9);
}

void gs_svg_device_chart(FILE *out, const struct gs_findings *fd, unsigned device_index,
                         uint64_t width_ns, unsigned n, uint64_t end_ns)
{
    if (device_index > GS_MAX_DEVICES)
        return;
    const struct gs_device_usage *u = &fd->devices[device_index];
    int32_t device = device_index < GS_MAX_DEVICES ? (int32_t)device_index : -1;
    struct gs_timeline t;
    gs_timeline_aligned(fd->device_timeline[device_index], width_ns, n, &t);
    struct scale s;
    uint64_t top = u->peak_bytes;
    for (unsigned i = 0; i < t.n; i++)
        if (t.hi[i] > top)
            top = t.hi[i];
    if (!top)
        top = 1;
    uint64_t yunit = byte_unit(top);
    uint64_t ystep = nice_step(top, yunit);
    s.ymax = (top / ystep + 1) * ystep; /* room above the peak for its label */
    if (s.ymax < top)
        s.ymax = top;
    s.end_ns = end_ns ? end_ns : 1;
    uint64_t tstep = nice_step(s.end_ns, 1);
    fprintf(out, "<svg class=\"chart\" data-device=\"%d\" viewBox=\"0 0 %d %d\" width=\"%d\" "
                 "height=\"%d\" role=\"img\" data-plot=\"%.0f %.0f %.0f %.0f\" "
                 "data-ymax-bytes=\"%" PRIu64 "\" data-end-ns=\"%" PRIu64 "\">\n",
            device, W, H, W, H, LEFT, TOP, RIGHT, BOTTOM, s.ymax, s.end_ns);
    if (device >= 0)
        fprintf(out, "<title>device %d: memory over time</title>\n", device);
    else
        fputs("<title>unknown device: memory over time</title>\n", out);
    axes(out, &s, ystep, yunit, tstep);
    series(out, &s, &t);
    marks(out, &s, fd->marks);
    failures(out, &s, fd, device);
    peak(out, &s, u);
    fputs("</svg>\n", out);
}
