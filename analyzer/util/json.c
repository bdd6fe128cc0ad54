/*
 * json.c - writes JSON: nesting, commas, indentation and string escaping,
 * so the reports only say what goes where.
 *
 * A report is written by one thread, in many small pieces (a frame's
 * strings are most of it): stdio's unlocked calls, which skip taking the
 * stream's lock for each.
 */
#define _GNU_SOURCE /* fputc_unlocked, fputs_unlocked, fwrite_unlocked */
#include "analyzer/util/json.h"

static void indent(struct gs_json *j)
{
    static const char line[] = "\n                                                                "
                               "                                                                ";
    size_t n = 1 + 2 * (size_t)j->depth; /* depth is at most 63 */
    fwrite_unlocked(line, 1, n < sizeof line - 1 ? n : sizeof line - 1, j->out);
}

/* Bytes in a valid UTF-8 sequence starting at p (1 to 4), or 0 if invalid. */
static int utf8_length(const unsigned char *p)
{
    int n = p[0] < 0x80 ? 1 : (p[0] & 0xe0) == 0xc0 ? 2 : (p[0] & 0xf0) == 0xe0 ? 3
                            : (p[0] & 0xf8) == 0xf0 ? 4 : 0;
    if (n == 2 && p[0] < 0xc2)
        return 0; /* overlong */
    for (int i = 1; i < n; i++)
        if ((p[i] & 0xc0) != 0x80)
            return 0;
    return n;
}

/* A JSON string: escaped, and valid UTF-8 (a file name from a trace may be
 * in any encoding: a byte that is not UTF-8 becomes U+FFFD). */
void gs_json_quoted(FILE *out, const char *s)
{
    fputc_unlocked('"', out);
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        const unsigned char *run = p; /* bytes written as they are, at once */
        while (*p >= 0x20 && *p < 0x7f && *p != '"' && *p != '\\')
            p++;
        if (p > run)
            fwrite_unlocked(run, 1, (size_t)(p - run), out);
        if (!*p)
            break;
        if (*p >= 0x80) {
            int n = utf8_length(p);
            if (n)
                fwrite_unlocked(p, 1, (size_t)n, out);
            else
                fputs_unlocked("\\ufffd", out);
            p += n ? n : 1;
            continue;
        }
        switch (*p) {
        case '"': fputs_unlocked("\\\"", out); break;
        case '\\': fputs_unlocked("\\\\", out); break;
        case '\n': fputs_unlocked("\\n", out); break;
        case '\t': fputs_unlocked("\\t", out); break;
        case '\r': fputs_unlocked("\\r", out); break;
        default: fprintf(out, "\\u%04x", *p); /* the other controls, and DEL */
        }
        p++;
    }
    fputc_unlocked('"', out);
}

/* Starts a value: the comma before it, its line, and its key. */
static void key(struct gs_json *j, const char *k)
{
    if (j->depth > 0) {
        if (j->need_comma[j->depth])
            fputc_unlocked(',', j->out);
        j->need_comma[j->depth] = 1;
        indent(j);
    }
    if (k) {
        gs_json_quoted(j->out, k);
        fputs_unlocked(": ", j->out);
    }
}

static void open(struct gs_json *j, const char *k, char c)
{
    key(j, k);
    fputc_unlocked(c, j->out);
    if (j->depth < 63)
        j->depth++;
    j->need_comma[j->depth] = 0;
}

static void close(struct gs_json *j, char c)
{
    int empty = !j->need_comma[j->depth];
    if (j->depth > 0)
        j->depth--;
    if (!empty)
        indent(j);
    fputc_unlocked(c, j->out);
    if (j->depth == 0)
        fputc_unlocked('\n', j->out);
}

void gs_json_begin_object(struct gs_json *j, const char *k) { open(j, k, '{'); }
void gs_json_end_object(struct gs_json *j) { close(j, '}'); }
void gs_json_begin_array(struct gs_json *j, const char *k) { open(j, k, '['); }
void gs_json_end_array(struct gs_json *j) { close(j, ']'); }

void gs_json_string(struct gs_json *j, const char *k, const char *v)
{
    key(j, k);
    if (v)
        gs_json_quoted(j->out, v);
    else
        fputs_unlocked("null", j->out);
}

/* v in decimal, minus sign first if negative (numbers are most of a
 * report's values: printf's parsing of its format cost more than these). */
static void decimal(FILE *out, int negative, uint64_t v)
{
    char buf[24], *p = buf + sizeof buf;
    do
        *--p = (char)('0' + v % 10);
    while (v /= 10);
    if (negative)
        *--p = '-';
    fwrite_unlocked(p, 1, (size_t)(buf + sizeof buf - p), out);
}

void gs_json_uint(struct gs_json *j, const char *k, uint64_t v)
{
    key(j, k);
    decimal(j->out, 0, v);
}

void gs_json_int(struct gs_json *j, const char *k, int64_t v)
{
    key(j, k);
    decimal(j->out, v < 0, v < 0 ? 0 - (uint64_t)v : (uint64_t)v);
}

void gs_json_bool(struct gs_json *j, const char *k, int v)
{
    key(j, k);
    fputs_unlocked(v ? "true" : "false", j->out);
}

void gs_json_null(struct gs_json *j, const char *k)
{
    key(j, k);
    fputs_unlocked("null", j->out);
}

void gs_json_double(struct gs_json *j, const char *k, double v)
{
    key(j, k);
    if (v != v || v > 1e300 || v < -1e300) /* JSON has no NaN or infinity */
        fputs_unlocked("null", j->out);
    else
        fprintf(j->out, "%.6f", v);
}
