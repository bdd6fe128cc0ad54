/*
 * hooks_common.c - what every hook file shares: the answer when the real
 * function cannot be found (gs_missing), the recording after an allocating
 * or freeing call (gs_after_alloc, gs_after_free), and reading a string the
 * program points at without trusting the pointer (gs_read_string,
 * gs_read_label). It calls no hook file, so that they may all call it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>
#include <wchar.h>

#include "shim/base/base.h"
#include "shim/record/record.h"
#include "shim/hooks/hooks_int.h"

gs_curesult gs_missing(enum gs_fn fn)
{
    static int once;
    gs_warn_once(&once, "%s called but no CUDA driver is loaded", gs_fn_name(fn));
    return GS_CUDA_ERROR_NOT_INITIALIZED;
}

void gs_after_alloc(enum gs_api api, enum gs_kind kind, enum gs_space space, int32_t device,
                    gs_curesult r, const void *out, uint64_t size, gs_custream stream)
{
    uint64_t key = 0;
    if (r == GS_CUDA_SUCCESS && out)
        memcpy(&key, out, sizeof key); /* a pointer, a device address or a handle */
    if (r == GS_CUDA_SUCCESS && key)
        gs_record_alloc(api, kind, space, device, key, size, stream);
    else if (r != GS_CUDA_SUCCESS)
        gs_record_alloc_failed(api, device, size, stream, r);
}

void gs_after_free(enum gs_api api, enum gs_space space, uint64_t key, gs_custream stream,
                   gs_curesult r)
{
    if (key && r != GS_CUDA_SUCCESS)
        gs_record_free_failed(api, space, key, stream, r);
}

uint32_t gs_read_string(const void *p, void *out, uint32_t max, int wide)
{
    if (!p)
        return 0;
    struct iovec local = {out, max}, remote = {(void *)p, max};
    ssize_t n = process_vm_readv(getpid(), &local, 1, &remote, 1, 0);
    if (n < 0 && (errno == ENOSYS || errno == EPERM)) {
        /* no such system call here (a sandbox): read it as the program
         * would, up to its NUL */
        size_t len = wide ? wcsnlen(p, max / sizeof(wchar_t)) * sizeof(wchar_t)
                          : strnlen(p, max);
        memcpy(out, p, len);
        return (uint32_t)len;
    }
    return n > 0 ? (uint32_t)n : 0; /* a read that stops at unreadable memory
                                     * returns what it read */
}

uint32_t gs_read_label(const char *label, char *out, uint32_t max, const char *who)
{
    if (!label)
        return 0;
    uint32_t n = gs_read_string(label, out, max, 0);
    if (!n) { /* not even its first byte is there */
        static int once;
        gs_warn_once(&once, "%s was given a label it cannot read (%p); it is "
                            "recorded as the empty label", who, (const void *)label);
        return 0;
    }
    const char *nul = memchr(out, 0, n);
    return nul ? (uint32_t)(nul - out) : n;
}
