"""JAX primitives without a lowering: erf_inv and a while loop (fori_loop with a traced bound)."""
import jax
import jax.numpy as jnp
import numpy as np


def forward(x, n):
    s = jax.lax.erf_inv(x * 0.5)
    w = jax.lax.fori_loop(0, n, lambda i, acc: acc * 2.0, x)
    return s + w


def get_inputs():
    return [jnp.asarray(np.ones((3, 4)), jnp.float32), jnp.asarray(3, jnp.int32)]
