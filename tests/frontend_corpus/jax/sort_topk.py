"""jnp.sort (ascending, descending), jnp.argsort (the iota beside the keys is the sort's index result),
lax.top_k, lax.cummin from the end, jnp.nonzero with a static size."""
import jax
import jax.numpy as jnp
import numpy as np

R, C = 4, 6


def forward(x):
    return (jnp.sort(x, axis=1), jnp.sort(x, axis=0, descending=True), jnp.argsort(x, axis=1),
            jax.lax.top_k(x, 2), jax.lax.cummin(x, axis=1, reverse=True),
            jnp.nonzero(x > 0.5, size=8, fill_value=-1))


def get_inputs():
    return [jnp.asarray(np.random.default_rng(3).standard_normal((R, C)), jnp.float32)]


# Comparisons, at least (docs/counts.md, "Data-dependent ops"), per line of n: sort ⌈log₂ n!⌉ (6! → 10 over
# 4 rows, 4! → 5 over 6 columns; the descending sort's reversal is a copy), the same for argsort, top_k
# (n − k) + ⌈log₂ k!⌉, cummin n − 1, nonzero one test per element, after the comparison `x > 0.5` (one per
# element).
EXPECT = {"vector": 4 * 10 + 6 * 5 + 4 * 10 + 4 * ((6 - 2) + 1) + 4 * 5 + R * C + R * C, "tensor": 0}
