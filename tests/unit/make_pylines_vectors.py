#!/usr/bin/env python3
"""make_pylines_vectors.py - writes tests/unit/pylines_vectors.h: line tables
of real code objects compiled by this python3 (3.11 or later: the location
table), each with the line CPython itself gives for every instruction
(co_lines()), for test_pyread.c to check shim/record/pylines.c against.

Usage: python3 tests/unit/make_pylines_vectors.py > tests/unit/pylines_vectors.h
"""
import sys

SOURCE = '''
def plain(a, b):
    c = a + b
    return c * 2

def many_lines(x):
    total = 0
    for i in range(x):
        if i % 3 == 0:
            total += i
        elif i % 3 == 1:
            total -= i

        else:
            total *= 2
    try:
        raise ValueError(total)
    except ValueError as e:
        total = len(str(e))
    finally:
        total += 1
    return [y
            for y in range(total)
            if y]

async def coroutine(q):
    await q.get()
    return (lambda z:
            z + 1)(3)

def generator(n):
    yield from range(n)
    yield (n,
           n + 1,
           n + 2)

class Shape:
    @staticmethod
    def long_jump(v):
        w = v
''' + "\n" * 300 + '''
        return w
'''


def codes(code):
    yield code
    for c in code.co_consts:
        if hasattr(c, "co_code"):
            yield from codes(c)


def main():
    if sys.version_info < (3, 11):
        sys.exit("needs Python 3.11 or later (the location table)")
    top = compile(SOURCE, "vectors.py", "exec")
    out = [f"/* Made by tests/unit/make_pylines_vectors.py with Python "
           f"{sys.version.split()[0]}: do not edit. */",
           "struct pylines_vector {", "    const char *name;", "    int first_line;",
           "    const unsigned char *table;", "    unsigned table_len;",
           "    const int *lines; /* by code unit */", "    unsigned units;", "};"]
    vectors = []
    for i, c in enumerate(codes(top)):
        units = len(c.co_code) // 2
        line = [-1] * units
        for start, end, ln in c.co_lines():
            for u in range(start // 2, end // 2):
                line[u] = -1 if ln is None else ln
        table = ", ".join(str(b) for b in c.co_linetable)
        out.append(f"static const unsigned char table{i}[] = {{{table}}};")
        out.append(f"static const int lines{i}[] = {{{', '.join(map(str, line))}}};")
        vectors.append(f'    {{"{c.co_qualname}", {c.co_firstlineno}, table{i}, '
                       f"{len(c.co_linetable)}, lines{i}, {units}}},")
    out.append("static const struct pylines_vector pylines_vectors[] = {")
    out += vectors
    out.append("};")
    print("\n".join(out))


if __name__ == "__main__":
    main()
