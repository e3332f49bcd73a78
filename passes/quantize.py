"""--quantize: weights, the KV cache and activations in low precision, as a serving kernel stores and runs
them (docs/quantization.md).

- **Weights** are the entry function's arguments that a contraction reads (`solar.einsum` with a `+=`
  reduction over one of their axes) and whose shape has no size parameter (a batch or a context makes an
  activation or a cache, not a weight). Each becomes its packed codes (`i8`, `i4`, `f8e4m3`, `f4e2m1`) with
  its scales (and zero points, and nvfp4's per-tensor scale) as new arguments at their own dtype, grouped
  along the reduction axis. A dequantization kernel, placed before the first reader, rebuilds the weight
  at the precision the contraction runs at: `--fuse` puts it in the reader's group, so DRAM moves the packed
  weight and the scales, and the dequantization is vector work inside the group.
- **Activations** `fp8`: each quantized contraction reads its activation operand cast to `f8e4m3` (a
  per-tensor scale), the weight dequantized to `f8e4m3` (or read as it is: fp8 weights with per-channel
  scales), and its result is rescaled in an epilogue. The contraction's operands are then fp8, so the cost
  model prices it at the target's fp8 tensor peak. `nvfp4`/`mxfp4` with the same weights (W4A4): block-
  scaled contractions of both operands' e2m1 codes, at the fp4 tensor peak (passes/quantize_fp4.py).
- **KV cache** (passes/quantize_kv.py): every write of it is stored as `f8e4m3` (one f32 scale per tensor),
  `i8` or `i4` (one f16 scale per token and head, itself a cache written beside the keys): appends
  (`solar.concat {append = true}`), in-place stores (`solar.scatter {in_place = true}`: a static cache) and
  a prefill's returned keys and values (`kv_cache_results`). The tokens are quantized before they are
  written; the attention reads the cache dequantized; what the function returns of it is returned packed.
"""

from __future__ import annotations

import typing
from dataclasses import dataclass, field
from typing import Literal

from solar.ir.builder import BlockBuilder, cast
from solar.ir.diagnostics import Location
from solar.ir.dtypes import DType
from solar.ir.expr import Access, Binary, Cast, Expr, IndexRef, IntLit, NameRef, rewrite
from solar.ir.ops import (
    EinsumOp,
    FuncOp,
    GatherOp,
    GroupOp,
    ModuleOp,
    Op,
    ReturnOp,
    Value,
)
from solar.ir.pass_manager import Pass, PassContext
from solar.ir.rewriter import NameGenerator, uses_of
from solar.ir.types import TensorType

from .quantize_formats import (
    ACTIVATION_CODES,
    ACTIVATION_FORMATS,
    CACHE_FORMATS,
    FORMATS,
    WEIGHT_FORMATS,
    Format,
    QuantizeError,
    QuantizeOptions,
    check_options,
    excluded,
)
from .quantize_fp4 import FP4_ACTIVATIONS, Fp4Contractions
from .quantize_kernels import affine_loops
from .quantize_kv import KvCache

# The options' types, as the pass manager checks them (Literal options); the same lists as quantize_formats'.

WeightFormat = Literal["none", "int8", "int4", "fp8", "nvfp4", "mxfp4"]
CacheFormat = Literal["none", "fp8", "int8", "int4"]
ActivationFormat = Literal["none", "fp8", "int8", "nvfp4", "mxfp4"]
assert typing.get_args(WeightFormat) == WEIGHT_FORMATS and typing.get_args(CacheFormat) == CACHE_FORMATS
assert typing.get_args(ActivationFormat) == ACTIVATION_FORMATS
__all__ = ["FORMATS", "Format", "Quantize", "QuantizeError", "QuantizeOptions", "QuantizeSummary", "check_options",
           "excluded", "quantize_module"]


@dataclass
class QuantizeSummary:
    """What the rewrite did: the weights quantized (argument names), the caches, the contractions in fp8."""

    weights: list[str]
    caches: list[str]
    fp8_contractions: int  # contractions at low precision: fp8, or fp4 block-scaled (W4A4)
    remarks: list[tuple[str, Location]] = field(default_factory=list)  # what was left as it was, and why


def quantize_module(module: ModuleOp, options: QuantizeOptions) -> QuantizeSummary:
    """Rewrites `module` in place (its entry function; calls must be inlined, --fuse not run yet)."""
    check_options(options)
    func = module.entry
    if func is None:
        raise QuantizeError("the module has no function")
    if any(isinstance(op, GroupOp) for op in func.walk()):
        raise QuantizeError("the module is fused already: run --quantize before --fuse")
    if any(op.opname == "solar.call" for op in func.walk()):
        raise QuantizeError("the module has calls: run --inline before it")
    rewrite = _Rewrite(func, options)
    summary = QuantizeSummary([], [], 0)
    if options.weights != "none" or options.activations != "none":
        summary.weights, summary.fp8_contractions = rewrite.weights()
        summary.remarks = list(rewrite.fp4.remarks) if rewrite.fp4 is not None else []
    if options.kv_cache != "none":
        summary.caches = rewrite.caches()
    ret = next((op for op in func.body if isinstance(op, ReturnOp)), None)
    if ret is not None:
        func.result_types = [v.type for v in ret.operands if v.type is not None]
    return summary


def _reduced_axes(op: EinsumOp, k: int) -> list[int]:
    """The axes of input `k` that the einsum sums over (letters absent from its output)."""
    inputs, output = op.spec.split("->")
    letters = inputs.split(",")[k]
    return [a for a, c in enumerate(letters) if c not in output]


def _is_contraction(op: Op) -> bool:
    return isinstance(op, EinsumOp) and len(op.inputs) >= 2 and any(s.op == "+=" for s in op.body)


class _Rewrite:
    def __init__(self, func: FuncOp, options: QuantizeOptions) -> None:
        self.func = func
        self.options = options
        self.names = NameGenerator.values_of(func)
        self.symbols = NameGenerator.symbols_of(func)
        # fp8 weights that fp8 contractions read as they are: their per-channel scales and former dtypes.
        self.direct_scales: dict[Value, tuple[Value, int]] = {}
        self.weight_dtypes: dict[Value, DType] = {}
        self._former: dict[Value, DType] = {}  # every quantized weight's dtype before
        self.fp8_inputs: dict[Value, tuple[Value, Value]] = {}  # an activation and its fp8 copy and scale
        self.fp4 = Fp4Contractions(self, options.activations) if options.activations in FP4_ACTIVATIONS else None

    # -- shared pieces ---------------------------------------------------------------------------------
    def _arg(self, name: str, type: TensorType) -> Value:
        value = Value(self.names.fresh(name), type, self.func)
        self.func.args.append(value)
        return value

    def _insert_before(self, anchor: Op, build: typing.Callable[[BlockBuilder], Value]) -> Value:
        """Builds ops with a builder and puts them before `anchor`, in the block that holds it (the function's
        body, or a solar.for's or solar.if's)."""
        block = self._block_of(anchor)
        return self._insert_at(block, next(k for k, o in enumerate(block) if o is anchor), build)

    def _insert_at(self, block: list[Op], at: int, build: typing.Callable[[BlockBuilder], Value]) -> Value:
        ops: list[Op] = []
        result = build(BlockBuilder(ops, self.names))
        block[at:at] = ops
        return result

    def _insert_after_definition(self, v: Value, build: typing.Callable[[BlockBuilder], Value]) -> Value:
        """Ops built right where `v` is made, in its own block: at the function's start for an argument, at a
        loop body's start for its iteration argument, after the op that makes it otherwise."""
        owner = v.owner
        if owner is None or owner is self.func:
            return self._insert_at(self.func.body, 0, build)
        assert isinstance(owner, Op)
        if any(v is a for a in owner.block_args):
            return self._insert_at(owner.regions[0], 0, build)
        block = self._block_of(owner)
        return self._insert_at(block, next(k for k, o in enumerate(block) if o is owner) + 1, build)

    def _block_of(self, op: Op) -> list[Op]:
        """The list of ops that holds `op` itself: the function's body or a region of an op inside it."""
        if any(o is op for o in self.func.body):
            return self.func.body
        for outer in self.func.walk():
            for region in outer.regions:
                if any(o is op for o in region):
                    return region
        raise AssertionError("op outside the function")

    def _top(self, op: Op) -> Op:
        """The op of the function's body that holds `op` (itself, or a solar.for or solar.if around it)."""
        for top in self.func.body:
            if any(o is op for o in top.walk()):
                return top
        raise AssertionError("op outside the function")

    def _map_kernel(self, b: BlockBuilder, symbol: str, inputs: list[tuple[Value, str]], out: TensorType,
                    value: typing.Callable[[list[IndexRef]], Expr]) -> Value:
        """A kernel computing every element of `out` from its indices (a map: no reduction). Symbols are
        generic (`dequant`, `dequant_1`, ...), never a weight's name: the layer twins of solar-llm match
        units by their kernels' symbols without numbering (sweep.work_key), so every layer's must agree."""
        k = b.kernel(self.symbols.fresh(symbol), inputs, [("Y", out)])
        with affine_loops(k, out.shape) as idx:
            k.assign(k["Y"][tuple(idx)], value(idx))
        return k.results[0]

    # -- weights -----------------------------------------------------------------------------------------
    def weights(self) -> tuple[list[str], int]:
        uses = uses_of(self.func.body)
        done: list[str] = []
        fp8 = 0
        found = [(arg, *axis_gathers) for arg in list(self.func.args)
                 if (axis_gathers := self._weight_axis(arg, uses.get(arg, []), uses)) is not None]
        # A contraction of two such arguments (a program without size parameters) reads its data first and
        # its weight second, as x·Wᵀ and x @ W do: the first stays as it is.
        candidates = {arg for arg, _, _ in found}
        data = set()
        for op in self.func.walk():
            if _is_contraction(op):
                assert isinstance(op, EinsumOp)
                read = [b.value for b in op.inputs if b.value in candidates]
                if len(read) >= 2:
                    data.add(read[0])
        found = [f for f in found if f[0] not in data]
        if self.options.weights != "none":  # every group checked before anything is rewritten
            for arg, axis, _ in found:
                assert arg.type is not None
                self._group(arg, axis, FORMATS[self.options.weights])
                self._rows(arg, max(a for a in range(arg.type.rank) if a != axis))
        for arg, axis, gathers in found:
            readers = uses.get(arg, [])
            contractions = [op for op, _ in readers if _is_contraction(op)] + [
                op for g in gathers for op, _ in uses.get(g.results[0], []) if _is_contraction(op)]
            if self.options.weights != "none":
                self._quantize_weight(arg, axis, readers, gathers, uses)
                done.append(arg.name)
            if self.options.activations in ACTIVATION_CODES:
                fp8 += self._fp8_activations(contractions)
            elif self.fp4 is not None:
                fp8 += sum(self.fp4.rewrite(op) for op in contractions if isinstance(op, EinsumOp))
        return done, fp8

    def _weight_axis(self, arg: Value, readers: list[tuple[Op, int]], uses: dict[Value, list[tuple[Op, int]]]
                     ) -> tuple[int, list[GatherOp]] | None:
        """The reduction axis of a weight argument and the gathers it is read through (a mixture of experts
        gathers the experts each token routes to); None for an argument that is no weight: one that some op
        other than a contraction reads (a tied embedding's table) stays as it is."""
        t = arg.type
        if t is None or not t.dtype.is_float or t.rank < 2 or not all(isinstance(d, int) for d in t.shape):
            return None
        if excluded(arg.name, self.options.exclude) or not readers:
            return None
        gathers: list[GatherOp] = []
        contracted: list[tuple[Op, Value]] = []
        for op, k in readers:
            if _is_contraction(op):
                contracted.append((op, arg))
            elif isinstance(op, GatherOp) and k == 0 and op.args[1].type is not None and op.args[1].type.rank == 1 \
                    and any(op is top for top in self.func.body):
                gathers.append(op)
                for reader, _ in uses.get(op.results[0], []):
                    if not _is_contraction(reader):
                        return None
                    contracted.append((reader, op.results[0]))
            else:
                return None
        axes: set[int] = set()
        for op, value in contracted:
            assert isinstance(op, EinsumOp)
            for k, binding in enumerate(op.inputs):
                if binding.value is value:
                    axes.update(_reduced_axes(op, k))
        if len(axes) != 1 or any(g.attrs["axis"] in axes for g in gathers):
            return None  # not contracted, or over several axes (no one grouping a kernel could use)
        return next(iter(axes)), gathers

    def _group(self, arg: Value, axis: int, fmt: Format) -> int:
        assert arg.type is not None
        size = arg.type.shape[axis]
        assert isinstance(size, int)
        group = self.options.group_size or fmt.group or size
        if size % group:
            raise QuantizeError(f"group size {group} does not divide the reduction axis of weight %{arg.name} "
                                f"({size} elements, axis {axis} of {arg.type})")
        return group

    def _rows(self, arg: Value, channel: int) -> int:
        """Rows of output channels per scale (block_rows; 1: a scale per row)."""
        assert arg.type is not None
        size = arg.type.shape[channel]
        rows = self.options.block_rows or 1
        if not isinstance(size, int) or size % rows:
            raise QuantizeError(f"block rows {rows} do not divide the output channels of weight %{arg.name} "
                                f"({size} elements, axis {channel} of {arg.type})")
        return rows

    def _quantize_weight(self, arg: Value, axis: int, readers: list[tuple[Op, int]], gathers: list[GatherOp],
                         uses: dict[Value, list[tuple[Op, int]]]) -> None:
        """Rewrites one weight argument to its codes and scales and its readers to dequantize or read it
        directly. Longer than most: one weight's new arguments, its direct-read decision and the rewrite of
        its readers share the same locals, and apart they would pass them all along."""
        fmt = FORMATS[self.options.weights]
        t = arg.type
        assert t is not None
        group = self._group(arg, axis, fmt)
        # The output channels' axis: the last one besides the reduction axis (experts stack on axis 0).
        channel = max(a for a in range(t.rank) if a != axis)
        rows = self._rows(arg, channel)
        codes = fmt.unsigned_codes if self.options.zero_point and fmt.unsigned_codes else fmt.codes
        per_group = tuple(d // group if a == axis else d // rows if a == channel else d for a, d in enumerate(t.shape))
        blocks = {axis: group, channel: rows}
        arg.type = TensorType(t.shape, codes)
        self._former[arg] = t.dtype
        scale = self._arg(f"{arg.name}_scale", TensorType(per_group, fmt.scale))
        zero = self._arg(f"{arg.name}_zero", TensorType(per_group, codes)) if self.options.zero_point else None
        whole = self._arg(f"{arg.name}_tensor_scale", TensorType((1,), DType.F32)) if fmt.tensor_scale else None
        # fp8 (int8) weights with per-channel scales feed fp8 (int8) contractions as they are: the scale goes to
        # the epilogue. Integer codes have no other way in (W8A8), so int8's experts are gathered so too.
        per_channel = group == t.shape[axis] and rows == 1 and zero is None
        direct = codes is ACTIVATION_CODES.get(self.options.activations) and per_channel \
            and (not gathers or codes is DType.I8)
        if codes is DType.I8 and self.options.activations == "int8" and not per_channel:
            raise QuantizeError(f"int8 activations read weight %{arg.name}'s codes as they are: its scales must be "
                                "one per output channel (no group_size, block_rows or zero points)")
        if direct and not gathers:
            self.direct_scales[arg] = (scale, axis)
            self.weight_dtypes[arg] = t.dtype
            return
        if direct:
            for g in gathers:  # the codes and their scales gathered alike, the scales to the epilogue
                picked = self._gather_codes_and_scale(g, codes, scale)
                self.direct_scales[g.results[0]] = (picked, axis)
                self.weight_dtypes[g.results[0]] = t.dtype
            return
        if self.fp4 is not None:  # W4A4: the contractions read the codes and the scales (quantize_fp4.py)
            self._fp4_weight(arg, scale, whole, gathers, codes)
            return
        compute = DType.F8E4M3 if self.options.activations == "fp8" else t.dtype
        if not gathers:
            first = min(self.func.body.index(self._top(op)) for op, _ in readers)
            self._dequantize(self.func.body[first], arg, scale, zero, whole, blocks, compute, t.dtype,
                             "dequant", readers)
            return
        # Experts: the codes and their scales are gathered alike, and dequantized after the gather, so that
        # only the experts the tokens route to are read.
        for g in gathers:
            g_axis, indices = g.attrs["axis"], g.args[1]
            rt = g.results[0].type
            assert rt is not None
            g.results[0].type = rt.with_dtype(codes)
            g.result_types = [g.results[0].type]
            picked = [self._insert_before(self._top(g), lambda b, v=v, i=indices, a=g_axis: b.gather(v, i, a, hint="g"))
                      if v is not None else None for v in (scale, zero)]
            self._dequantize(self.func.body[self.func.body.index(self._top(g)) + 1], g.results[0], picked[0],
                             picked[1], whole, blocks, compute, t.dtype, "dequant",
                             uses.get(g.results[0], []))

    def _fp4_weight(self, arg: Value, scale: Value, whole: Value | None, gathers: list[GatherOp],
                    codes: DType) -> None:
        assert self.fp4 is not None
        original = self._former[arg]
        if not gathers:
            self.fp4.add_weight(arg, scale, whole, original)
        for g in gathers:  # experts: the codes and their scales gathered alike
            self.fp4.add_weight(g.results[0], self._gather_codes_and_scale(g, codes, scale), whole, original)

    def _gather_codes_and_scale(self, g: GatherOp, codes: DType, scale: Value) -> Value:
        """The experts' gather `g` retyped to read the codes, and the same gather of their scales (its result)."""
        rt = g.results[0].type
        assert rt is not None
        g.results[0].type = rt.with_dtype(codes)
        g.result_types = [g.results[0].type]
        return self._insert_before(self._top(g), lambda b: b.gather(scale, g.args[1], g.attrs["axis"], hint="g"))

    def _dequantize(self, anchor: Op, codes: Value, scale: Value | None, zero: Value | None, whole: Value | None,
                    blocks: dict[int, int], compute: DType, original: DType, name: str,
                    readers: list[tuple[Op, int]]) -> None:
        """A kernel before `anchor` that rebuilds `codes` at `compute`, read by `readers` instead; `blocks`:
        the elements per scale along each grouped axis."""
        assert codes.type is not None and scale is not None
        shape = codes.type.shape
        inputs = [(codes, "Q"), (scale, "S")] + ([(zero, "Z")] if zero else []) + ([(whole, "G")] if whole else [])

        def value(idx: list[IndexRef]) -> Expr:
            grouped = tuple(Binary("floordiv", i, blocks[a]) if blocks.get(a, 1) > 1 else i for a, i in enumerate(idx))
            v: Expr = cast(DType.F32, Access("Q", tuple(idx)))
            if zero is not None:
                v = v - cast(DType.F32, Access("Z", grouped))
            v = v * cast(DType.F32, Access("S", grouped))
            if whole is not None:
                v = v * Access("G", (IntLit(0),))
            return cast(compute, v)

        dequant = self._insert_before(anchor, lambda b: self._map_kernel(
            b, name, inputs, TensorType(shape, compute), value))
        for op, k in readers:
            if op is not dequant.owner:
                op.set_operand(k, dequant)
                _keep_body_types(op, k, original)

    # -- fp8 activations ---------------------------------------------------------------------------------
    def _fp8_activations(self, contractions: list[Op]) -> int:
        """Each contraction of a weight reads its other float operands in fp8 (int8) and rescales its result
        (by the weight's per-channel scale too, where it reads the weight's codes as they are)."""
        count = 0
        codes = ACTIVATION_CODES[self.options.activations]
        for op in contractions:
            assert isinstance(op, EinsumOp)
            scales = []
            for k, binding in enumerate(op.inputs):
                v = binding.value
                if v.type is None or not v.type.dtype.is_float or v.type.dtype is codes:
                    continue
                quantized, scale = self._fp8_input(v)
                op.set_operand(k, quantized)
                _keep_body_types(op, k, v.type.dtype)
                scales.append(scale)
            at = next((k for k, b in enumerate(op.inputs) if b.value in self.direct_scales), None)
            direct = None
            if at is not None:
                weight = op.inputs[at].value
                direct = (*self.direct_scales[weight], at)
                _keep_body_types(op, at, self.weight_dtypes[weight])
            if scales or direct is not None:
                self._epilogue(op, scales, direct)
            count += 1
        return count

    def _fp8_input(self, v: Value) -> tuple[Value, Value]:
        """`v` in fp8 (int8) with its (static, per-tensor) scale: quantized once, right after it is made (inside the
        loop that makes it, where one does), however many contractions read it (the q, k and v projections
        share their input)."""
        if v not in self.fp8_inputs:
            vt = v.type
            assert vt is not None
            scale = self._arg(f"{v.name}_input_scale", TensorType((1,), DType.F32))

            codes = ACTIVATION_CODES[self.options.activations]

            def quantized(idx: list[IndexRef]) -> Expr:
                return cast(codes, cast(DType.F32, Access("X", tuple(idx))) / Access("S", (IntLit(0),)))

            q = self._insert_after_definition(v, lambda b: self._map_kernel(
                b, "quantize_input", [(v, "X"), (scale, "S")], TensorType(vt.shape, codes), quantized))
            self.fp8_inputs[v] = (q, scale)
        return self.fp8_inputs[v]

    def _epilogue(self, op: EinsumOp, activation_scales: list[Value], direct: tuple[Value, int, int] | None
                  ) -> None:
        """The fp8 contraction's result times the activation's scale (and the per-channel scale of the weight
        `direct` names: its scale, its reduction axis, the operand that reads it)."""
        result = op.results[0]
        rt = result.type
        assert rt is not None
        uses = [(o, k) for o, k in uses_of(self.func.body).get(result, [])]
        inputs = [(result, "A")] + [(s, f"S{n}") for n, s in enumerate(activation_scales)]
        # The weight's scale is indexed by the output's index of each of the weight's kept axes.
        scale_axes: list[int | None] = []
        if direct is not None:
            scale, axis, at = direct
            inputs.append((scale, "W"))
            letters_in, out_letters = op.spec.split("->")
            weight_letters = letters_in.split(",")[at]
            scale_axes = [None if a == axis else out_letters.index(c) for a, c in enumerate(weight_letters)]

        def value(idx: list[IndexRef]) -> Expr:
            v: Expr = cast(DType.F32, Access("A", tuple(idx)))
            for n in range(len(activation_scales)):
                v = v * Access(f"S{n}", (IntLit(0),))
            if scale_axes:
                v = v * cast(DType.F32, Access("W", tuple(IntLit(0) if a is None else idx[a] for a in scale_axes)))
            return cast(rt.dtype, v)

        block = self._block_of(op)  # right after the contraction, in its own block (a loop's body, maybe)
        at = next(k for k, o in enumerate(block) if o is op) + 1
        scaled = self._insert_at(block, at, lambda b: self._map_kernel(b, "rescale", inputs, rt, value))
        for o, k in uses:
            o.set_operand(k, scaled)

    # -- the KV cache (passes/quantize_kv.py) ---------------------------------------------------------
    def caches(self) -> list[str]:
        return KvCache(self, self.options.kv_cache).quantize_all()


def _keep_body_types(op: Op, k: int, dtype: DType) -> None:
    """An einsum whose operand `k` changed dtype reads it as its old dtype where the body used it bare, so
    the body's arithmetic keeps its types; a cast already around the read reads the new operand directly."""
    if not isinstance(op, EinsumOp):
        return
    op.attrs.pop("counts", None)  # --lift-einsum's annotation counted the old operand
    name = op.inputs[k].name

    def reads(e: Expr) -> bool:  # einsum bodies name their operands bare
        return isinstance(e, NameRef) and e.name == name

    def fix(e: Expr) -> Expr | None:
        if reads(e):
            return Cast(dtype, e)
        if isinstance(e, Cast) and isinstance(e.operand, Cast) and reads(e.operand.operand):
            return Cast(e.dtype, e.operand.operand)
        return None

    for stmt in op.body:
        stmt.value = rewrite(stmt.value, fix)


@dataclass(frozen=True)
class Quantize(Pass):
    """Stores weights, the KV cache and activations in low precision as serving kernels do, and runs each
    contraction at the precision of its operands (docs/quantization.md). Weights become packed codes with
    their scales as new arguments and a dequantization kernel before their reader (vector work that
    --fuse puts in the reader's group); `activations=fp8` feeds contractions fp8 operands (the fp8 tensor
    peak), `nvfp4`/`mxfp4` block-scaled fp4 ones (W4A4, the fp4 tensor peak); `kv_cache` stores every write
    of the cache packed. Run it after --lift-einsum, before --fuse.

    Before (`quantize{weights=int4}`; W: 4096 x 4096 bf16, 33,554,432 B):
        %y = solar.einsum @fc "ik,jk->ij" (%x as A, %w as B) ...
    After (W: 4096 x 4096 i4, 8,388,608 B; %w_scale: 4096 x 32 f16, 262,144 B):
        %y_1 = solar.kernel @dequant(%w as Q, %w_scale as S) -> (Y: tensor<4096x4096xbf16>) ...
        %y = solar.einsum @fc "ik,jk->ij" (%x as A, %y_1 as B) ...
    """

    name = "quantize"
    summary = ("Quantize weights (int8|int4|fp8|nvfp4|mxfp4), the KV cache (fp8|int8|int4), activations "
               "(fp8|nvfp4|mxfp4)")
    primary_option = "weights"
    requires = ("lift-einsum",)
    weights: WeightFormat = "none"
    group_size: int = 0
    kv_cache: CacheFormat = "none"
    activations: ActivationFormat = "none"
    zero_point: bool = False
    exclude: str = ""
    block_rows: int = 0

    def prerequisite_met(self, name: str, module: ModuleOp) -> bool:
        return name == "lift-einsum" and any(isinstance(op, EinsumOp) for op in module.walk())

    @property
    def options(self) -> QuantizeOptions:
        return QuantizeOptions(self.weights, self.group_size, self.kv_cache, self.activations, self.zero_point,
                               tuple(p.strip() for p in self.exclude.split(",") if p.strip()), self.block_rows)

    def apply(self, ctx: PassContext, module: ModuleOp) -> None:
        try:
            summary = quantize_module(module, self.options)
        except QuantizeError as err:
            self.error(ctx, str(err), module.loc)
            return
        for message, loc in summary.remarks:
            self.remark(ctx, message, loc)
        ctx.results.put(summary)
