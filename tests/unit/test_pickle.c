/*
 * test_pickle.c - analyzer/util/pickle.c: the exact bytes of small values
 * (protocol 4, no memo, no frame), ints in BININT up to 32 bits and in the
 * fewest LONG1 bytes past that (as Python's pickler writes them), a uint64
 * past INT64_MAX as INT64_MAX, strings as valid UTF-8, containers in
 * batches of GS_PICKLE_BATCH, and a part put into a whole pickle.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "analyzer/util/pickle.h"

struct buf {
    char *data;
    size_t len;
    FILE *f;
};

static struct gs_pickle start(struct buf *b)
{
    struct gs_pickle p;
    b->data = NULL;
    b->len = 0;
    b->f = open_memstream(&b->data, &b->len);
    cr_assert(b->f);
    gs_pickle_begin(&p, b->f);
    return p;
}

/* Finishes the pickle and compares its bytes with want (n bytes). */
static void expect(struct buf *b, struct gs_pickle *p, const char *want, size_t n)
{
    gs_pickle_finish(p);
    fclose(b->f);
    char got[512] = "", exp[512] = "";
    for (size_t i = 0; i < b->len && i < 200; i++)
        sprintf(got + 2 * i, "%02x", (unsigned char)b->data[i]);
    for (size_t i = 0; i < n && i < 200; i++)
        sprintf(exp + 2 * i, "%02x", (unsigned char)want[i]);
    cr_assert_eq(b->len, n, "length %zu, not %zu: %s, not %s", b->len, n, got, exp);
    cr_assert(memcmp(b->data, want, n) == 0, "%s, not %s", got, exp);
    free(b->data);
}

#define EXPECT(b, p, lit) expect(b, p, lit, sizeof lit - 1)

Test(pickle, scalars)
{
    struct buf b;
    struct gs_pickle p;
    p = start(&b), gs_pickle_none(&p), EXPECT(&b, &p, "\x80\x04N.");
    p = start(&b), gs_pickle_bool(&p, 1), EXPECT(&b, &p, "\x80\x04\x88.");
    p = start(&b), gs_pickle_bool(&p, 0), EXPECT(&b, &p, "\x80\x04\x89.");
    p = start(&b), gs_pickle_float(&p, 1.5), EXPECT(&b, &p, "\x80\x04G\x3f\xf8\0\0\0\0\0\0.");
}

Test(pickle, ints_in_the_fewest_bytes)
{
    struct buf b;
    struct gs_pickle p;
    p = start(&b), gs_pickle_int(&p, 0), EXPECT(&b, &p, "\x80\x04J\0\0\0\0.");
    p = start(&b), gs_pickle_int(&p, 1), EXPECT(&b, &p, "\x80\x04J\x01\0\0\0.");
    p = start(&b), gs_pickle_int(&p, -1), EXPECT(&b, &p, "\x80\x04J\xff\xff\xff\xff.");
    p = start(&b), gs_pickle_int(&p, INT32_MAX), EXPECT(&b, &p, "\x80\x04J\xff\xff\xff\x7f.");
    p = start(&b), gs_pickle_int(&p, INT32_MIN), EXPECT(&b, &p, "\x80\x04J\0\0\0\x80.");
    p = start(&b), gs_pickle_int(&p, 1ll << 31),
    EXPECT(&b, &p, "\x80\x04\x8a\x05\0\0\0\x80\0.");
    p = start(&b), gs_pickle_int(&p, -(1ll << 31) - 1),
    EXPECT(&b, &p, "\x80\x04\x8a\x05\xff\xff\xff\x7f\xff.");
    p = start(&b), gs_pickle_int(&p, 1ll << 39),
    EXPECT(&b, &p, "\x80\x04\x8a\x06\0\0\0\0\x80\0.");
    p = start(&b), gs_pickle_int(&p, INT64_MAX),
    EXPECT(&b, &p, "\x80\x04\x8a\x08\xff\xff\xff\xff\xff\xff\xff\x7f.");
    p = start(&b), gs_pickle_int(&p, INT64_MIN),
    EXPECT(&b, &p, "\x80\x04\x8a\x08\0\0\0\0\0\0\0\x80.");
    p = start(&b), gs_pickle_uint(&p, UINT64_MAX), /* past int64: INT64_MAX */
    EXPECT(&b, &p, "\x80\x04\x8a\x08\xff\xff\xff\xff\xff\xff\xff\x7f.");
    p = start(&b), gs_pickle_uint(&p, 123145302310912ull), /* a device address */
    EXPECT(&b, &p, "\x80\x04\x8a\x06\0\0\0\0\x00\x70.");
}

Test(pickle, strings_are_utf8)
{
    struct buf b;
    struct gs_pickle p;
    p = start(&b), gs_pickle_str(&p, ""), EXPECT(&b, &p, "\x80\x04\x8c\x00.");
    p = start(&b), gs_pickle_str(&p, "a"), EXPECT(&b, &p, "\x80\x04\x8c\x01" "a.");
    p = start(&b), gs_pickle_str(&p, "\xc3\xa9"), EXPECT(&b, &p, "\x80\x04\x8c\x02\xc3\xa9.");
    p = start(&b), gs_pickle_str(&p, NULL), EXPECT(&b, &p, "\x80\x04N.");
    /* a byte that is not UTF-8, an overlong form and a surrogate: U+FFFD each byte */
    p = start(&b), gs_pickle_str(&p, "x\xff"),
    EXPECT(&b, &p, "\x80\x04\x8c\x04x\xef\xbf\xbd.");
    p = start(&b), gs_pickle_str(&p, "\xc0\x80"),
    EXPECT(&b, &p, "\x80\x04\x8c\x06\xef\xbf\xbd\xef\xbf\xbd.");
    p = start(&b), gs_pickle_bytes_str(&p, "\xed\xa0\x80", 3),
    EXPECT(&b, &p, "\x80\x04\x8c\x09\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd.");
    p = start(&b), gs_pickle_bytes_str(&p, "a\0b", 3), EXPECT(&b, &p, "\x80\x04\x8c\x03" "a\0b.");
    /* 256 bytes: BINUNICODE, a 4-byte length */
    char s[257];
    memset(s, 'x', 256);
    s[256] = 0;
    p = start(&b);
    gs_pickle_str(&p, s);
    gs_pickle_finish(&p);
    fclose(b.f);
    cr_assert_eq(b.len, 2 + 5 + 256 + 1);
    cr_assert(memcmp(b.data, "\x80\x04X\x00\x01\x00\x00xx", 9) == 0);
    free(b.data);
}

Test(pickle, containers)
{
    struct buf b;
    struct gs_pickle p = start(&b);
    gs_pickle_dict(&p);
    gs_pickle_str(&p, "a");
    gs_pickle_list(&p);
    gs_pickle_int(&p, 1);
    gs_pickle_none(&p);
    gs_pickle_end(&p);
    gs_pickle_str(&p, "b");
    gs_pickle_dict(&p);
    gs_pickle_end(&p);
    gs_pickle_end(&p);
    EXPECT(&b, &p, "\x80\x04}(\x8c\x01" "a](J\x01\0\0\0Ne\x8c\x01" "b}(uu.");
    p = start(&b);
    gs_pickle_list(&p); /* finish ends what is open */
    EXPECT(&b, &p, "\x80\x04](e.");
}

Test(pickle, batches_of_a_thousand)
{
    struct buf b;
    struct gs_pickle p = start(&b);
    gs_pickle_list(&p);
    for (int i = 0; i < GS_PICKLE_BATCH + 1; i++)
        gs_pickle_none(&p);
    gs_pickle_dict(&p);
    for (int i = 0; i < GS_PICKLE_BATCH + 1; i++) {
        gs_pickle_none(&p); /* a key, then its value: one item */
        gs_pickle_bool(&p, 1);
    }
    gs_pickle_finish(&p);
    fclose(b.f);
    /* PROTO, ](, 1000 N, e(, N, the dict's }( ... */
    size_t at = 2;
    cr_assert(memcmp(b.data + at, "](", 2) == 0);
    at += 2;
    for (int i = 0; i < GS_PICKLE_BATCH; i++)
        cr_assert_eq(b.data[at++], 'N');
    cr_assert(memcmp(b.data + at, "e(N}(", 5) == 0, "a new batch after %d", GS_PICKLE_BATCH);
    at += 5;
    for (int i = 0; i < GS_PICKLE_BATCH; i++, at += 2)
        cr_assert(memcmp(b.data + at, "N\x88", 2) == 0);
    cr_assert(memcmp(b.data + at, "u(N\x88ue.", 7) == 0);
    cr_assert_eq(b.len, at + 7);
    free(b.data);
}

Test(pickle, a_part_put_in_a_whole)
{
    struct buf part = {0};
    part.f = open_memstream(&part.data, &part.len);
    struct gs_pickle pp;
    gs_pickle_begin_part(&pp, part.f);
    gs_pickle_list(&pp);
    gs_pickle_int(&pp, 7);
    gs_pickle_end(&pp);
    fclose(part.f);
    cr_assert_eq(part.len, 8, "no PROTO in a part");

    struct buf b;
    struct gs_pickle p = start(&b);
    gs_pickle_list(&p);
    gs_pickle_raw(&p, part.data, part.len);
    gs_pickle_raw(&p, part.data, part.len);
    gs_pickle_end(&p);
    EXPECT(&b, &p, "\x80\x04](](J\x07\0\0\0e](J\x07\0\0\0ee.");
    free(part.data);
}
