/*
 * pylines.c - the line of an instruction, from a code object's line table,
 * as CPython's PyCode_Addr2Line answers it, in each of the three codings
 * CPython 3.9 to 3.14 use (Objects/lnotab_notes.txt, Objects/locations.md,
 * Objects/codeobject.c of each version).
 *
 * Pure functions of the bytes they are given: every read is bounded by len,
 * so a table that is not what it should be gives a wrong line or -1, never
 * a read past its end.
 */
#include "shim/record/pyread.h"

/* 3.9, co_lnotab: pairs (address increment, line increment), the line
 * increment signed since 3.8; the line is that of the last pair whose
 * address is not past addr (3.9's PyCode_Addr2Line). */
static int lnotab(const uint8_t *p, size_t len, int line, int addr)
{
    int at = 0;
    for (size_t i = 0; i + 1 < len; i += 2) {
        at += p[i];
        if (at > addr)
            break;
        line += (int8_t)p[i + 1];
    }
    return line;
}

/* 3.10, co_linetable: pairs (address delta, line delta), -128 as the line
 * delta for a range with no line; zero-length ranges only move the line
 * (3.10's advance() and _PyCode_CheckLineNumber()). */
static int linetable(const uint8_t *p, size_t len, int first_line, int addr)
{
    int start, end = 0, line = -1, computed = first_line;
    for (size_t i = 0; i + 1 < len; i += 2) {
        start = end;
        end += p[i];
        int8_t delta = (int8_t)p[i + 1];
        if (delta == -128) {
            line = -1;
        } else {
            computed += delta;
            line = computed;
        }
        if (start <= addr && addr < end)
            return line;
    }
    return -1;
}

/* The location table's varints: 6 bits a byte, low bits first, bit 6 says
 * another byte follows. */
static unsigned varint(const uint8_t *p, size_t len, size_t *i)
{
    unsigned v = 0;
    for (unsigned shift = 0; *i < len && shift < 32; shift += 6) {
        uint8_t b = p[(*i)++];
        v |= (unsigned)(b & 63) << shift;
        if (!(b & 64))
            break;
    }
    return v;
}

static int svarint(const uint8_t *p, size_t len, size_t *i)
{
    unsigned v = varint(p, len, i);
    return v & 1 ? -(int)(v >> 1) : (int)(v >> 1);
}

/* 3.11 and later, the location table: entries whose first byte has bit 7
 * set, bits 3-6 the kind of entry and bits 0-2 the code units it covers
 * less one; the line delta is 0 for the short forms (0-9), kind - 10 for
 * the one-line forms (10-12), a signed varint for "no column" (13) and
 * "long" (14), and 15 is "no location" (3.11's get_line_delta(), advance()). */
static int locations(const uint8_t *p, size_t len, int first_line, int addr)
{
    int end = 0, line = first_line;
    size_t i = 0;
    while (i < len) {
        uint8_t b = p[i];
        if (!(b & 128))
            return -1; /* not the start of an entry: not a location table */
        unsigned kind = (b >> 3) & 15;
        int start = end;
        end += ((b & 7) + 1) * 2;
        size_t at = i + 1;
        int delta = 0;
        if (kind == 13 || kind == 14)
            delta = svarint(p, len, &at);
        else if (kind >= 10 && kind <= 12)
            delta = (int)kind - 10;
        line += delta;
        if (start <= addr && addr < end)
            return kind == 15 ? -1 : line;
        do /* to the next entry's first byte */
            i++;
        while (i < len && !(p[i] & 128));
    }
    return -1;
}

int gs_pylines_line(enum gs_pylines how, const uint8_t *table, size_t len, int first_line,
                    int addr)
{
    if (addr < 0)
        return first_line; /* not started: PyCode_Addr2Line's answer */
    switch (how) {
    case GS_PYLINES_LNOTAB:
        return lnotab(table, len, first_line, addr);
    case GS_PYLINES_LINETABLE:
        return linetable(table, len, first_line, addr);
    case GS_PYLINES_LOCATIONS:
        return locations(table, len, first_line, addr);
    }
    return -1;
}
