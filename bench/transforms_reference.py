#!/usr/bin/python3
"""SmoothQuant's alpha search and AWQ's scale and clip search, written out in PyTorch on the CPU and
timed on the shapes bench_transforms times, so lowbit's C++ searches can be quoted against them.

    /usr/bin/python3 bench/transforms_reference.py [--out 4096] [--in 4096] [--tokens 512]
        [--threads 1] [--repeats 3] [--only smoothquant|awq] [--clip-form bmm|broadcast] [--dump DIR]

Written here from the algorithms' descriptions (docs/transforms.md sections 7 and 8, research notes
section 2.1 and 3.1), not from the reference code:

* SmoothQuant: the search as lowbit's smoothquant_search runs it with its defaults (the reference
  has no search: it takes one alpha). 21 alphas 0, 0.05, ..., 1; for each, s_j = max|X_j|^alpha /
  max(max_i |W_ij|, 1e-5)^(1 - alpha) clamped at 1e-5 (s_j = 1 for a channel whose max is 0), X / s
  quantized per token and W s per output channel, both INT8 absmax / 127 as the reference's
  fake_quant (round half to even), scored by ||X W^T - Xq Wq^T||^2 / ||X W^T||^2; plus the score
  without smoothing. 23 products tokens x out x in.
* AWQ: llm-awq's auto_scale (20 ratios r = 0 .. 0.95, s = clamp(mean|x|^r, 1e-4) / sqrt(max(s)
  min(s)), W <- Q(W s) / s, the output MSE of the layer) and auto_clip (per output row and group of
  128, max |w| shrunk by 1 - i/20 for i < 10, W clamped symmetrically, quantized, scored by the
  mean over the sampled tokens of the squared change of the group's partial product; rows in
  batches of 256) on the scaled weight and scaled rows, then the final quantization and its error.
  Q is pseudo_quantize_tensor: 4 bits, groups of 128, zero point, scale = clamp(max - min, 1e-5) /
  15 in float32 (lowbit stores fp16 scales: the chosen ratio can differ by a step on ties). The
  clip search's partial products are one batched matrix multiply per candidate (--clip-form bmm,
  the default); the reference's own form, broadcasting x * w to [rows, tokens, groups, 128] and
  summing the last axis (--clip-form broadcast), gives the same choices and was 3x slower at 256 x
  256 on the CPU, so the comparison uses the faster one. 22 products tokens x out x in plus the
  clip search's, 11 products' worth in groups of 128.

The data follow bench_transforms.cpp (activations normal(0, 1), every 97th channel times 30: about
1 % outlier channels; weights normal(0, 0.02)) from torch's generator, not the C++ one: the same
distribution, not the same numbers. It prints the BLAS torch uses (Debian's python3-torch links
libblas.so.3, the reference BLAS unless libopenblas0-pthread is installed) and the median of
--repeats runs of each search. --dump DIR writes x and w as raw float32 (row-major) to compare the
choices with lowbit's on identical data. A benchmark, not a test.
"""
import argparse
import ctypes
import os
import statistics
import sys
import time


def parse():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=int, default=4096)
    ap.add_argument("--in", dest="cols", type=int, default=4096)
    ap.add_argument("--tokens", type=int, default=512)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--only", choices=["smoothquant", "awq"])
    ap.add_argument("--clip-form", choices=["bmm", "broadcast"], default="bmm")
    ap.add_argument("--dump", metavar="DIR")
    ap.add_argument("--load", metavar="DIR", help="read x.f32 and w.f32 from DIR instead of generating them")
    return ap.parse_args()


ARGS = parse()
# OpenBLAS reads its thread count when it is loaded: set it before torch loads it.
os.environ["OPENBLAS_NUM_THREADS"] = str(ARGS.threads)
os.environ["OMP_NUM_THREADS"] = str(ARGS.threads)
import torch  # noqa: E402


def data(tokens, out, cols, gen):
    x = torch.randn(tokens, cols, generator=gen)
    x[:, ::97] *= 30.0  # about 1 % outlier channels
    w = torch.randn(out, cols, generator=gen) * 0.02
    return x, w


def relative(y, yq):
    return (torch.sum((y - yq) ** 2) / torch.sum(y * y)).item()


# ---- SmoothQuant -------------------------------------------------------------------------------

def fake_quant_per_token(t):
    # the reference's quantize_activation_per_token_absmax: absmax / 127 per row, round, back
    scales = t.abs().amax(dim=-1, keepdim=True).clamp_(min=1e-5).div_(127)
    return t.div_(scales).round_().mul_(scales)


def fake_quant_per_channel(w):
    # the reference's quantize_weight_per_channel_absmax: absmax / 127 per output row
    scales = w.abs().amax(dim=-1, keepdim=True).clamp_(min=1e-5).div_(127)
    return w.div_(scales).round_().mul_(scales)


def smoothquant_search(x, w, act_max, grid=21):
    y = x @ w.T
    w_max = w.abs().amax(dim=0).clamp(min=1e-5).double()

    def score(s):
        xq = fake_quant_per_token(x / s if s is not None else x.clone())
        wq = fake_quant_per_channel(w * s if s is not None else w.clone())
        return relative(y, xq @ wq.T)

    unsmoothed = score(None)
    errors = []
    for i in range(grid):
        alpha = i / (grid - 1)
        s = (act_max.double().pow(alpha) / w_max.pow(1 - alpha)).float().clamp(min=1e-5)
        s = torch.where(act_max == 0, torch.ones_like(s), s)
        errors.append(score(s))
    best = min(range(grid), key=lambda i: (errors[i], i))
    return best / (grid - 1), errors[best], unsmoothed


# ---- AWQ ---------------------------------------------------------------------------------------

def pseudo_quantize(w, n_bit=4, group=128):
    # llm-awq pseudo_quantize_tensor, zero point on
    shape = w.shape
    w = w.reshape(-1, group)
    max_val = w.amax(dim=1, keepdim=True)
    min_val = w.amin(dim=1, keepdim=True)
    max_int = 2 ** n_bit - 1
    scales = (max_val - min_val).clamp(min=1e-5) / max_int
    zeros = (-torch.round(min_val / scales)).clamp_(0, max_int)
    w = (torch.clamp(torch.round(w / scales) + zeros, 0, max_int) - zeros) * scales
    return w.reshape(shape)


def awq_scale_search(x, w, x_mean, y, n_grid=20):
    errors = []
    best, best_s = 0, None
    for i in range(n_grid):
        ratio = i / n_grid
        s = x_mean.pow(ratio).clamp(min=1e-4)
        s = s / (s.max() * s.min()).sqrt()
        wq = pseudo_quantize(w * s.view(1, -1)) / s.view(1, -1)
        err = torch.mean((y - x @ wq.T) ** 2).item()
        errors.append(err)
        if i == 0 or err < errors[best]:
            best, best_s = i, s
    return best / n_grid, best_s, errors


def awq_clip_search(w, x, group=128, n_grid=20, max_shrink=0.5, n_sample_token=512, form="bmm"):
    out, cols = w.shape
    ng = cols // group
    x = x[0::max(1, x.shape[0] // n_sample_token)]
    batch = 256 if out % 256 == 0 else 64
    best_all = []
    if form == "bmm":
        xg = x.reshape(x.shape[0], ng, group).permute(1, 0, 2).contiguous()  # [groups, tokens, 128]
    else:
        xb = x.reshape(1, x.shape[0], ng, group)  # [1, tokens, groups, 128]
    for b in range(0, out, batch):
        wb = w[b:b + batch].reshape(-1, 1, ng, group)  # [rows, 1, groups, 128]
        org_max = wb.abs().amax(dim=-1, keepdim=True)  # [rows, 1, groups, 1]
        best_max = org_max.clone()
        min_errs = torch.full_like(org_max, 1e9)

        def partial(v):  # the per-group partial products x_group . v_group
            if form == "bmm":  # [groups, tokens, rows], contiguous
                return torch.bmm(xg, v.reshape(-1, ng, group).permute(1, 2, 0))
            return (xb * v).sum(dim=-1)  # [rows, tokens, groups], as the reference

        def mean_over_tokens(d):  # -> [rows, 1, groups, 1]
            m = d.pow(2).mean(dim=1)
            return (m.T if form == "bmm" else m).reshape(min_errs.shape)

        org_out = partial(wb)
        for i in range(int(max_shrink * n_grid)):
            max_val = org_max * (1 - i / n_grid)
            cur = torch.clamp(wb, -max_val, max_val)
            q = pseudo_quantize(cur, group=group)
            err = mean_over_tokens(partial(q) - org_out)
            better = err < min_errs
            min_errs[better] = err[better]
            best_max[better] = max_val[better]
        best_all.append(best_max)
    best_max = torch.cat(best_all, dim=0).reshape(out, ng, 1)
    wc = w.reshape(out, ng, group)
    return torch.clamp(wc, -best_max, best_max).reshape(out, cols), best_max


def awq(x, w, x_mean, form):
    y = x @ w.T
    ratio, s, errors = awq_scale_search(x, w, x_mean, y)
    ws = w * s.view(1, -1)
    clipped, _ = awq_clip_search(ws, x / s.view(1, -1), form=form)
    wq = pseudo_quantize(clipped) / s.view(1, -1)
    energy = torch.mean(y * y).item()
    return ratio, relative(y, x @ wq.T), [e / energy for e in errors]


def blas_info():
    with open("/proc/self/maps") as maps:
        libs = sorted({line.split()[-1] for line in maps if "blas" in line.lower() and "/" in line})
    threads = ""
    for lib in libs:
        if "openblas" in lib:
            try:
                threads = f", openblas_get_num_threads() = {ctypes.CDLL(lib).openblas_get_num_threads()}"
            except (OSError, AttributeError):
                pass
            break
    return f"BLAS loaded: {', '.join(libs) or 'none found'}{threads}"


def timed(fn, repeats):
    times, result = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    return result, times


def main():
    a = ARGS
    torch.set_num_threads(a.threads)
    if a.load:
        import numpy as np
        x = torch.from_numpy(np.fromfile(os.path.join(a.load, "x.f32"), dtype=np.float32).reshape(a.tokens, a.cols))
        w = torch.from_numpy(np.fromfile(os.path.join(a.load, "w.f32"), dtype=np.float32).reshape(a.out, a.cols))
    else:
        x, w = data(a.tokens, a.out, a.cols, torch.Generator().manual_seed(3))
    if a.dump:
        os.makedirs(a.dump, exist_ok=True)
        x.numpy().tofile(os.path.join(a.dump, "x.f32"))
        w.numpy().tofile(os.path.join(a.dump, "w.f32"))
    act_max = x.abs().amax(dim=0)
    x_mean = x.abs().double().mean(dim=0).float()  # in float64, as activation_stats::mean_abs
    print(f"torch {torch.__version__}, {torch.get_num_threads()} thread(s); {blas_info()}")
    shape = f"{a.out}x{a.cols}/t{a.tokens}"
    fmt = lambda ts: f"median {statistics.median(ts):.3f} s over {len(ts)} (all: {', '.join(f'{t:.3f}' for t in ts)})"
    with torch.no_grad():
        if a.only in (None, "smoothquant"):
            (alpha, err, unsmoothed), ts = timed(lambda: smoothquant_search(x, w, act_max), a.repeats)
            print(f"smoothquant/{shape}/a21: {fmt(ts)}; alpha {alpha:.2f}, error {err:.4e} (unsmoothed {unsmoothed:.4e})")
        if a.only in (None, "awq"):
            (ratio, err, errors), ts = timed(lambda: awq(x, w, x_mean, a.clip_form), a.repeats)
            print(f"awq/{shape}/g128/clip ({a.clip_form}): {fmt(ts)}; ratio {ratio:.2f}, "
                  f"relative error: rtn {errors[0]:.4e}, scaled {min(errors):.4e}, clipped {err:.4e}")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
