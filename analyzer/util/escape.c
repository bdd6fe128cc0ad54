/*
 * escape.c - untrusted text from a trace (command line, host, function and
 * file names, labels) written into HTML: the HTML export and its charts
 * (export_html.c, svg.c).
 */
#include <stdio.h>

#include "analyzer/util/escape.h"

void gs_html_escape(FILE *out, const char *s)
{
    if (!s)
        return;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        switch (*p) {
        case '&': fputs("&amp;", out); break;
        case '<': fputs("&lt;", out); break;
        case '>': fputs("&gt;", out); break;
        case '"': fputs("&quot;", out); break;
        case '\'': fputs("&#39;", out); break;
        default:
            if (*p < 0x20 && *p != '\n' && *p != '\t')
                fputc('?', out);
            else
                fputc(*p, out);
        }
    }
}
