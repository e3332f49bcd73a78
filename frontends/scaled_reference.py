"""Validation's reference built small: a twin of the program from scaled constructor arguments.

Export cannot make a weight's dims symbolic, so they stay fixed in the IR, and validation builds the
reference model with its weights at full size (seeded, frontends/reference_model.py) and runs the IR with
them. For a wide model that is most of the cost: a 16384-wide MLP holds a GiB per layer. A KernelBench file
builds its model as `Model(*get_init_inputs())`, and those integer arguments are usually the sizes. The twin
is `Model(*scaled)`: every integer argument of at least `MIN_SCALED` (also inside lists and tuples, such
as an MLP's layer sizes) divided by one power of two (the largest that divides them all and leaves each at
least `MIN_TWIN_SIZE`); its inputs are the original's with
every fixed dim of such a size scaled with it, and each symbolic dim no larger than a scaled argument
divided by the factor (a sequence sliced from a `max_seqlen` mask must fit the twin's mask), its parameter
named as in the original. The twin is exported and lowered as the original was, and it
stands in for the original only when

- its weights, buffers and constants have the original's shapes with some dims divided by the factor and
  the rest equal (checked against both exported programs' shapes, as the IR's argument types give them), and
- its IR is the original's but for numbers: the two print alike once every numeric literal is masked (the
  same kernels, loop nests, accesses and ops; only sizes and constants such as 1/sqrt(d) differ).

Then the twin's IR runs against the twin at the reduced sizes, and the header says which dims were scaled
and from which arguments. Otherwise the reference stays at full size, and the header says why. The twin
costs one more export (a fraction of the first, which paid for importing the tracer), so it is tried only
where validating the original costs more: weights of at least `TWIN_MIN_WEIGHT_BYTES`, or kernels too
large at the validation sizes to run as plain Python (backends/python_kernels.py), when Numba's fixed
second would be paid (but not for a recurrent program with small weights: it validates over a few time
steps, which costs about what a twin's export would); and only when it saves work: a twin that keeps more
than `TWIN_MAX_WEIGHT_SHARE` of the weights (both models built on the meta device and counted) and every
input's size is not exported (a ResNet's only constructor argument is its classifier's width: its twin
would cost a second export, as long as the first, and save nothing).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import torch

from solar.ir.ops import ForOp, ModuleOp
from solar.ir.printer import print_module

from .torch_problem import TorchProblem, TorchTranslation
from .validate import ValidationReport, interpret_budget

if TYPE_CHECKING:
    from solar.backends.executor import Program

MIN_SCALED = 64  # integer constructor arguments below this (kernel sizes, strides, heads) stay as written
MIN_TWIN_SIZE = 16  # the least a scaled argument becomes
TWIN_MIN_WEIGHT_BYTES = 64 << 20
# A twin that keeps more than this share of the weights (by element) and every input's size saves too
# little of validation to pay for its export.
TWIN_MAX_WEIGHT_SHARE = 0.5

_STATE = ("parameter", "buffer", "constant")


@dataclass
class ScaledTwin:
    """The twin that validation runs instead of the original: its problem, its translation, the factor and
    the header lines saying what was scaled."""

    problem: TorchProblem
    translation: TorchTranslation
    factor: int
    lines: list[str] = field(default_factory=list)


def weight_bytes(tr: TorchTranslation) -> int:
    """Bytes of the parameters, buffers and constants the IR takes as arguments, at full size."""
    total = 0
    for value, src in zip(tr.module.entry.args, tr.args, strict=True):
        if src.kind in _STATE and value.type is not None:
            n = 1
            for d in value.type.concrete_shape(tr.params):
                n *= d
            total += value.type.dtype.bytes_of(n)
    return total


def _size(a: Any) -> bool:
    return isinstance(a, int) and not isinstance(a, bool) and a >= MIN_SCALED


def _ints(args: Sequence[Any]) -> list[Any]:
    """The arguments with lists and tuples flattened (an MLP's `[32768, 32768]` layer sizes are sizes too)."""
    out: list[Any] = []
    for a in args:
        out.extend(_ints(a) if isinstance(a, (list, tuple)) else [a])
    return out


def scale_factor(args: Sequence[Any]) -> int:
    """The power of two that divides every integer argument of at least MIN_SCALED (inside lists and tuples
    too) and leaves each at least MIN_TWIN_SIZE (1 when there is none, or no such power above 1)."""
    big = [a for a in _ints(args) if _size(a)]
    if not big:
        return 1
    factor = 1
    while all(a % (factor * 2) == 0 and a // (factor * 2) >= MIN_TWIN_SIZE for a in big):
        factor *= 2
    return factor


def _scaled(args: Sequence[Any], factor: int) -> list[Any]:
    return [type(a)(_scaled(a, factor)) if isinstance(a, (list, tuple)) else a // factor if _size(a) else a
            for a in args]


def _symbolic_dims(tr: TorchTranslation, sizes: dict[str, int]) -> dict[tuple[int, int], int]:
    """(input index, dim) of every symbolic input dim, with the least size the twin may be traced at: what
    its parameter allows, and its validation size in `sizes` (validation cuts the twin's inputs to it)."""
    return {place: max(tr.param_min.get(param, 1), sizes.get(param, 1))
            for param, places in tr.param_dims.items() for place in places}


def _symbolic_size(size: int, factor: int, least: int, largest_scaled: int) -> int:
    """A symbolic dim's size in the twin, which is traced at it (its IR keeps the dim symbolic all the same).
    A size no larger than some scaled argument may be bounded by it (a sequence at most `max_seqlen` long,
    sliced from a mask of that size): it is divided by `factor` too, where that divides it and leaves at
    least `least` and 2 (export specialises sizes 0 and 1), so that it fits the twin's argument as it fitted
    the original's. Other sizes stay as written."""
    small = size // factor
    if size <= largest_scaled and size % factor == 0 and small >= max(least, 2):
        return small
    return size


def _twin_inputs(inputs: Sequence[Any], sizes: dict[int, int], symbolic: dict[tuple[int, int], int],
                 factor: int) -> list[tuple[list[int], torch.dtype] | Any]:
    """Per input: (shape, dtype) with every fixed dim whose size is scaled replaced (`sizes`: full -> twin),
    and the symbolic dims (`symbolic`: the least size of each, from the IR's parameters) as
    `_symbolic_size` says, or the value itself."""
    largest = max(sizes, default=0)
    out: list[Any] = []
    for i, x in enumerate(inputs):
        if not isinstance(x, torch.Tensor):
            out.append(x)
            continue
        shape = [sizes.get(s, s) if (i, d) not in symbolic else
                 _symbolic_size(s, factor, symbolic[(i, d)], largest) for d, s in enumerate(x.shape)]
        out.append((shape, x.dtype))
    return out


def _make(spec: tuple[list[int], torch.dtype] | Any) -> Any:
    """A seeded-random tensor of `spec` (on the current default device), or the non-tensor input as given."""
    if not isinstance(spec, tuple) or len(spec) != 2 or not isinstance(spec[1], torch.dtype):
        return spec
    shape, dtype = spec
    if dtype.is_floating_point:
        return torch.randn(shape).to(dtype)
    if dtype == torch.bool:
        return torch.rand(shape) > 0.5
    return torch.randint(0, 2, shape, dtype=dtype)


_NUMBER = re.compile(r"(?<=[<x])\d+(?=x)|(?<![\w.])-?\d+(?:\.\d*)?(?:[eE][-+]?\d+)?")


def masked(module: ModuleOp) -> str:
    """The printed module with every numeric literal (sizes in types, bounds, constants) as `#`."""
    return _NUMBER.sub("#", print_module(module))


def _shape_mismatch(full: TorchTranslation, twin: TorchTranslation, factor: int) -> str:
    """Why the twin's weights are not the original's scaled by `factor` ('' when they are)."""
    pairs = list(zip(full.module.entry.args, full.args, strict=True))
    twin_pairs = list(zip(twin.module.entry.args, twin.args, strict=True))
    if [a.key for _, a in pairs] != [a.key for _, a in twin_pairs]:
        return "the twin's arguments differ from the original's"
    scaled = 0
    for (v, src), (tv, _) in zip(pairs, twin_pairs, strict=True):
        if src.kind not in _STATE or v.type is None or tv.type is None:
            continue
        shape, small = v.type.concrete_shape(full.params), tv.type.concrete_shape(twin.params)
        if len(shape) != len(small) or any(s != t and s != t * factor for s, t in zip(shape, small, strict=True)):
            return f"{src.kind} {src.key} is {list(small)} in the twin, {list(shape)} in the original"
        scaled += sum(s != t for s, t in zip(shape, small, strict=True))
    return "" if scaled else "no weight dim is scaled in the twin"


def _state_elements(model: torch.nn.Module) -> int:
    return sum(t.numel() for t in [*model.parameters(), *model.buffers()])


def _weight_share(cls: Any, args: Sequence[Any], small: Sequence[Any]) -> float:
    """The twin's weights and buffers as a share of the original's, by element (both built on the meta
    device: nothing is allocated or initialised); 0 when either cannot be built so (the twin's own
    translation then decides)."""
    try:
        with torch.device("meta"):
            full, twin = _state_elements(cls(*args)), _state_elements(cls(*small))
    except Exception:
        return 0.0
    return twin / full if full else 0.0


def prepared(module: ModuleOp, sizes: dict[str, int]) -> Program | None:
    """The module bound at `sizes` and verified, ready to run (None where it is not: validation says why when
    it runs the module itself). One program serves the size checks and the run: its kernels' code is made
    once."""
    from solar.backends.executor import prepare

    try:
        return prepare(module, sizes or None)
    except Exception:  # the executor's own errors surface in validation itself
        return None


def worth_a_twin(tr: TorchTranslation, program: Program | None) -> bool:
    """Whether validating with the full-size weights costs more than a twin's export: weights of at least
    TWIN_MIN_WEIGHT_BYTES, or kernels too large at the validation sizes (`program`: the original prepared
    at them) to run as plain Python (then Numba's fixed second is paid, and a second export of the same
    program costs a fraction of that)."""
    if weight_bytes(tr) >= TWIN_MIN_WEIGHT_BYTES:
        return True
    if any(isinstance(op, ForOp) for func in tr.module.funcs for op in func.walk()):
        # A recurrent layer: validation already runs few time steps (the sequence length is a size
        # parameter) through the compiled cell kernels, about as long as a twin's export alone.
        return False
    try:
        return program is not None and program.statements > interpret_budget()
    except Exception:  # the executor's own errors surface in validation itself
        return False


def plan(problem: TorchProblem, tr: TorchTranslation, dynamic: str = "all",
         sizes: dict[str, int] | None = None, program: Program | None = None) -> tuple[ScaledTwin | None, str]:
    """The twin validation should run instead of the original (at `sizes`, the validation sizes of the
    original, where `program` is the original prepared; None: prepared here), or None and why not ('' when
    validating the original is cheap enough that a twin would not pay: `worth_a_twin`)."""
    if program is None:
        program = prepared(tr.module, sizes if sizes is not None else {})
    if not worth_a_twin(tr, program):
        return None, ""
    if problem.model_class is None or problem.init_args is None:
        return None, "the model is not built from constructor arguments (Model(*get_init_inputs()))"
    args = list(problem.init_args())
    factor = scale_factor(args)
    if factor == 1:
        return None, (f"no integer constructor argument of at least {MIN_SCALED} divisible by 2 while staying "
                      f"at least {MIN_TWIN_SIZE}")
    small = _scaled(args, factor)
    scaled_args = {a: b for a, b in zip(_ints(args), _ints(small), strict=True) if a != b and isinstance(a, int)}
    with torch.device("meta"):
        full_inputs = list(problem.make_inputs())
    symbolic = _symbolic_dims(tr, sizes if sizes is not None else tr.params)  # None: at full size
    specs = _twin_inputs(full_inputs, scaled_args, symbolic, factor)
    # The fixed input dims that run small in the twin (the symbolic ones shrink in validation anyway).
    fixed_scaled = [(i, d, s, spec[0][d]) for i, (x, spec) in enumerate(zip(full_inputs, specs, strict=True))
                    if isinstance(x, torch.Tensor) for d, s in enumerate(x.shape)
                    if spec[0][d] != s and (i, d) not in symbolic]
    cls = problem.model_class
    share = _weight_share(cls, args, small)
    input_scaled = bool(fixed_scaled)
    if share > TWIN_MAX_WEIGHT_SHARE and not input_scaled:
        # A classifier's width alone (a ResNet's num_classes): the twin would run almost the same work, and
        # its export would cost as much as the first.
        return None, (f"the twin Model({', '.join(map(str, small))}) would keep {share:.0%} of the weights "
                      "and every input's size: not worth a second export")
    # The twin's symbolic dims take the original's parameter names (by place: their sizes differ).
    twin_names = {place: param for param, places in tr.param_dims.items() for place in places}
    twin = TorchProblem(lambda: cls(*small), lambda: [_make(s) for s in specs], problem.name, problem.source,
                        size_names=twin_names)
    from .torch_export import translate_problem  # the lowering imports this module's siblings

    try:
        twin_tr = translate_problem(twin, dynamic)
    except Exception as err:  # any failure of the twin leaves validation at full size, never the user's error
        return None, f"the twin Model({', '.join(map(str, small))}) did not translate ({type(err).__name__})"
    why = _shape_mismatch(tr, twin_tr, factor)
    if why:
        return None, f"the twin Model({', '.join(map(str, small))}) is not the original scaled: {why}"
    if masked(twin_tr.module) != masked(tr.module):
        return None, (f"the twin Model({', '.join(map(str, small))}) lowers to a different program (not only "
                      "its numbers differ)")
    scaled = "; ".join(f"{a} -> {b}" for a, b in scaled_args.items())
    lines = [f"reference built small: Model({', '.join(map(str, small))}) instead of "
             f"Model({', '.join(map(str, args))}), constructor arguments {scaled} (1/{factor}); its weights "
             "are the original's shapes with those dims scaled, and its IR is the one written but for numbers "
             "(sizes and constants)"]
    names = tr.input_names
    dims = [f"{names[i] if i < len(names) else f'input {i}'} dim {d} {s} -> {t}" for i, d, s, t in fixed_scaled]
    if dims:
        lines.append("fixed dims run small in the twin: " + "; ".join(dims))
    return ScaledTwin(twin, twin_tr, factor, lines), ""


# The most kernel statements validation runs unasked (about a minute of the executor's compiled kernels on
# one core); a program still larger at the smallest sizes it can take is not run unless --full-size-validation
# asks for it, and its header says so.
VALIDATION_MAX_STATEMENTS = 5e10


def _too_large_to_run(statements: float) -> str:
    if statements <= VALIDATION_MAX_STATEMENTS:
        return ""
    return (f"at the smallest sizes it can run, the IR's kernels execute about {statements:.2g} statements, over "
            f"validation's {VALIDATION_MAX_STATEMENTS:.0e} (dims that cannot shrink are listed above); "
            "--full-size-validation runs it anyway")


def validate_torch(problem: TorchProblem, tr: TorchTranslation, seed: int = 0, size: int = 4, full: bool = False,
                   dynamic: str = "all") -> ValidationReport:
    """Validates a translation as solar-translate does: at reduced sizes (every size parameter at most
    `size`, or all at full size with `full`), through the scaled twin where `plan` finds one; the report's
    details say which dims were reduced, which could not shrink and why, and how the reference was built."""
    from .export_dims import size_lines
    from .torch_reference import reference_runner
    from .validate import small_sizes, validate_sized

    sizes = small_sizes(tr.module, size, full, tr.param_min)
    # The module prepared once at the validation sizes serves the twin's plan, the size check and the run.
    program = None if full else prepared(tr.module, sizes)
    twin, why_not = (None, "") if full else plan(problem, tr, dynamic, sizes, program)
    run_problem, run_tr = (twin.problem, twin.translation) if twin else (problem, tr)
    if twin:
        sizes = small_sizes(run_tr.module, size, full, run_tr.param_min)
        program = prepared(run_tr.module, sizes)
    too_large = "" if program is None else _too_large_to_run(program.statements)
    if too_large:
        report = ValidationReport(True, seed, sizes, run_tr.module.param_values(), skipped=too_large)
    else:
        report = validate_sized(run_tr.module, lambda sz: reference_runner(run_problem, run_tr, seed, sz), sizes,
                                seed, program=program)
    report.details = size_lines(tr.params, tr.param_dims, tr.input_names, report.sizes, tr.fixed_dims)
    if twin:
        report.details += twin.lines
    elif why_not:
        report.details.append(f"reference built at full size: {why_not}")
    return report
