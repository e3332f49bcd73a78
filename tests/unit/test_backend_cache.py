"""Compilation is cached: structurally identical kernels share one compiled function per process, and a new
process loads the machine code from Numba's disk cache instead of compiling again."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np

from solar.backends import jit
from solar.backends.codegen import generate_kernel
from solar.backends.executor import prepare
from solar.ir import parse_and_verify
from solar.ir.ops import KernelOp

# Two kernels that differ only in names (kernel symbol, tensor names, loop indices), plus a third that differs
# in its body. A unique constant keeps these sources apart from every other test's.
TWINS = """
solar.func @f(%x: tensor<6x4xf32>) -> tensor<6x4xf32> {
  %a = solar.kernel @first(%x as X) -> (Y: tensor<6x4xf32>) {
    affine.for %i = 0 to 6 {
      affine.for %j = 0 to 4 {
        Y[%i, %j] = X[%i, %j] * 1.2345678 + 0.5
      }
    }
  }
  %b = solar.kernel @second(%a as In) -> (Out: tensor<6x4xf32>) {
    affine.for %r = 0 to 6 {
      affine.for %c = 0 to 4 {
        Out[%r, %c] = In[%r, %c] * 1.2345678 + 0.5
      }
    }
  }
  %c = solar.kernel @third(%b as In) -> (Out: tensor<6x4xf32>) {
    affine.for %r = 0 to 6 {
      affine.for %c = 0 to 4 {
        Out[%r, %c] = In[%r, %c] * 1.2345678 - 0.5
      }
    }
  }
  solar.return %c
}
"""


def test_identical_kernels_generate_identical_source() -> None:
    module = parse_and_verify(TWINS)
    first, second, third = [generate_kernel(op).source for op in module.walk() if isinstance(op, KernelOp)]
    assert first == second
    assert first != third


def test_identical_kernels_compile_once_per_process() -> None:
    before = jit.STATS.snapshot()
    program = prepare(parse_and_verify(TWINS))
    x = np.random.default_rng(0).standard_normal((6, 4)).astype(np.float32)
    (y,) = program([x])
    after = jit.STATS
    assert after.requests - before.requests == 3
    assert after.unique_sources - before.unique_sources <= 2, "the twins share one compiled function"
    # Compiled now or loaded from an earlier run's disk cache: two signatures at most, never three.
    assert (after.compiled + after.disk_hits) - (before.compiled + before.disk_hits) <= 2
    np.testing.assert_allclose(y, (((x * 1.2345678 + 0.5) * 1.2345678 + 0.5) * 1.2345678 - 0.5), rtol=1e-6)
    # Running again compiles nothing.
    again = jit.STATS.snapshot()
    program([x])
    assert (jit.STATS.compiled, jit.STATS.disk_hits) == (again.compiled, again.disk_hits)


_CHILD = textwrap.dedent("""
    import json, sys, time
    import numpy as np
    from solar.backends import jit
    from solar.backends.executor import prepare
    from solar.ir import parse_and_verify
    program = prepare(parse_and_verify(open(sys.argv[1]).read()))
    start = time.perf_counter()
    program.compile()
    seconds = time.perf_counter() - start
    program([np.ones((6, 4), np.float32)])
    print(json.dumps({"compiled": jit.STATS.compiled, "disk_hits": jit.STATS.disk_hits, "seconds": seconds}))
""")


def test_a_second_process_loads_from_the_disk_cache(tmp_path: Path) -> None:
    source = tmp_path / "twins.sir"
    source.write_text(TWINS.replace("1.2345678", "7.654321"))
    env = {**os.environ, "SOLAR_CACHE_DIR": str(tmp_path / "cache")}

    def child() -> dict[str, float]:
        out = subprocess.run([sys.executable, "-c", _CHILD, str(source)], env=env, capture_output=True, text=True,
                             check=True)
        return json.loads(out.stdout.strip().splitlines()[-1])

    cold = child()
    warm = child()
    assert cold["compiled"] == 2 and cold["disk_hits"] == 0
    assert warm["compiled"] == 0 and warm["disk_hits"] == 2
    assert list((tmp_path / "cache" / "numba").glob("k_*.py")), "generated modules live in the cache directory"
