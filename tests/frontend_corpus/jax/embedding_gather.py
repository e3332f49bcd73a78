"""table[ids] (a gather with index normalization) and jnp.take_along_axis."""
import jax.numpy as jnp
import numpy as np

V, D, B, S = 12, 5, 3, 4


def forward(table, ids, x, idx):
    return table[ids].sum(axis=1), jnp.take_along_axis(x, idx, axis=1)


def get_inputs():
    r = np.random.default_rng(8)
    return [jnp.asarray(r.standard_normal((V, D)), jnp.float32), jnp.asarray(r.integers(0, V, (B, S)), jnp.int32),
            jnp.asarray(r.standard_normal((B, 7)), jnp.float32), jnp.asarray(r.integers(0, 7, (B, 2)), jnp.int32)]


# Index normalization (ids < 0, ids + V, select): 3 per index, twice; the sum adds per gathered element;
# take_along_axis's flat position I + 7·p: 2 per index.
EXPECT = {"vector": 3 * B * S + B * S * D + 3 * B * 2 + 2 * B * 2}
