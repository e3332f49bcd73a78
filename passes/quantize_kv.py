"""The KV cache for --quantize (passes/quantize.py): every write of keys and values stored packed.

Three kinds of write reach the cache, and each is stored at the cache's dtype:
- an append (`solar.concat {append = true}`, a decode step's `DynamicCache`): the cache argument is packed,
  the new token quantized before the append;
- an in-place store (`solar.scatter {in_place = true}`, a `StaticCache`: a decode step's cache argument, or
  a prefill's freshly zeroed one): the buffer is packed, the stored tokens quantized before the store;
- a prefill's returned keys and values (the entry function's `kv_cache_results`, as solar-llm's export
  marks them): quantized before they are returned.

fp8 takes one f32 scale per cache tensor (an argument); int8/int4 one f16 scale per token and head, computed
from the tokens written (`@scale_cache`: the largest |x| over the head) and stored beside them (a cache of
scales, appended or stored alike). Attention reads the cache through `@dequant_cache`; what the function
returns of the cache stays packed, with its scales.
"""

from __future__ import annotations

from typing import Any

from solar.ir import attr_names
from solar.ir.builder import BlockBuilder, call, cast
from solar.ir.dtypes import DType
from solar.ir.expr import Access, Expr, IndexRef, IntLit
from solar.ir.ops import ConcatOp, ConstantOp, Op, ReturnOp, ScatterOp, SliceEntry, SliceOp, Value
from solar.ir.rewriter import uses_of
from solar.ir.types import TensorType

from .quantize_formats import CACHE_CODES, INT_LARGEST
from .quantize_kernels import affine_loops


class KvCache:
    """Packs every write of the KV cache in the function of `rewrite` (passes/quantize.py `_Rewrite`)."""

    def __init__(self, rewrite: Any, fmt: str) -> None:
        self.rw = rewrite
        self.func = rewrite.func
        self.codes = CACHE_CODES[fmt]
        self.per_token = self.codes is not DType.F8E4M3

    def quantize_all(self) -> list[str]:
        done = []
        updates = [o for o in self.func.body if _is_cache_update(o)]
        for op in updates:
            dest = op.args[0]
            fresh = isinstance(dest.owner, ConstantOp)
            if (dest.owner is not self.func and not fresh) or dest.type is None or not dest.type.dtype.is_float:
                continue
            self._update(op, dest)
            done.append(dest.name)
        ret = next((o for o in self.func.body if isinstance(o, ReturnOp)), None)
        marked = self.func.attrs.get(attr_names.KV_CACHE_RESULTS) or []
        if ret is not None:
            for k in marked:
                v = ret.values[k]
                stored = any(v is u.results[0] for u in updates)  # a static cache's buffer: packed already
                if v.type is not None and v.type.dtype.is_float and not stored:
                    self._returned(ret, k, v)
                    done.append(v.name)
        return done

    # -- the pieces each kind of write shares ----------------------------------------------------------
    def _scale_of(self, name: str, new: Value, anchor: Op) -> Value:
        """The scale the new tokens are quantized with: fp8's per-tensor argument, or their own f16 scale per
        token and head (the largest |x| over the head, mapped to the codes' largest value)."""
        if not self.per_token:
            return self.rw._arg(f"{name}_scale", TensorType((1,), DType.F32))
        nt = new.type
        assert nt is not None
        largest = INT_LARGEST[self.codes]

        def new_scales(b: BlockBuilder) -> Value:
            out = TensorType((*nt.shape[:-1], 1), DType.F16)
            k = b.kernel(self.rw.symbols.fresh("scale_cache"), [(new, "X")], [("S", out)])
            with affine_loops(k, nt.shape) as idx:
                magnitude = cast(DType.F16, call("abs", Access("X", tuple(idx))))
                k.reduce(k["S"][(*idx[:-1], IntLit(0))], "max=", magnitude)
            with affine_loops(k, out.shape) as idx:
                k.assign(k["S"][tuple(idx)], k["S"][tuple(idx)] * (1.0 / largest))
            return k.results[0]

        return self.rw._insert_before(anchor, new_scales)

    def _index(self, idx: list[IndexRef]) -> tuple[Expr, ...]:
        return (*idx[:-1], IntLit(0)) if self.per_token else (IntLit(0),)

    def _quantized(self, new: Value, scale: Value, anchor: Op) -> Value:
        nt = new.type
        assert nt is not None

        def value(idx: list[IndexRef]) -> Expr:
            return cast(self.codes, cast(DType.F32, Access("X", tuple(idx))) / cast(DType.F32,
                                                                                    Access("S", self._index(idx))))

        return self.rw._insert_before(anchor, lambda b: self.rw._map_kernel(
            b, "quantize_cache", [(new, "X"), (scale, "S")], nt.with_dtype(self.codes), value))

    # -- appends and in-place stores ---------------------------------------------------------------------
    def _update(self, op: ConcatOp | ScatterOp, dest: Value) -> None:
        dt = dest.type
        assert dt is not None
        top = self.rw._top(op)
        source = 1 if isinstance(op, ConcatOp) else 2
        new = op.args[source]
        if isinstance(dest.owner, ConstantOp):  # a fresh static cache: its zeros at the cache's dtype
            dest.owner.type = dt.with_dtype(self.codes)
        dest.type = dt.with_dtype(self.codes)
        new_scale = self._scale_of(dest.name, new, top)
        full_scale = new_scale
        if self.per_token:  # the scales are a cache of their own, written as the keys are
            scale_type = TensorType((*dt.shape[:-1], 1), DType.F16)
            if isinstance(dest.owner, ConstantOp):
                holder = self.rw._insert_before(top, lambda b: b.constant(0.0, scale_type, hint="cst_scale"))
            else:
                holder = self.rw._arg(f"{dest.name}_scale", scale_type)
            axis = op.attrs["axis"]
            if isinstance(op, ConcatOp):
                full_scale = self.rw._insert_before(top, lambda b: b.concat([holder, new_scale], axis,
                                                                              hint="cat_scale"))
                assert full_scale.owner is not None
                full_scale.owner.attrs["append"] = True
            else:
                full_scale = self.rw._insert_before(top, lambda b: b.scatter(holder, op.args[1], new_scale, axis,
                                                                               "none", scale_type, hint="sc_scale"))
                assert full_scale.owner is not None
                full_scale.owner.attrs["in_place"] = True
        op.set_operand(source, self._quantized(new, new_scale, top))
        result = op.results[0]
        rt = result.type
        assert rt is not None
        result.type = rt.with_dtype(self.codes)
        op.set_declared_types([result.type])
        uses = uses_of(self.func.body).get(result, [])
        returned = self._returned_slices(result, uses)

        def dequantized(idx: list[IndexRef]) -> Expr:
            return cast(rt.dtype, cast(DType.F32, Access("Q", tuple(idx))) * cast(DType.F32,
                                                                                  Access("S", self._index(idx))))

        readers = [(o, k) for o, k in uses if o not in returned and not isinstance(o, ReturnOp)]
        if readers:
            at = self.func.body.index(top) + 1
            dequant = self.rw._insert_before(self.func.body[at], lambda b: self.rw._map_kernel(
                b, "dequant_cache", [(result, "Q"), (full_scale, "S")], rt, dequantized))
            for o, k in readers:
                o.set_operand(k, dequant)
        for o in returned:
            o.results[0].type = o.results[0].type.with_dtype(self.codes) if o.results[0].type else None
            if isinstance(o, SliceOp):
                o.type = o.results[0].type
            if self.per_token:
                self._return_new_scales(o, full_scale)
        if self.per_token and any(isinstance(o, ReturnOp) for o, _ in uses):
            next(o for o, _ in uses if isinstance(o, ReturnOp)).values.append(full_scale)

    def _returned_slices(self, result: Value, uses: list[tuple[Op, int]]) -> list[Op]:
        """The slices of the cache that the function returns (what the cache gains), kept packed."""
        ret = next((op for op in self.func.body if isinstance(op, ReturnOp)), None)
        all_uses = uses_of(self.func.body)
        out = []
        for op, _ in uses:
            if isinstance(op, SliceOp) and ret is not None and all(
                    o is ret for o, _ in all_uses.get(op.results[0], [])) and all_uses.get(op.results[0]):
                out.append(op)
        return out

    def _return_new_scales(self, returned: SliceOp, full_scale: Value) -> None:
        """The new token's scales are returned beside its codes: the cache gains both."""
        ret = next(op for op in self.func.body if isinstance(op, ReturnOp))
        st = full_scale.type
        assert st is not None and returned.results[0].type is not None
        shape = (*returned.results[0].type.shape[:-1], 1)
        last = returned.entries[-1]
        entries = [*returned.entries[:-1], SliceEntry(start=IntLit(0), stop=IntLit(1), loc=last.loc)]
        sliced = self.rw._insert_before(ret, lambda b: b.slice(full_scale, entries, TensorType(shape, st.dtype),
                                                               hint="slice_scale"))
        ret.values.append(sliced)

    # -- a prefill's returned keys and values --------------------------------------------------------------
    def _returned(self, ret: ReturnOp, k: int, v: Value) -> None:
        """The keys or values a prefill returns (what it writes into the cache), quantized before the return."""
        scale = self._scale_of(f"{v.name}_cache", v, ret)
        ret.set_operand(k, self._quantized(v, scale, ret))
        if self.per_token:
            ret.values.append(scale)


def _is_cache_update(op: Op) -> bool:
    return (isinstance(op, ConcatOp) and op.attrs.get("append") is True) or (
        isinstance(op, ScatterOp) and op.attrs.get("in_place") is True)


__all__ = ["KvCache"]
