/*
 * text.h - text from a trace as the analyzer shows it (gs_text_copy), and a
 * path's last part (gs_basename).
 *
 * Included by: any analyzer file, and the model (analyzer/util/cursor.h).
 */
#ifndef GPUSHIM_UTIL_TEXT_H
#define GPUSHIM_UTIL_TEXT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Text from a trace as the analyzer shows it: len bytes of in copied into
 * out (at most outsz - 1 of them, then a NUL), control bytes as '?' so that
 * none reaches a terminal. */
static inline void gs_text_copy(char *out, size_t outsz, const void *in, size_t len)
{
    const uint8_t *b = in;
    if (len >= outsz)
        len = outsz - 1;
    for (size_t i = 0; i < len; i++)
        out[i] = b[i] < 0x20 || b[i] == 0x7f ? '?' : (char)b[i];
    out[len] = 0;
}

/* The part of path after its last '/' (all of it where it has none; NULL
 * for NULL): how a module or a source file is named in a line of a report. */
static inline const char *gs_basename(const char *path)
{
    const char *slash = path ? strrchr(path, '/') : NULL;
    return slash ? slash + 1 : path;
}

#endif
