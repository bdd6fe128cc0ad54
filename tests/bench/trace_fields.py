#!/usr/bin/env python3
"""trace_fields.py - where a trace's bytes go, field by field.

Usage: trace_fields.py TRACE

Reads the allocations and frees of a gpushim trace (format 2's ALLOC and
FREE records, or format 3's columns; the layout is in
include/gpushim_trace.h; other records are skipped), then writes those
events again in layouts that keep more and more of what they say, and
compresses each layout in 1 MiB chunks, as the shim does: zlib level 1 (the
shim's) and level 6. It prints the bytes per event of each, from what
heaptrack keeps (an event's type and its call site, and which allocation a
free ends) up to everything the trace keeps, as format 2's records and as
format 3's columns (each field a column of its own in each chunk), and the
file's own bytes per event. The layouts are rewritten here, never to a
file: each keeps a field as a varint (signed values zigzag, addresses and
times as deltas from the previous event's); format 3's layout is the shim's.

`make bench` does not run it; run it on the trace of `bench_workload`:

  LD_PRELOAD=build/libgpushim.so GPUSHIM_OUTPUT=/tmp/b.trace SIMCUDA_MEMORY=1T \\
      build/bench/bench_workload 1000000
  python3 tests/bench/trace_fields.py /tmp/b.trace

Standard library only.
"""
import struct
import sys
import zlib

REC_ALLOC, REC_FREE = 18, 19
REC_COLUMNS, REC_COL_ALLOC, REC_COL_FREE = 61, 62, 63
NCOLUMNS = 13  # enum gs_column
CHUNK = 1 << 20


def fail(msg):
    print("trace_fields: error: " + msg, file=sys.stderr)
    sys.exit(1)


def get_varint(buf, i, end):
    value = shift = 0
    while i < end and shift < 64:
        byte = buf[i]
        i += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, i
        shift += 7
    raise ValueError("bad varint")


def unzigzag(v):
    return (v >> 1) ^ -(v & 1)


def zigzag(v):
    return v << 1 if v >= 0 else ((-v) << 1) - 1


def put_varint(out, v):
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)


def read_events(path):
    """The ALLOC and FREE events, as (type, time, tid, api, device, addr,
    size, stack, stream, kind, space, parent); a free's size is its mapping
    size (0 for most), its stack 0. Also the file's size."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != b"GPUSHIM\n" or len(data) < 16:
        fail("%s is not a gpushim trace" % path)
    version, hlen = struct.unpack_from("<II", data, 8)
    if version not in (1, 2, 3):
        fail("%s: format version %d; this script reads 1 to 3" % (path, version))
    pos = 16 + hlen + 4
    events = []
    while pos + 16 <= len(data):
        magic, clen, rlen, _ = struct.unpack_from("<4I", data, pos)
        if magic != 0x4B4C4247 or pos + 16 + clen > len(data):
            fail("%s: damaged chunk at offset %d (run it on a whole trace)" % (path, pos))
        try:
            raw = zlib.decompress(data[pos + 16:pos + 16 + clen])
        except zlib.error as e:
            fail("%s: chunk at offset %d: %s" % (path, pos, e))
        pos += 16 + clen
        try:
            read_chunk(raw, events)
        except (ValueError, IndexError) as e:
            fail("%s: chunk ending at offset %d: %s" % (path, pos, e))
    if not events:
        fail("%s holds no allocations or frees" % path)
    return events, len(data)


class Columns:
    """A format 3 chunk's columns, read as its COL_ALLOC and COL_FREE
    records ask (analyzer/trace/columns.c is the reference)."""

    def __init__(self, raw, i, end):
        k, i = get_varint(raw, i, end)
        lens = []
        for _ in range(k):
            n, i = get_varint(raw, i, end)
            lens.append(n)
        self.cols = []
        for n in lens[:NCOLUMNS]:
            self.cols.append([raw, i, i + n])
            i += n
        self.addrs, self.last_addr = [], 0

    def u(self, c):
        col = self.cols[c]
        v, col[1] = get_varint(col[0], col[1], col[2])
        return v

    def event(self, typ, t):
        """The next event, its time from t (the chunk's delta state)."""
        u = self.u
        now = max((t // 1000 + unzigzag(u(0))) * 1000, t)
        tid, api, dev, stream, space, size = u(1), u(2), unzigzag(u(3)), u(4), u(5), u(6)
        if typ == REC_COL_ALLOC:
            addr = self.last_addr + unzigzag(u(7))
            stack, kind, parent = u(8), u(9) >> 1, u(10)
            self.addrs.append(addr)
            ev = (REC_ALLOC, now, tid, api, dev, addr, size, stack, stream, kind, space, parent)
        else:
            which = u(11)
            addr = (self.last_addr + unzigzag(u(12)) if which == 0
                    else self.addrs[len(self.addrs) - which])
            ev = (REC_FREE, now, tid, api, dev, addr, size, 0, stream, 0, space, 0)
        self.last_addr = addr
        return ev


def read_chunk(raw, events):
    i, t, a = 0, 0, 0  # delta state restarts at every chunk
    cols = None
    while i < len(raw):
        typ = raw[i]
        length, i = get_varint(raw, i + 1, len(raw))
        end = i + length
        if typ == REC_COLUMNS:
            cols = Columns(raw, i, end)
        elif typ in (REC_COL_ALLOC, REC_COL_FREE):
            ev = cols.event(typ, t)
            t = ev[1]
            events.append(ev)
        elif typ in (REC_ALLOC, REC_FREE):
            fields = []
            j = i
            while j < end:
                v, j = get_varint(raw, j, end)
                fields.append(v)
            need = 11 if typ == REC_ALLOC else 8
            if len(fields) < need:
                raise ValueError("short record")
            t += unzigzag(fields[0])
            a += unzigzag(fields[4])
            dev = unzigzag(fields[3])
            if typ == REC_ALLOC:
                size, stack, stream, kind, space, parent = fields[5:11]
            else:
                stream, space, size = fields[5:8]
                stack, kind, parent = 0, 0, 0
            events.append((typ, t, fields[1], fields[2], dev, a, size, stack, stream,
                           kind, space, parent))
        i = end


def layout(events, keep):
    """The events written with the fields in keep, one bytes object each."""
    seq, live = 0, {}
    prev_t = prev_a = 0
    for typ, t, tid, api, dev, addr, size, stack, stream, kind, space, parent in events:
        out = bytearray([typ])
        if "time" in keep:
            now = t if "ns" in keep else t // 1000  # nanoseconds or microseconds
            put_varint(out, zigzag(now - prev_t))
            prev_t = now
        if "rest" in keep:  # what an event repeats: thread, API, device, stream, kind, space
            for v in (tid, api, zigzag(dev), stream, kind, space, parent):
                put_varint(out, v)
        if typ == REC_ALLOC:
            put_varint(out, stack)
            if "size" in keep:
                put_varint(out, size)
            if "addr" in keep:
                put_varint(out, zigzag(addr - prev_a))
                prev_a = addr
            live[(addr, space)] = seq
            seq += 1
        elif "which" in keep:
            born = live.pop((addr, space), None)
            put_varint(out, seq - born if born is not None else 0)
        yield bytes(out)


def current(events):
    """The events as the trace holds them (format 2), record lengths included."""
    prev_t = prev_a = 0
    for typ, t, tid, api, dev, addr, size, stack, stream, kind, space, parent in events:
        p = bytearray()
        for v in (zigzag(t - prev_t), tid, api, zigzag(dev), zigzag(addr - prev_a)):
            put_varint(p, v)
        rest = ((size, stack, stream, kind, space, parent) if typ == REC_ALLOC
                else (stream, space, size))
        for v in rest:
            put_varint(p, v)
        prev_t, prev_a = t, addr
        out = bytearray([typ])
        put_varint(out, len(p))
        yield bytes(out + p)


def measure(records, n):
    chunks, raw = [], bytearray()
    for r in records:
        raw += r
        if len(raw) >= CHUNK:
            chunks.append(bytes(raw))
            raw = bytearray()
    if raw:
        chunks.append(bytes(raw))
    total = sum(map(len, chunks))
    z1 = sum(len(zlib.compress(b, 1)) for b in chunks)
    z6 = sum(len(zlib.compress(b, 6)) for b in chunks)
    return total / n, z1 / n, z6 / n


COLUMNS = ("time", "tid", "api", "device", "stream", "space", "size", "addr", "stack", "kind",
           "parent", "which", "free addr")  # enum gs_column's order
CHUNK_EVENTS = 65536  # GS_COLUMN_EVENTS


def columnar(events):
    """The events as format 3 holds them (analyzer/trace/columns.c): in
    chunks of CHUNK_EVENTS, each field a column of its own, times in
    microseconds, a free naming its allocation by its distance back in the
    chunk, an empty record for each event; compressed as one stream a
    chunk, as the shim writes it. Returns (raw, zlib 1, zlib 6) bytes per
    event, and each column's bytes per event compressed alone (zlib 1)."""
    n = len(events)
    raw = z1 = z6 = 0
    by_column = dict.fromkeys(COLUMNS, 0)
    for c in range(0, n, CHUNK_EVENTS):
        cols = {k: bytearray() for k in COLUMNS}
        recs = bytearray()
        prev_t = prev_a = 0
        live, allocs = {}, 0
        for typ, t, tid, api, dev, addr, size, stack, stream, kind, space, parent in \
                events[c:c + CHUNK_EVENTS]:
            put_varint(cols["time"], zigzag(t // 1000 - prev_t // 1000))
            prev_t = max(t // 1000 * 1000, prev_t)
            for k, v in (("tid", tid), ("api", api), ("device", zigzag(dev)),
                         ("stream", stream), ("space", space), ("size", size)):
                put_varint(cols[k], v)
            if typ == REC_ALLOC:
                put_varint(cols["addr"], zigzag(addr - prev_a))
                for k, v in (("stack", stack), ("kind", kind * 2), ("parent", parent)):
                    put_varint(cols[k], v)
                live[addr] = allocs
                allocs += 1
                recs += bytes([REC_COL_ALLOC, 0])
            else:
                born = live.pop(addr, None)
                put_varint(cols["which"], allocs - born if born is not None else 0)
                if born is None:
                    put_varint(cols["free addr"], zigzag(addr - prev_a))
                recs += bytes([REC_COL_FREE, 0])
            prev_a = addr
        chunk = b"".join(bytes(b) for b in cols.values()) + bytes(recs)
        raw += len(chunk)
        z1 += len(zlib.compress(chunk, 1))
        z6 += len(zlib.compress(chunk, 6))
        for k, b in cols.items():
            by_column[k] += len(zlib.compress(bytes(b), 1))
    return (raw / n, z1 / n, z6 / n), {k: v / n for k, v in by_column.items()}


def main():
    if len(sys.argv) != 2 or sys.argv[1] in ("-h", "--help"):
        print(__doc__.split("\n\n")[1])
        sys.exit(0 if len(sys.argv) == 2 else 2)
    events, file_bytes = read_events(sys.argv[1])
    n = len(events)
    allocs = sum(1 for e in events if e[0] == REC_ALLOC)
    print("%s: %d events (%d allocations, %d frees)" % (sys.argv[1], n, allocs, n - allocs))
    print("%-62s %6s %7s %7s" % ("bytes per event", "raw", "zlib 1", "zlib 6"))
    rows = [
        ("the type, and an allocation's call site", ()),
        ("+ which allocation each free ends (its sequence distance)", ("which",)),
        ("+ each allocation's size", ("which", "size")),
        ("+ each allocation's address", ("which", "size", "addr")),
        ("+ each event's time (microseconds)", ("which", "size", "addr", "time")),
        ("+ thread, API, device, stream, kind, space, parent", ("which", "size", "addr", "time",
                                                                "rest")),
        ("+ times in nanoseconds, not microseconds", ("which", "size", "addr", "time", "rest",
                                                      "ns")),
    ]
    for label, keep in rows:
        print("%-62s %6.2f %7.2f %7.2f" % ((label,) + measure(layout(events, keep), n)))
    label = "+ lengths, frees by address: format 2's records"
    print("%-62s %6.2f %7.2f %7.2f" % ((label,) + measure(current(events), n)))
    figures, by_column = columnar(events)
    label = "the sixth row by column: format 3 (us, frees by distance)"
    print("%-62s %6.2f %7.2f %7.2f" % ((label,) + figures))
    print("  its columns alone, zlib 1: " +
          ", ".join("%s %.2f" % kv for kv in sorted(by_column.items(), key=lambda kv: -kv[1])
                    if kv[1] >= 0.01))
    print("%-62s %6s %7.2f" % ("the file itself (all records, its header)", "", file_bytes / n))


if __name__ == "__main__":
    main()
