"""leak.py - examples/pytorch_leak.py without a GPU: the same training loop,
with simtensor.Tensor (a C extension over the simulated CUDA driver that,
like PyTorch, releases the GIL before it allocates) in place of torch.

Each step's activations are kept by the loss tensor made from them, and
train_step appends the loss itself (not its value) to a list: one step's
activations stay alive per step. Run it with `make demo-python`, which
builds the extension and runs

    gpushim run -o build/demo-python.trace -- python3 examples/sim_torch/leak.py
    gpushim report build/demo-python.trace

The report's unfreed memory and its leak suspect lead with forward()'s
`h = Tensor(...)` line, reached from train_step's `loss = model(x)`: the
Python lines, although no allocation held the GIL. The fix, as in
pytorch_leak.py: keep `loss.item()`, here `loss.nbytes`.
"""
from simtensor import Tensor

MiB = 1 << 20


class Model:
    def __init__(self):
        self.fc1 = Tensor(64 * MiB)  # the weights, kept for the whole run
        self.fc2 = Tensor(1 * MiB)

    def forward(self, x):
        h = Tensor(32 * MiB, (x, self.fc1))  # the activation autograd keeps
        return Tensor(1024, (h, self.fc2))


def train_step(model, losses):
    x = Tensor(8 * MiB)  # the batch
    loss = model.forward(x)
    losses.append(loss)  # the leak: keeps the graph alive; use loss.nbytes


def main():
    model = Model()
    losses = []
    for step in range(50):
        train_step(model, losses)
    print(f"{len(losses)} steps")


if __name__ == "__main__":
    main()
