"""Sweep speed: 1,000 points of a translated transformer block, against one `solar-opt` process per point.

A pre-norm transformer decoder (three layers: attention with a softmax over the scores, a gated MLP, RMS norms,
residuals) is translated by torch.export with every dimension symbolic (its batch and sequence length
become the size parameters BATCH and SEQ_LEN, named after the source's globals), lifted and fused. Then:

- sweep: `CostSurface` (backends/sweep.py) built once from the symbolic counts, then a grid of 40 batch
  sizes × 25 sequence lengths = 1,000 points evaluated on two targets in every mode;
- baseline: what a shell loop does today, one `solar-opt m.sir --bind-params=... --sol=h100,b200` process
  per point, timed on a few points and taken per point.

It prints both rates and their ratio (goals: ≥ 1,000 points/s and ≥ 500× the baseline), and checks that the
swept figures equal the baseline's at the points it ran.

    python benchmarks/sweep.py [--baseline-points 3]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

SOURCE = '''
import torch

batch_size = 8
seq_len = 512
d_model = 256
n_heads = 4
d_ff = 688
n_layers = 3


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.qkv = torch.nn.Linear(d_model, 3 * d_model, bias=False)
        self.out = torch.nn.Linear(d_model, d_model, bias=False)
        self.gate = torch.nn.Linear(d_model, d_ff, bias=False)
        self.up = torch.nn.Linear(d_model, d_ff, bias=False)
        self.down = torch.nn.Linear(d_ff, d_model, bias=False)
        self.norm1 = torch.nn.RMSNorm(d_model)
        self.norm2 = torch.nn.RMSNorm(d_model)

    def forward(self, x):
        b, s, _ = x.shape
        q, k, v = self.qkv(self.norm1(x)).chunk(3, dim=-1)
        q = q.reshape(b, s, n_heads, -1).transpose(1, 2)
        k = k.reshape(b, s, n_heads, -1).transpose(1, 2)
        v = v.reshape(b, s, n_heads, -1).transpose(1, 2)
        scores = torch.softmax(q @ k.transpose(-1, -2) * (d_model // n_heads) ** -0.5, dim=-1)
        a = (scores @ v).transpose(1, 2).reshape(b, s, d_model)
        x = x + self.out(a)
        h = self.norm2(x)
        return x + self.down(torch.nn.functional.silu(self.gate(h)) * self.up(h))


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = torch.nn.ModuleList([Block() for _ in range(n_layers)])

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return x


def get_inputs():
    return [torch.randn(batch_size, seq_len, d_model)]


def get_init_inputs():
    return []
'''

BATCHES = list(range(1, 41))  # 40
SEQS = [64 * k for k in range(1, 26)]  # 25
TARGETS = "h100,b200"


def translated(tmp: str) -> str:
    """The block's SIR after --lift-einsum --fuse (translation is not timed: both sides start from it)."""
    from solar.frontends.torch_export import translate_problem
    from solar.ir.printer import print_module

    src = os.path.join(tmp, "block.py")
    with open(src, "w") as fh:
        fh.write(SOURCE)
    result = translate_problem(src, dynamic="all")
    raw = os.path.join(tmp, "block.sir")
    with open(raw, "w") as fh:
        fh.write(print_module(result.module))
    lifted = os.path.join(tmp, "lifted.sir")
    subprocess.run([sys.executable, "-m", "solar.tools.solar_opt", raw, "--lift-einsum", "--fuse", "-o", lifted],
                   check=True)
    return lifted


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline-points", type=int, default=3, help="solar-opt processes to time (default 3)")
    args = ap.parse_args()

    from solar.backends.cost import CostModel
    from solar.backends.sweep import CostSurface
    from solar.ir.parser import parse_module
    from solar.targets.loader import load_target

    with tempfile.TemporaryDirectory() as tmp:
        path = translated(tmp)
        with open(path) as fh:
            module = parse_module(fh.read(), path)
        params = [p.name for p in module.params]
        units = len(CostModel(module).units)
        print(f"transformer block: {units} units of execution, size parameters {', '.join(params)}")
        assert units >= 40, units
        batch, seq = "BATCH", "SEQ_LEN"
        assert batch in params and seq in params, params

        targets = [load_target(t) for t in TARGETS.split(",")]
        t0 = time.perf_counter()
        surface = CostSurface(module, targets)
        t1 = time.perf_counter()
        sweep = surface.grid({batch: BATCHES, seq: SEQS})
        t2 = time.perf_counter()
        n = len(BATCHES) * len(SEQS)
        build, evaluate = t1 - t0, t2 - t1
        rate = n / evaluate
        rate_all = n / (build + evaluate)

        # The baseline: one process per point, as a shell loop over --bind-params would run.
        samples = [(BATCHES[k * 13 % len(BATCHES)], SEQS[k * 7 % len(SEQS)]) for k in range(args.baseline_points)]
        seconds = []
        for b, s in samples:
            report = os.path.join(tmp, f"r{b}_{s}.json")
            start = time.perf_counter()
            subprocess.run([sys.executable, "-m", "solar.tools.solar_opt", path, f"--bind-params={batch}={b},{seq}={s}",
                            f"--sol={TARGETS}", "--sol-report", report, "-o", os.devnull], check=True,
                           stderr=subprocess.DEVNULL)
            seconds.append(time.perf_counter() - start)
            with open(report) as fh:
                doc = json.load(fh)
            swept = {(c.target, c.mode): c for c in surface.at({batch: b, seq: s})}
            for t in doc["targets"]:
                for mode, m in t["modes"].items():
                    c = swept[(t["name"], mode)]
                    assert (c.flops, c.bytes) == (m["flops"], m["bytes"]), (b, s, t["name"], mode)
                    assert abs(c.seconds - m["time_s"]) <= 1e-9 * m["time_s"], (b, s, t["name"], mode)
        baseline = len(seconds) / sum(seconds)
        print(f"sweep: {n:,} points × {len(targets)} targets × 3 modes; symbolic build {build:.2f} s, "
              f"evaluation {evaluate * 1e3:.1f} ms")
        print(f"sweep (evaluation): {rate:,.0f} points/s; with the build: {rate_all:,.0f} points/s")
        print(f"baseline (one solar-opt --bind-params --sol process per point, {len(seconds)} timed): "
              f"{baseline:.3g} points/s")
        print(f"ratio: {rate / baseline:,.0f}x the baseline (evaluation), {rate_all / baseline:,.0f}x with the build")
        print(f"swept figures equal the baseline's at the {len(samples)} points it ran (every target and mode); "
              f"grid shape {sweep.shape}")


if __name__ == "__main__":
    main()
