"""fp4 activations for --quantize (W4A4: nvfp4 or mxfp4 weights and activations; passes/quantize.py).

A block-scaled MMA (Blackwell's NVFP4 and MXFP4 kinds) reads both operands as e2m1 codes with a scale per
block of `g` elements along the reduction axis, and its tensor cores apply the scales. The rewrite says so in
the IR: each activation is quantized once (`@quantize_input`: the block's largest magnitude over 6, e2m1's
largest value, as its scale, then the codes: the quantization's own work, counted), the reduction axis of both
operands is split into blocks (`k` → `k_b, k_c`, views), and the contraction becomes

    Y[..] += (A[.., k_b, k_c] * SA[.., k_b]) * (B[.., k_b, k_c] * SB[.., k_b])   {block_scaled = true}

which the counts price as a contraction of its narrowest operand, e2m1 (solar.ir.analysis.counts,
`is_block_scaled_contraction`): the fp4 tensor peak, or on a target without one the fallback the peak policy
gives (targets/peaks.py). nvfp4's per-tensor f32 scales (the weight's and a static one for the input) go to the
`@rescale` epilogue, as fp8's do.
"""

from __future__ import annotations

from typing import Any

from solar.ir import attr_names
from solar.ir.builder import BlockBuilder, call, cast
from solar.ir.diagnostics import Location
from solar.ir.dtypes import DType
from solar.ir.expr import Access, Binary, Expr, IndexRef, IntLit, NameRef
from solar.ir.ops import Binding, EinsumOp, Value
from solar.ir.types import TensorType

from .quantize_formats import FORMATS, QuantizeError
from .quantize_kernels import affine_loops, split_operands

FP4_ACTIVATIONS = ("nvfp4", "mxfp4")
E2M1_LARGEST = 6.0  # the largest magnitude an e2m1 code holds: a block's scale maps its largest element there


class Fp4Contractions:
    """Rewrites the contractions that read fp4 weights (codes with their block scales) into block-scaled
    contractions of fp4 activations. `rewrite` is the --quantize rewrite (passes/quantize.py `_Rewrite`)."""

    def __init__(self, rewrite: Any, fmt_name: str) -> None:
        self.rw = rewrite
        self.fmt = FORMATS[fmt_name]
        # The weights' codes as the contractions read them (an argument, or a gather of one): scale, tensor scale.
        self.weights: dict[Value, tuple[Value, Value | None]] = {}
        self.inputs: dict[tuple[Value, int], tuple[Value, Value, Value | None]] = {}  # (x, axis) -> Q, S, G
        self.original: dict[Value, DType] = {}  # each weight's dtype before it was quantized
        self.remarks: list[tuple[str, Location]] = []  # contractions left weight-only, and why

    def add_weight(self, codes: Value, scale: Value, whole: Value | None, original: DType) -> None:
        self.weights[codes] = (scale, whole)
        self.original[codes] = original

    def _weight_only(self, op: EinsumOp, at: int) -> None:
        """A contraction no block-scaled MMA can run (a third operand along the reduction that the activation
        cannot absorb): its fp4 weight is dequantized for it alone, as `weights=` alone would, and it stays
        the program's own einsum (its arithmetic and precision as they were; the weight's bytes packed)."""
        codes = op.inputs[at].value
        scale, whole = self.weights[codes]
        letters, out = op.spec.split("->")
        term = letters.split(",")[at]
        axes = [a for a, c in enumerate(term) if c not in out]
        if len(axes) != 1:
            raise QuantizeError(f"fp4 activations: @{op.symbol} ('{op.spec}') does not reduce the weight "
                                f"%{codes.name} over one axis")
        original = self.original[codes]
        self.rw._dequantize(op, codes, scale, None, whole, {axes[0]: self.fmt.group}, original, original,
                            "dequant", [(op, at)])
        self.remarks.append((f"@{op.symbol} reads {len(op.inputs)} operands along its reduction, which no "
                             f"block-scaled MMA takes: its weight %{codes.name} is dequantized for it (read "
                             "packed, computed as the program's einsum), not run in fp4", op.loc))

    def rewrite(self, op: EinsumOp) -> bool:
        """`op` as a block-scaled contraction, if it reads one of the fp4 weights (False: it reads none)."""
        at = next((k for k, b in enumerate(op.inputs) if b.value in self.weights), None)
        if at is None:
            return False
        if len(op.inputs) != 2:
            if not split_operands(self.rw, op, at):
                self._weight_only(op, at)
                return False
            at = next(k for k, b in enumerate(op.inputs) if b.value in self.weights)
        codes = op.inputs[at].value
        scale, whole = self.weights[codes]
        letters, out = op.spec.split("->")
        terms = letters.split(",")
        reduced = [c for c in terms[at] if c not in out]
        other = 1 - at
        if len(reduced) != 1 or reduced[0] not in terms[other]:
            raise QuantizeError(f"fp4 activations: @{op.symbol} ('{op.spec}') does not reduce the weight "
                                f"%{codes.name} over one axis it shares with its activation")
        r = reduced[0]
        x = op.inputs[other].value
        group = self.fmt.group
        q, s, g = self._input(x, terms[other].index(r), group)
        fresh = [c for c in "abcdefghijklmnopqrstuvwxyz" if c not in op.spec]
        block, within = fresh[0], fresh[1]
        split = [t.replace(r, block + within) for t in terms]
        scales = [t.replace(r, block) for t in terms]
        views = {other: self._blocks(q, terms[other].index(r), group, op),
                 at: self._blocks(codes, terms[at].index(r), group, op)}
        scale_of = {other: s, at: scale}
        acc = op.outputs[0].type.dtype
        names = [b.name for b in op.inputs]
        scale_names = [f"S{n}" for n in names]
        for k in (0, 1):
            op.set_operand(k, views[k])
        op.inputs += [Binding(scale_of[k], scale_names[k]) for k in (0, 1)]
        op.spec = f"{split[0]},{split[1]},{scales[0]},{scales[1]}->{out}"

        def side(k: int) -> Expr:
            return Binary("*", cast(acc, NameRef(names[k])), cast(acc, NameRef(scale_names[k])))

        op.body[0].value = Binary("*", side(0), side(1))
        op.attrs.pop(attr_names.COUNTS, None)
        op.attrs[attr_names.BLOCK_SCALED] = True
        per_tensor = [v for v in (g, whole) if v is not None]
        if per_tensor:
            self.rw._epilogue(op, per_tensor, None)
        return True

    def _blocks(self, v: Value, axis: int, group: int, reader: EinsumOp) -> Value:
        """`v` with its `axis` split into blocks of `group` (a view), placed before the reader."""
        vt = v.type
        assert vt is not None
        size = vt.shape[axis]
        if not isinstance(size, int) or size % group:
            raise QuantizeError(f"fp4 activations: blocks of {group} do not divide axis {axis} of %{v.name} ({vt})")
        shape = (*vt.shape[:axis], size // group, group, *vt.shape[axis + 1:])
        return self.rw._insert_before(reader, lambda b: b.reshape(v, TensorType(shape, vt.dtype), hint="blocks"))

    def _input(self, x: Value, axis: int, group: int) -> tuple[Value, Value, Value | None]:
        """`x` as e2m1 codes with an e4m3/e8m0 scale per block of `group` along `axis` (and nvfp4's static
        per-tensor f32 scale): quantized once, right after it is made, however many contractions read it."""
        key = (x, axis)
        if key in self.inputs:
            return self.inputs[key]
        xt = x.type
        assert xt is not None
        size = xt.shape[axis]
        if not isinstance(size, int) or size % group:
            raise QuantizeError(f"fp4 activations: blocks of {group} do not divide axis {axis} of %{x.name} ({xt})")
        rw = self.rw
        whole = rw._arg(f"{x.name}_input_scale", TensorType((1,), DType.F32)) if self.fmt.tensor_scale else None
        scale_type = TensorType(tuple(d // group if a == axis else d for a, d in enumerate(xt.shape)), self.fmt.scale)
        code_type = TensorType(xt.shape, self.fmt.codes)
        inputs = [(x, "X")] + ([(whole, "G")] if whole is not None else [])

        def grouped(idx: list[IndexRef]) -> tuple[Expr, ...]:
            return tuple(Binary("floordiv", i, group) if a == axis else i for a, i in enumerate(idx))

        def per_tensor(e: Expr) -> Expr:
            return e / Access("G", (IntLit(0),)) if whole is not None else e

        def build(b: BlockBuilder) -> Value:
            k = b.kernel(rw.symbols.fresh("quantize_input"), inputs, [("Q", code_type), ("S", scale_type)])
            with affine_loops(k, xt.shape) as idx:  # the block's largest magnitude
                magnitude = per_tensor(call("abs", cast(DType.F32, Access("X", tuple(idx)))))
                k.reduce(k["S"][grouped(idx)], "max=", cast(self.fmt.scale, magnitude))
            with affine_loops(k, scale_type.shape) as idx:  # maps it to e2m1's largest value
                k.assign(k["S"][tuple(idx)], cast(self.fmt.scale, cast(DType.F32, k["S"][tuple(idx)])
                                                  * (1.0 / E2M1_LARGEST)))
            with affine_loops(k, xt.shape) as idx:
                value = cast(DType.F32, Access("X", tuple(idx))) / cast(DType.F32, k["S"][grouped(idx)])
                k.assign(k["Q"][tuple(idx)], cast(self.fmt.codes, per_tensor(value)))
            return k.results[0]

        codes = rw._insert_after_definition(x, build)  # inside the loop that makes it, where one does
        assert codes.owner is not None
        self.inputs[key] = (codes, codes.owner.results[1], whole)
        return self.inputs[key]


__all__ = ["E2M1_LARGEST", "FP4_ACTIVATIONS", "Fp4Contractions"]
