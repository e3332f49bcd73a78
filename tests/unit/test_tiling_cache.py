"""--tile-search solves each distinct einsum shape once: the blocks of a network share their solutions, and
the attributes are those of a fresh solve."""

from __future__ import annotations

from solar.backends.tiling_cache import CachedChains, SolveCache, canonical
from solar.ir import parse_and_verify
from solar.ir.diagnostics import DiagnosticEngine
from solar.ir.pass_manager import PassContext, PassManager
from solar.passes import registry


def network(blocks: int, tokens: int = 64, width: int = 128, hidden: int = 256) -> str:
    """A residual MLP of `blocks` identical blocks, as einsums (what --lift-einsum gives)."""
    args = [f"%x: tensor<{tokens}x{width}xf32>"]
    body = []
    x = "%x"
    th, tw = f"tensor<{tokens}x{hidden}xf32>", f"tensor<{tokens}x{width}xf32>"
    for b in range(blocks):
        args += [f"%w{b}a: tensor<{hidden}x{width}xf32>", f"%w{b}b: tensor<{width}x{hidden}xf32>"]
        body += [
            f'    %h{b} = solar.einsum @up{b} "ik,jk->ij" ({x} as X, %w{b}a as W) -> (H: {th}) {{',
            "      H += X * W", "    }",
            f'    %r{b} = solar.einsum @relu{b} "ij->ij" (%h{b} as H) -> (R: {th}) {{',
            "      R = max(H, 0.0)", "    }",
            f'    %d{b} = solar.einsum @down{b} "ik,jk->ij" (%r{b} as R, %w{b}b as W) -> (D: {tw}) {{',
            "      D += R * W", "    }",
            f'    %x{b} = solar.einsum @add{b} "ij,ij->ij" ({x} as X, %d{b} as D) -> (Y: {tw}) {{',
            "      Y = X + D", "    }",
        ]
        x = f"%x{b}"
    head = f"solar.module @net {{\n  solar.func @forward({', '.join(args)}) -> tensor<{tokens}x{width}xf32> {{\n"
    return head + "\n".join(body) + f"\n    solar.return {x}\n  }}\n}}\n"


def _run(text: str) -> tuple[object, list[str]]:
    module = parse_and_verify(text)
    reports: list[str] = []
    ctx = PassContext(DiagnosticEngine(), report=reports.append)
    PassManager(registry.parse_pipeline("tile-search{buffer=64KiB}")).run(module, ctx)
    return module, reports


def test_identical_blocks_are_solved_once_with_the_same_attributes() -> None:
    module, reports = _run(network(3))
    tilings = {op.symbol: op.attrs["tiling"] for f in module.funcs for op in f.walk() if "tiling" in op.attrs}
    assert {k for k in tilings if k.startswith("up")} == {"up0", "up1", "up2"}
    assert tilings["up0"] == tilings["up1"] == tilings["up2"]
    assert tilings["down0"] == tilings["down2"]
    assert tilings["up0"]["traffic"] >= tilings["up0"]["compulsory"] > 0
    assert "distinct tiling problems solved" in reports[-1]


def test_the_cached_answer_equals_a_fresh_solve() -> None:
    cached, _ = _run(network(2))
    fresh, _ = _run(network(1))
    first = next(op for f in fresh.funcs for op in f.walk() if getattr(op, "symbol", "") == "up0")
    second = next(op for f in cached.funcs for op in f.walk() if getattr(op, "symbol", "") == "up1")
    assert first.attrs["tiling"] == second.attrs["tiling"]


def test_the_key_ignores_names_but_not_shapes() -> None:
    module = parse_and_verify(network(2))
    func = module.funcs[0]
    ops = {op.symbol: op for op in func.walk() if getattr(op, "symbol", None)}
    chains = CachedChains(func, {}, SolveCache())
    key = lambda name: canonical(*chains.piece([ops[name]]))  # noqa: E731
    assert key("up0") == key("up1")
    assert key("up0") != key("down0")
    chains.solve("up0", [ops["up0"]], 65536.0)
    chains.solve("up1", [ops["up1"]], 65536.0)
    assert chains.cache.solves == 1 and chains.cache.hits == 1
    other = parse_and_verify(network(1, tokens=32))
    small = next(op for op in other.funcs[0].walk() if getattr(op, "symbol", None) == "up0")
    assert canonical(*CachedChains(other.funcs[0], {}).piece([small])) != key("up0")
