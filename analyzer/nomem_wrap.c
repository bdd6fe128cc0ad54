/*
 * nomem_wrap.c - the gpushim binary's malloc, calloc, realloc, strdup,
 * strndup and aligned_alloc: each the C library's, a failure counted
 * (analyzer/util/nomem.h). Linked into the binary alone, with ld's
 * --wrap=SYMBOL for each (Makefile): the analyzer's objects call
 * __wrap_malloc, which calls the real one. Libraries (libdw, zlib,
 * libdeflate) keep their own calls: their failures are said by them.
 */
#include <stddef.h>

#include "analyzer/util/nomem.h"

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t sz);
void *__real_realloc(void *p, size_t n);
char *__real_strdup(const char *s);
char *__real_strndup(const char *s, size_t n);
void *__real_aligned_alloc(size_t align, size_t n);

void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t sz);
void *__wrap_realloc(void *p, size_t n);
char *__wrap_strdup(const char *s);
char *__wrap_strndup(const char *s, size_t n);
void *__wrap_aligned_alloc(size_t align, size_t n);

static void *counted(void *p)
{
    if (p == NULL)
        gs_nomem_note();
    return p;
}

void *__wrap_malloc(size_t n) { return counted(__real_malloc(n)); }
void *__wrap_calloc(size_t n, size_t sz) { return counted(__real_calloc(n, sz)); }
void *__wrap_realloc(void *p, size_t n) { return n ? counted(__real_realloc(p, n)) : __real_realloc(p, n); }
char *__wrap_strdup(const char *s) { return counted(__real_strdup(s)); }
char *__wrap_strndup(const char *s, size_t n) { return counted(__real_strndup(s, n)); }
void *__wrap_aligned_alloc(size_t align, size_t n) { return counted(__real_aligned_alloc(align, n)); }
