/*
 * cpus.c - how many CPUs the analyzer may keep busy at once, which the
 * reader asks before it starts its read-ahead thread (reader.c): the CPUs
 * the process's affinity allows (a cpuset, `taskset`, a batch scheduler's
 * allocation), fewer where a cgroup's CPU quota allows less (a container's
 * `--cpus=1`, a pod's CPU limit).
 *
 * The quota is read from cgroup v2's cpu.max and v1's cpu.cfs_quota_us
 * over cpu.cfs_period_us, in the process's own cgroup and each one above
 * it: a limit set on any of them holds for all below. A file that is not
 * there, or does not read as a quota, sets no limit.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyzer/read/read.h"

/* A small file's text (at most size - 1 bytes of it), NUL-terminated; 0 if
 * it cannot be opened. */
static int read_text(const char *path, char *buf, size_t size)
{
    FILE *f = fopen(path, "re");
    if (!f)
        return 0;
    buf[fread(buf, 1, size - 1, f)] = 0;
    fclose(f);
    return 1;
}

/* The quota set in the cgroup directory dir, in CPUs; 0: none. */
static double quota_in(const char *dir, int v2)
{
    char path[4200], line[128];
    if (v2) {
        char q[32];
        unsigned long long period;
        snprintf(path, sizeof path, "%s/cpu.max", dir);
        if (!read_text(path, line, sizeof line) ||
            sscanf(line, "%31s %llu", q, &period) != 2 || strcmp(q, "max") == 0 || !period)
            return 0;
        char *end;
        unsigned long long quota = strtoull(q, &end, 10);
        return *end || !quota ? 0 : (double)quota / (double)period;
    }
    long long quota, period;
    snprintf(path, sizeof path, "%s/cpu.cfs_quota_us", dir);
    if (!read_text(path, line, sizeof line) || sscanf(line, "%lld", &quota) != 1 || quota <= 0)
        return 0;
    snprintf(path, sizeof path, "%s/cpu.cfs_period_us", dir);
    if (!read_text(path, line, sizeof line) || sscanf(line, "%lld", &period) != 1 || period <= 0)
        return 0;
    return (double)quota / (double)period;
}

/* The least quota of base + cgroup and each directory above it up to base;
 * 0: none. A path with a ".." names a cgroup outside the namespace that
 * base shows (a process entered into another's namespace): not looked for. */
static double least_up(const char *base, const char *cgroup, int v2, double least)
{
    for (const char *p = cgroup; (p = strstr(p, "/..")); p += 3)
        if (p[3] == '/' || !p[3])
            return least;
    char dir[4096];
    if (snprintf(dir, sizeof dir, "%s%s", base, cgroup) >= (int)sizeof dir)
        return least;
    size_t floor = strlen(base), len = strlen(dir);
    if (len > floor && dir[len - 1] == '/') /* "/", the root's: base itself, read once */
        dir[len - 1] = 0;
    for (;;) {
        double q = quota_in(dir, v2);
        if (q > 0 && (least == 0 || q < least))
            least = q;
        char *slash = strrchr(dir + floor, '/');
        if (!slash)
            return least;
        *slash = 0;
    }
}

/* controllers (v1's comma-separated list) names "cpu" itself. */
static int has_cpu(const char *controllers)
{
    for (const char *p = controllers; *p;) {
        size_t n = strcspn(p, ",");
        if (n == 3 && strncmp(p, "cpu", 3) == 0)
            return 1;
        p += n + (p[n] == ',');
    }
    return 0;
}

double gs_cgroup_cpu_quota(const char *proc_cgroup, const char *root)
{
    double least = 0;
    char line[4096];
    for (const char *p = proc_cgroup; p && *p;) {
        size_t n = strcspn(p, "\n");
        if (n < sizeof line) {
            memcpy(line, p, n);
            line[n] = 0;
            /* "hierarchy:controllers:path"; v2's hierarchy is 0, its controllers empty */
            char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
            if (c2 && c2[1] == '/') {
                *c1 = *c2 = 0;
                const char *controllers = c1 + 1, *path = c2 + 1;
                char base[4096];
                if (strcmp(line, "0") == 0 && !*controllers) {
                    least = least_up(root, path, 1, least);
                } else if (has_cpu(controllers)) {
                    /* mounted by its controllers' names ("cpu,cpuacct"), or by "cpu" */
                    snprintf(base, sizeof base, "%s/%s", root, controllers);
                    least = least_up(base, path, 0, least);
                    if (strcmp(controllers, "cpu") != 0) {
                        snprintf(base, sizeof base, "%s/cpu", root);
                        least = least_up(base, path, 0, least);
                    }
                }
            }
        }
        p += n + (p[n] == '\n');
    }
    return least;
}

unsigned gs_cpus_usable(void)
{
    /* a set too small for the kernel's CPUs fails the call (EINVAL): a bigger one */
    unsigned cpus = 2; /* unknown: more than one, as before this was asked */
    for (int n = CPU_SETSIZE; n <= (1 << 16); n *= 4) {
        cpu_set_t *set = CPU_ALLOC(n);
        if (!set)
            break;
        size_t size = CPU_ALLOC_SIZE(n);
        int got = sched_getaffinity(0, size, set) == 0;
        if (got)
            cpus = (unsigned)CPU_COUNT_S(size, set);
        CPU_FREE(set);
        if (got || errno != EINVAL)
            break;
    }
    char text[8192];
    if (!read_text("/proc/self/cgroup", text, sizeof text))
        return gs_cpus_within(cpus, 0);
    return gs_cpus_within(cpus, gs_cgroup_cpu_quota(text, "/sys/fs/cgroup"));
}

unsigned gs_cpus_within(unsigned cpus, double quota)
{
    /* rounded up: a quota of 1.5 CPUs keeps two threads busy three quarters of the time */
    if (quota > 0 && quota < cpus)
        cpus = (unsigned)quota + (quota > (unsigned)quota);
    return cpus ? cpus : 1;
}
