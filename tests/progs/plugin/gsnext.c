/*
 * gsnext.c - a library preloaded before the shim (built as
 * build/progs/libgsnext.so; used by dl_next.c): the program's
 * dlsym(RTLD_NEXT, "gs_next_probe") must find it, as it does without the shim.
 */
__attribute__((visibility("default"))) int gs_next_probe(void) { return 42; }
