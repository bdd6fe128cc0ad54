/*
 * test_json.c - analyzer/util/json.c: the exact text it writes: nesting,
 * commas and indentation; strings escaped, written in runs, and made valid
 * UTF-8 (a byte that is not becomes U+FFFD); numbers at their extremes.
 */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyzer/util/json.h"

/* What writing does, as text. */
struct captured {
    char *text;
    size_t len;
    FILE *f;
};

static void start(struct captured *c, struct gs_json *j)
{
    c->f = open_memstream(&c->text, &c->len);
    cr_assert_not_null(c->f);
    *j = (struct gs_json){.out = c->f};
}

static void expect(struct captured *c, const char *want)
{
    fclose(c->f);
    cr_assert_str_eq(c->text, want);
    free(c->text);
}

Test(json, nesting_commas_and_numbers)
{
    struct captured c;
    struct gs_json j;
    start(&c, &j);
    gs_json_begin_object(&j, NULL);
    gs_json_uint(&j, "zero", 0);
    gs_json_uint(&j, "most", UINT64_MAX);
    gs_json_int(&j, "least", INT64_MIN);
    gs_json_int(&j, "minus_one", -1);
    gs_json_int(&j, "ten", 10);
    gs_json_begin_array(&j, "list");
    gs_json_uint(&j, NULL, 7);
    gs_json_begin_object(&j, NULL);
    gs_json_end_object(&j);
    gs_json_null(&j, NULL);
    gs_json_bool(&j, NULL, 1);
    gs_json_end_array(&j);
    gs_json_begin_array(&j, "empty");
    gs_json_end_array(&j);
    gs_json_double(&j, "half", 0.5);
    gs_json_string(&j, "none", NULL);
    gs_json_end_object(&j);
    expect(&c, "{\n"
               "  \"zero\": 0,\n"
               "  \"most\": 18446744073709551615,\n"
               "  \"least\": -9223372036854775808,\n"
               "  \"minus_one\": -1,\n"
               "  \"ten\": 10,\n"
               "  \"list\": [\n"
               "    7,\n"
               "    {},\n"
               "    null,\n"
               "    true\n"
               "  ],\n"
               "  \"empty\": [],\n"
               "  \"half\": 0.500000,\n"
               "  \"none\": null\n"
               "}\n");
}

Test(json, strings_escaped_and_valid_utf8)
{
    struct captured c;
    struct gs_json j;
    start(&c, &j);
    gs_json_begin_array(&j, NULL);
    gs_json_string(&j, NULL, "plain text, then \"quotes\" and a \\ backslash");
    gs_json_string(&j, NULL, "tab\there\nline\rcr\x01\x1f\x7f end");
    gs_json_string(&j, NULL, "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80!");  /* é € 😀 */
    gs_json_string(&j, NULL, "bad \xff, cut \xe2\x82, overlong \xc0\xaf, at end \xc3"); 
    gs_json_string(&j, NULL, "");
    gs_json_end_array(&j);
    expect(&c, "[\n"
               "  \"plain text, then \\\"quotes\\\" and a \\\\ backslash\",\n"
               "  \"tab\\there\\nline\\rcr\\u0001\\u001f\\u007f end\",\n"
               "  \"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80!\",\n"
               "  \"bad \\ufffd, cut \\ufffd\\ufffd, overlong \\ufffd\\ufffd, at end \\ufffd\",\n"
               "  \"\"\n"
               "]\n");
}

Test(json, deep_nesting_indents_each_level)
{
    struct captured c;
    struct gs_json j;
    start(&c, &j);
    for (int i = 0; i < 70; i++) /* deeper than it counts (63): stays at its deepest */
        gs_json_begin_array(&j, NULL);
    gs_json_uint(&j, NULL, 1);
    for (int i = 0; i < 70; i++)
        gs_json_end_array(&j);
    fclose(c.f);
    const char *one = strstr(c.text, "1");
    cr_assert_not_null(one);
    size_t spaces = 0;
    while (one - spaces > c.text && one[-1 - (long)spaces] == ' ')
        spaces++;
    cr_assert_eq(spaces, 2 * 63, "the value's indentation");
    free(c.text);
}
