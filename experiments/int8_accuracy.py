#!/usr/bin/env python3
"""Test accuracy of float and int8 networks on Fashion-MNIST's test set, as
`trevo net eval` computes their outputs (each image one time step from a reset
state; the class is the largest output, ties to the lower class). Until
`trevo net test` reads NET.q files, this is how experiments/RESULTS.md's int8
figure is checked.

usage: experiments/int8_accuracy.py TREVO NET [NET ...]
       experiments/int8_accuracy.py --calibration N FILE
         (the first N training images as input rows, for
         `trevo net quantize NET --calibrate FILE`)
"""
import gzip
import struct
import subprocess
import sys

DIR = "/usr/share/datasets/fashion-mnist/"  # Debian's dataset-fashion-mnist

# A pixel's value: data/set.c is the one home of the rule, (float)p / 255.0f,
# a float32 quotient; this script copies it, never its own. b / 255.0 is the
# double quotient, which the float32 packing rounds to that same float (all
# 256 bytes checked against the C rule), and "%.9g" of a float32 reads back
# (strtof, as `trevo net eval` reads rows) as exactly that float. The double
# printed as it is ("%.9g" % (b / 255.0)) read back as another float for 7
# bytes.
PIXEL = ["%.9g" % struct.unpack("<f", struct.pack("<f", b / 255.0))[0] for b in range(256)]


def rows_of(name, count=None):
    images = gzip.open(DIR + name).read()
    n, rows, cols = struct.unpack(">III", images[4:16])
    n = n if count is None else min(n, count)
    size = rows * cols
    pixels = images[16:]
    return n, [",".join(PIXEL[b] for b in pixels[i * size:(i + 1) * size])
               for i in range(n)]


def main():
    if sys.argv[1] == "--calibration":
        _, rows = rows_of("train-images-idx3-ubyte.gz", int(sys.argv[2]))
        with open(sys.argv[3], "w") as f:
            f.write("\n".join(rows) + "\n")
        return
    trevo, nets = sys.argv[1], sys.argv[2:]
    labels = gzip.open(DIR + "t10k-labels-idx1-ubyte.gz").read()[8:]
    n, rows = rows_of("t10k-images-idx3-ubyte.gz")
    text = "\n\n".join(rows) + "\n"
    for net in nets:
        out = subprocess.run([trevo, "net", "eval", net], input=text.encode(),
                             capture_output=True, check=True).stdout.decode()
        lines = [line for line in out.split("\n") if line.strip()]
        right = 0
        for i, line in enumerate(lines):
            v = [float(x) for x in line.split(",")]
            right += max(range(len(v)), key=lambda k: (v[k], -k)) == labels[i]
        print("%s: accuracy %.4f (%d of %d)" % (net, right / n, right, n))


if __name__ == "__main__":
    main()
