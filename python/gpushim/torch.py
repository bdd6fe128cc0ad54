"""gpushim.torch - gpushim for a PyTorch training loop, one line each:

    gpushim.torch.mark_steps(optimizer)   # a step ends with every optimizer step
    gpushim.torch.use_allocator()         # every tensor its own recorded allocation

Both record nothing when the shim is not loaded (gpushim.loaded() is False);
mark_steps returns its handle all the same.

What each needs of PyTorch (docs/api.md "Python"):
  mark_steps     2.0 and later: Optimizer.register_step_post_hook
                 (torch/optim/optimizer.py); before 2.0, which has no optimizer
                 hooks: the optimizer's step is wrapped on the instance, as
                 PyTorch 1.x's LR schedulers wrap it (torch/optim/lr_scheduler.py,
                 with_counter)
  use_allocator  2.0 and later: torch.cuda.memory.CUDAPluggableAllocator and
                 change_current_allocator (torch/cuda/memory.py); before any
                 CUDA memory is allocated
"""
import ctypes
import functools

import torch

import gpushim

__all__ = ["mark_steps", "use_allocator"]


def mark_steps(optimizer, label="step"):
    """Makes the optimizer's steps the report's steps of label: the first
    begins now (gpushim.mark: the model and the optimizer exist, the loop
    has not begun), and each ends as the optimizer's step returns
    (gpushim.step_end, from its post-step hook), so that N steps taken are
    N steps, each with all it made; what follows the last is no step.
    Returns a handle whose remove() stops it, with or without the shim
    (without it, the hook is there and records nothing)."""
    gpushim.mark(label)
    if hasattr(optimizer, "register_step_post_hook"):
        return optimizer.register_step_post_hook(
            lambda opt, args, kwargs: gpushim.step_end(label))
    return _WrappedStep(optimizer, label)


class _WrappedStep:
    """PyTorch before 2.0: the instance's step, wrapped; remove() unwraps it."""

    def __init__(self, optimizer, label):
        self._optimizer = optimizer
        step = optimizer.step

        @functools.wraps(step)
        def marked_step(*args, **kwargs):
            result = step(*args, **kwargs)
            gpushim.step_end(label)
            return result

        optimizer.step = marked_step
        self._wrapped = marked_step

    def remove(self):
        if self._optimizer.__dict__.get("step") is self._wrapped:
            del self._optimizer.step


def use_allocator():
    """Makes every CUDA tensor storage one allocation of the shim's
    (gpushim_torch_alloc / gpushim_torch_free, PyTorch's pluggable
    allocator): the report then shows tensors with the stack that made each,
    not the caching allocator's segments. Call it before anything allocates
    CUDA memory. Returns the allocator, or None when the shim is not loaded;
    raises RuntimeError on a PyTorch without pluggable allocators."""
    path = gpushim.library_path()
    if not path:
        return None
    memory = torch.cuda.memory
    if not hasattr(memory, "CUDAPluggableAllocator"):
        raise RuntimeError(
            "gpushim.torch.use_allocator needs PyTorch 2.0 or later "
            "(torch.cuda.memory.CUDAPluggableAllocator); this is " + torch.__version__ +
            ": run with `gpushim run --per-tensor` for tensors instead")
    alloc = memory.CUDAPluggableAllocator(path, "gpushim_torch_alloc", "gpushim_torch_free")
    # tensor.record_stream and torch.cuda.empty_cache reach the shim too,
    # where this PyTorch lets a pluggable allocator have them (docs/api.md)
    inner = alloc.allocator()
    lib = ctypes.CDLL(path)
    for setter, name in (("set_record_stream_fn", "gpushim_torch_record_stream"),
                         ("set_reset_fn", "gpushim_torch_empty_cache")):
        if hasattr(inner, setter):
            getattr(inner, setter)(ctypes.cast(getattr(lib, name), ctypes.c_void_p).value)
    memory.change_current_allocator(alloc)
    return alloc
