"""pytorch_leak.py - the classic leaked intermediate: the loss tensor (not its
value) is appended to a list every step, so each step's autograd graph, and
the activations it holds, stay alive. Memory grows every step until OOM.

Run it under gpushim, per tensor so that the report shows tensors rather
than the caching allocator's segments:

    gpushim run --per-tensor -- python examples/pytorch_leak.py
    gpushim report gpushim.<pid>.trace

The report's unfreed memory is led by the activations allocated in
forward() (line of `h = torch.relu(self.fc1(x))`), reached from
train_step's `losses.append(loss)` keeping them: one set per step.
The fix: `losses.append(loss.item())`.
"""
import torch


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(4096, 4096)
        self.fc2 = torch.nn.Linear(4096, 10)

    def forward(self, x):
        h = torch.relu(self.fc1(x))
        return self.fc2(h)


def train_step(model, opt, losses, step):
    x = torch.randn(256, 4096, device="cuda")
    y = torch.randint(0, 10, (256,), device="cuda")
    loss = torch.nn.functional.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward(retain_graph=True)
    opt.step()
    losses.append(loss)  # the leak: keeps the graph alive; use loss.item()


def main():
    model = Model().cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    losses = []
    for step in range(200):
        train_step(model, opt, losses, step)
    torch.cuda.synchronize()
    print(f"{len(losses)} steps, {torch.cuda.memory_allocated() >> 20} MiB allocated")


if __name__ == "__main__":
    main()
