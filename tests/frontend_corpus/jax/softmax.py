"""jax.nn.softmax and jax.nn.log_softmax: reduce_max, stop_gradient, exp, reduce_sum, div."""
import jax
import jax.numpy as jnp
import numpy as np

B, D = 6, 10


def forward(x):
    return jax.nn.softmax(x, axis=-1), jax.nn.log_softmax(x, axis=0)


def get_inputs():
    return [jnp.asarray(np.random.default_rng(1).standard_normal((B, D)) * 3, jnp.float32)]


N = B * D
# softmax: max (N), max(-inf, m) per row (B), sub, exp (2N), sum (N), div (N).
# log_softmax over axis 0: max (N), max per column (D), sub (N), exp (N), sum (N), log (D), sub (N).
EXPECT = {"vector": 5 * N + B + 5 * N + 2 * D}
