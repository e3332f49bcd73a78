"""The 20 Hugging Face problems of KernelBench level 4 as solar-translate sees them, with an offline hub cache
that holds only the models' published `config.json` files (tests/unit/data/hub_configs) and no weights.

Each problem is a program written here in level 4's style (the model named in the file, `AutoConfig` read at
import, `AutoModelForCausalLM.from_pretrained(name, config=config)` in `Model.__init__`, the logits returned),
for one (model, batch, sequence) of level 4's, translated by `solar-translate --no-validate` in its own
process with HF_HUB_OFFLINE=1. Printed per problem: the wall time and the result (the output's size, or the
tool's one-line error).

    python benchmarks/hub_level4.py [--only gpt2,bigbird] [--problems 5,19] [--dynamic batch] [--timeout 900]
                                    [--against batch]

`--against MODE` translates each problem again with `--dynamic MODE` (the baseline, in the same run) and
prints the ratio of the two wall times: `--problems 5 --against batch` is BigBird at sequence 4,095, whose
default `--dynamic all` export used to run past 40 minutes (frontends/quotient_sizes.py).
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CONFIGS = os.path.join(ROOT, "tests", "unit", "data", "hub_configs")
TOOL = os.path.join(os.path.dirname(sys.executable), "solar-translate")

# (model, batch, sequence): level 4's problems.
PROBLEMS = (
    ("EleutherAI/gpt-neo-2.7B", 32, 256), ("facebook/opt-1.3b", 1, 2047), ("EleutherAI/gpt-neo-2.7B", 1, 2047),
    ("facebook/opt-1.3b", 32, 256), ("google/bigbird-roberta-base", 1, 4095), ("facebook/bart-large", 1, 1023),
    ("gpt2", 1, 1023), ("facebook/opt-1.3b", 512, 32), ("EleutherAI/gpt-neo-2.7B", 512, 32),
    ("facebook/bart-large", 1024, 32), ("google/electra-small-discriminator", 1, 511),
    ("google/electra-small-discriminator", 1024, 32), ("google/reformer-enwik8", 32, 256),
    ("google/electra-small-discriminator", 32, 256), ("google/reformer-enwik8", 1024, 32), ("gpt2", 1024, 32),
    ("facebook/bart-large", 32, 256), ("gpt2", 32, 256), ("google/bigbird-roberta-base", 1024, 32),
    ("google/bigbird-roberta-base", 32, 256),
)

PROGRAM = '''import torch
from transformers import AutoConfig, AutoModelForCausalLM

MODEL = {model!r}
config = AutoConfig.from_pretrained(MODEL)
batch = {batch}
sequence = {sequence}


class Model(torch.nn.Module):
    def __init__(self, name, cfg):
        super().__init__()
        self.lm = AutoModelForCausalLM.from_pretrained(name, config=cfg)

    def forward(self, tokens):
        return self.lm(tokens).logits


def get_inputs():
    return [torch.randint(0, config.vocab_size, (batch, sequence))]


def get_init_inputs():
    return [MODEL, config]
'''


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default="", help="comma-separated substrings of the model names to run")
    ap.add_argument("--problems", default="", help="comma-separated problem numbers to run (1-20)")
    ap.add_argument("--dynamic", default="all", help="solar-translate's --dynamic (default all)")
    ap.add_argument("--timeout", type=float, default=900.0, help="seconds per problem")
    ap.add_argument("--against", default="", help="also translate with this --dynamic, and print the ratio")
    args = ap.parse_args()
    from solar.frontends.hub_configs import store_config

    work = tempfile.mkdtemp(prefix="solar_level4_")
    cache = os.path.join(work, "hub")
    for file in sorted(os.listdir(CONFIGS)):
        with open(os.path.join(CONFIGS, file), encoding="utf-8") as f:
            store_config(file[:-len(".json")].replace("--", "/"), f.read(), cache)
    env = {**os.environ, "HF_HUB_CACHE": cache, "HF_HUB_OFFLINE": "1"}
    wanted = [w for w in args.only.split(",") if w]
    for number, (model, batch, sequence) in enumerate(PROBLEMS, 1):
        if wanted and not any(w in model for w in wanted):
            continue
        if args.problems and str(number) not in args.problems.split(","):
            continue
        name = f"{number}_{model.split('/')[-1].replace('.', 'p').replace('-', '_')}_bs{batch}_seq{sequence}"
        program = os.path.join(work, name + ".py")
        with open(program, "w", encoding="utf-8") as f:
            f.write(PROGRAM.format(model=model, batch=batch, sequence=sequence))
        wall, line = _translate(program, env, args.dynamic, args.timeout)
        print(f"{name:46s} {line}", flush=True)
        if args.against:
            base, base_line = _translate(program, env, args.against, args.timeout)
            print(f"{'  --dynamic ' + args.against:46s} {base_line}", flush=True)
            print(f"{'  ratio':46s} {wall / base:7.2f}x the wall time of --dynamic {args.against}", flush=True)


def _translate(program: str, env: dict[str, str], dynamic: str, timeout: float) -> tuple[float, str]:
    """One solar-translate run in its own process: its wall time and a line of wall, CPU and result."""
    start = time.perf_counter()
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    try:
        command = [TOOL, program, "--no-validate", "--dynamic", dynamic, "-o", program[:-3] + ".mlir"]
        run = subprocess.run(command, env=env, capture_output=True, text=True, timeout=timeout)
        error = [ln for ln in run.stderr.splitlines() if "error:" in ln]
        result = (error[0] if error else run.stderr.strip()[-200:]) if run.returncode else \
            f"ok, {os.path.getsize(program[:-3] + '.mlir')} bytes of SIR"
    except subprocess.TimeoutExpired:
        result = f"still translating after {timeout:.0f} s"
    now = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = now.ru_utime + now.ru_stime - used.ru_utime - used.ru_stime
    wall = time.perf_counter() - start
    return wall, f"{wall:7.1f} s wall {cpu:6.1f} s CPU  {result}"


if __name__ == "__main__":
    main()
