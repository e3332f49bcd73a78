"""Loop nests for the kernels --quantize builds (passes/quantize.py, quantize_fp4.py, quantize_kv.py)."""

from __future__ import annotations

import typing

from solar.ir.expr import IndexRef


class affine_loops:
    """`with affine_loops(kernel, shape) as idx:` nests one affine loop per dimension of `shape`."""

    def __init__(self, kernel: typing.Any, shape: tuple[typing.Any, ...]) -> None:
        self.kernel = kernel
        self.shape = shape
        self.managers: list[typing.Any] = []

    def __enter__(self) -> list[IndexRef]:
        idx = []
        for a, d in enumerate(self.shape):
            m = self.kernel.loop(f"i{a}", 0, d)
            idx.append(m.__enter__())
            self.managers.append(m)
        return idx

    def __exit__(self, *exc: object) -> None:
        for m in reversed(self.managers):
            m.__exit__(*exc)
