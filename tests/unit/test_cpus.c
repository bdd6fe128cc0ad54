/*
 * test_cpus.c - analyzer/read/cpus.c, and the reader's choice it serves: a
 * trace is read ahead on a second thread only where the process may keep
 * two CPUs busy.
 *
 * The quotas are read from cgroup trees made here (cgroup v2's cpu.max,
 * v1's cpu.cfs_quota_us and cpu.cfs_period_us, set at one level and not at
 * another); the threads, by counting /proc/self/task while the callbacks
 * run, in a test process whose affinity is set to one CPU (Criterion runs
 * each test in a process of its own).
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <dirent.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analyzer/read/read.h"

/* ---- quotas ---- */

static char root[64];

static void make_root(void)
{
    snprintf(root, sizeof root, "/tmp/gs_cpus_XXXXXX");
    cr_assert_not_null(mkdtemp(root));
}

/* Makes root/dir (and those above it) and writes text to root/dir/file. */
static void put_file(const char *dir, const char *file, const char *text)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", root, dir);
    for (char *p = path + strlen(root) + 1; *p; p++)
        if (*p == '/') {
            *p = 0;
            mkdir(path, 0700);
            *p = '/';
        }
    mkdir(path, 0700);
    snprintf(path + strlen(path), sizeof path - strlen(path), "/%s", file);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f, "%s", path);
    fputs(text, f);
    fclose(f);
}

static void remove_root(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", root);
    cr_assert_eq(system(cmd), 0);
}

Test(cpus, cgroup_v2_quota_is_the_least_set_at_the_cgroup_or_above)
{
    make_root();
    put_file("kubepods/pod1/ctr", "cpu.max", "max 100000\n"); /* none in the container's own */
    put_file("kubepods/pod1", "cpu.max", "150000 100000\n");  /* the pod's: 1.5 CPUs */
    put_file("kubepods", "cpu.max", "400000 100000\n");
    cr_assert_float_eq(gs_cgroup_cpu_quota("0::/kubepods/pod1/ctr\n", root), 1.5, 1e-9);
    /* the root's own, as a container with a cgroup namespace sees its cgroup */
    put_file("", "cpu.max", "50000 100000");
    cr_assert_float_eq(gs_cgroup_cpu_quota("0::/\n", root), 0.5, 1e-9);
    cr_assert_float_eq(gs_cgroup_cpu_quota("0::/kubepods/pod1/ctr", root), 0.5, 1e-9);
    put_file("", "cpu.max", "100000 50000\n"); /* the period is the file's */
    cr_assert_float_eq(gs_cgroup_cpu_quota("0::/\n", root), 2.0, 1e-9);
    remove_root();
}

Test(cpus, cgroup_outside_the_namespace_seen_is_not_looked_for)
{
    /* a process entered into another's cgroup namespace sees its own cgroup
     * above that namespace's root: whatever is found below root is not its */
    make_root();
    put_file("", "cpu.max", "100000 100000\n");
    put_file("user.slice", "cpu.max", "100000 100000\n");
    cr_assert_eq(gs_cgroup_cpu_quota("0::/../../user.slice\n", root), 0);
    cr_assert_eq(gs_cgroup_cpu_quota("0::/..\n", root), 0);
    cr_assert_float_eq(gs_cgroup_cpu_quota("0::/user.slice/..x\n", root), 1.0, 1e-9,
                       "\"..x\" is a name, not the cgroup above");
    remove_root();
}

Test(cpus, cgroup_without_a_quota_sets_none)
{
    make_root();
    put_file("a", "cpu.max", "max 100000\n");
    cr_assert_eq(gs_cgroup_cpu_quota("0::/a/b\n", root), 0); /* b has no file, a no quota */
    put_file("a", "cpu.max", "100000x 100000\n");
    cr_assert_eq(gs_cgroup_cpu_quota("0::/a\n", root), 0, "not a number: no quota");
    put_file("a", "cpu.max", "100000 0\n");
    cr_assert_eq(gs_cgroup_cpu_quota("0::/a\n", root), 0, "no period: no quota");
    cr_assert_eq(gs_cgroup_cpu_quota("", root), 0);
    cr_assert_eq(gs_cgroup_cpu_quota(NULL, root), 0);
    cr_assert_eq(gs_cgroup_cpu_quota("garbage\n0:\n:::\n", root), 0);
    remove_root();
}

Test(cpus, cgroup_v1_quota_is_read_where_its_cpu_controller_is_mounted)
{
    make_root();
    /* mounted by its controllers' names, as Debian and Docker do */
    put_file("cpu,cpuacct/docker/x", "cpu.cfs_quota_us", "-1\n");
    put_file("cpu,cpuacct/docker/x", "cpu.cfs_period_us", "100000\n");
    put_file("cpu,cpuacct/docker", "cpu.cfs_quota_us", "200000\n");
    put_file("cpu,cpuacct/docker", "cpu.cfs_period_us", "100000\n");
    const char *v1 = "12:memory:/docker/x\n4:cpu,cpuacct:/docker/x\n1:name=systemd:/docker/x\n";
    cr_assert_float_eq(gs_cgroup_cpu_quota(v1, root), 2.0, 1e-9);
    /* the other controllers' lines, and a "cpuset" one, set nothing, though
     * a quota's files stand where their names would lead */
    put_file("cpuset/docker/x", "cpu.cfs_quota_us", "50000\n");
    put_file("cpuset/docker/x", "cpu.cfs_period_us", "100000\n");
    put_file("memory/docker/x", "cpu.cfs_quota_us", "50000\n");
    put_file("memory/docker/x", "cpu.cfs_period_us", "100000\n");
    cr_assert_eq(gs_cgroup_cpu_quota("12:memory:/docker/x\n3:cpuset:/docker/x\n", root), 0);
    cr_assert_eq(gs_cgroup_cpu_quota("3:cpusets,cpux:/docker/x\n", root), 0);
    remove_root();

    make_root(); /* listed "cpuacct,cpu" (as CentOS 7 does), mounted as "cpu" too */
    put_file("cpu/x", "cpu.cfs_quota_us", "25000\n");
    put_file("cpu/x", "cpu.cfs_period_us", "50000\n");
    cr_assert_float_eq(gs_cgroup_cpu_quota("4:cpuacct,cpu:/x\n", root), 0.5, 1e-9);
    remove_root();

    make_root(); /* mounted as "cpu" alone, and v2 beside it (a hybrid host): the least */
    put_file("cpu/job", "cpu.cfs_quota_us", "50000\n");
    put_file("cpu/job", "cpu.cfs_period_us", "100000\n");
    put_file("job", "cpu.max", "300000 100000\n");
    cr_assert_float_eq(gs_cgroup_cpu_quota("2:cpu:/job\n0::/job\n", root), 0.5, 1e-9);
    cr_assert_float_eq(gs_cgroup_cpu_quota("0::/job\n2:cpu:/job", root), 0.5, 1e-9);
    remove_root();
}

Test(cpus, a_quota_keeps_as_many_busy_as_it_allows_rounded_up)
{
    cr_assert_eq(gs_cpus_within(8, 0), 8, "no quota");
    cr_assert_eq(gs_cpus_within(8, 1.0), 1);
    cr_assert_eq(gs_cpus_within(8, 0.25), 1);
    cr_assert_eq(gs_cpus_within(8, 1.5), 2);
    cr_assert_eq(gs_cpus_within(8, 2.0), 2);
    cr_assert_eq(gs_cpus_within(2, 16.0), 2, "no more than the affinity allows");
    cr_assert_eq(gs_cpus_within(0, 0), 1);
}

/* ---- the reader ---- */

#define TRACE "tests/fuzz/corpus/report/roles" /* 26 events */

static unsigned tasks(void)
{
    DIR *d = opendir("/proc/self/task");
    cr_assert_not_null(d);
    unsigned n = 0;
    for (struct dirent *de; (de = readdir(d));)
        n += de->d_name[0] != '.';
    closedir(d);
    return n;
}

struct seen {
    unsigned events, most_tasks;
};

static void on_event(void *ctx, const struct gs_revent *e)
{
    (void)e;
    struct seen *s = ctx;
    if (s->events++ < 8) {
        unsigned n = tasks();
        if (n > s->most_tasks)
            s->most_tasks = n;
    }
}

/* How many threads more than this one there were while the callbacks ran
 * on TRACE, read ahead from its first byte where the CPUs allow. Each
 * record goes on a tape of its own, so that the read-ahead thread, which
 * waits once four tapes wait, is still there at the first events. */
static unsigned threads_reading(unsigned read_cpus)
{
    uint64_t usual = gs_read_ahead_from;
    size_t usual_tape = gs_read_tape_bytes;
    gs_read_ahead_from = 0;
    gs_read_tape_bytes = 1;
    gs_read_cpus = read_cpus;
    unsigned before = tasks();
    struct seen s = {0};
    const struct gs_reader_ops ops = {.event = on_event};
    struct gs_trace_info info;
    struct gs_reader_stats st;
    char err[512];
    int rc = gs_read_trace(TRACE, &ops, &s, &info, &st, err, sizeof err);
    gs_read_ahead_from = usual;
    gs_read_tape_bytes = usual_tape;
    gs_read_cpus = 0;
    cr_assert_eq(rc, 0, "%s: %s (run the unit tests from the repository's top)", TRACE, err);
    cr_assert_gt(s.events, 8);
    return s.most_tasks - before;
}

/* The process kept to the first CPU its affinity allows. */
static void keep_to_one_cpu(void)
{
    cpu_set_t set, one;
    cr_assert_eq(sched_getaffinity(0, sizeof set, &set), 0);
    CPU_ZERO(&one);
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, &set)) {
            CPU_SET(c, &one);
            break;
        }
    cr_assert_eq(sched_setaffinity(0, sizeof one, &one), 0);
}

Test(cpus, on_one_cpu_a_trace_is_read_on_one_thread)
{
    keep_to_one_cpu();
    cr_assert_eq(gs_cpus_usable(), 1);
    cr_assert_eq(threads_reading(0), 0, "read ahead on one CPU");
}

Test(cpus, on_two_cpus_a_trace_is_read_ahead)
{
    if (gs_cpus_usable() < 2)
        cr_skip_test("this process may keep only one CPU busy");
    cr_assert_eq(threads_reading(0), 1, "not read ahead on %u CPUs", gs_cpus_usable());
    cr_assert_eq(threads_reading(1), 0, "gs_read_cpus 1: one thread");
    keep_to_one_cpu();
    cr_assert_eq(threads_reading(2), 1, "gs_read_cpus 2: ahead, whatever the affinity");
}
