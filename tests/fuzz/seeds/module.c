/*
 * module.c - the fuzz_symbols target's seed module (make_corpus.py builds
 * it with -g and an 8-byte build id): named functions, one inlined into
 * another, and a static one, so that the seeds reach the symbol table,
 * the compile unit's lines and the inlined frames.
 */
static inline __attribute__((always_inline)) int inner(int x) { return x * 3 + 1; }

static __attribute__((noinline)) int helper(int x) { return inner(x) ^ 0x55; }

__attribute__((noinline)) int seed_entry(int x)
{
    int s = 0;
    for (int i = 0; i < x; i++)
        s += helper(i);
    return s;
}

int seed_other(int x) { return inner(x) + seed_entry(x / 2); }
