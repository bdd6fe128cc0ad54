/*
 * output.h - the files the analyzer writes for the user (output.c).
 *
 * Included by: analyzer/cmd/options.c (every command's -o FILE).
 */
#ifndef GPUSHIM_UTIL_OUTPUT_H
#define GPUSHIM_UTIL_OUTPUT_H

#include <stdio.h>

/* path opened for writing, truncated, and made with mode 0600 where it is
 * new; NULL with errno set. */
FILE *gs_open_output(const char *path);

#endif
