"""solar-bench's library: measure real programs against their speed of light (docs/bench.md).

Floor: above the frontends (it translates programs) and below the tools (tools/solar_bench.py only parses
arguments). Modules: `sizes` (the sizes that run), `bounds` (the SOL pipeline in every mode), `measure`
(timing PyTorch eager, torch.compile and jax.jit, on the CPU or a GPU), `verdict` (headroom and
violations), `problem` (one problem end to end), `batch` (a suite, local processes or Dask), `summary`
(tables and the headroom plot).
"""
