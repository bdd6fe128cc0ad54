"""pytorch_oom.py - a job that ends in out-of-memory: the batch doubles every
step until the device refuses.

    gpushim run -- python examples/pytorch_oom.py
    gpushim report gpushim.<pid>.trace

The report's failure section shows the request that failed, the device's
free and total memory at that moment, what this process held then, and the
call site (`forward` in this file, reached from `main`). With the default
caching allocator the sizes are segments; add --per-tensor to see tensors.
"""
import torch


def forward(weight, batch):
    x = torch.randn(batch, weight.shape[0], device="cuda")
    return x @ weight


def main():
    weight = torch.randn(8192, 8192, device="cuda")
    batch = 1024
    try:
        while True:
            out = forward(weight, batch)
            del out
            batch *= 2
    except torch.cuda.OutOfMemoryError:
        print(f"out of memory at a batch of {batch}")


if __name__ == "__main__":
    main()
