"""The pass framework a pass author uses: analyses shared by type (cached, invalidated after an IR change),
--sol reusing --tile-search's tilings, prerequisites (`requires`), Literal options checked by the pass
manager, and the kit's diagnostics and bound-parameter check."""

from __future__ import annotations

from pathlib import Path

import pytest

from solar.backends.cost import CostModel
from solar.backends.sol_results import SolResults
from solar.backends.tiling_ir import Tilings
from solar.ir.analysis.access_checks import AccessChecks
from solar.ir.diagnostics import DiagnosticEngine, DiagnosticError
from solar.ir.ops import ModuleOp
from solar.ir.parser import parse_module
from solar.ir.pass_manager import PassContext, PassManager
from solar.ir.printer import print_module
from solar.passes import registry

REPO = Path(__file__).resolve().parents[2]
MLP = (REPO / "examples" / "mlp.sir").read_text()


def run(pipeline: str, text: str = MLP, ctx: PassContext | None = None) -> tuple[ModuleOp, PassContext, list[str]]:
    reports: list[str] = []
    engine = DiagnosticEngine()
    module = parse_module(text, "mlp.sir", engine)
    ctx = ctx or PassContext(engine, reports.append)
    ctx.report = reports.append
    module = PassManager(registry.parse_pipeline(pipeline)).run(module, ctx)
    return module, ctx, reports


def test_an_analysis_is_computed_once_and_shared_by_type() -> None:
    # print-intensity and sol both price the module with the cost model: one CostModel serves both.
    _, ctx, _ = run("lift-einsum,print-intensity,sol{target=h100}")
    assert ctx.analyses.computed.count(CostModel) == 1


def test_analyses_are_keyed_by_their_options_too() -> None:
    # Two --sol runs under the tf32 policy share one model; the framework policy needs another, and naming
    # an option's default is the same request as leaving it out.
    _, ctx, _ = run("lift-einsum,sol{target=h100 fp32_precision=tf32},sol{target=b200 fp32_precision=tf32},"
                    "print-intensity,sol{target=h100}")
    assert ctx.analyses.computed.count(CostModel) == 2
    # Both passes refuse wrong accesses through the shared AccessChecks first, then ask for the model unchecked.
    assert ctx.analyses.computed.count(AccessChecks) == 1
    tf32 = ctx.analyses.cached(CostModel, fp32_precision="tf32", check_accesses=False)
    framework = ctx.analyses.cached(CostModel, check_accesses=False)
    assert tf32 is not None and framework is not None and tf32 is not framework
    assert tf32.fp32_precision == "tf32" and framework.fp32_precision == "framework"
    assert ctx.analyses.cached(CostModel, fp32_precision="framework", check_accesses=False) is framework
    with pytest.raises(TypeError, match="no option precision"):
        ctx.analyses.cached(CostModel, precision="tf32")


def test_a_pass_that_changes_the_ir_invalidates_analyses() -> None:
    # fuse regroups the units between the two readers, so sol must not see print-intensity's model.
    _, ctx, reports = run("lift-einsum,print-intensity,fuse,sol{target=h100}")
    assert ctx.analyses.computed.count(CostModel) == 2
    assert "@group0" not in reports[0] and "group0" in reports[1]


def test_sol_reuses_the_tilings_tile_search_found() -> None:
    module, ctx, _ = run("lift-einsum,fuse,tile-search{target=h100}")
    tilings = ctx.analyses.cached(Tilings)
    assert tilings is not None
    solved = tilings.solved
    assert solved >= 1  # the fusion group, solved by the search
    sol = registry.parse_pipeline("sol{target=h100}")
    PassManager(sol).run(module, ctx)
    assert ctx.analyses.cached(Tilings) is tilings and tilings.solved == solved
    (report,) = ctx.results[SolResults].reports
    assert report.cache_aware is not None and report.cache_aware.rows[0]["estimate_bytes"] is not None


def test_sol_on_another_buffer_size_solves_again() -> None:
    module, ctx, _ = run("lift-einsum,fuse,tile-search{target=h100}")
    tilings = ctx.analyses.cached(Tilings)
    assert tilings is not None
    solved = tilings.solved
    PassManager(registry.parse_pipeline("sol{target=b200}")).run(module, ctx)  # B200's L2 is another size
    assert tilings.solved == solved + 1


def test_a_missing_prerequisite_is_a_clear_error_before_any_pass_runs() -> None:
    with pytest.raises(DiagnosticError) as err:
        run("fuse,print-intensity")
    (diag,) = err.value.diagnostics
    assert diag.message == ("print-intensity needs lift-einsum earlier in the pipeline: write --lift-einsum "
                            "before --print-intensity (or -p 'lift-einsum,print-intensity')")


def test_input_with_einsums_meets_the_lift_einsum_prerequisite() -> None:
    lifted, _, _ = run("lift-einsum")
    _, _, reports = run("print-intensity", print_module(lifted))
    assert "@fc1" in reports[0] and "26.9" in reports[0]


def test_literal_options_are_checked_by_the_pass_manager() -> None:
    with pytest.raises(DiagnosticError) as err:
        run("lift-einsum,fuse{mode=bogus}")
    (diag,) = err.value.diagnostics
    assert diag.message == "fuse: mode must be one of greedy, producer-consumer, none, not 'bogus'"
    assert diag.loc.line == 2  # the module


def test_bound_params_reports_in_the_pass_name() -> None:
    text = MLP.replace("[B = 64]", "[B]")
    with pytest.raises(DiagnosticError) as err:
        run("lift-einsum,print-intensity", text)
    (diag,) = err.value.diagnostics
    assert diag.message == "print-intensity: size parameters B need values: bind them with --bind-params=B=..."


def test_pass_results_are_found_by_type_or_by_a_base_class() -> None:
    """Results are shared by type, as analyses are: --sol finds --tile-search's result through the base class
    it knows, without importing the pass."""
    from solar.backends.sol_results import CacheAwareSearch
    from solar.ir.pass_manager import PassResults
    from solar.passes.tile_search import TileSearchResult

    results = PassResults()
    assert results.get(TileSearchResult) is None and CacheAwareSearch not in results
    found = TileSearchResult("l2", 50 * 2**20, "h100-sxm")
    results.put(found)
    assert results[TileSearchResult] is found and results.get(CacheAwareSearch) is found
    with pytest.raises(KeyError, match="no pass left a SolResults"):
        results[SolResults]
