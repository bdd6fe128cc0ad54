"""test_streams.py - stream order (issue 15, items 6 and 7): the simulated
driver's stream-ordered frees and the reuse hazard it flags
(tests/progs/drv_stream_order.c). The figures are the program's schedule's.
"""
from harness import E, MiB, check, eq, one_trace, report_json, run

def pool_of(d):
    eq(len(d["pools"]["pools"]), 1, "one pool")
    p = d["pools"]["pools"][0]
    return (p["device"], p["peak_reserved_bytes"], p["peak_used_bytes"],
            p["reserved_bytes_at_end"], p["used_bytes_at_end"])


def test_the_simulated_driver_frees_in_stream_order_and_flags_a_hazard():
    r = run([E.prog("drv_stream_order")], env={"SIMCUDA_MEMORY": "64M",
                                                "GPUSHIM_POOL_SAMPLE_MS": "0"})
    eq((r.rc, r.out), (0, "stream order done, 1 hazard\n"), f"the program's checks: {r.err}")
    eq(r.err, "simcuda: reuse hazard: cuMemAllocAsync on stream #1 got 0x700000200000 "
              "(2097152 bytes), which stream #2 may still be using\n",
       "the one hazard: stream A got what B had used")
    d = report_json(one_trace(r))
    eq(d["events"], {"allocations": 9, "frees": 7, "failed": 0, "frees_unknown": 0,
                     "references": 0}, "events")
    eq(d["peak"]["bytes"], 6 * MiB, "at most three 2 MiB allocations live at once")
    # the pool's figures are sampled after allocations and frees, before the
    # final trim: it grew to 6 MiB only because B could not take A's free
    eq(pool_of(d), (0, 6 * MiB, 6 * MiB, 6 * MiB, 4 * MiB), "the pool")
