#!/usr/bin/env python3
"""Writes mlp_sgd_golden.txt: a small MLP (6-5 tanh-3, softmax cross entropy summed over the batch, as
CNTK's Trainer does) trained by plain SGD for 20 steps in float64 by PyTorch. The C++ golden test
(graph_golden_test.cpp) replays the same steps through ctk's graph and compares every loss and the
final parameters. Run with Debian's python3-torch: /usr/bin/python3 make_mlp_golden.py"""
import torch

torch.manual_seed(1234)
dt = torch.float64
steps, batch, lr = 20, 4, 0.1
w1 = (torch.rand(6, 5, dtype=dt) - 0.5)
b1 = (torch.rand(5, dtype=dt) - 0.5)
w2 = (torch.rand(5, 3, dtype=dt) - 0.5)
b2 = (torch.rand(3, dtype=dt) - 0.5)
xs = torch.rand(steps, batch, 6, dtype=dt) * 2 - 1
labels = torch.randint(0, 3, (steps, batch))
ys = torch.nn.functional.one_hot(labels, 3).to(dt)

out = []
def emit(name, t):
    flat = t.reshape(-1).tolist()
    out.append(name + " " + " ".join(str(d) for d in t.shape) + " : " + " ".join(repr(v) for v in flat))

for name, t in [("w1", w1), ("b1", b1), ("w2", w2), ("b2", b2), ("x", xs), ("y", ys)]:
    emit(name, t)
params = [p.clone().requires_grad_(True) for p in (w1, b1, w2, b2)]
losses = []
for s in range(steps):
    h = torch.tanh(xs[s] @ params[0] + params[1])
    z = h @ params[2] + params[3]
    loss = -(ys[s] * torch.log_softmax(z, dim=1)).sum()
    for p in params:
        p.grad = None
    loss.backward()
    if s == 0:
        for name, p in zip(("dw1", "db1", "dw2", "db2"), params):
            emit(name + "_step0", p.grad)
    with torch.no_grad():
        for p in params:
            p -= lr * p.grad
    losses.append(loss.item())
emit("loss", torch.tensor(losses, dtype=dt))
for name, p in zip(("w1_final", "b1_final", "w2_final", "b2_final"), params):
    emit(name, p.detach())
with open(__file__.replace("make_mlp_golden.py", "mlp_sgd_golden.txt"), "w") as f:
    f.write("\n".join(out) + "\n")
