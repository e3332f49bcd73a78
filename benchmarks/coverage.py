"""Coverage: translate (and validate) every corpus program; count what translated, what validated, what
failed and why, and list the ATen ops and JAX primitives met without a lowering.

    python benchmarks/coverage.py                 # tests/frontend_corpus (torch, jax, cases) + tests/model_corpus
    python benchmarks/coverage.py --no-validate   # translation only
    python benchmarks/coverage.py --full          # also the model families at full size (translate + counts)
    python benchmarks/coverage.py --pattern vit   # the programs whose path contains 'vit'

A program is *translated* when the frontend wrote IR, *validated* when the IR's outputs matched the original's
(frontends/validate.py). A failure has one reason: an op without a lowering, a lowering that refused the op's
configuration, the export itself, the original failing on the validation inputs, outputs that differ, an
internal error. "Without a lowering" lists every ATen op or JAX primitive that had no entry in the lowering
tables: either decomposed into ops that have one (the program still translates), or left unsupported.
"""

from __future__ import annotations

import argparse
import collections
import os
import sys
import time
import traceback
from dataclasses import dataclass, field
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
# Run as a script, this folder is sys.path[0]; this file's name would then shadow the `coverage` package
# that Numba imports.
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.getcwd()) != HERE]
sys.path.insert(0, os.path.join(HERE, "..", "tests", "frontend_corpus"))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "model_corpus"))  # the zoo's shared _hf.py


@dataclass
class Outcome:
    path: str
    group: str
    translated: bool = False
    validated: bool | None = None  # None: not validated
    reason: str = ""  # why it failed, one of REASONS
    detail: str = ""
    unsupported: list[str] = field(default_factory=list)  # ops/primitives left without a lowering
    decomposed: list[str] = field(default_factory=list)  # ops without a lowering that decomposition covered
    seconds: float = 0.0
    flops: dict[str, int] = field(default_factory=dict)


def programs(pattern: str) -> list[tuple[str, str]]:
    import harness

    folder = os.path.join(harness.HERE, "cases")
    cases = sorted(os.path.join(folder, f) for f in os.listdir(folder) if f.endswith(".py")
                   and "def get_inputs" in _text(os.path.join(folder, f)))
    out = [("torch", p) for p in harness.torch_programs()] + [("jax", p) for p in harness.jax_programs()]
    out += [("cases", p) for p in cases] + [("models", p) for p in harness.model_programs()]
    return [(g, p) for g, p in out if pattern in p]


def _text(path: str) -> str:
    with open(path, encoding="utf-8") as fh:
        return fh.read()


def classify(err: BaseException) -> tuple[str, list[str], list[str]]:
    """(reason, ops without a lowering, ops refused) for a translation failure."""
    from solar.frontends.diagnostics import TranslationError

    if isinstance(err, TranslationError):
        missing = sorted({p.op for p in err.problems if ("unsupported op" in p.message and "from decomposing" not in
                          p.message) or "unsupported primitive" in p.message})
        refused = sorted({p.op for p in err.problems} - set(missing))
        reason = "op without a lowering" if missing else "lowering refused the configuration"
        return reason, missing, refused
    text = f"{type(err).__name__}: {err}"
    if "torch.export failed" in text:
        return "export failed", [], []
    if isinstance(err, ModuleNotFoundError | ImportError):
        return "a dependency of the program is missing", [], []
    return "lowering error", [], []


def run_torch(path: str, group: str, validate: bool) -> Outcome:
    from solar.frontends.torch_export import load_problem, reference_runner, translate_problem
    from solar.frontends.validate import small_sizes, validate_sized

    out = Outcome(path, group)
    try:
        problem = load_problem(path)
        tr = translate_problem(problem)
    except Exception as err:
        out.reason, out.unsupported, refused = classify(err)
        out.detail = _detail(err, refused or out.unsupported)
        return out
    out.translated = True
    out.decomposed = list(tr.decomposed_ops)
    if validate:
        report = validate_sized(tr.module, lambda sz: reference_runner(problem, tr, 0, sz), small_sizes(tr.module))
        _judge(out, report)
    return out


def run_jax(path: str, group: str, validate: bool) -> Outcome:
    import harness

    from solar.frontends.jax_export import jax_reference, translate_jax
    from solar.frontends.validate import validate as check

    out = Outcome(path, group)
    try:
        mod = harness.load_module(path)
        fn = getattr(mod, "forward", None) or getattr(mod, "fn", None)
        args = mod.get_inputs()
        tr = translate_jax(fn, args, os.path.basename(path)[:-3])
    except Exception as err:
        out.reason, out.unsupported, refused = classify(err)
        out.detail = _detail(err, refused or out.unsupported)
        return out
    out.translated = True
    if validate:
        _judge(out, check(tr.module, jax_reference(fn, args, tr), {}))
    return out


def _detail(err: BaseException, ops: list[str]) -> str:
    lines = str(err).strip().splitlines()
    return (", ".join(ops) or (lines[-1] if lines else type(err).__name__))[:160]


def _judge(out: Outcome, report: Any) -> None:
    out.validated = bool(report.ok)
    if report.ok:
        return
    if report.internal:
        out.reason = "internal error in validation"
    elif report.error.startswith("the original program failed"):
        out.reason = "the original failed on the validation inputs"
    elif report.error:
        out.reason = "the IR failed to run"
    else:
        out.reason = "outputs differ"
    out.detail = report.summary()[:160]


def _has_full_size(path: str) -> bool:
    """Whether a model file defines FULL (the zoo's files are checked at their small sizes alone)."""
    with open(path, encoding="utf-8") as fh:
        return "\nFULL = " in fh.read()


def run_full(path: str) -> Outcome:
    """A model family at its full configuration: translated on the meta device and counted, not validated."""
    import harness

    from solar.frontends.torch_export import TorchProblem, translate_problem

    mod = harness.load_module(path)
    out = Outcome(path, "models (full size)")
    if harness.is_jax_program(path):
        fn, args = mod.build(mod.FULL, mod.FULL_INPUT)
        from solar.frontends.jax_export import translate_jax

        module = translate_jax(fn, args, "full").module
    else:
        shape = getattr(mod, "FULL_INPUT", None) or getattr(mod, "FULL_BATCH", None)
        problem = TorchProblem(lambda: mod.Model(mod.FULL), lambda: mod.get_inputs(shape, config=mod.FULL), "full")
        module = translate_problem(problem).module
    out.translated = True
    counts = harness.lifted_counts(module)
    out.flops = {"tensor": counts.tensor, "vector": counts.vector}
    shape = getattr(mod, "FULL_INPUT", None) or getattr(mod, "FULL_BATCH", None)
    args = (mod.FULL, *shape) if isinstance(shape, tuple) else (mod.FULL, shape)
    want = mod.expected_tensor_flops(*args)
    if counts.tensor != want:
        out.reason, out.detail = "FLOPs differ from the formula", f"lifted {counts.tensor:,}, formula {want:,}"
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pattern", default="", help="only programs whose path contains this")
    ap.add_argument("--no-validate", action="store_true", help="translate only")
    ap.add_argument("--full", action="store_true", help="also the model families at their full configuration")
    args = ap.parse_args(argv)
    import harness

    outcomes: list[Outcome] = []
    for group, path in programs(args.pattern):
        start = time.perf_counter()
        is_jax = group == "jax" or (group in ("cases", "models") and harness.is_jax_program(path))
        try:
            o = (run_jax if is_jax else run_torch)(path, group, not args.no_validate)
        except Exception as err:  # the benchmark reports, never stops
            o = Outcome(path, group, reason="internal error", detail=f"{type(err).__name__}: {err}"[:160])
            traceback.print_exc(limit=2)
        o.seconds = time.perf_counter() - start
        outcomes.append(o)
        status = "validated" if o.validated else "translated" if o.translated and o.validated is None else "FAILED"
        print(f"  {status:10s} {o.seconds:6.1f} s  {group:7s} {os.path.relpath(path, os.getcwd())}"
              + (f"  [{o.reason}: {o.detail}]" if o.reason else ""), flush=True)
    if args.full:
        for group, path in programs(args.pattern):
            if group != "models" or not _has_full_size(path):
                continue
            start = time.perf_counter()
            try:
                o = run_full(path)
            except Exception as err:
                o = Outcome(path, "models (full size)", reason="internal error",
                            detail=f"{type(err).__name__}: {err}"[:160])
            o.seconds = time.perf_counter() - start
            outcomes.append(o)
            print(f"  {'full' if not o.reason else 'FAILED':10s} {o.seconds:6.1f} s  {os.path.basename(path)}: "
                  f"tensor {o.flops.get('tensor', 0):,} FLOPs, vector {o.flops.get('vector', 0):,}"
                  + (f"  [{o.reason}: {o.detail}]" if o.reason else ""), flush=True)
    report(outcomes)
    return 0


def report(outcomes: list[Outcome]) -> None:
    print("\nCoverage")
    groups: dict[str, list[Outcome]] = collections.defaultdict(list)
    for o in outcomes:
        groups[o.group].append(o)
    print(f"  {'group':20s} {'programs':>8s} {'translated':>10s} {'validated':>9s} {'failed':>6s}")
    for g, os_ in [*groups.items(), ("all", outcomes)]:
        failed = sum(1 for o in os_ if o.reason)
        validated = sum(1 for o in os_ if o.validated)
        print(f"  {g:20s} {len(os_):8d} {sum(o.translated for o in os_):10d} {validated:9d} {failed:6d}")
    reasons = collections.Counter(o.reason for o in outcomes if o.reason)
    print("Failed, per reason")
    for reason, n in reasons.most_common():
        names = ", ".join(os.path.basename(o.path) for o in outcomes if o.reason == reason)
        print(f"  {n:3d}  {reason}: {names}")
    if not reasons:
        print("    none")
    missing = collections.Counter(op for o in outcomes for op in o.unsupported)
    decomposed = collections.Counter(op for o in outcomes for op in o.decomposed)
    print("Without a lowering, left unsupported (programs): "
          + (", ".join(f"{op} ({n})" for op, n in sorted(missing.items())) or "none"))
    print("Without a lowering, decomposed into lowered ops (programs): "
          + (", ".join(f"{op} ({n})" for op, n in sorted(decomposed.items())) or "none"))


if __name__ == "__main__":
    sys.exit(main())
