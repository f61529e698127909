#!/usr/bin/env python3
"""Writes convnet_sgd_golden.txt: a small ConvNet (conv 3x3 same-padded, ReLU, max pool 2x2 stride 2,
dense) trained by plain SGD for 20 steps in float64 by PyTorch, with the loss summed over the batch as
CNTK's Trainer does. graph_golden_test.cpp replays it through ctk's graph. Run with Debian's
python3-torch: /usr/bin/python3 make_convnet_golden.py"""
import torch

torch.manual_seed(4321)
dt = torch.float64
steps, batch, lr = 20, 3, 0.05
wc = (torch.rand(4, 2, 3, 3, dtype=dt) - 0.5)   # [out, in, kh, kw], as ctk's convolution kernel
bc = (torch.rand(4, 1, 1, dtype=dt) - 0.5)      # one bias per channel
wd = (torch.rand(4, 3, 3, 5, dtype=dt) - 0.5) * 0.3  # dense over the pooled [4, 3, 3] map
bd = (torch.rand(5, dtype=dt) - 0.5)
xs = torch.rand(steps, batch, 2, 6, 6, dtype=dt) * 2 - 1
labels = torch.randint(0, 5, (steps, batch))
ys = torch.nn.functional.one_hot(labels, 5).to(dt)

out = []
def emit(name, t):
    out.append(name + " " + " ".join(str(d) for d in t.shape) + " : " + " ".join(repr(v) for v in t.reshape(-1).tolist()))

for name, t in [("wc", wc), ("bc", bc), ("wd", wd), ("bd", bd), ("x", xs), ("y", ys)]:
    emit(name, t)
params = [p.clone().requires_grad_(True) for p in (wc, bc, wd, bd)]
losses = []
for s in range(steps):
    h = torch.relu(torch.nn.functional.conv2d(xs[s], params[0], padding=1) + params[1])
    h = torch.nn.functional.max_pool2d(h, 2, 2)
    z = h.reshape(batch, -1) @ params[2].reshape(36, 5) + params[3]
    loss = -(ys[s] * torch.log_softmax(z, dim=1)).sum()
    for p in params:
        p.grad = None
    loss.backward()
    if s == 0:
        for name, p in zip(("dwc", "dbc", "dwd", "dbd"), params):
            emit(name + "_step0", p.grad)
    with torch.no_grad():
        for p in params:
            p -= lr * p.grad
    losses.append(loss.item())
emit("loss", torch.tensor(losses, dtype=dt))
for name, p in zip(("wc", "bc", "wd", "bd"), params):
    emit(name + "_final", p.detach())
with open(__file__.replace("make_convnet_golden.py", "convnet_sgd_golden.txt"), "w") as f:
    f.write("\n".join(out) + "\n")
