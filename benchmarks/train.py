"""Training-step translation speed: a GPT-style stack exported, translated and validated as one training
step (`solar-translate --train`), beside the floor of importing torch and exporting the joint graph.

    python benchmarks/train.py                                   # 4 layers, d 256, 4 heads, batch 4 x 128 tokens
    python benchmarks/train.py --layers 32 --width 4096 --heads 32 --no-validate   # a 7B-sized stack, translated
    python benchmarks/train.py --llm                  # Llama-2-7B's step: solar-llm --phase train (twins)
    python benchmarks/train.py --llm CONFIG --batch 1 --seq 2048

Each stage runs in its own process, timed (wall and CPU seconds) with its peak resident memory. Validation
of a `solar-translate --train` stack builds the reference at full width, so a wide stack is best run with
--no-validate. `--llm` prices a config's 32-layer step from its 2- and 3-layer twins exported at full width
(solar-llm --phase train) and validates the config reduced in every width; its floor is importing torch and
exporting both twins' joint graphs.
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

LLAMA_2_7B = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "tests", "unit", "data",
                          "hf_configs", "llama-2-7b.json")

FLOOR = '''
import sys, torch
from solar.frontends.torch_train import load_train_problem, export_loss
from solar.frontends.train_step import TrainOptions
options = TrainOptions("adamw", "sum")
problem, _ = load_train_problem(sys.argv[1], options)
export_loss(problem, 1, options, "batch")
'''

LLAMA_2_7B = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "tests", "unit", "data",
                          "hf_configs", "llama-2-7b.json")

LLM_FLOOR = '''
import sys
import torch
from solar.frontends.llm_models import load_config, build_model
from solar.frontends.llm_train import LOSS, causal_config, step_problem
from solar.frontends.torch_train import export_loss
from solar.frontends.train_step import TrainOptions
cfg = load_config(sys.argv[1], "float32")
batch, prompt = int(sys.argv[2]), int(sys.argv[3])
options = TrainOptions("adamw", LOSS)
for layers in (2, 3):
    config = causal_config(cfg.with_layers(layers))
    problem = step_problem(config, cfg.shape.dtype, batch, prompt, "floor",
                           build=lambda: build_model(config, cfg.shape.dtype, cfg.path))
    export_loss(problem, 1, options, "none")
'''

PEAK = '''
import resource, subprocess, sys
code = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
if code.returncode:
    sys.stderr.write(code.stderr)
use = resource.getrusage(resource.RUSAGE_CHILDREN)
print(use.ru_maxrss, use.ru_utime + use.ru_stime, code.returncode)
'''


def measure(argv: list[str]) -> tuple[float, float, float, int]:
    """(wall seconds, CPU seconds, peak resident MiB, exit status) of one command in its own process."""
    start = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", PEAK, *argv], capture_output=True, text=True)
    wall = time.perf_counter() - start
    if out.stderr:
        sys.stderr.write(out.stderr)
    kib, cpu, code = out.stdout.split()
    return wall, float(cpu), int(kib) / 1024, int(code)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--width", type=int, default=256)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--seq", type=int, default=128)
    p.add_argument("--optimizer", default="adamw")
    p.add_argument("--no-validate", action="store_true")
    p.add_argument("--llm", nargs="?", const=LLAMA_2_7B, metavar="CONFIG",
                   help="a config.json's training step through solar-llm --phase train (default: Llama-2-7B's)")
    args = p.parse_args()
    bindir = os.path.dirname(sys.executable)
    if args.llm:
        return llm(args, bindir)
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
        report(stages)
    return 0


def report(stages: list[tuple[str, list[str]]]) -> None:
    for label, argv in stages:
        wall, cpu, mib, code = measure(argv)
        status = "" if code == 0 else f"  (exit {code})"
        print(f"  {label:<52} {wall:8.1f} s wall  {cpu:8.1f} s CPU  {mib:8.0f} MiB{status}", flush=True)


def llm(args: argparse.Namespace, bindir: str) -> int:
    """The config's training step, priced from twins by solar-llm, beside the floor."""
    batch, seq = (args.batch, args.seq) if (args.batch, args.seq) != (4, 128) else (1, 2048)
    tool = os.path.join(bindir, "solar-llm")
    step = [tool, args.llm, "--phase", "train", "--batch", str(batch), "--prompt", str(seq), "--optimizer",
            args.optimizer]
    print(f"{args.llm}: solar-llm --phase train, batch {batch} x {seq} tokens, {args.optimizer}")
    stages = [("floor: import torch, export both twins' joint graphs",
               [sys.executable, "-c", LLM_FLOOR, args.llm, str(batch), str(seq)]),
              ("solar-llm --phase train --no-validate", [*step, "--no-validate"])]
    if not args.no_validate:
        stages.append(("solar-llm --phase train (validated)", step))
    report(stages)
    return 0


if __name__ == "__main__":
    sys.exit(main())
