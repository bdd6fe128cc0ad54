/*
 * idmap.h - a map of u64 keys to u64 values, open addressing (idmap.c).
 *
 * Included by: any analyzer or model file.
 */
#ifndef GPUSHIM_UTIL_IDMAP_H
#define GPUSHIM_UTIL_IDMAP_H

#include <stddef.h>
#include <stdint.h>

struct gs_idmap;
struct gs_idmap *gs_idmap_new(void);
void gs_idmap_free(struct gs_idmap *m);
/* 0 and sets *value when found; -1 otherwise. */
int gs_idmap_get(const struct gs_idmap *m, uint64_t key, uint64_t *value);
int gs_idmap_put(struct gs_idmap *m, uint64_t key, uint64_t value); /* 0, or -1 on no memory */
/* Where key's value is kept, added with the value 0 if it was not there
 * (*added 1 then, else 0): one probe for a look and an insert. NULL on no
 * memory. Valid until the map next changes. */
uint64_t *gs_idmap_add(struct gs_idmap *m, uint64_t key, int *added);
int gs_idmap_del(struct gs_idmap *m, uint64_t key);                 /* 0 when it was there */
/* gs_idmap_get and gs_idmap_del in one: 0 and sets *value when it was there. */
int gs_idmap_take(struct gs_idmap *m, uint64_t key, uint64_t *value);
/* Where key's value is kept, or NULL: valid until the map next changes.
 * With gs_idmap_remove_found, one probe serves a look and a removal. */
uint64_t *gs_idmap_find(struct gs_idmap *m, uint64_t key);
/* Removes the key whose value gs_idmap_find gave, the map unchanged since. */
void gs_idmap_remove_found(struct gs_idmap *m, uint64_t *found);
size_t gs_idmap_count(const struct gs_idmap *m);
struct gs_idmap *gs_idmap_copy(const struct gs_idmap *m); /* NULL on no memory */

#endif
