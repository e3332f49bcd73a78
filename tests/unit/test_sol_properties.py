"""Properties of the SOL report (docs/sol.md) on every bundled example and on random graphs:

- whole graph ≤ fused ≤ unfused, per target;
- every mode moves at least the compulsory traffic (the entry function's arguments read, its results
  written);
- fused time: mode=none ≥ producer-consumer ≥ greedy;
- the inverse roofline at its own output meets the latency exactly: scaling a copy of the target by
  `both_factor` (every peak and the bandwidth) makes the mode take exactly the latency; `compute_factor`
  and `bandwidth_factor` do the same for the compute and memory terms alone.
"""

from __future__ import annotations

import copy
import dataclasses
import math
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from test_sol_support import MODES, run_sol

from solar.backends.cost import CostModel, Peaks
from solar.backends.report import TargetReport, analyse
from solar.ir.analysis.liveness import drop_dead
from solar.ir.ops import ModuleOp
from solar.targets.loader import Figure, Target, load_target

EXAMPLES = sorted((Path(__file__).resolve().parents[2] / "examples").glob("*.sir"))
TARGETS = ["h100-sxm", "b200", "jetson-thor"]
FUSE_MODES = ("none", "producer-consumer", "greedy")
SLACK = 1e-12  # relative: sums in a different order may differ in the last bits


def leq(a: float, b: float) -> bool:
    return a <= b * (1 + SLACK) or math.isclose(a, b, rel_tol=SLACK)


def skip_reason(text: str) -> str | None:
    """Why an example cannot be analysed as it is (None: it can)."""
    header = re.search(r"solar\.module\s+@\w+\s*\[([^\]]*)\]", text)
    if header:
        unbound = [p.strip() for p in header.group(1).split(",") if p.strip() and "=" not in p]
        if unbound:
            return f"size parameters without defaults: {', '.join(unbound)} (bind them to analyse)"
    return None


def check_modes(r: TargetReport, compulsory: int | None = None) -> None:
    """whole ≤ fused ≤ unfused in time; every mode's traffic ≥ the whole graph's (the compulsory traffic);
    the same FLOPs in every mode."""
    unfused, fused, whole = (r.modes[m] for m in MODES)
    assert leq(whole.seconds, fused.seconds), (r.name, whole.seconds, fused.seconds)
    assert leq(fused.seconds, unfused.seconds), (r.name, fused.seconds, unfused.seconds)
    # Traffic: the compulsory traffic is the least; a group moves no more than its units apart.
    assert whole.bytes <= fused.bytes <= unfused.bytes, (r.name, whole.bytes, fused.bytes, unfused.bytes)
    if compulsory is not None:
        assert whole.bytes == compulsory, (r.name, whole.bytes, compulsory)
    assert unfused.flops == fused.flops == whole.flops
    assert r.fusion_gain >= 1 - SLACK


def scaled(target: Target, compute: float, memory: float) -> Target:
    """A copy of `target` with every compute peak × `compute` and the DRAM bandwidth × `memory`."""
    figures = {}
    for name, fig in target.figures.items():
        factor = compute if name.endswith(("_vector", "_tensor")) else memory if name == "dram_bandwidth" else 1.0
        if fig.known and factor != 1.0:
            assert fig.value is not None
            fig = dataclasses.replace(fig, value=fig.value * factor)
        figures[name] = fig
    return dataclasses.replace(target, figures=figures)


def check_inverse(module: ModuleOp, reports: list[TargetReport], latency_s: float) -> None:
    """At the inverse roofline's own factors, each mode takes the latency (to 1e-9 relative): all peaks and
    the bandwidth × both_factor; the compute peaks alone × compute_factor (Σ over the mode's rooflines of
    their compute term, docs/sol.md); the bandwidth alone × bandwidth_factor (Σ of the memory terms)."""
    module = copy.deepcopy(module)
    drop_dead(module)  # as --sol prices it
    model = CostModel(module)
    works = {"unfused": model.units, "fused": model.groups, "whole_graph": [model.whole_graph()]}
    for r in reports:
        assert r.inverse is not None
        target = r.peaks.target
        for mode in MODES:
            inv = r.inverse[mode]
            assert inv.latency_s == latency_s
            both = analyse(model, Peaks(scaled(target, inv.both_factor, inv.both_factor)), None)
            assert math.isclose(both.modes[mode].seconds, latency_s, rel_tol=1e-9), (r.name, mode)
            if inv.compute_factor > 0:
                peaks = Peaks(scaled(target, inv.compute_factor, 1.0))
                compute = sum(max(t.tensor_s, t.vector_s) for t in map(peaks.time, works[mode]))
                assert math.isclose(compute, latency_s, rel_tol=1e-9), (r.name, mode)
            if inv.bandwidth_factor > 0:
                memory = analyse(model, Peaks(scaled(target, 1.0, inv.bandwidth_factor)), None).modes[mode]
                assert math.isclose(memory.memory_s, latency_s, rel_tol=1e-9), (r.name, mode)
                assert math.isclose(inv.least_bandwidth, target.dram_bandwidth * inv.bandwidth_factor,
                                    rel_tol=1e-12)


# ---- every example ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_example_properties(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    reason = skip_reason(text)
    if reason:
        pytest.skip(reason)
    fused_by_mode: dict[str, dict[str, float]] = {}
    for mode in FUSE_MODES:
        run = run_sol(text, TARGETS, mode=mode, latency="3us", name=path.name)
        for r in run.reports:
            check_modes(r)
        fused_by_mode[mode] = {r.name: r.modes["fused"].seconds for r in run.reports}
        if mode == "greedy":
            check_inverse(run.module, run.reports, 3e-6)
    for t in TARGETS:
        none, pc, greedy = (fused_by_mode[m][t] for m in FUSE_MODES)
        assert leq(greedy, pc) and leq(pc, none), (t, none, pc, greedy)


def test_an_example_is_skipped_only_for_unbound_sizes() -> None:
    reasons = {p.stem: skip_reason(p.read_text(encoding="utf-8")) for p in EXAMPLES}
    assert reasons["mlp"] is None and reasons["params"] is None  # defaults given
    assert skip_reason("solar.module @m [M, N = 2] {\n}") == \
        "size parameters without defaults: M (bind them to analyse)"


# ---- random graphs ----------------------------------------------------------------------------------------


@dataclasses.dataclass
class Graph:
    """A random DAG of kernels on N×N matrices and N-vectors (some in solar.for loops, some reading through
    transposes, some through the overlapping slices %wide[0:N] and %wide[1:N+1] of an (N+1)-vector),
    written as SIR text."""

    n: int
    dtype: str
    args: list[tuple[str, bool]] = dataclasses.field(default_factory=list)  # (name, is a matrix)
    values: list[tuple[str, bool]] = dataclasses.field(default_factory=list)  # args and op results
    body: list[str] = dataclasses.field(default_factory=list)
    read: set[str] = dataclasses.field(default_factory=set)
    views: dict[str, str] = dataclasses.field(default_factory=dict)  # a permute's result -> its operand
    deps: dict[str, list[str]] = dataclasses.field(default_factory=dict)  # a result -> what its op reads
    offsets: dict[str, int] = dataclasses.field(default_factory=dict)  # a slice of %wide -> where it starts

    def ty(self, matrix: bool) -> str:
        return f"tensor<{self.n}x{self.n}x{self.dtype}>" if matrix else f"tensor<{self.n}x{self.dtype}>"

    def nbytes(self, matrix: bool) -> int:
        return (self.n * self.n if matrix else self.n) * self.itemsize

    @property
    def itemsize(self) -> int:
        return {"f32": 4, "bf16": 2, "f16": 2}[self.dtype]

    def kernel(self, kind: str, operands: list[str]) -> None:
        k = len(self.body)
        out = f"%v{k}"
        n = self.n
        binds = ", ".join(f"{v} as {chr(ord('A') + i)}" for i, v in enumerate(operands))
        self.read.update(operands)
        self.deps[out] = list(operands)

        def loops(*statement: str, depth: int = 2) -> str:
            indices = ["%i", "%j", "%k"][:depth]
            head = " ".join(f"affine.for {i} = 0 to {n} {{" for i in indices)
            return f"{head} {' '.join(statement)} {'}' * depth}"

        bodies = {
            "matmul": (True, loops("C[%i, %j] += A[%i, %k] * B[%k, %j]", depth=3)),
            "exp": (True, loops("C[%i, %j] = exp(A[%i, %j])")),
            "relu": (True, loops("C[%i, %j] = max(A[%i, %j], 0.0)")),
            "add": (True, loops("C[%i, %j] = A[%i, %j] + B[%i, %j]")),
            "bias": (True, loops("C[%i, %j] = A[%i, %j] * 0.5 + B[%j]")),
            "rowsum": (False, loops("C[%i] += A[%i, %j]")),
            "rowmax": (False, loops("C[%i] max= A[%i, %j]")),
            "scale": (False, loops("C[%i] = A[%i] * B[%i]", depth=1)),
        }
        matrix, body = bodies[kind]
        out_ty = self.ty(matrix)
        self.body.append(f"    {out} = solar.kernel @k{k}_{kind}({binds}) -> (C: {out_ty}) {{\n      {body}\n    }}")
        self.values.append((out, matrix))

    def permute(self, operand: str) -> None:
        out = f"%v{len(self.body)}"
        self.body.append(f"    {out} = solar.permute {operand} {{perm = [1, 0]}} : {self.ty(True)}")
        self.views[out] = operand
        self.deps[out] = [operand]
        self.values.append((out, True))

    def slice(self, offset: int) -> None:
        """%wide[offset : offset + N], an N-vector."""
        out = f"%v{len(self.body)}"
        self.body.append(f"    {out} = solar.slice %wide[{offset}:{offset + self.n}] : {self.ty(False)}")
        self.views[out] = "%wide"
        self.deps[out] = ["%wide"]
        self.offsets[out] = offset
        self.values.append((out, False))

    def loop(self, trips: int, init: str, other: str) -> None:
        """A solar.for of `trips` steps: each step's kernel reads the carried value and `other` (from outside)."""
        k = len(self.body)
        out, ty, n = f"%v{k}", self.ty(True), self.n
        self.read.update([init, other])
        self.deps[out] = [init, other]
        body = f"affine.for %i = 0 to {n} {{ affine.for %j = 0 to {n} {{ C[%i, %j] = A[%i, %j] * 0.5 + B[%i, %j] }}}}"
        self.body.append(
            f"    {out} = solar.for %t = 0 to {trips} iter_args(%s{k} = {init}) -> {ty} {{\n"
            f"      %n{k} = solar.kernel @k{k}_step(%s{k} as A, {other} as B) -> (C: {ty}) {{\n"
            f"        {body}\n      }}\n      solar.yield %n{k}\n    }}")
        self.values.append((out, True))

    def text(self, outputs: list[str]) -> str:
        wide = f", %wide: tensor<{self.n + 1}x{self.dtype}>" if self.offsets else ""
        params = ", ".join(f"{a}: {self.ty(m)}" for a, m in self.args) + wide
        types = {v: m for v, m in self.values}
        results = ", ".join(self.ty(types[o]) for o in outputs)
        results = f"({results})" if len(outputs) > 1 else results
        body = "\n".join(self.body)
        return (f"solar.module @random {{\n  solar.func @main({params}) -> {results} {{\n{body}\n"
                f"    solar.return {', '.join(outputs)}\n  }}\n}}\n")

    def base(self, v: str) -> str:
        """The value a chain of views reads."""
        while v in self.views:
            v = self.views[v]
        return v

    def compulsory(self, outputs: list[str]) -> int:
        """Arguments read by the units the outputs need (each in full: every kernel here reads all of its
        operands, through views or not) and results written, once per tensor (a returned argument, or a view
        of one, is not written)."""
        types = dict(self.values)
        args = dict(self.args)
        live: set[str] = set()  # what the outputs need: a result nobody needs is dead code, not priced
        stack = list(outputs)
        while stack:
            v = stack.pop()
            if v in self.deps and v not in live:
                live.add(v)
                stack.extend(self.deps[v])
        operands = {x for v in live if v not in self.views for x in self.deps[v]}
        read = {self.base(x) for x in operands}
        written = {self.base(o) for o in outputs} - set(args) - {"%wide"}
        # %wide: the union of the slices the live units read, N elements or all N + 1 of them.
        starts = {self.offsets[x] for x in operands if x in self.offsets}
        wide = (self.n + len(starts) - 1) * self.itemsize if starts else 0
        return sum(self.nbytes(m) for a, m in args.items() if a in read) + sum(self.nbytes(types[b]) for b in written) \
            + wide


KINDS = {"matmul": (True, True), "exp": (True,), "relu": (True,), "add": (True, True), "bias": (True, False),
         "rowsum": (True,), "rowmax": (True,), "scale": (False, False)}


@st.composite
def graphs(draw: st.DrawFn) -> tuple[str, int]:
    g = Graph(n=draw(st.sampled_from([4, 8, 16])), dtype=draw(st.sampled_from(["f32", "bf16", "f16"])))
    for k in range(draw(st.integers(1, 3))):
        g.args.append((f"%m{k}", True))
    g.args.append(("%vec", False))
    g.values = list(g.args)
    for _ in range(draw(st.integers(1, 7))):
        choice = draw(st.integers(0, 14))
        if choice >= 12:
            g.slice(draw(st.integers(0, 1)))
            continue
        if choice < 2:
            g.permute(draw(st.sampled_from([v for v, m in g.values if m])))
            continue
        if choice == 2:
            matrices = [v for v, m in g.values if m]
            g.loop(draw(st.integers(1, 3)), draw(st.sampled_from(matrices)), draw(st.sampled_from(matrices)))
            continue
        kind = draw(st.sampled_from(sorted(KINDS)))
        # Recent values are likelier operands, so that chains form as well as wide DAGs.
        operands = []
        for want_matrix in KINDS[kind]:
            pool = [v for v, m in g.values if m == want_matrix]
            operands.append(pool[-1 - draw(st.integers(0, len(pool) - 1))] if draw(st.booleans())
                            else draw(st.sampled_from(pool)))
        g.kernel(kind, operands)
    # Results: the last kernel's, and maybe up to two other values (kernel results, views, arguments).
    results = [v for v, _ in g.values[len(g.args):] if v not in g.views]
    if not results:  # only views were drawn: add one kernel
        g.kernel("relu", [next(v for v, m in reversed(g.values) if m)])
        results = [g.values[-1][0]]
    extra = [v for v, _ in g.values if v != results[-1] and draw(st.integers(0, 3)) == 0][:2]
    outputs = [*extra, results[-1]]
    return g.text(outputs), g.compulsory(outputs)


def overlapping_slices() -> tuple[str, int]:
    """Two kernels of one group reading %wide[0:N] and %wide[1:N+1] (issue 37): the group reads the union."""
    g = Graph(n=8, dtype="f32", args=[("%m0", True), ("%vec", False)])
    g.values = list(g.args)
    g.slice(0)
    g.slice(1)
    g.kernel("scale", ["%v0", "%vec"])
    g.kernel("scale", ["%v1", "%v2"])
    return g.text(["%v3"]), g.compulsory(["%v3"])


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(graph=graphs(), lift=st.booleans())
@example(graph=overlapping_slices(), lift=False)
def test_random_graph_properties(graph: tuple[str, int], lift: bool) -> None:
    text, compulsory = graph
    fused: dict[str, dict[str, float]] = {}
    for mode in FUSE_MODES:
        run = run_sol(text, ["h100-sxm", "jetson-thor"], lift=lift, mode=mode, latency="1us", name="random.sir")
        for r in run.reports:
            check_modes(r, compulsory)
        fused[mode] = {r.name: r.modes["fused"].seconds for r in run.reports}
        check_inverse(run.module, run.reports, 1e-6)
    for t in fused["none"]:
        assert leq(fused["greedy"][t], fused["producer-consumer"][t]), text
        assert leq(fused["producer-consumer"][t], fused["none"][t]), text


def test_inverse_roofline_with_a_custom_target_file(tmp_path: Path) -> None:
    """The same check through the command line: a target YAML with H100's figures × both_factor meets the
    latency (a custom target file, as a user would write one)."""
    import json

    import yaml

    from solar.targets.loader import TARGETS_DIR
    from solar.tools.solar_opt import run

    example = Path(__file__).resolve().parents[2] / "examples" / "mlp.sir"
    first = tmp_path / "first.json"
    assert run([str(example), "--lift-einsum", "--fuse", "--sol=h100", "--target-latency=500ns",
                f"--sol-report={first}", "-o", str(tmp_path / "out.sir")]) == 0
    doc = json.loads(first.read_text())
    for mode in MODES:
        factor = doc["targets"][0]["inverse"][mode]["both_factor"]
        raw = yaml.safe_load((TARGETS_DIR / "h100-sxm.yaml").read_text())
        raw["name"], raw["aliases"] = f"h100-x-{mode.replace('_', '-')}", []
        for section in ("compute", "memory"):
            for key, fig in raw[section].items():
                if isinstance(fig, dict) and (section == "compute" or key == "dram_bandwidth"):
                    fig["value"] = fig["value"] * factor
        custom = tmp_path / f"scaled-{mode}.yaml"
        custom.write_text(yaml.safe_dump(raw, allow_unicode=True))
        out = tmp_path / f"{mode}.json"
        assert run([str(example), "--lift-einsum", "--fuse", f"--sol={custom}", f"--sol-report={out}",
                    "-o", str(tmp_path / "out.sir")]) == 0
        seconds = json.loads(out.read_text())["targets"][0]["modes"][mode]["time_s"]
        assert math.isclose(seconds, 500e-9, rel_tol=1e-9), (mode, seconds)


def test_scaled_target_helper() -> None:
    h100 = load_target("h100-sxm")
    double = scaled(h100, 2.0, 4.0)
    assert double.peak("bf16", "tensor") == 2 * h100.peak("bf16", "tensor")
    assert double.dram_bandwidth == 4 * h100.dram_bandwidth
    assert double.figure("fp4_tensor").status == "unsupported"
    assert isinstance(double.figure("l2"), Figure) and double.l2_bytes == h100.l2_bytes
