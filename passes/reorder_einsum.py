"""--reorder-einsum: re-associates chains of contractions (associativity) to cut FLOPs, bytes or SOL time."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from solar.backends.contraction_order import OBJECTIVES, Cost, Network, Order, add_work, best_order
from solar.backends.cost import Peaks, Work
from solar.backends.report import quantity, seconds
from solar.backends.sol_results import WrittenOrder
from solar.ir.analysis.counts import einsum_counts
from solar.ir.analysis.einsum_chains import Atom, Chain, ChainFinder, relabel_map
from solar.ir.analysis.units import Uses, walk_blocks
from solar.ir.expr import Binary, Expr, FloatLit, NameRef
from solar.ir.ops import (
    Binding,
    EinsumOp,
    EinsumStmt,
    FuncOp,
    ModuleOp,
    Op,
    ReshapeOp,
    SymbolRef,
    TensorDecl,
    Value,
)
from solar.ir.pass_manager import Pass, PassContext
from solar.ir.rewrite import defined_values
from solar.ir.rewriter import NameGenerator
from solar.ir.types import DType, TensorType
from solar.targets.loader import TargetError, load_target

_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


@dataclass
class ChainReport:
    """What the pass found for one chain (also kept in `ctx.results[ReorderResult]`)."""

    root: str
    tensors: int
    before: Cost
    after: Cost
    rewritten: bool
    method: str
    order: list[str] = field(default_factory=list)


@dataclass
class ReorderResult(WrittenOrder):
    original: ModuleOp  # the module before any rewrite, for --sol to report both orders
    chains: list[ChainReport]


@dataclass(frozen=True)
class ReorderEinsum(Pass):
    """Finds chains of contractions (linear `solar.einsum` ops, each result read once by the next, directly or
    through `solar.permute` and split-or-merge `solar.reshape`), merges each into one tensor network and
    rewrites it in the order that minimises the objective (opt_einsum's path search; docs/reorder.md).
    Never crosses a non-linear op, a reduction other than a sum, a change of dtype or a value also used
    outside the chain (unless `recompute`, which keeps that value's producer and counts it). A remark on every
    chain gives FLOPs and bytes before and after; a chain already in its best order is left unchanged.

    Before:
        %t = solar.einsum @mm1 "ij,jk->ik" (%a as A, %b as B) -> (T: tensor<64x64xf32>) { T += A * B }
        %y = solar.einsum @mm2 "ik,kl->il" (%t as T, %c as C) -> (Y: tensor<64x2xf32>) { Y += T * C }
    After:
        %y_r0 = solar.einsum @mm2.r0 "jk,kl->jl" (%b as A, %c as B) -> (Y: tensor<64x2xf32>)
                  attributes {kernel = @mm2, reorder = {chain = @mm2, step = 0}} { Y += A * B }
        %y = solar.einsum @mm2.r1 "jl,ij->il" (%y_r0 as A, %a as B) -> (Y: tensor<64x2xf32>) ... { Y += A * B }
    """

    name = "reorder-einsum"
    summary = "Re-associate einsum chains to cut FLOPs (objective=flops|bytes|sol, recompute=false)"
    primary_option = "objective"
    objective: str = "flops"
    target: str = ""  # for objective=sol; solar-opt fills in the --sol target when this is empty
    allow_tf32: bool = False
    recompute: bool = False

    def apply(self, ctx: PassContext, module: ModuleOp) -> None:
        if self.objective not in OBJECTIVES:
            ctx.diagnostics.error(f"reorder-einsum: objective must be one of {', '.join(OBJECTIVES)}, "
                                  f"not '{self.objective}'", module.loc)
            return
        peaks = None
        if self.objective == "sol":
            if not self.target:
                ctx.diagnostics.error("reorder-einsum: objective=sol needs a target (target=h100, or a --sol pass "
                                      "later in the pipeline)", module.loc)
                return
            try:
                peaks = Peaks(load_target(self.target.split(",")[0].strip()))
            except TargetError as err:
                ctx.diagnostics.error(f"reorder-einsum: {err}", module.loc)
                return
        missing = [p.name for p in module.params if p.default is None]
        if missing:
            ctx.diagnostics.remark(f"reorder-einsum: nothing reordered: size parameters {', '.join(missing)} have "
                                   "no values (--bind-params)", module.loc)
            return
        original = copy.deepcopy(module)
        reports: list[ChainReport] = []
        for func in module.funcs:
            uses = Uses.of(func)
            for block in list(walk_blocks(func)):
                finder = ChainFinder(block, uses, module.param_values(), self.recompute)
                chains = finder.chains()
                for r in finder.refusals:
                    ctx.diagnostics.remark(f"reorder-einsum: the chain through @{r.consumer.symbol} stops at "
                                           f"%{r.value.name}: {r.reason}", r.consumer.loc)
                for chain in chains:
                    report = _Rewrite(self, ctx, module, func, block, chain, uses, peaks).run()
                    if report is not None:
                        reports.append(report)
        if any(r.rewritten for r in reports):
            ctx.results.put(ReorderResult(original, reports))


class _Rewrite:
    def __init__(self, opts: ReorderEinsum, ctx: PassContext, module: ModuleOp, func: FuncOp, block: list[Op],
                 chain: Chain, uses: Uses, peaks: Peaks | None) -> None:
        self.opts = opts
        self.ctx = ctx
        self.module = module
        self.func = func
        self.block = block
        self.chain = chain
        self.uses = uses
        self.peaks = peaks
        self.params = [p.name for p in module.params]
        self.values = module.param_values()
        root_type = chain.root.outputs[0].type
        self.dtype = root_type.dtype
        # The precision the chain's contractions are priced at (allow_tf32: f32 on TF32 tensor cores).
        self.priced = DType.TF32 if opts.allow_tf32 and self.dtype is DType.F32 else self.dtype

    def run(self) -> ChainReport | None:
        chain = self.chain
        if len(chain.leaves) < 2 or (len(chain.einsums) == 1 and len(chain.leaves) <= 2):
            return None  # one contraction of two tensors: there is no other order
        letters = _name_atoms([*chain.leaf_atoms(), chain.output_atoms()])
        if letters is None:
            self.ctx.diagnostics.remark(f"reorder-einsum: chain @{chain.root.symbol} has more than {len(_LETTERS)} "
                                        "indices; left as it is", chain.root.loc)
            return None
        net = Network(tuple("".join(letters[a] for a in atoms) for atoms in chain.leaf_atoms()),
                      "".join(letters[a] for a in chain.output_atoms()),
                      {letters[a]: a.size for a in letters})
        removed = self._removed()
        kept = [e.op for e in chain.einsums if e.op not in removed]
        before = self._cost([e.op for e in chain.einsums])
        order, after = best_order(net, self.opts.objective, self.priced, self.peaks, chain.factor != 1.0)
        for w in self._cost(kept).works:
            add_work(after, w, self.peaks)
        report = ChainReport(chain.root.symbol, len(net.inputs), before, after, False, order.method,
                             list(order.steps))
        what = (f"reorder-einsum: chain @{chain.root.symbol} ({len(net.inputs)} tensors, {len(chain.einsums)} "
                f"einsums, \"{net.equation}\")")
        figures = (f"FLOPs {quantity(before.flops)} → {quantity(after.flops)}, bytes {quantity(before.bytes)} → "
                   f"{quantity(after.bytes)}" + (f", {self.peaks.target.name} SOL {seconds(before.seconds)} → "
                                                  f"{seconds(after.seconds)}" if self.peaks is not None else ""))
        if after.key(self.opts.objective) >= before.key(self.opts.objective):
            self.ctx.diagnostics.remark(f"{what} is already in its best order for {self.opts.objective}: {figures}",
                                        chain.root.loc)
            return report
        gain = before.flops / after.flops if after.flops else float("inf")
        kept_note = f"; {len(kept)} einsum(s) kept for their other readers (recompute)" if kept else ""
        self.ctx.diagnostics.remark(f"{what} reordered as {' ; '.join(order.steps)} by {order.method}: {figures} "
                                    f"({gain:.3g}× fewer FLOPs){kept_note}", chain.root.loc)
        self._rewrite(order, net, letters, removed)
        report.rewritten = True
        return report

    # ---- costs ---------------------------------------------------------------------------------------
    def _cost(self, einsums: list[EinsumOp]) -> Cost:
        """FLOPs (exact counts) and traffic of einsums, those of one kernel (consecutive, same `kernel`) a
        unit: it reads what it does not make and writes what others read."""
        cost = Cost()
        units: list[list[EinsumOp]] = []
        for op in sorted(einsums, key=self._position):
            if units and _kernel_of(units[-1][-1]) == _kernel_of(op):
                units[-1].append(op)
            else:
                units.append([op])
        for unit in units:
            inside = set(unit)
            work = Work(unit[0].symbol, "einsum")
            seen: set[Value] = set()
            for op in unit:
                counts = einsum_counts(op, self.params, self.values)
                work.flops_tensor[self.priced] += counts.flops_tensor
                work.flops_vector[self.dtype] += counts.flops_vector
                for b in op.inputs:
                    if b.value not in seen and _source(b.value).owner not in inside:
                        seen.add(b.value)
                        work.bytes += self._nbytes(b.value)
                for r in op.results:
                    if any(reader not in inside for reader in self._readers(r)):
                        work.bytes += self._nbytes(r)
            add_work(cost, work, self.peaks)
        return cost

    def _position(self, op: Op) -> int:
        return self.block.index(op)

    def _readers(self, v: Value) -> list[Op]:
        """The ops that read `v`, looking through views."""
        out: list[Op] = []
        for r in self.uses.of_value(v):
            if relabel_map(r) is not None:
                out.extend(self._readers(r.results[0]))
            else:
                out.append(r)
        return out

    def _nbytes(self, v: Value) -> int:
        assert v.type is not None
        return v.type.nbytes(self.values)

    def _removed(self) -> set[Op]:
        """The chain's ops that go: the root, and every member all of whose readers go (with recompute, a
        member also read outside stays, and so does what it reads)."""
        members = self.chain.ops
        removed: set[Op] = {self.chain.root}
        changed = True
        while changed:
            changed = False
            for op in members:
                if op not in removed and all(r in removed for v in op.results for r in self.uses.of_value(v)):
                    removed.add(op)
                    changed = True
        return removed

    # ---- the rewrite ---------------------------------------------------------------------------------
    # Longer than most: the new chain's steps, their names, counts and the final reshape are built together in program
    # order and replace the old chain at once.
    def _rewrite(self, order: Order, net: Network, letters: dict[Atom, str], removed: set[Op]) -> None:
        chain = self.chain
        root = chain.root
        values = NameGenerator(v.name for v in defined_values(self.func))
        symbols = NameGenerator.symbols_of(self.func)
        dims = {letters[a]: a.dim for a in letters}
        new_ops: list[Op] = []
        base = root.results[0].name

        current: list[Value] = []
        covers: list[list[int]] = []
        for k, ((value, _, _), term) in enumerate(zip(chain.leaves, net.inputs, strict=True)):
            current.append(self._view(value, tuple(dims[c] for c in term), values.fresh(f"{value.name}_v"), new_ops))
            covers.append([k])
        final = root.results[0]
        out_type = root.outputs[0].type
        needs_reshape = tuple(dims[c] for c in net.output) != tuple(out_type.shape)
        for k, (positions, eq) in enumerate(zip(order.positions, order.steps, strict=True)):
            # opt_einsum pops the operands from the back; the step reads them in program order instead.
            args = [current.pop(i) for i in positions][::-1]
            leaves = [leaf for i in positions for leaf in covers.pop(i)]
            last = k == len(order.steps) - 1
            lca = self._lca(leaves)
            terms, out = eq.split("->")
            terms = ",".join(terms.split(",")[::-1])
            eq = f"{terms}->{out}"
            rtype = out_type if last and not needs_reshape else TensorType(tuple(dims[c] for c in out), self.dtype)
            symbol = symbols.fresh(f"{lca.symbol}.r{k}")
            names = [chr(ord("A") + i) for i in range(len(args))]
            result_name = "Y" if "Y" not in names else "Z"
            product: Expr = NameRef(names[0])
            for n in names[1:]:
                product = Binary("*", product, NameRef(n))
            sums = bool(set(terms.replace(",", "")) - set(out))
            body = [EinsumStmt(result_name, "+=" if sums else "=", product, lca.loc)]
            if last and chain.factor != 1.0:
                body.append(EinsumStmt(result_name, "=", Binary("*", NameRef(result_name),
                                                                  FloatLit(chain.factor)), lca.loc))
            op = EinsumOp(symbol, eq, [Binding(a, n, lca.loc) for a, n in zip(args, names, strict=True)],
                          [TensorDecl(result_name, rtype, lca.loc)], body, None, lca.loc)
            op.src_loc = lca.src_loc
            op.attrs["kernel"] = lca.attrs.get("kernel", SymbolRef(lca.symbol))
            op.attrs["reorder"] = {"chain": SymbolRef(root.symbol), "step": k}
            if "counts" in root.attrs:
                op.attrs["counts"] = einsum_counts(op, self.params, self.values).as_attr()
            if last and not needs_reshape:
                final.owner = op
                op.results = [final]
            else:
                op.results = [Value(values.fresh(f"{base}_r{k}"), rtype, op, lca.loc)]
            new_ops.append(op)
            current.append(op.results[0])
            covers.append(leaves)
        if needs_reshape:
            reshape = ReshapeOp([current[0]], [out_type], loc=root.loc)
            reshape.src_loc = root.src_loc
            final.owner = reshape
            reshape.results = [final]
            new_ops.append(reshape)
        rebuilt: list[Op] = []
        for op in self.block:
            if op is root:
                rebuilt.extend(new_ops)
            elif op not in removed:
                rebuilt.append(op)
        self.block[:] = rebuilt

    def _view(self, value: Value, shape: tuple[Any, ...], name: str, new_ops: list[Op]) -> Value:
        """`value` reshaped to its atoms' shape (a view), when that differs from its own."""
        assert value.type is not None
        if tuple(value.type.shape) == shape:
            return value
        t = TensorType(shape, value.type.dtype)
        op = ReshapeOp([value], [t], loc=self.chain.root.loc)
        op.results = [Value(name, t, op, self.chain.root.loc)]
        new_ops.append(op)
        return op.results[0]

    def _lca(self, leaves: list[int]) -> EinsumOp:
        """The original einsum that a step's work belongs to: the lowest one above all the leaves it reads."""
        paths = []
        for k in leaves:
            node: Op = self.chain.leaves[k][2]
            path = [node]
            while node in self.chain.parent:
                node = self.chain.parent[node]
                path.append(node)
            paths.append(path)
        common = set(paths[0]).intersection(*map(set, paths[1:]))
        lca = next(n for n in paths[0] if n in common)
        assert isinstance(lca, EinsumOp)
        return lca


def _name_atoms(terms: list[list[Atom]]) -> dict[Atom, str] | None:
    """A letter per atom: the einsum letter it came from where free (outputs first), else the next free one."""
    atoms: list[Atom] = []
    for term in [terms[-1], *terms[:-1]]:
        atoms.extend(a for a in term if a not in atoms)
    if len(atoms) > len(_LETTERS):
        return None
    letters: dict[Atom, str] = {}
    used: set[str] = set()
    for a in atoms:
        if a.hint and a.hint not in used:
            letters[a] = a.hint
            used.add(a.hint)
    free = (c for c in _LETTERS if c not in used)
    for a in atoms:
        if a not in letters:
            letters[a] = next(free)
    return letters


def _source(v: Value) -> Value:
    """The value a chain of views starts from."""
    while relabel_map(v.owner) is not None:
        v = v.owner.operands[0]
    return v


def _kernel_of(op: EinsumOp) -> Any:
    k = op.attrs.get("kernel")
    return k.name if isinstance(k, SymbolRef) else op.symbol


