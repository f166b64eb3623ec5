#!/usr/bin/env python3
"""fashion_cnn_torch.py -- the dense PyTorch peer of trevo's sparse CNN.

The same shape as the network `trevo net init --conv` starts from, every
coefficient present:
  conv 1->C1 3x3 pad 1, ReLU, 2x2 max pool,
  conv C1->C2 3x3 pad 1, ReLU, 2x2 max pool,
  [linear C2*7*7 -> H, ReLU,]  linear -> 10, softmax cross-entropy.
One thread (torch.set_num_threads(1)), Adam, Fashion-MNIST (Debian's
dataset-fashion-mnist, pixels / 255, read as tests/bench/peer_torch_train.py
reads it), shuffled every epoch from --seed: the training loop of
tests/bench/peer_torch_train.py on this model.

It prints one line per epoch:
  epoch E: loss L train_acc A test_acc T seconds S
(seconds: the epoch's training time, not the test pass), then
  conv_coefficients: N (C1 layer 1, C2 layer 2)

Usage: fashion_cnn_torch.py [--c1 32] [--c2 64] [--hidden 128] [--epochs 10]
           [--batch 64] [--lr 0.001] [--seed 1] [--data DIR]
Exits 3 with "torch: absent" when torch cannot be imported.
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests",
                                "bench"))
import peer_torch_train as peer  # noqa: E402  (exits 3 without torch)

torch = peer.torch


def make_model(args):
    # the peer's loop feeds rows of 784 pixels
    layers = [torch.nn.Unflatten(1, (1, 28, 28)),
              torch.nn.Conv2d(1, args.c1, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
              torch.nn.Conv2d(args.c1, args.c2, 3, padding=1), torch.nn.ReLU(),
              torch.nn.MaxPool2d(2), torch.nn.Flatten()]
    flat = args.c2 * 7 * 7
    if args.hidden > 0:
        layers += [torch.nn.Linear(flat, args.hidden), torch.nn.ReLU()]
        flat = args.hidden
    layers.append(torch.nn.Linear(flat, 10))
    return torch.nn.Sequential(*layers)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--c1", type=int, default=32)
    p.add_argument("--c2", type=int, default=64)
    p.add_argument("--hidden", type=int, default=128, help="hidden units of the head (0: none)")
    p.add_argument("--epochs", type=int, default=10)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--lr", type=float, default=0.001)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--data", default=peer.DATA, help="folder of the four IDX files")
    args = p.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(args.seed)
    model = make_model(args)
    opt = torch.optim.Adam(model.parameters(), lr=args.lr)
    print(f"torch: {torch.__version__} threads {torch.get_num_threads()}", flush=True)
    peer.train(args, model, opt, torch.nn.CrossEntropyLoss())
    n1, n2 = 9 * args.c1, 9 * args.c1 * args.c2
    print(f"conv_coefficients: {n1 + n2} ({n1} layer 1, {n2} layer 2)")


if __name__ == "__main__":
    main()
