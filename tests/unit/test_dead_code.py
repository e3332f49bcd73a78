"""Dead code (solar.ir.analysis.liveness): units whose results reach no output are not priced by --sol, with
a remark each; units that update an argument in place stay, whether or not anything reads their result."""

from __future__ import annotations

from dataclasses import dataclass

from test_sol_support import pipeline

from solar.backends.report import TargetReport
from solar.backends.sol_results import SolResults
from solar.ir.analysis.liveness import dead_ops, drop_dead, has_dead_code
from solar.ir.diagnostics import DiagnosticEngine
from solar.ir.ops import EinsumOp, GroupOp, KernelOp, ModuleOp
from solar.ir.parser import parse_module
from solar.ir.pass_manager import PassContext, PassManager


@dataclass
class Run:
    module: ModuleOp
    reports: list[TargetReport]
    report: str  # the remarks


def run_sol(text: str, targets: list[str]) -> Run:
    engine = DiagnosticEngine()
    module = parse_module(text, "t.sir", engine)
    ctx = PassContext(engine, lambda _: None)
    module = PassManager(pipeline(targets)).run(module, ctx)
    assert not engine.has_errors, engine.format_all()
    return Run(module, ctx.results[SolResults].reports, engine.format_all())

MATMUL = """\
    %y = solar.kernel @mm(%x as A, %w as B) -> (Y: tensor<64x16xf32>) {
      affine.for %i = 0 to 64 {
        affine.for %j = 0 to 16 {
          affine.for %k = 0 to 32 {
            Y[%i, %j] += A[%i, %k] * B[%k, %j]
          }
        }
      }
    }
"""
DEAD = """\
    %e = solar.kernel @unused_exp(%x as A) -> (E: tensor<64x32xf32>) {
      affine.for %i = 0 to 64 {
        affine.for %k = 0 to 32 {
          E[%i, %k] = exp(A[%i, %k])
        }
      }
    }
    %t = solar.permute %e {perm = [1, 0]} : tensor<32x64xf32>
    %s = solar.kernel @unused_sum(%t as T) -> (S: tensor<32xf32>) {
      affine.for %k = 0 to 32 {
        affine.for %i = 0 to 64 {
          S[%k] += T[%k, %i]
        }
      }
    }
"""


def module(body: str, args: str = "%x: tensor<64x32xf32>, %w: tensor<32x16xf32>", ret: str = "%y") -> str:
    return (f"solar.module @m {{\n  solar.func @main({args}) -> tensor<64x16xf32> {{\n{body}"
            f"    solar.return {ret}\n  }}\n}}\n")


def test_dead_units_are_not_priced_in_any_mode() -> None:
    live = run_sol(module(MATMUL), ["h100"])
    both = run_sol(module(MATMUL + DEAD), ["h100"])
    assert "@unused_exp is dead code" in both.report and "@unused_sum is dead code" in both.report
    assert "dead code" not in live.report
    for mode in ("unfused", "fused", "whole_graph"):
        a, b = live.reports[0].modes[mode], both.reports[0].modes[mode]
        assert (b.flops, b.bytes, b.seconds) == (a.flops, a.bytes, a.seconds)
    fused = both.reports[0].modes["fused"]
    assert fused.flops == 2 * 64 * 16 * 32 and fused.bytes == 4 * (64 * 32 + 32 * 16 + 64 * 16)
    # the IR keeps the dead units (only the pricing leaves them out); the live ones carry their times
    kernels = {op.symbol: op for op in both.module.walk() if isinstance(op, KernelOp | EinsumOp)}
    assert {"unused_exp", "unused_sum"} <= set(kernels)
    assert "sol" in kernels["mm"].attrs and "sol" not in kernels["unused_exp"].attrs


def test_an_in_place_update_of_an_argument_is_live() -> None:
    text = module(MATMUL + """\
    %row = solar.slice %y[0, 0:16] : tensor<16xf32>
    %c = solar.insert %row into %cache[3, 0:16] : tensor<8x16xf32>
    %fresh = solar.constant 0.0 : tensor<8x16xf32>
    %d = solar.insert %row into %fresh[3, 0:16] : tensor<8x16xf32>
""", "%x: tensor<64x32xf32>, %w: tensor<32x16xf32>, %cache: tensor<8x16xf32>")
    engine = DiagnosticEngine()
    parsed = parse_module(text, "t.sir", engine)
    dead = [op.opname for op in dead_ops(parsed)]
    assert dead == ["solar.constant", "solar.insert"]  # the insert into a fresh tensor; the cache's stays
    run = run_sol(text, ["h100"])
    assert "insert %d is dead code" in run.report and "insert %c" not in run.report
    inserts = [w for w, _ in run.reports[0].units if w.kind == "insert"]
    assert [w.name for w in inserts] == ["insert %c"] and inserts[0].bytes >= 4 * 16  # writes the cache's row


def test_a_loop_whose_results_nobody_reads_is_dead_whole() -> None:
    text = module(MATMUL + """\
    %r = solar.for %t = 0 to 4 iter_args(%s = %x) -> tensor<64x32xf32> {
      %n = solar.kernel @step(%s as S) -> (O: tensor<64x32xf32>) {
        affine.for %i = 0 to 64 {
          affine.for %k = 0 to 32 {
            O[%i, %k] = S[%i, %k] * 2.0
          }
        }
      }
      solar.yield %n
    }
""")
    dead = dead_ops(parse_module(text, "t.sir", DiagnosticEngine()))
    assert [op.opname for op in dead] == ["solar.for", "solar.kernel", "solar.yield"]
    run = run_sol(text, ["h100"])
    assert "@step is dead code" in run.report
    assert run.reports[0].modes["fused"].flops == 2 * 64 * 16 * 32


def test_a_group_keeps_only_what_its_needed_results_yield() -> None:
    body = MATMUL.replace("    %y =", "      %y =").replace("\n    ", "\n      ")
    dead_exp = DEAD.split("    %t =")[0].replace("\n    ", "\n      ").replace("    %e =", "      %e =", 1)
    text = module(f"""\
    %gy, %ge = solar.group @group0 -> (tensor<64x16xf32>, tensor<64x32xf32>) {{
  {body}  {dead_exp}      solar.yield %y, %e
    }}
    %t = solar.permute %ge {{perm = [1, 0]}} : tensor<32x64xf32>
""" + DEAD.split("    %t = solar.permute %e {perm = [1, 0]} : tensor<32x64xf32>\n")[1], ret="%gy")
    engine = DiagnosticEngine()
    parsed = parse_module(text, "t.sir", engine)
    assert not engine.has_errors, engine.format_all() + text
    assert has_dead_code(parsed)
    dropped = drop_dead(parsed)
    assert sorted(op.symbol for op in dropped if isinstance(op, KernelOp)) == ["unused_exp", "unused_sum"]
    group = next(op for op in parsed.walk() if isinstance(op, GroupOp))
    assert len(group.results) == 1 and [v.name for v in group.body[-1].operands] == ["y"]
    assert not has_dead_code(parsed)
