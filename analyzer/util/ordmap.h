/*
 * ordmap.h - a map of u64 keys to u64 values in key order, a treap
 * (ordmap.c).
 *
 * Included by: any analyzer or model file.
 */
#ifndef GPUSHIM_UTIL_ORDMAP_H
#define GPUSHIM_UTIL_ORDMAP_H

#include <stddef.h>
#include <stdint.h>

struct gs_ordmap;
struct gs_ordmap *gs_ordmap_new(void);
void gs_ordmap_free(struct gs_ordmap *m);
int gs_ordmap_put(struct gs_ordmap *m, uint64_t key, uint64_t value); /* 0, or -1 on no memory */
int gs_ordmap_del(struct gs_ordmap *m, uint64_t key);                 /* 0 when it was there */
/* The entry of the largest key <= key (floor) or smallest >= key (ceil):
 * 0 and *k, *v set; -1 when there is none. */
int gs_ordmap_floor(const struct gs_ordmap *m, uint64_t key, uint64_t *k, uint64_t *v);
int gs_ordmap_ceil(const struct gs_ordmap *m, uint64_t key, uint64_t *k, uint64_t *v);
size_t gs_ordmap_count(const struct gs_ordmap *m);

#endif
