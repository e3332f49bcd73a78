"""Shared by the frontend tests and benchmarks/translate.py: the corpus, lifted counts, FLOP expectations.

Each PyTorch program in `torch/` is a KernelBench-style file (Model, get_inputs, get_init_inputs) with an
`EXPECT` dict of lifted counts at full size; each JAX program in `jax/` defines `forward`, `get_inputs` and
`EXPECT`. Keys of EXPECT: `tensor` (tensor-core FLOPs: 2·MACs of contractions), `vector` (all other
FLOPs), `flops` (both); a value is an int (a formula the file spells out) or "counter" (the FLOPs
`torch.utils.flop_counter.FlopCounterMode` counts for the original program at the same sizes) or
"reference" (for `tensor`: twice `reference_macs`, FlopCounterMode's MACs less the padding taps), or
("reference", N) with N MACs FlopCounterMode does not see (a norm's sum of squares, docs/counts.md).
"""

from __future__ import annotations

import copy
import glob
import os
from dataclasses import dataclass
from typing import Any

from solar.ir.diagnostics import DiagnosticEngine
from solar.ir.ops import EinsumOp, KernelOp, ModuleOp

HERE = os.path.dirname(os.path.abspath(__file__))


def torch_programs() -> list[str]:
    return sorted(glob.glob(os.path.join(HERE, "torch", "*.py")))


def jax_programs() -> list[str]:
    return sorted(glob.glob(os.path.join(HERE, "jax", "*.py")))


MODELS = os.path.join(os.path.dirname(HERE), "model_corpus")


def model_programs() -> list[str]:
    """Real model families built from configurations alone (tests/model_corpus/): KernelBench-style PyTorch
    files, and JAX/Flax files defining `forward` and `get_inputs` (no `Model`)."""
    return sorted(p for p in glob.glob(os.path.join(MODELS, "*.py")) if not os.path.basename(p).startswith("_"))


def is_jax_program(path: str) -> bool:
    with open(path, encoding="utf-8") as fh:
        text = fh.read()
    defines_forward = "\ndef forward(" in text or "\nforward, " in text or "\nforward = " in text
    return "\nclass Model(" not in text and defines_forward


@dataclass
class LiftedCounts:
    tensor: int = 0
    vector: int = 0
    kernels: int = 0
    lifted: int = 0  # kernels that became einsums

    @property
    def flops(self) -> int:
        return self.tensor + self.vector


def lifted_counts(module: ModuleOp) -> LiftedCounts:
    """Runs --lift-einsum on a copy and sums exact counts at the default sizes: einsums' counts, and the
    ISL counts of kernels that stay loop nests (those in solar.for counted over all iterations)."""
    from solar.ir.analysis.counts import einsum_counts, kernel_counts
    from solar.ir.analysis.isl_model import UnsupportedForISL, evaluate, loop_iterations
    from solar.ir.analysis.kernel_models import model_kernels, ops_with_loops
    from solar.ir.analysis.selection_counts import selection_counts
    from solar.ir.ops import SelectionOp
    from solar.ir.pass_manager import PassContext
    from solar.passes.lift_einsum import LiftEinsum

    m = copy.deepcopy(module)
    out = LiftedCounts(kernels=sum(isinstance(op, KernelOp) for f in m.funcs for op in f.walk()))
    LiftEinsum(counts=False).apply(PassContext(DiagnosticEngine(), report=lambda _s: None), m)
    params = [p.name for p in m.params]
    values = m.param_values()
    models = dict(model_kernels(m, all_loops=True))
    lifted_from: set[str] = set()
    for func in m.funcs:
        for op, loops in ops_with_loops(func):
            if isinstance(op, EinsumOp):
                n = evaluate(loop_iterations(loops, params).card(), values) if loops else 1
                c = einsum_counts(op, params, values)
                out.tensor += c.flops_tensor * (n or 1)
                out.vector += c.flops_vector * (n or 1)
                origin = op.attrs.get("kernel")
                lifted_from.add(getattr(origin, "name", op.symbol))
            elif isinstance(op, KernelOp):
                model = models[op]
                if isinstance(model, UnsupportedForISL):
                    raise AssertionError(f"kernel @{op.symbol} cannot be counted: {model}")
                c = kernel_counts(model, values)
                out.tensor += c.flops_tensor
                out.vector += c.flops_vector
            elif isinstance(op, SelectionOp):  # comparisons, at least (docs/counts.md, "Data-dependent ops")
                n = evaluate(loop_iterations(loops, params).card(), values) if loops else 1
                out.vector += selection_counts(op, values).comparisons * (n or 1)
    out.lifted = len(lifted_from)
    return out


def flop_counter(problem: Any) -> int:
    """FlopCounterMode's total for the original program at full size (on the meta device: no memory)."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    with torch.device("meta"):
        model = problem.make_model().eval()
        inputs = problem.make_inputs()
        with FlopCounterMode(display=False) as fc, torch.no_grad():
            model(*inputs)
    return int(fc.get_total_flops())


def check_expectations(expect: dict[str, Any], counts: LiftedCounts, problem: Any = None) -> list[str]:
    """Mismatches between the lifted counts and EXPECT, as readable lines (empty when all match)."""
    errors = []
    for key, want in expect.items():
        if want == "counter":
            want = flop_counter(problem)
        elif want == "reference" or isinstance(want, tuple):  # tensor FLOPs: 2·(reference_macs + extra)
            extra = want[1] if isinstance(want, tuple) else 0
            want = 2 * (reference_macs(problem) + extra)
        got = getattr(counts, key)
        if got != want:
            errors.append(f"{key} FLOPs: lifted IR has {got:,}, expected {want:,}")
    return errors


def load_module(path: str) -> Any:
    from solar.frontends.torch_export import import_file

    return import_file(path, "corpus_" + os.path.splitext(os.path.basename(path))[0] + "_" +
                       os.path.basename(os.path.dirname(path)))


# ---- the MACs a model file's EXPECT calls "reference" ------------------------------------------------


def valid_taps(size: int, kernel: int, stride: int = 1, padding: int = 0, dilation: int = 1) -> int:
    """Σ over a convolution's output positions along one axis of the kernel taps that land inside the input
    (not on its zero padding)."""
    out = (size + 2 * padding - dilation * (kernel - 1) - 1) // stride + 1
    return sum(1 for o in range(out) for r in range(kernel) if 0 <= o * stride + r * dilation - padding < size)


def padding_taps(x_shape: list[int], w_shape: list[int], stride: list[int], padding: list[int],
                 dilation: list[int], groups: int) -> int:
    """The MACs of one (non-transposed) convolution that multiply zeros of its padding: FlopCounterMode counts
    them, SOLAR does not (a bound counts the work a program needs, docs/frontends.md)."""
    spatial = x_shape[2:]
    full = valid = 1
    for n, k, s, p, d in zip(spatial, w_shape[2:], stride, padding, dilation, strict=True):
        out = (n + 2 * p - d * (k - 1) - 1) // s + 1
        full *= out * k
        valid *= valid_taps(n, k, s, p, d)
    return x_shape[0] * w_shape[0] * (x_shape[1] // groups) * (full - valid)


def reference_macs(problem: Any) -> int:
    """The MACs of the original program by FlopCounterMode, run eagerly on the CPU at the file's sizes (small
    ones), with a formula for the CPU attention kernel (`_scaled_dot_product_flash_attention_for_cpu`, which
    FlopCounterMode does not count) and less every convolution's padding taps (`padding_taps`)."""
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils.flop_counter import FlopCounterMode, sdpa_flop_count

    aten = torch.ops.aten
    taps = 0

    class PaddingTaps(TorchDispatchMode):
        def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            nonlocal taps
            if func is aten.convolution.default:
                x, w, _, stride, padding, dilation, transposed, _, groups = args
                if transposed and any(padding):
                    raise NotImplementedError("padding taps of a padded transposed convolution")
                if not transposed:
                    taps += padding_taps(list(x.shape), list(w.shape), list(stride), list(padding),
                                         list(dilation), groups)
            return func(*args, **(kwargs or {}))

    def cpu_attention(q: Any, k: Any, v: Any, *_args: Any, **_kwargs: Any) -> int:
        return sdpa_flop_count(q, k, v)

    torch.manual_seed(0)
    # No parameter asks for gradients (FlopCounterMode's module tracker hooks into autograd for those, and
    # fails on a weight read directly under no_grad, as DeBERTa's relative embeddings are).
    model = problem.make_model().eval().requires_grad_(False)
    inputs = problem.make_inputs()
    formulas = {aten._scaled_dot_product_flash_attention_for_cpu: cpu_attention}
    counter = FlopCounterMode(display=False, custom_mapping=formulas)
    with counter, PaddingTaps():
        model(*inputs)
    return int(counter.get_total_flops()) // 2 - taps
