"""jnp.cumsum and jnp.cumprod (cumulative primitives), lax.cummax."""
import jax
import jax.numpy as jnp
import numpy as np

R, C = 4, 6


def forward(x):
    return jnp.cumsum(x, axis=1), jnp.cumprod(x, axis=0), jax.lax.cummax(x, axis=1)


def get_inputs():
    return [jnp.asarray(np.random.default_rng(7).standard_normal((R, C)), jnp.float32)]


# cumsum and cumprod: one addition (multiplication) per element; cummax: a data-dependent op, at least one
# comparison per element after the first of each line.
EXPECT = {"vector": 2 * R * C + R * (C - 1)}
