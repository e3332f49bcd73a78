"""JAX functions whose traced form hides what they are, traced as one primitive of ours instead.

`jnp.nonzero(x, size=K, fill_value=f)` traces to a cumulative sum, a scatter-add and index arithmetic: the
jaxpr no longer says "nonzero", and lowering those pieces would price one algorithm rather than what any
nonzero must do. While `translate_jax` traces the user's function (and only then), `jnp.nonzero` with a
static `size` binds the primitive `solar_nonzero`, whose lowering is `solar.nonzero` (docs/ir.md,
"Data-dependent operations"). Validation runs the original function, untouched.

Only calls through the module attribute (`jnp.nonzero(...)`) are seen; a name imported before tracing
(`from jax.numpy import nonzero`) keeps JAX's own traced form.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import jax
import jax.numpy as jnp
from jax.extend.core import Primitive

NONZERO = Primitive("solar_nonzero")
NONZERO.multiple_results = True

try:  # equations bound here are located at the user's call, not in this file (JAX's own exclusion list)
    from jax._src import source_info_util

    source_info_util.register_exclusion(__file__)
except (ImportError, AttributeError):
    pass


def _nonzero_abstract(x: Any, *, size: int, fill: int) -> list[Any]:
    index = jnp.zeros((), int).dtype  # JAX's default integer (int32 unless x64 is enabled)
    return [jax.core.ShapedArray((size,), index) for _ in range(max(x.ndim, 1))]


NONZERO.def_abstract_eval(_nonzero_abstract)


@contextmanager
def intercepted() -> Iterator[None]:
    """While tracing: `jnp.nonzero` with a static size and a scalar fill binds `solar_nonzero`."""
    original = jnp.nonzero

    def nonzero(a: Any, *, size: int | None = None, fill_value: Any = None) -> tuple[Any, ...]:
        if size is None or isinstance(fill_value, tuple | list) or jnp.ndim(a) == 0:
            return original(a, size=size, fill_value=fill_value)
        return tuple(NONZERO.bind(jnp.asarray(a), size=int(size), fill=int(fill_value or 0)))

    jnp.nonzero = nonzero
    try:
        yield
    finally:
        jnp.nonzero = original
