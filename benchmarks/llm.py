"""solar-llm's cost on a 32-layer 7B config (tests/unit/data/hf_configs/llama-2-7b.json), beside the baseline
of importing torch and `torch.export`-ing the same model's full 32-layer decode step, in the same process.

Measured: the decode step priced (2- and 3-layer twins exported, translated, lifted, fused, cost surfaces
built) and validated (a 2-layer twin reduced in every dimension, translated and run through the IR executor
against the model with seeded weights, frontends/llm_validate.py), then a 100-point batch × context sweep.
The issue's targets: ≤ 60 s and ≤ 4 GB for the first, ≤ 5 s for the sweep. Times are wall-clock and CPU
(user + system) of this process; the peak resident memory is the process's (baseline included).

`--preset moe` prices Mixtral-8x7B's stock config (HF's grouped experts kernel, frontends/
torch_grouped_experts.py), `--preset mla` DeepSeek-V2-Lite's (latent attention absorbed, frontends/
torch_mla.py, a latent cache, grouped experts, a dense first layer): target ≤ 90 s and ≤ 4 GB each.

    python benchmarks/llm.py [--config FILE | --preset {dense,moe,mla}]
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Run as a script, this folder is first on the path, and its coverage.py would shadow the `coverage` package
# that numba imports when the IR executor compiles a kernel.
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != os.path.dirname(os.path.abspath(__file__))]
CONFIGS = os.path.join(ROOT, "tests", "unit", "data", "hf_configs")
CONFIG = os.path.join(CONFIGS, "llama-2-7b.json")
PRESETS = {"dense": (CONFIG, 60), "moe": (os.path.join(CONFIGS, "mixtral-8x7b.json"), 90),
           "mla": (os.path.join(CONFIGS, "deepseek-v2-lite.json"), 90)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", default=None)
    ap.add_argument("--preset", choices=sorted(PRESETS), default="dense")
    args = ap.parse_args()
    config, seconds = (args.config, 60) if args.config else PRESETS[args.preset]

    start, start_cpu = time.perf_counter(), time.process_time()
    import torch
    from torch.export import Dim

    imported = time.perf_counter() - start

    from solar.bench.llm_serving import model_memory, price_phase, serving_point
    from solar.frontends.llm_mla import cache_dims
    from solar.frontends.llm_models import build_model, load_config
    from solar.frontends.llm_steps import DecodeStep
    from solar.frontends.llm_validate import validate_step
    from solar.targets.loader import load_target

    cfg = load_config(config)
    s = cfg.shape
    t0 = time.perf_counter()
    lm = build_model(cfg.with_layers(s.layers), s.dtype)
    with torch.device("meta"):
        cache = [torch.zeros(2, heads, 64, width, dtype=s.dtype)
                 for heads, width in cache_dims(cfg.config, s.kv_heads, s.head_dim) * s.layers]
        inputs = (torch.zeros(2, 1, dtype=torch.long), cache)
    torch.export.export(DecodeStep(lm, cfg.with_layers(s.layers)), inputs,
                        dynamic_shapes={"ids": {0: Dim.AUTO}, "cache": [{0: Dim.AUTO, 2: Dim.AUTO}] * len(cache)})
    baseline = imported + time.perf_counter() - t0
    baseline_cpu = time.process_time() - start_cpu  # includes loading the config (transformers' import)

    target = load_target("h100")
    t1, c1 = time.perf_counter(), time.process_time()
    step = price_phase(cfg, "decode", [target], 64, 4096)
    priced = time.perf_counter() - t1
    t_val = time.perf_counter()
    validation = validate_step(cfg, "decode")
    validated = time.perf_counter() - t_val
    total, total_cpu = time.perf_counter() - t1, time.process_time() - c1
    memory = model_memory(cfg)
    t2 = time.perf_counter()
    batches = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)
    contexts = (128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536)
    step.prefetch(batches, contexts)
    points = [serving_point(step, cfg, memory, target, "fused", b, c) for b in batches for c in contexts]
    swept = time.perf_counter() - t2
    peak_gb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / 1e9
    print(f"baseline: import torch + torch.export of the {s.layers}-layer decode step: {baseline:.1f} s, "
          f"{baseline_cpu:.1f} s CPU")
    print(f"solar-llm decode step (twins {sorted(step.twins)}: export, translate, lift, fuse, price): {priced:.1f} s")
    print(f"validation of a reduced twin (translate, run, compare): {validated:.1f} s")
    print(f"solar-llm decode step, export + translate + validate: {total:.1f} s, {total_cpu:.1f} s CPU "
          f"({total / baseline:.2f}x the baseline; target {seconds} s)")
    print(f"100-point batch x context sweep: {swept:.2f} s ({len(points)} points; target 5 s)")
    print(f"peak resident memory: {peak_gb:.2f} GB (target 4 GB)")
    print(validation.line())


if __name__ == "__main__":
    main()
