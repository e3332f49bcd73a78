"""Names of the attributes that passes and frontends put on the IR, and that others read. Use these
constants rather than the strings, so that a reader and a writer of one attribute cannot drift apart
(docs/ir.md describes each attribute's value)."""

from __future__ import annotations

# On an einsum lifted from a kernel (--lift-einsum): the kernel it came from. Einsums with the same one form
# one unit of execution (solar.ir.analysis.units), priced and fused as one kernel.
KERNEL = "kernel"
COUNTS = "counts"  # an einsum's exact counts (--lift-einsum)
NOT_LIFTED = "not_lifted"  # on a kernel --lift-einsum left as it is: why
GROUP_MODE = "mode"  # on a solar.group (--fuse): the fusion mode that formed it
GROUP_UNITS = "units"  # on a solar.group (--fuse): its units, in program order
TILING = "tiling"  # on an einsum or group (--tile-search): the chosen tiling
KERNEL_TILING = "kernel_tiling"  # on the first einsum of a kernel lifted into several (--tile-search)
SOL = "sol"  # on units, groups and the module (--sol): times per target
ORIGIN = "origin"  # on the module: the frontend that made it
VALIDATION = "validation"  # on the module: the validation report of the translation
LLM = "llm"  # on the module: what the LLM translator did
# On a kernel a frontend made inside library code (torch.nn, transformers): the innermost library frame,
# `path:line` with the path under its install folder; the kernel's loc is the innermost frame in the user's file.
LIBRARY_FRAME = "library_frame"
# On a kernel a frontend made: the path of the model's module that made it (`attn.qkv`: torch.export's
# nn_module_stack, JAX's name stack), the name the reports show for its unit.
MODULE_PATH = "module_path"
# On each kernel a frontend made from an einsum of three or more tensors: that einsum, this kernel's step in
# the contraction order chosen (least FLOPs at the export's sizes), the whole order and how it was found.
EINSUM_ORDER = "einsum_order"
# On an einsum lifted from a kernel that zero-filled its result and then wrote only part of it: the einsum's
# other elements are 0 (as every einsum's), and the zeros are written, so its bytes written are the whole result.
ZERO_FILLED = "zero_filled"
# On a contraction --quantize made from fp4 weights and fp4 activations (W4A4): each operand is its codes times
# its block's scale, `Y += (A * SA) * (B * SB)`, as a block-scaled MMA computes it (the tensor cores apply the
# scales): priced as a contraction of the codes, not as vector work.
BLOCK_SCALED = "block_scaled"
# On an entry function: the positions of its results that are what the KV cache stores (a prefill's keys and
# values, as solar-llm exports it), so that --quantize stores them packed.
KV_CACHE_RESULTS = "kv_cache_results"
