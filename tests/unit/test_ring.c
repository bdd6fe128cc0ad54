/*
 * test_ring.c - shim/file/ring.c: gs_ring_init accepts only power-of-two
 * capacities; a ring in a file has the header include/gpushim_ring.h
 * describes, and its entries are in the file as soon as they are pushed
 * (what survives a death); a ring moved to a new file keeps its content; entries pushed come back intact from gs_ring_read, including
 * entries whose length word or body wraps around the end of the buffer;
 * gs_ring_push fails exactly when the entry does not fit and succeeds again
 * once tail advances; bodies over GS_RING_MAX_BODY are refused.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "shim/base/base.h"
#include "shim/file/file.h"

static void fill(uint8_t *b, uint32_t len, unsigned seed)
{
    for (uint32_t i = 0; i < len; i++)
        b[i] = (uint8_t)(seed * 31 + i * 7 + 1);
}

Test(ring, init_rejects_non_power_of_two)
{
    struct gs_ring r;
    const size_t bad[] = {3, 100, 4095, 4097, 12288, (1u << 20) + 1};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cr_assert_eq(gs_ring_init(&r, NULL, bad[i], 1), -1, "cap %zu must be refused", bad[i]);
        cr_assert_null(r.hdr, "no mapping after a refused init");
    }
    cr_assert_eq(gs_ring_init(&r, NULL, 4096, 1), 0, "4096 is a power of two");
    cr_assert_not_null(r.buf);
    cr_assert_eq(r.cap, 4096);
    cr_assert_eq(r.hdr->head, 0);
    cr_assert_eq(r.hdr->tail, 0);
    gs_ring_destroy(&r);
    cr_assert_null(r.hdr, "destroy clears the ring");
}

Test(ring, push_read_round_trip)
{
    struct gs_ring r;
    cr_assert_eq(gs_ring_init(&r, NULL, 4096, 1), 0);
    uint8_t in[3][100], out[200];
    const uint32_t lens[3] = {1, 57, 100};
    for (int i = 0; i < 3; i++) {
        fill(in[i], lens[i], (unsigned)i);
        in[i][0] = (uint8_t)(GS_REC_ALLOC + i);
        cr_assert_eq(gs_ring_push(&r, in[i], lens[i]), 0, "push %d", i);
    }
    cr_assert_eq(r.hdr->head, 3 * 4 + 1 + 57 + 100, "head counts length words and bodies");
    uint64_t pos = r.hdr->tail;
    for (int i = 0; i < 3; i++) {
        uint64_t next = 0;
        uint32_t len = gs_ring_read(&r, pos, out, sizeof out, &next);
        cr_assert_eq(len, lens[i], "entry %d length %u", i, len);
        cr_assert_eq(memcmp(out, in[i], len), 0, "entry %d body", i);
        cr_assert_eq(next, pos + 4 + lens[i], "entry %d next", i);
        pos = next;
    }
    cr_assert_eq(pos, r.hdr->head, "read exactly what was pushed");
    gs_ring_destroy(&r);
}

Test(ring, read_refuses_body_larger_than_out)
{
    struct gs_ring r;
    cr_assert_eq(gs_ring_init(&r, NULL, 4096, 1), 0);
    uint8_t in[40] = {GS_REC_FREE}, out[40];
    cr_assert_eq(gs_ring_push(&r, in, sizeof in), 0);
    uint64_t next = 777;
    cr_assert_eq(gs_ring_read(&r, 0, out, 39, &next), 0, "body of 40 in 39 bytes of room");
    cr_assert_eq(next, 777, "next untouched on failure");
    gs_ring_destroy(&r);
}

Test(ring, entries_wrap_around_the_end_intact)
{
    /* A small ring (mmap rounds to a page, but only cap bytes are used) and
     * entry sizes prime to it, so the length word and the body both land
     * across the end at every possible offset over the run. */
    struct gs_ring r;
    cr_assert_eq(gs_ring_init(&r, NULL, 64, 1), 0);
    uint8_t in[64], out[64];
    unsigned wrapped_len = 0, wrapped_body = 0;
    for (unsigned i = 0; i < 1000; i++) {
        uint32_t len = 1 + (i * 13) % 40;
        fill(in, len, i);
        uint64_t at = r.hdr->head;
        cr_assert_eq(gs_ring_push(&r, in, len), 0, "push %u (len %u) at %llu", i, len,
                     (unsigned long long)at);
        uint64_t off = at & 63;
        if (off + 4 > 64)
            wrapped_len++;
        else if (off + 4 + len > 64)
            wrapped_body++;
        uint64_t next;
        uint32_t got = gs_ring_read(&r, r.hdr->tail, out, sizeof out, &next);
        cr_assert_eq(got, len, "entry %u: length %u, expected %u", i, got, len);
        cr_assert_eq(memcmp(out, in, len), 0, "entry %u: body differs (offset %llu)", i,
                     (unsigned long long)off);
        r.hdr->tail = next;
    }
    cr_assert_gt(wrapped_len, 0, "some length words straddled the end");
    cr_assert_gt(wrapped_body, 0, "some bodies straddled the end");
    gs_ring_destroy(&r);
}

Test(ring, several_entries_in_flight_across_the_end)
{
    struct gs_ring r;
    cr_assert_eq(gs_ring_init(&r, NULL, 128, 1), 0);
    uint8_t in[8][20] = {{0}}, out[20];
    /* move head and tail close to the end first */
    for (int k = 0; k < 5; k++) {
        cr_assert_eq(gs_ring_push(&r, in[0], 17), 0);
        r.hdr->tail = r.hdr->head;
    }
    cr_assert_eq(r.hdr->head, 105);
    for (int i = 0; i < 5; i++) {
        fill(in[i], 20, (unsigned)i + 100);
        cr_assert_eq(gs_ring_push(&r, in[i], 20), 0, "push %d", i);
    }
    cr_assert_eq(gs_ring_push(&r, in[5], 20), -1, "a sixth entry of 24 does not fit");
    uint64_t pos = r.hdr->tail;
    for (int i = 0; i < 5; i++) {
        uint64_t next;
        cr_assert_eq(gs_ring_read(&r, pos, out, sizeof out, &next), 20);
        cr_assert_eq(memcmp(out, in[i], 20), 0, "entry %d", i);
        pos = next;
    }
    gs_ring_destroy(&r);
}

Test(ring, push_fails_exactly_when_full)
{
    struct gs_ring r;
    cr_assert_eq(gs_ring_init(&r, NULL, 64, 1), 0);
    uint8_t body[12] = {GS_REC_ALLOC}, out[12];
    for (int i = 0; i < 4; i++) {
        body[1] = (uint8_t)i;
        cr_assert_eq(gs_ring_push(&r, body, sizeof body), 0, "entry %d of 16 bytes fits", i);
    }
    cr_assert_eq(r.hdr->head - r.hdr->tail, 64, "the ring is exactly full");
    cr_assert_eq(gs_ring_push(&r, body, sizeof body), -1, "full: push must fail");
    cr_assert_eq(gs_ring_push(&r, body, 1), -1, "full: even a 1-byte body");
    cr_assert_eq(r.hdr->head, 64, "a failed push leaves head alone");

    /* drain one entry: exactly one more fits */
    uint64_t next;
    cr_assert_eq(gs_ring_read(&r, r.hdr->tail, out, sizeof out, &next), 12);
    cr_assert_eq(out[1], 0);
    r.hdr->tail = next;
    body[1] = 4;
    cr_assert_eq(gs_ring_push(&r, body, sizeof body), 0, "room again after tail advanced");
    cr_assert_eq(gs_ring_push(&r, body, 1), -1, "and full again");

    /* the entries come back in order, the new one having wrapped */
    for (int i = 1; i <= 4; i++) {
        cr_assert_eq(gs_ring_read(&r, r.hdr->tail, out, sizeof out, &next), 12);
        cr_assert_eq(out[1], i, "entry %d in order", i);
        r.hdr->tail = next;
    }
    cr_assert_eq(r.hdr->tail, r.hdr->head);
    gs_ring_destroy(&r);
}

Test(ring, push_fails_when_entry_is_one_byte_too_big)
{
    struct gs_ring r;
    cr_assert_eq(gs_ring_init(&r, NULL, 64, 1), 0);
    uint8_t body[64] = {GS_REC_FREE};
    cr_assert_eq(gs_ring_push(&r, body, 61), -1, "61 + 4 > 64");
    cr_assert_eq(gs_ring_push(&r, body, 60), 0, "60 + 4 == 64 fits");
    gs_ring_destroy(&r);
}

Test(ring, rejects_body_over_max)
{
    struct gs_ring r;
    cr_assert_eq(gs_ring_init(&r, NULL, 1u << 20, 1), 0);
    static uint8_t body[GS_RING_MAX_BODY + 1];
    body[0] = GS_REC_MODULE;
    cr_assert_eq(gs_ring_push(&r, body, GS_RING_MAX_BODY + 1), -1, "MAX_BODY+1 refused");
    cr_assert_eq(r.hdr->head, 0, "nothing written");
    cr_assert_eq(gs_ring_push(&r, body, UINT32_MAX), -1, "a length near 2^32 refused");
    cr_assert_eq(gs_ring_push(&r, body, UINT32_MAX - 3), -1, "a length whose entry wraps u32");
    cr_assert_eq(gs_ring_push(&r, body, GS_RING_MAX_BODY), 0, "MAX_BODY itself accepted");
    static uint8_t out[GS_RING_MAX_BODY];
    uint64_t next;
    cr_assert_eq(gs_ring_read(&r, 0, out, sizeof out, &next), GS_RING_MAX_BODY);
    gs_ring_destroy(&r);
}

static void tmp_path(char *out, size_t n, const char *name)
{
    snprintf(out, n, "/tmp/gpushim-ring-%d-%s", (int)getpid(), name);
    unlink(out);
}

Test(ring, file_backed_ring_holds_pushed_entries_on_disk)
{
    char path[256];
    tmp_path(path, sizeof path, "a.ring");
    struct gs_ring r;
    cr_assert_eq(gs_ring_init(&r, path, 1u << 16, 0xabcdef), 0, "init: %s", strerror(errno));
    cr_assert(r.shared);
    uint8_t body[24];
    fill(body, sizeof body, 5);
    body[0] = GS_REC_ALLOC;
    cr_assert_eq(gs_ring_push(&r, body, sizeof body), 0);

    /* Read through the file, not the mapping: what another process sees. */
    int fd = open(path, O_RDONLY);
    cr_assert_geq(fd, 0);
    struct stat sb;
    cr_assert_eq(fstat(fd, &sb), 0);
    cr_assert_eq(sb.st_size, GS_RING_HEADER_SIZE + (1u << 16), "header and data, allocated");
    cr_assert_eq(sb.st_mode & 0777, 0600, "private to the user");
    cr_assert_geq((uint64_t)sb.st_blocks * 512, (uint64_t)sb.st_size, "allocated on disk in full");
    struct gs_ring_header h;
    cr_assert_eq(pread(fd, &h, sizeof h, 0), (ssize_t)sizeof h);
    cr_assert_eq(memcmp(h.magic, GS_RING_MAGIC, 8), 0);
    cr_assert_eq(h.version, GS_RING_VERSION);
    cr_assert_eq(h.layout, GS_RING_LAYOUT);
    cr_assert_eq(h.cap, 1u << 16);
    cr_assert_eq(h.trace_id, 0xabcdef);
    cr_assert_eq(h.pid, (uint64_t)getpid());
    cr_assert_eq(h.head, 4 + sizeof body, "head published");
    cr_assert_eq(h.tail, 0);
    uint8_t entry[4 + sizeof body];
    cr_assert_eq(pread(fd, entry, sizeof entry, GS_RING_HEADER_SIZE), (ssize_t)sizeof entry);
    uint32_t total;
    memcpy(&total, entry, 4);
    cr_assert_eq(total, sizeof entry);
    cr_assert_eq(memcmp(entry + 4, body, sizeof body), 0, "the body, in the file");
    close(fd);

    cr_assert_eq(gs_ring_init(&(struct gs_ring){0}, path, 1u << 16, 1), -1,
                 "an existing file is never reused");
    cr_assert_eq(errno, EEXIST);
    gs_ring_destroy(&r);
    cr_assert_eq(access(path, F_OK), 0, "destroy leaves the file");
    unlink(path);
}

Test(ring, move_to_file_keeps_entries_and_positions)
{
    char path[256];
    tmp_path(path, sizeof path, "b.ring");
    struct gs_ring r;
    cr_assert_eq(gs_ring_init(&r, NULL, 1u << 16, 7), 0);
    cr_assert(!r.shared);
    uint8_t body[10] = {GS_REC_FREE, 1, 2, 3}, out[10];
    for (int i = 0; i < 3; i++)
        cr_assert_eq(gs_ring_push(&r, body, sizeof body), 0);
    r.hdr->tail = 14;
    cr_assert_eq(gs_ring_move_to_file(&r, path), 0, "move: %s", strerror(errno));
    cr_assert(r.shared);
    cr_assert_eq(r.hdr->head, 42);
    cr_assert_eq(r.hdr->tail, 14);
    cr_assert_eq(r.hdr->trace_id, 7);
    uint64_t next;
    cr_assert_eq(gs_ring_read(&r, 14, out, sizeof out, &next), sizeof body);
    cr_assert_eq(memcmp(out, body, sizeof body), 0);
    cr_assert_eq(gs_ring_push(&r, body, sizeof body), 0, "pushes go on into the file");
    gs_ring_destroy(&r);
    unlink(path);
}
