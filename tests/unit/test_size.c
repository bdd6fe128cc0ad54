/*
 * test_size.c - gs_parse_size (include/gpushim_size.h): the sizes the
 * shim's settings and the command line take.
 */
#include <criterion/criterion.h>

#include "gpushim_size.h"

static uint64_t ok(const char *s)
{
    uint64_t v = 12345;
    cr_assert_eq(gs_parse_size(s, &v), 0, "'%s' is a size", s);
    return v;
}

Test(size, units_and_their_spellings)
{
    cr_assert_eq(ok("0"), 0);
    cr_assert_eq(ok("4096"), 4096);
    cr_assert_eq(ok("4096B"), 4096);
    cr_assert_eq(ok("64K"), 64ull << 10);
    cr_assert_eq(ok("64k"), 64ull << 10);
    cr_assert_eq(ok("512M"), 512ull << 20);
    cr_assert_eq(ok("512MiB"), 512ull << 20);
    cr_assert_eq(ok("512MB"), 512ull << 20);
    cr_assert_eq(ok("16G"), 16ull << 30);
    cr_assert_eq(ok("16gib"), 16ull << 30);
    cr_assert_eq(ok("2T"), 2ull << 40);
    cr_assert_eq(ok("16777215T"), 16777215ull << 40, "the largest T that fits");
    cr_assert_eq(ok("18446744073709551615"), UINT64_MAX);
}

Test(size, what_is_not_a_size)
{
    static const char *const bad[] = {"",     "-1",   "+1",  " 1",    "1 ",   "M",
                                      "1X",   "1MM",  "1Mi", "1iB",   "1.5G", "0x10",
                                      "16777216T", "18446744073709551616", "99999999999999999999999"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        uint64_t v = 7;
        cr_assert_eq(gs_parse_size(bad[i], &v), -1, "'%s' is refused", bad[i]);
        cr_assert_eq(v, 7, "'%s' leaves the output alone", bad[i]);
    }
    uint64_t v;
    cr_assert_eq(gs_parse_size(NULL, &v), -1, "NULL");
}
