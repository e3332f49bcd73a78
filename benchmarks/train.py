"""Training-step translation speed: a GPT-style stack exported, translated and validated as one training
step (`solar-translate --train`), beside the floor of importing torch and exporting the joint graph.

    python benchmarks/train.py                                   # 4 layers, d 256, 4 heads, batch 4 x 128 tokens
    python benchmarks/train.py --layers 32 --width 4096 --heads 32 --no-validate   # a 7B-sized stack, translated

Each stage runs in its own process, timed (wall seconds) with its peak resident memory. Validation builds
the reference at full width (the step has no scaled twin yet), so a wide stack is best run with --no-validate.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time

MODEL = '''
import torch, torch.nn as nn, torch.nn.functional as F
LAYERS, WIDTH, HEADS, BATCH, SEQ = {layers}, {width}, {heads}, {batch}, {seq}
class Block(nn.Module):
    def __init__(self, d, h):
        super().__init__(); self.h = h
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d, bias=False), nn.Linear(d, d, bias=False)
        self.fc, self.out = nn.Linear(d, 4 * d, bias=False), nn.Linear(4 * d, d, bias=False)
    def forward(self, x):
        B, T, C = x.shape
        q, k, v = (t.view(B, T, self.h, C // self.h).transpose(1, 2) for t in self.qkv(self.ln1(x)).split(C, dim=-1))
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(B, T, C)
        x = x + self.proj(a)
        return x + self.out(F.gelu(self.fc(self.ln2(x))))
class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList(Block(WIDTH, HEADS) for _ in range(LAYERS))
    def forward(self, x):
        for b in self.blocks:
            x = b(x)
        return x
def get_inputs():
    return [torch.randn(BATCH, SEQ, WIDTH)]
def get_init_inputs():
    return []
'''

FLOOR = '''
import sys, torch
from solar.frontends.torch_train import load_train_problem, export_loss
from solar.frontends.train_step import TrainOptions
options = TrainOptions("adamw", "sum")
problem, _ = load_train_problem(sys.argv[1], options)
export_loss(problem, 1, options, "batch")
'''

PEAK = '''
import resource, subprocess, sys
code = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
if code.returncode:
    sys.stderr.write(code.stderr)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, code.returncode)
'''


def measure(argv: list[str]) -> tuple[float, float, int]:
    """(wall seconds, peak resident MiB, exit status) of one command in its own process."""
    start = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", PEAK, *argv], capture_output=True, text=True)
    wall = time.perf_counter() - start
    if out.stderr:
        sys.stderr.write(out.stderr)
    kib, code = out.stdout.split()
    return wall, int(kib) / 1024, int(code)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--width", type=int, default=256)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--seq", type=int, default=128)
    p.add_argument("--optimizer", default="adamw")
    p.add_argument("--no-validate", action="store_true")
    args = p.parse_args()
    bindir = os.path.dirname(sys.executable)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "gpt_stack.py")
        with open(path, "w") as f:
            f.write(MODEL.format(layers=args.layers, width=args.width, heads=args.heads, batch=args.batch,
                                 seq=args.seq))
        out = os.path.join(tmp, "step.sir")
        stages = [("floor: import torch, export, joint graph", [sys.executable, "-c", FLOOR, path]),
                  ("translate (--no-validate)", [os.path.join(bindir, "solar-translate"), path, "--train",
                                                 "--optimizer", args.optimizer, "--no-validate", "-o", out])]
        if not args.no_validate:
            stages.append(("translate and validate", [os.path.join(bindir, "solar-translate"), path, "--train",
                                                      "--optimizer", args.optimizer, "-o", out]))
        print(f"{args.layers} layers, width {args.width}, {args.heads} heads, batch {args.batch} x {args.seq} tokens, "
              f"{args.optimizer}")
        for label, argv in stages:
            wall, mib, code = measure(argv)
            status = "" if code == 0 else f"  (exit {code})"
            print(f"  {label:<44} {wall:8.1f} s  {mib:8.0f} MiB{status}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
