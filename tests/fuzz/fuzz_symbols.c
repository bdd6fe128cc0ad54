/*
 * fuzz_symbols.c - libFuzzer target: the ELF file and DWARF of a module a
 * trace names (analyzer/symbols/symbolize.c, spans.c; libdw reads them),
 * at its path or, gone from there, in a --symbols folder by build id.
 *
 * The input: a flags byte (bit 0: the module is at its recorded path, else
 * only in the --symbols folder, as .build-id/xx/yyyy; bit 1: the trace gave
 * a build id, the next 8 bytes, else none and it is taken at its path
 * alone), 8 bytes of build id, four little-endian u32 offsets asked about
 * in the module, then the module's file (an ELF, with or without DWARF).
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analyzer/symbols/symbolize.h"
#include "fuzz_file.h"

#define HEAD (1 + 8 + 16)
#define BIAS 0x7f0000000000ull

/* No control byte in s (intern's rule: each is '?'). */
static int printable(const char *s)
{
    for (; s && *s; s++)
        if ((unsigned char)*s < 0x20 || *s == 0x7f)
            return 0;
    return 1;
}

static void write_at(const char *path, const uint8_t *data, size_t size)
{
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, size, f) != size || fclose(f) != 0)
        abort();
}

static char search[400];

/* The --symbols folder, at exit (before fuzz_cleanup, registered earlier,
 * removes the private directory). */
static void symbols_cleanup(void)
{
    char top[410];
    snprintf(top, sizeof top, "%s/.build-id", search);
    rmdir(top);
    rmdir(search);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < HEAD)
        return 0;
    static char hexdir[420], byid[480], gone[420];
    const char *dir = fuzz_dir_path();
    if (!search[0]) { /* the --symbols folder, once (the symbolizer keeps up to 8) */
        snprintf(search, sizeof search, "%s/symbols", dir);
        snprintf(gone, sizeof gone, "%s/gone.so", dir);
        mkdir(search, 0700);
        atexit(symbols_cleanup);
        char err[160];
        if (gs_sym_search(search, err, sizeof err) != 0)
            abort();
    }
    int at_path = data[0] & 1, with_id = data[0] & 2;
    const uint8_t *id = data + 1;
    uint32_t off[4];
    for (int i = 0; i < 4; i++)
        off[i] = (uint32_t)data[9 + 4 * i] | (uint32_t)data[10 + 4 * i] << 8 |
                 (uint32_t)data[11 + 4 * i] << 16 | (uint32_t)data[12 + 4 * i] << 24;
    const char *path = gone;
    if (at_path) {
        path = fuzz_file("m.so", data + HEAD, size - HEAD);
    } else {
        snprintf(hexdir, sizeof hexdir, "%s/.build-id/%02x", search, id[0]);
        snprintf(byid, sizeof byid, "%s/%02x%02x%02x%02x%02x%02x%02x.debug", hexdir, id[1], id[2],
                 id[3], id[4], id[5], id[6], id[7]);
        char top[410];
        snprintf(top, sizeof top, "%s/.build-id", search);
        mkdir(top, 0700);
        mkdir(hexdir, 0700);
        byid[strlen(byid) - 6] = '\0'; /* the file itself: no .debug */
        write_at(byid, data + HEAD, size - HEAD);
    }
    struct gs_symbolizer *s = gs_sym_new();
    if (s && gs_sym_add_module(s, 1, path, BIAS, BIAS, 1ull << 32, with_id ? id : NULL,
                               with_id ? 8 : 0) == 0) {
        gs_sym_open_ahead(s, 1, BIAS + off[0]);
        for (int i = 0; i < 4; i++) {
            const struct gs_frame *f;
            int n = gs_sym_resolve(s, 1, BIAS + off[i], &f);
            for (int k = 0; k < n; k++)
                if (!printable(f[k].function) || !printable(f[k].file))
                    __builtin_trap(); /* names reach the terminal: no control bytes */
        }
        (void)gs_sym_module_status(s, 1);
        struct gs_sym_unnamed u[1];
        (void)gs_sym_unnamed(s, u, 1);
    }
    gs_sym_free(s);
    if (!at_path) {
        unlink(byid);
        rmdir(hexdir);
    }
    return 0;
}
