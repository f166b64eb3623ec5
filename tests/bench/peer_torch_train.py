#!/usr/bin/env python3
"""peer_torch_train.py -- the PyTorch peer of trevo's sparse trainer.

A dense multilayer perceptron (default 784-1000-1000-10: ReLU hidden layers,
softmax cross-entropy over the outputs), trained with one thread
(torch.set_num_threads(1)), batch 128, SGD, momentum or Adam. What
`make bench` (tests/bench/bench_train.c) and experiments/RESULTS.md compare
trevo with.

It prints, one `key: values` line each (what bench_train.c reads):
  torch: VERSION threads 1
  weights: N (W weights, B biases)
  step: median M ms over K steps (batch 128, OPT), Q connection-samples/s
        -- a training step (forward, backward, update) on random inputs,
           timed alone, after 3 untimed steps
  epoch E: loss L train_acc A test_acc T seconds S
        -- with --epochs E > 0: Fashion-MNIST (Debian's dataset-fashion-mnist),
           pixels / 255, shuffled every epoch from --seed; train_acc is the
           running accuracy over the epoch's batches before each update;
           seconds is the epoch's training time (not the test pass)

Usage: peer_torch_train.py [--layers 784,1000,1000,10] [--batch 128]
           [--optimizer sgd|momentum|adam] [--lr X] [--momentum M]
           [--steps K] [--epochs E] [--seed S] [--data DIR]
Exits 3 with "torch: absent" when torch cannot be imported.
"""
import argparse
import gzip
import os
import struct
import sys
import time

try:
    import torch
except ImportError:
    print("torch: absent")
    sys.exit(3)

DATA = "/usr/share/datasets/fashion-mnist"


def read_idx(path):
    """An IDX file (gzipped) as a uint8 tensor of its dimensions."""
    with gzip.open(path, "rb") as f:
        raw = f.read()
    zero, kind, ndim = struct.unpack(">HBB", raw[:4])
    if zero != 0 or kind != 0x08:
        raise SystemExit(f"{path}: not an IDX file of unsigned bytes")
    dims = struct.unpack(">" + "I" * ndim, raw[4:4 + 4 * ndim])
    body = raw[4 + 4 * ndim:]
    t = torch.frombuffer(bytearray(body), dtype=torch.uint8)
    return t.reshape(dims)


def load(folder, part):
    x = read_idx(os.path.join(folder, f"{part}-images-idx3-ubyte.gz"))
    y = read_idx(os.path.join(folder, f"{part}-labels-idx1-ubyte.gz"))
    return x.reshape(x.shape[0], -1).float() / 255.0, y.long()


def make_model(sizes):
    layers = []
    for i in range(len(sizes) - 1):
        layers.append(torch.nn.Linear(sizes[i], sizes[i + 1]))
        if i + 2 < len(sizes):
            layers.append(torch.nn.ReLU())
    return torch.nn.Sequential(*layers)


def make_opt(args, model):
    if args.optimizer == "adam":
        return torch.optim.Adam(model.parameters(), lr=args.lr)
    if args.optimizer == "momentum":
        return torch.optim.SGD(model.parameters(), lr=args.lr, momentum=args.momentum)
    return torch.optim.SGD(model.parameters(), lr=args.lr)


def step(model, opt, loss_fn, x, y):
    opt.zero_grad(set_to_none=True)
    out = model(x)
    loss = loss_fn(out, y)
    loss.backward()
    opt.step()
    return out, loss


def time_steps(args, sizes, model, opt, loss_fn):
    g = torch.Generator().manual_seed(args.seed)
    x = torch.rand(args.batch, sizes[0], generator=g)
    y = torch.randint(0, sizes[-1], (args.batch,), generator=g)
    for _ in range(3):
        step(model, opt, loss_fn, x, y)
    times = []
    for _ in range(args.steps):
        t0 = time.perf_counter()
        step(model, opt, loss_fn, x, y)
        times.append(time.perf_counter() - t0)
    times.sort()
    med = times[len(times) // 2]
    n_w = sum(sizes[i] * sizes[i + 1] for i in range(len(sizes) - 1))
    print(f"step: median {med * 1e3:.4f} ms over {args.steps} steps "
          f"(batch {args.batch}, {args.optimizer}), {n_w * args.batch / med:.4g} "
          f"connection-samples/s", flush=True)


def accuracy(model, x, y):
    with torch.no_grad():
        correct = 0
        for i in range(0, x.shape[0], 1000):
            correct += (model(x[i:i + 1000]).argmax(1) == y[i:i + 1000]).sum().item()
    return correct / x.shape[0]


def train(args, model, opt, loss_fn):
    xtr, ytr = load(args.data, "train")
    xte, yte = load(args.data, "t10k")
    g = torch.Generator().manual_seed(args.seed)
    for e in range(1, args.epochs + 1):
        perm = torch.randperm(xtr.shape[0], generator=g)
        t0 = time.perf_counter()
        total, correct, n = 0.0, 0, 0
        model.train()
        for i in range(0, xtr.shape[0], args.batch):
            idx = perm[i:i + args.batch]
            out, loss = step(model, opt, loss_fn, xtr[idx], ytr[idx])
            b = idx.shape[0]
            total += loss.item() * b
            correct += (out.argmax(1) == ytr[idx]).sum().item()
            n += b
        secs = time.perf_counter() - t0
        model.eval()
        print(f"epoch {e}: loss {total / n:.6f} train_acc {correct / n:.6f} "
              f"test_acc {accuracy(model, xte, yte):.6f} seconds {secs:.3f}", flush=True)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--layers", default="784,1000,1000,10")
    p.add_argument("--batch", type=int, default=128)
    p.add_argument("--optimizer", choices=["sgd", "momentum", "adam"], default="sgd")
    p.add_argument("--lr", type=float, default=0.01)
    p.add_argument("--momentum", type=float, default=0.9)
    p.add_argument("--steps", type=int, default=20, help="training steps timed (0: none)")
    p.add_argument("--epochs", type=int, default=0, help="Fashion-MNIST epochs (0: none)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--data", default=DATA, help="folder of the four IDX files")
    args = p.parse_args()
    sizes = [int(s) for s in args.layers.split(",")]
    torch.set_num_threads(1)
    torch.manual_seed(args.seed)
    model = make_model(sizes)
    opt = make_opt(args, model)
    loss_fn = torch.nn.CrossEntropyLoss()
    n_w = sum(sizes[i] * sizes[i + 1] for i in range(len(sizes) - 1))
    n_b = sum(sizes[1:])
    print(f"torch: {torch.__version__} threads {torch.get_num_threads()}")
    print(f"weights: {n_w + n_b} ({n_w} weights, {n_b} biases)", flush=True)
    if args.steps > 0:
        time_steps(args, sizes, model, opt, loss_fn)
        torch.manual_seed(args.seed)
        model = make_model(sizes)
        opt = make_opt(args, model)
    if args.epochs > 0:
        train(args, model, opt, loss_fn)


if __name__ == "__main__":
    main()
