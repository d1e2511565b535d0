#!/usr/bin/python3
"""GPTQ as the reference implementation runs it (IST-DASLab/gptq, `GPTQ.fasterquant`), in PyTorch on
the CPU, timed on the shapes bench_gptq times, so lowbit's C++ GPTQ can be quoted against it.

    /usr/bin/python3 bench/gptq_reference.py [--out 4096] [--in 4096] [--threads 1] [--actorder]

Written here from the algorithm's description (docs/transforms.md, research notes): dead columns,
1 % dampening, Cholesky -> cholesky_inverse -> upper Cholesky of H^-1, blocks of 128 columns with
the lazy batch update, symmetric 4-bit groups of 128 whose parameters are computed when the group
is reached (scale = 2 amax / 15, zero 8, as the reference's quantizer). The inputs follow
bench_gptq.cpp: 2048 activation rows from 16 shared factors plus noise, weights normal. It prints
the BLAS torch uses (Debian's python3-torch links the reference BLAS unless libopenblas0-pthread is
installed) and the median of --repeats runs. A benchmark, not a test.
"""
import argparse
import statistics
import time

import torch


def activations(tokens, cols, gen):
    factors = 16
    mix = torch.randn(factors, cols, generator=gen)
    lat = torch.randn(tokens, factors, generator=gen)
    return lat @ mix + 0.5 * torch.randn(tokens, cols, generator=gen)


def quantize(x, scale, zero, maxq):
    q = torch.clamp(torch.round(x / scale) + zero, 0, maxq)
    return scale * (q - zero)


def group_params(w, maxq):
    # The reference quantizer, symmetric: the range always holds 0, then amax on both sides.
    xmin = torch.minimum(w.min(dim=1).values, torch.zeros(w.shape[0]))
    xmax = torch.maximum(w.max(dim=1).values, torch.zeros(w.shape[0]))
    xmax = torch.maximum(xmin.abs(), xmax)
    tmp = xmin < 0
    xmin[tmp] = -xmax[tmp]
    both_zero = (xmin == 0) & (xmax == 0)
    xmin[both_zero] = -1
    xmax[both_zero] = 1
    scale = (xmax - xmin) / maxq
    zero = torch.full_like(scale, (maxq + 1) / 2)
    return scale.unsqueeze(1), zero.unsqueeze(1)


def fasterquant(W, H, bits=4, blocksize=128, percdamp=0.01, groupsize=128, actorder=False):
    W = W.clone()
    H = H.clone()
    maxq = 2 ** bits - 1
    cols = W.shape[1]
    dead = torch.diag(H) == 0
    H[dead, dead] = 1
    W[:, dead] = 0
    if actorder:
        perm = torch.argsort(torch.diag(H), descending=True)
        W = W[:, perm]
        H = H[perm][:, perm]
        invperm = torch.argsort(perm)
    Q = torch.zeros_like(W)
    damp = percdamp * torch.mean(torch.diag(H))
    idx = torch.arange(cols)
    H[idx, idx] += damp
    H = torch.linalg.cholesky(H)
    H = torch.cholesky_inverse(H)
    Hinv = torch.linalg.cholesky(H, upper=True)
    scale = zero = None
    for i1 in range(0, cols, blocksize):
        i2 = min(i1 + blocksize, cols)
        count = i2 - i1
        W1 = W[:, i1:i2].clone()
        Q1 = torch.zeros_like(W1)
        Err1 = torch.zeros_like(W1)
        Hinv1 = Hinv[i1:i2, i1:i2]
        for i in range(count):
            w = W1[:, i]
            d = Hinv1[i, i]
            if (i1 + i) % groupsize == 0:
                scale, zero = group_params(W[:, i1 + i:i1 + i + groupsize], maxq)
            q = quantize(w.unsqueeze(1), scale, zero, maxq).flatten()
            Q1[:, i] = q
            err1 = (w - q) / d
            W1[:, i:] -= err1.unsqueeze(1).matmul(Hinv1[i, i:].unsqueeze(0))
            Err1[:, i] = err1
        Q[:, i1:i2] = Q1
        W[:, i2:] -= Err1.matmul(Hinv[i1:i2, i2:])
    if actorder:
        Q = Q[:, invperm]
    return Q


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=int, default=4096)
    ap.add_argument("--in", dest="cols", type=int, default=4096)
    ap.add_argument("--tokens", type=int, default=2048)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--actorder", action="store_true")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    gen = torch.Generator().manual_seed(1)
    x = activations(args.tokens, args.cols, gen)
    H = (2.0 / args.tokens) * (x.T @ x)
    W = torch.randn(args.out, args.cols, generator=gen) * 0.02
    # The BLAS actually loaded (Debian's torch links libblas.so.3, which the alternatives system
    # points at the reference BLAS or at OpenBLAS).
    with open("/proc/self/maps") as maps:
        blas = sorted({line.split()[-1] for line in maps if "blas" in line.lower() and "/" in line})
    print(f"torch {torch.__version__}, {args.threads} thread(s); BLAS loaded: {', '.join(blas) or 'none found'}")
    times = []
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        Q = fasterquant(W, H, actorder=args.actorder)
        times.append(time.perf_counter() - t0)
    err = torch.trace((W - Q) @ H @ (W - Q).T) / torch.trace(W @ H @ W.T)
    print(f"gptq/{args.out}x{args.cols}/g128/b128/{'act' if args.actorder else 'noact'}: "
          f"median {statistics.median(times):.3f} s over {args.repeats} (all: {', '.join(f'{t:.3f}' for t in times)}), "
          f"relative output error {err.item():.4e}")


if __name__ == "__main__":
    main()
