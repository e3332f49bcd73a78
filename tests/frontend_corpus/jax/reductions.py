"""reduce_sum, reduce_max, reduce_min, reduce_prod, mean, and boolean all/any."""
import jax.numpy as jnp
import numpy as np

A, B, C = 3, 4, 5


def forward(x):
    return (x.sum(axis=1), x.max(axis=(0, 2)), x.min(), jnp.prod(x, axis=-1), x.mean(axis=0),
            jnp.all(x > -3.0, axis=1), jnp.any(x > 2.0))


def get_inputs():
    return [jnp.asarray(np.random.default_rng(5).standard_normal((A, B, C)), jnp.float32)]


N = A * B * C
# one op per element for sum, max, min, prod, mean's sum (+ a divide per output), and the compares;
# reduce_and/reduce_or on booleans are logic (min/max of i1 counts as an op here).
EXPECT = {"vector": 5 * N + B * C + 2 * N + 2 * N}
