"""Headroom over the project's own corpus: solar-bench's batch mode on tests/frontend_corpus, host target.

    python benchmarks/headroom.py                      # eager and jax.jit on every problem, torch.compile on a sample
    python benchmarks/headroom.py --scale max=32       # smaller sizes (default: every size capped at 64)
    python benchmarks/headroom.py --compile-match 'mm_*' --jobs 1 --out /tmp/headroom

Prints coverage (problems translated, bounded and measured), violations (runs faster than a fused,
cache-aware or whole-graph bound, or than the unfused one with intermediates beyond the last-level cache:
there must be none) and, per framework mode, the median headroom (measured median ÷ SOL, the named
baseline) in each SOL mode. torch.compile runs on a sample only (`--compile-match`): compiling every
corpus program with inductor takes many minutes on a 2-core machine.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, "..", "tests", "frontend_corpus")
COMPILE_SAMPLE = ["mm_linear_relu.py", "mm_mlp_gelu.py", "norm_layer.py", "attn_sdpa.py", "conv2d_depthwise.py",
                  "act_smooth_family.py"]


def main() -> int:
    from solar.bench.batch import BatchOptions, ResultsFile, run_batch
    from solar.bench.bounds import MODE_LABELS, MODES
    from solar.bench.problem import BenchOptions
    from solar.bench.summary import coverage, headroom_series, plot_headroom, render_summary
    from solar.targets.loader import load_target

    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--scale", default="max=64", help="the --scale rule (default max=64)")
    p.add_argument("--budget", type=float, default=0.1, help="timed seconds per framework mode (default 0.1)")
    p.add_argument("--jobs", type=int, default=1, help="worker processes (default 1: measurements alone)")
    p.add_argument("--timeout", type=float, default=300.0, help="per problem (default 300 s)")
    p.add_argument("--compile-match", action="append", help="problems to measure with torch.compile too "
                   f"(default: {', '.join(COMPILE_SAMPLE)}); 'none' for no compile")
    p.add_argument("--out", help="a directory for the JSONL files and the plot (default: a temporary one)")
    args = p.parse_args()
    out = args.out or tempfile.mkdtemp(prefix="solar-headroom-")
    os.makedirs(out, exist_ok=True)
    host = load_target("host")
    from solar.bench.sizes import SizeRequest, parse_scale

    sizes = SizeRequest({}, parse_scale(args.scale)).to_json()
    timing = {"budget_s": args.budget, "warmup": 2, "min_runs": 3}
    batch = BatchOptions(jobs=args.jobs, timeout_s=args.timeout)
    start = time.perf_counter()
    main_opts = BenchOptions(targets=["host"], sizes=sizes, frameworks=["eager", "jit"], timing=timing, device="cpu")
    records = run_batch(CORPUS, main_opts.to_json(), batch, ResultsFile(os.path.join(out, "eager-jit.jsonl")),
                        resume=False)
    sample = [] if args.compile_match == ["none"] else (args.compile_match or COMPILE_SAMPLE)
    compiled = []
    if sample:
        compile_opts = BenchOptions(targets=["host"], sizes=sizes, frameworks=["compile"], timing=timing, device="cpu")
        compiled = run_batch(CORPUS, compile_opts.to_json(), batch, ResultsFile(os.path.join(out, "compile.jsonl")),
                             resume=False, match=sample)
    elapsed = time.perf_counter() - start

    cal = host.calibration or {}
    print(f"headroom benchmark: {len(records)} problems of tests/frontend_corpus on host ({host.full_name}; "
          f"{cal.get('threads')} threads; loaded during calibration: {cal.get('loaded')}), --scale {args.scale}, "
          f"budget {args.budget} s per mode; {elapsed:.0f} s")
    cov = coverage(records)
    n = cov["problems"] or 1
    print(f"coverage: translated {cov['translated']}/{cov['problems']} ({cov['translated'] / n:.0%}), bounded "
          f"{cov['bounded']}/{cov['problems']}, measured {cov['measured']}/{cov['problems']}; timed out "
          f"{cov['timeout']}, crashed {cov['crashed']}; torch.compile measured on "
          f"{coverage(compiled)['measured']} of {len(compiled)} sampled")
    violations = cov["violations"] + coverage(compiled)["violations"]
    print(f"violations: {violations} (must be 0); unfused model beaten with cached intermediates: "
          f"{cov['cached_beats'] + coverage(compiled)['cached_beats']}")
    series = headroom_series(records + compiled)
    print("median headroom (measured median ÷ SOL), per framework mode:")
    for fw in ("eager", "compile", "jit"):
        cells = []
        for mode in MODES:
            xs = [x for _, x in series.get(("host", fw, mode), [])]
            if xs:
                cells.append(f"{MODE_LABELS[mode]} {statistics.median(xs):.3g}× (n={len(xs)})")
        if cells:
            print(f"  {fw:8s} " + "; ".join(cells))
    plot = os.path.join(out, "headroom.png")
    try:
        plot_headroom(records + compiled, plot)
        print(f"plot: {plot}; records: {out}/*.jsonl")
    except ValueError as err:
        print(f"no plot: {err}")
    if violations:
        print(render_summary(records + compiled))
    return 1 if violations else 0


if __name__ == "__main__":
    sys.exit(main())
