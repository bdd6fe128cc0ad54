/*
 * pyread.h - reading a thread's own Python frames from memory, without the
 * GIL and without the Python API: the interpreter's layouts (pylayout.c),
 * the walk (pyread.c) and the line tables (pylines.c).
 *
 * Included by: shim/record (python.c, which decides when to read this way,
 * and the three files above), and the unit tests. Nothing here takes a
 * lock, allocates, or calls into Python.
 */
#ifndef GPUSHIM_PYREAD_H
#define GPUSHIM_PYREAD_H

#include <stddef.h>
#include <stdint.h>

/* How a code object's line table is coded. */
enum gs_pylines {
    GS_PYLINES_LNOTAB,    /* 3.9: co_lnotab, (bytes, line) increments */
    GS_PYLINES_LINETABLE, /* 3.10: co_linetable, (bytes, line) deltas, -128: no line */
    GS_PYLINES_LOCATIONS, /* 3.11 and later: the location table */
};

/* Byte offsets into the interpreter's structures, on the 64-bit Linux
 * builds with the GIL. Where they come from: pylayout.c. -1 (not there) only
 * where the walk asks first: ts_frame or ts_cframe and cframe_frame (one
 * way is there), fr_owner, owner_generator, co_firsttraceable, and co_code
 * of frame objects; gs_pylayout_init refuses any other missing, so the
 * walk's loads do not check their offsets. */
struct gs_pylayout {
    int minor;                 /* Python 3.minor */
    int frame_objects;         /* 3.9, 3.10: the chain is of PyFrameObjects;
                                * later: of _PyInterpreterFrames */
    enum gs_pylines lines;
    /* thread state to innermost frame: *(ts + ts_frame), or, where ts_cframe
     * is not -1, *(*(ts + ts_cframe) + cframe_frame) */
    int ts_frame, ts_cframe, cframe_frame;
    /* a frame */
    int fr_previous, fr_code, fr_instr, fr_owner;
    int instr_is_lasti;        /* fr_instr is an int (f_lasti), else a pointer to
                                * the current code unit */
    int lasti_units;           /* f_lasti counts code units (3.10), else bytes */
    unsigned owner_skip;       /* bit (1 << owner) set: not a frame of Python code */
    int owner_generator;       /* FRAME_OWNED_BY_GENERATOR, or -1 */
    uint64_t code_mask;        /* applied to the code pointer (3.14's tagged references) */
    /* a code object */
    int co_filename, co_name, co_firstlineno, co_linetable, co_code, co_firsttraceable;
    /* str, bytes, and every object's type */
    int ob_type, var_size;     /* PyObject.ob_type, PyVarObject.ob_size */
    int uni_state, uni_length, uni_ascii_size, uni_compact_size;
    int bytes_sval;
    /* the types objects must have (their addresses, from the interpreter) */
    const void *code_type, *unicode_type, *bytes_type, *frame_type;
};

/* Fills *l for Python 3.minor: from the interpreter's own debug offsets
 * (_PyRuntime, 3.13 and later) or the layouts written in pylayout.c (3.9 to
 * 3.12). sym looks a symbol up in the process. 0, or -1 with *why set to
 * what is missing. */
int gs_pylayout_init(struct gs_pylayout *l, int minor, void *(*sym)(const char *name),
                     const char **why);
/* The layout written in for 3.minor (3.9 to 3.12), less the type addresses;
 * NULL for other versions. For the tests. */
const struct gs_pylayout *gs_pylayout_builtin(int minor);

/* One frame as read: its code object, what names it, where it is. */
struct gs_pyframe {
    const void *code;
    int named;                 /* file to table are read (not by GS_PYREAD_WHERE) */
    const char *file, *name;   /* UTF-8 or, where kind is not 1, UCS-2/UCS-4 */
    uint32_t file_len, name_len; /* in characters */
    uint8_t file_kind, name_kind; /* 1, 2 or 4 bytes a character */
    int first_line;
    const uint8_t *table;      /* the line table */
    uint32_t table_len;
    int addr;                  /* the instruction's offset in bytes; -1: not started */
};

/* Memory reads for the walk: plain loads, or checked ones that fail rather
 * than fault (the first walks with a layout, until it has proved itself);
 * or plain loads of where each frame is (its code object and instruction)
 * and nothing of what names it, read only for the frames that need it with
 * gs_pyread_code: a code object known already needs no names. */
enum gs_pyread_mode { GS_PYREAD_PLAIN, GS_PYREAD_CHECKED, GS_PYREAD_WHERE };

/* Reads at most max frames of the thread whose state is tstate, innermost
 * first, into out: from the innermost where *next is NULL, else from the
 * frame *next, left by the call before; *next is set to the frame after
 * the last one read (NULL: there is none). Returns how many, or -1 when
 * something read is not what the layout says it is (a pointer that cannot
 * be read, an object of the wrong type, an instruction outside its code):
 * the layout is wrong, and nothing more should be read with it. */
int gs_pyread_frames(const struct gs_pylayout *l, enum gs_pyread_mode mode, const void *tstate,
                     const void **next, struct gs_pyframe *out, unsigned max);

/* A pointer at base + off, read with a checked load: 0, or -1. */
int gs_pyread_ptr(const void *base, int off, const void **out);

/* What names a frame read by GS_PYREAD_WHERE (plain loads; its code object
 * is alive as long as the frame is, the calling thread's own): 0, or -1 as
 * gs_pyread_frames. Nothing is read again for a frame already named. */
int gs_pyread_code(const struct gs_pylayout *l, struct gs_pyframe *f);

/* The line of the instruction at byte offset addr of a code object whose
 * line table is table (len bytes) and first line first_line: what
 * PyCode_Addr2Line answers. -1 where the instruction has no line. */
int gs_pylines_line(enum gs_pylines how, const uint8_t *table, size_t len, int first_line,
                    int addr);

#endif
