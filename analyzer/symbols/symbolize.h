/*
 * symbolize.h - the symbolizer (symbolize.c): turns recorded return
 * addresses into function, file, line, inlined frames.
 *
 * The recorder stores each loaded module (path, load bias, address span,
 * GNU build id) and raw return addresses; the analyzer registers the modules
 * here and asks for addresses one at a time. Modules are opened with
 * elfutils' libdwfl on the first question about them, or before, by a
 * thread of the symbolizer's own, when gs_sym_open_ahead names them (the
 * first question waits for that thread to finish). Answers are cached per
 * (module, pc), and, with a cache folder, on disk per build id for the
 * next analysis (gs_sym_use_cache).
 *
 * Not thread-safe: one symbolizer per thread (its own thread aside).
 *
 * Included by: the analyzer's layers from symbols up (symbols, findings,
 * report, export, cmd, main.c): the files that make a symbolizer or read
 * its frames (struct gs_frame).
 */
#ifndef GPUSHIM_SYMBOLS_SYMBOLIZE_H
#define GPUSHIM_SYMBOLS_SYMBOLIZE_H

#include <stddef.h>
#include <stdint.h>

/* One source-level frame. Strings are owned by the symbolizer. */
struct gs_frame {
    const char *function; /* linkage (mangled) name when the compiler recorded
                           * one, else the plain name; NULL when unknown */
    const char *file;     /* source file path, NULL when unknown */
    int line;             /* 0 when unknown */
    const char *module;   /* module path as recorded (never NULL; "?" when the
                           * module id is unknown); NULL for a Python frame */
    uint64_t pc;          /* the recorded address (a Python pc for a Python frame) */
    int python;           /* a Python frame (sites.c makes them; never the symbolizer) */
    unsigned stack_index; /* sites.c: the index in its stack of the pc it stands for;
                           * frames inlined at one pc share it (0 from the symbolizer) */
};

struct gs_symbolizer;

struct gs_symbolizer *gs_sym_new(void);
void gs_sym_free(struct gs_symbolizer *s);

/*
 * Registers a module as recorded. bias = load bias (dlpi_addr); [lo, lo+span)
 * is the runtime address range it occupied. build_id may be NULL / 0 length.
 * An empty path is allowed (the vdso): such a module is never symbolized.
 * Returns 0, or -1 on bad input or when id is already registered (the first
 * registration stays).
 */
int gs_sym_add_module(struct gs_symbolizer *s, uint32_t id, const char *path, uint64_t bias,
                      uint64_t lo, uint64_t span, const uint8_t *build_id,
                      size_t build_id_len);

/*
 * Opens the registered module module_id on the symbolizer's own thread,
 * while the caller goes on (reading the rest of the trace), for frames at
 * pc that will be asked about: with its debug information, unless pc is
 * plumbing (gs_sym_plumbing) by the module's symbol table or the symbol
 * cache answers it. Does nothing for an unknown id, or once a question has
 * been asked. Returns 0 while the module's next pc may still need handing
 * over (none so far needed its debug information); 1 when none will.
 */
int gs_sym_open_ahead(struct gs_symbolizer *s, uint32_t module_id, uint64_t pc);

/*
 * Keeps answers in the symbol cache folder dir (symcache.h): a module with
 * a build id answers from its file there before opening, and its answers
 * found in DWARF are written there by gs_sym_free. chosen: the user named
 * dir, so a failure to write there is said on stderr (once). Before the
 * first module is registered. 0, or -1 (bad arguments, no memory).
 */
int gs_sym_use_cache(struct gs_symbolizer *s, const char *dir, int chosen);

/*
 * Whether function (a symbolizer's name, perhaps with a symbol version:
 * "__libc_start_main@@GLIBC_2.34"), in the module whose file is
 * module_path (NULL: not known), is program entry or thread start. In every
 * stack, and left out of what reports show; the symbolizer names a pc in
 * one from the ELF symbol table alone, never loading debug information for
 * it. Names reserved to the implementation (_start, __libc_start_main,
 * __libc_start_call_main, __clone, __clone3...) are plumbing in any module;
 * start_thread, clone and clone3, names a program may give its own
 * functions, only in glibc's libc or libpthread (libc.so.6, libc-2.31.so,
 * libpthread.so.0...), so that a program's own start_thread is named, with
 * what was inlined into it, from its DWARF.
 */
int gs_sym_plumbing(const char *function, const char *module_path);

/*
 * Symbolizes the recorded return address pc, which lies in module module_id.
 * Looks up pc-1 (a return address points after its call). Sets *frames to n
 * frames, innermost (most deeply inlined) first, ending with the out-of-line
 * function, and returns n >= 1. When nothing is known (no file, no debug or
 * symbol info, build id mismatch) it gives one frame with function and file
 * NULL. The array stays valid until gs_sym_free, except for an unknown
 * module id, or when memory runs out: then it is one frame that the next
 * call may overwrite. Returns 0 only when s or frames is NULL.
 */
int gs_sym_resolve(struct gs_symbolizer *s, uint32_t module_id, uint64_t pc,
                   const struct gs_frame **frames);
/* The address pc of module_id, resolved before, is shown to a person: when
 * its module named no function for it, it counts once in that module's
 * addresses without names (gs_sym_unnamed). Frames left out of what is
 * shown (plumbing, the interpreter's and the FFI's) never count. */
void gs_sym_shown(struct gs_symbolizer *s, uint32_t module_id, uint64_t pc);

/*
 * Whether the module's file on disk matches its recorded build id: 1 matched;
 * 0 no build id recorded, or the file has none, or the path is empty; -1
 * mismatch, file missing or unreadable as ELF, or unknown module id. Opens
 * the module if no resolve has yet.
 */
int gs_sym_module_status(struct gs_symbolizer *s, uint32_t module_id);

/*
 * Folders to look for a module in when its file is not at its recorded
 * path, or is another build: dir + the path (a sysroot), dir + its file
 * name, dir/.build-id/ab/cdef... (its build id); a file is taken there only
 * with the recorded build id. Separate debug files are looked for there too
 * (dir/.build-id/ab/cdef....debug). For every symbolizer of the process
 * from then on; at most 8. 0, or -1 with why in err (not a folder). (Then,
 * with DEBUGINFOD_URLS set, a debuginfod server is asked by build id.)
 */
int gs_sym_search(const char *dir, char *err, size_t errsz);
/* The same for a command's --symbols DIR: -1 having said why on stderr. */
int gs_sym_search_option(const char *cmd, const char *dir);
/* Where module_id's file was found in those folders; NULL: at its path. */
const char *gs_sym_found_at(struct gs_symbolizer *s, uint32_t module_id);

/* Why a module gave no names. */
enum gs_sym_why {
    GS_SYM_NAMED = 0,  /* it may give names */
    GS_SYM_NOT_FOUND,  /* no file at its path (nor a copy in the search folders) */
    GS_SYM_NOT_ELF,    /* the file is not ELF */
    GS_SYM_REBUILT,    /* the file's build id is not the run's (nor a copy's) */
    GS_SYM_STRIPPED,   /* opened, with neither DWARF nor a symbol table for the address */
};
const char *gs_sym_why_text(enum gs_sym_why why); /* "not found at its path (...)" */
struct gs_sym_unnamed {
    uint32_t module_id;
    const char *path;    /* as recorded; the symbolizer's */
    enum gs_sym_why why;
    unsigned unnamed;    /* addresses shown that got no function name */
};
/* The modules that named no function for some address shown so far
 * (gs_sym_shown), by module id: how many (all of them), the first max in
 * out. */
size_t gs_sym_unnamed(struct gs_symbolizer *s, struct gs_sym_unnamed *out, size_t max);

#endif
