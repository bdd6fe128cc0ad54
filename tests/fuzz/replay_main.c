/*
 * replay_main.c - a fuzz target's inputs replayed without libFuzzer: each
 * file named on the command line is read whole and given once to the
 * target's LLVMFuzzerTestOneInput, as libFuzzer's own replay does it
 * (`fuzz_report FILE...`), and said on stderr as libFuzzer says it
 * ("Executed FILE in N ms"). make builds one per target in every build
 * folder (BUILD/fuzz/replay_TARGET, with that build's compiler and
 * sanitizers), so that make test replays the seeds and the crashes found
 * under AddressSanitizer and UBSan without clang's fuzzer build; make fuzz
 * and fuzz-regress keep libFuzzer's. An input that takes longer than
 * REPLAY_SECONDS is killed (SIGALRM): a hang fails as a crash does.
 */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define REPLAY_SECONDS 10 /* as make fuzz's FUZZ_TIMEOUT */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint8_t *read_whole(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 1 << 16, n = 0;
    uint8_t *buf = malloc(cap);
    while (buf) {
        n += fread(buf + n, 1, cap - n, f);
        if (n < cap)
            break;
        uint8_t *more = realloc(buf, cap * 2);
        if (!more) {
            free(buf);
            buf = NULL;
            break;
        }
        buf = more;
        cap *= 2;
    }
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        free(buf);
        return NULL;
    }
    *size = n;
    return buf;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s FILE...\n", argv[0]);
        return 2;
    }
    for (int i = 1; i < argc; i++) {
        size_t size = 0;
        uint8_t *data = read_whole(argv[i], &size);
        if (!data) {
            fprintf(stderr, "%s: cannot read %s\n", argv[0], argv[i]);
            return 1;
        }
        struct timespec a, b;
        clock_gettime(CLOCK_MONOTONIC, &a);
        alarm(REPLAY_SECONDS);
        LLVMFuzzerTestOneInput(data, size);
        alarm(0);
        clock_gettime(CLOCK_MONOTONIC, &b);
        free(data);
        fprintf(stderr, "Executed %s in %ld ms\n", argv[i],
                (long)((b.tv_sec - a.tv_sec) * 1000 + (b.tv_nsec - a.tv_nsec) / 1000000));
    }
    return 0;
}
