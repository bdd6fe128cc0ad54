/*
 * file.h - the shim's files (shim/file/): the ring of entries, in a file
 * mapped MAP_SHARED that outlives the process (ring.c), and the trace
 * file's naming, creation and framing (tracefile.c).
 *
 * Included by: shim/file, shim/bound, shim/writer, and the unit tests.
 */
#ifndef GPUSHIM_SHIM_FILE_H
#define GPUSHIM_SHIM_FILE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "gpushim_ring.h"
#include "gpushim_trace.h"

/* ---- ring.c: the queue of entries, in the ring file (include/gpushim_ring.h) ---- */
struct gs_ring {
    struct gs_ring_header *hdr; /* head, tail and the rest live in the mapping */
    uint8_t *buf;               /* the data, hdr + GS_RING_HEADER_SIZE */
    uint64_t cap;               /* a power of two */
    int shared;                 /* backed by a file that outlives the process */
    int dontfork;               /* mapped MADV_DONTFORK: a child has no mapping */
};
/* Maps a ring of cap data bytes: in the file at path (created, fully
 * allocated on disk so that no later write to it can fail for space), or
 * anonymous memory when path is NULL. Returns 0, or -1 with errno. */
int gs_ring_init(struct gs_ring *r, const char *path, size_t cap, uint64_t id);
/* Unmaps it (the file stays). */
void gs_ring_destroy(struct gs_ring *r);
/* In a child of fork or clone: forgets the parent's ring, which the child
 * has no mapping of (dontfork); the range may since hold the child's own
 * memory, so it is not unmapped. */
void gs_ring_forget_in_child(struct gs_ring *r);
/* Moves the ring's content into a new file at path (after the old one was
 * removed); the ring is left as it was on failure. 0 or -1 with errno. */
int gs_ring_move_to_file(struct gs_ring *r, const char *path);
/* Appends an entry with body [body, body+len); -1 when it does not fit now. */
int gs_ring_push(struct gs_ring *r, const void *body, uint32_t len);
/* Copies the body of the entry at pos into out (room for max bytes). Returns
 * the body length and sets *next to the following entry, or 0 if malformed. */
uint32_t gs_ring_read(const struct gs_ring *r, uint64_t pos, void *out, uint32_t max,
                      uint64_t *next);

/* ---- tracefile.c: naming, creating and framing the file ---- */
/* What the writer knows of its trace file. */
struct gs_trace_file {
    int fd;
    dev_t dev; /* the file fd was opened on */
    ino_t ino;
    char path[4096];
    uint64_t size; /* bytes written whole */
    /* what its header says */
    uint64_t start_ns, realtime_ns;
    unsigned stack_depth;
    uint64_t ring_id;
    const char *ring_name; /* NULL: no ring file */
};
/* Expands %p, %h, %% in a GPUSHIM_OUTPUT template. Returns 0, -1 if too long. */
int gs_expand_path(const char *tmpl, char *out, size_t outsz);
/* Creates the file: mode 0600, never follows a symlink, never overwrites;
 * when the name exists, tries NAME-1.trace, NAME-2.trace, ... Returns the fd
 * and the name it used in path (outsz bytes), or -1 with errno. */
int gs_create_trace(char *path, size_t outsz);
/* Writes the preamble and header. 0 or -1 with errno. */
/* May a file grow to end bytes under RLIMIT_FSIZE? Past it the kernel would
 * send SIGXFSZ, which kills the program: the shim checks first, and treats
 * a file that may not grow as full (0, errno EFBIG). */
int gs_fsize_room(uint64_t end);
/* Writes all of buf at fd's offset (retrying short writes and EINTR), if
 * the file may grow that far. 0, or -1 with errno. */
int gs_write_all(int fd, const void *buf, size_t len);
/* ring_name: the ring file's name (no directory), or NULL for none. */
int gs_write_header(int fd, uint64_t start_ns, uint64_t realtime_ns, unsigned stack_depth,
                    uint64_t ring_id, const char *ring_name);
/* Compresses raw[0..len) into one chunk and writes it; *written: its size
 * in the file. 0 or -1 with errno. */
int gs_write_chunk(int fd, const uint8_t *raw, size_t len, uint8_t *scratch, size_t scratch_len,
                   size_t *written);
size_t gs_chunk_scratch_size(size_t raw_len);
/* The GS_REC_STOPPED chunk (include/gpushim_trace.h) of s written at offset
 * at. GS_STOPPED_CHUNK_LEN bytes whatever the values, so that a later call
 * rewrites it in place. 0 or -1 with errno. */
struct gs_stopped; /* analyzer/trace/meta.h */
int gs_write_stopped(int fd, uint64_t at, const struct gs_stopped *s);
/* The raw bytes of a chunk the writer makes, at most: its records and
 * columns (writer.c), and the columns' record head (GS_COLUMNS_OVERHEAD). */
#define GS_WRITER_CHUNK_RAW (1u << 20)
#define GS_WRITER_CHUNK_MAX (GS_WRITER_CHUNK_RAW + GS_COLUMNS_OVERHEAD)

#endif
