"""jnp.argmax and jnp.argmin (index_dtype int32: a conversion kernel follows)."""
import jax.numpy as jnp
import numpy as np

R, C = 7, 9


def forward(x):
    return jnp.argmax(x, axis=1), jnp.argmin(x, axis=0)


def get_inputs():
    return [jnp.asarray(np.random.default_rng(6).standard_normal((R, C)), jnp.float32)]


# extreme, compare, select, min: 4 per element; the int64 → int32 conversion is not a FLOP.
EXPECT = {"vector": 2 * 4 * R * C}
