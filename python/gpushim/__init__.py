"""gpushim - what a Python program may tell gpushim, the GPU memory profiler.

    import gpushim
    gpushim.mark("step")              # a step begins (made before each step)
    gpushim.step_end("step")          # a step ends (made after each step)
    with gpushim.region("forward"):   # memory inside a range (also a decorator)
        ...
    gpushim.flush()                   # every event so far into the trace file, now
    gpushim.loaded()                  # whether the shim is in this process

and for PyTorch, gpushim.torch (imported on its own: it imports torch):

    import gpushim.torch
    gpushim.torch.mark_steps(optimizer)  # a step ends with every optimizer step
    gpushim.torch.use_allocator()        # every tensor a recorded driver allocation

The calls go to libgpushim.so's entry points (include/gpushim.h, version 1)
through ctypes, found in the process when the shim is preloaded (gpushim run,
or LD_PRELOAD). Without it every call does nothing and loaded() is False: a
program that uses this module runs unchanged, with the same results, with or
without the profiler. Pure Python, no dependencies: put python/ (or, after
`make install`, PREFIX/lib/gpushim/python) on PYTHONPATH. docs/api.md says
what each call records.
"""
import contextlib
import ctypes
import functools

__all__ = ["mark", "step_end", "region", "flush", "loaded", "library_path"]

_API = {  # name in the shim: (result, arguments)
    "gpushim_api_v1_mark": (None, [ctypes.c_char_p]),
    "gpushim_api_v1_step_end": (None, [ctypes.c_char_p]),
    "gpushim_api_v1_flush": (None, []),
    "gpushim_api_v1_range_push": (ctypes.c_int, [ctypes.c_char_p]),
    "gpushim_api_v1_range_pop": (ctypes.c_int, []),
}


@functools.lru_cache(maxsize=None)
def _entry(name):
    """The shim's entry point called name, or None when it is not loaded."""
    try:
        fn = getattr(ctypes.CDLL(None), name)
    except AttributeError:
        return None
    fn.restype, fn.argtypes = _API[name]
    return fn


def _label(text):
    if isinstance(text, bytes):
        return text
    return str(text).encode("utf-8", "replace")


def loaded():
    """True when libgpushim.so is in this process (preloaded), so that calls
    here are recorded."""
    return _entry("gpushim_api_v1_mark") is not None


def mark(label):
    """A step of label ("step", "epoch", "eval") begins here: made before
    each step, as at the top of a training loop's body. The report splits
    the run at marks, a step running from one mark to the next of the same
    label, the last to the end of the run. A str is sent as UTF-8; at most
    255 bytes are kept."""
    fn = _entry("gpushim_api_v1_mark")
    if fn:
        fn(_label(label))


def step_end(label):
    """The step of label running ends here: made after each step, as an
    optimizer's post-step hook is (gpushim.torch.mark_steps). A step runs
    from one end to the next, the first from the start of the run, so that
    what the first step made before its end is its own; what follows the
    last end is no step. (A shim that predates it takes it as a mark.)"""
    fn = _entry("gpushim_api_v1_step_end") or _entry("gpushim_api_v1_mark")
    if fn:
        fn(_label(label))


def flush():
    """Writes every event recorded so far to the trace file before it
    returns (written, not synced to disk)."""
    fn = _entry("gpushim_api_v1_flush")
    if fn:
        fn()


class region(contextlib.ContextDecorator):
    """A range named label around a block of code (with gpushim.region(...):)
    or a function (@gpushim.region(...)): the report shows the most device
    memory live inside it and what it made that was still live when it
    ended. Regions nest per thread, with each other and with NVTX's ranges of
    the default domain (torch.cuda.nvtx.range_push); a thread's first region
    is also a mark of its label. Closed however the block ends."""

    def __init__(self, label):
        self._label = _label(label)

    def __enter__(self):
        fn = _entry("gpushim_api_v1_range_push")
        if fn:
            fn(self._label)
        return self

    def __exit__(self, *exc):
        fn = _entry("gpushim_api_v1_range_pop")
        if fn:
            fn()
        return False


def library_path():
    """The path of the libgpushim.so loaded in this process, or None."""
    if not loaded():
        return None
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                fields = line.split(None, 5)  # address, perms, offset, dev, inode, path
                if len(fields) == 6 and fields[5].strip().endswith("/libgpushim.so"):
                    return fields[5].strip()
    except OSError:
        pass
    return None
