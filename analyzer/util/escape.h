/*
 * escape.h - untrusted text written as HTML (escape.c).
 *
 * Included by: any analyzer file that writes HTML or SVG.
 */
#ifndef GPUSHIM_UTIL_ESCAPE_H
#define GPUSHIM_UTIL_ESCAPE_H

#include <stdio.h>

/* Writes s (untrusted: from the trace) as HTML text or attribute value:
 * & < > " ' as references, control bytes but tab and newline as '?'. */
void gs_html_escape(FILE *out, const char *s);

#endif
