"""reshape, transpose, broadcast_in_dim, concatenate, slice (with stride), pad, rev, split, expand_dims."""
import jax.numpy as jnp
import numpy as np

A, B, C = 2, 3, 4


def forward(x, v):
    a = x.reshape(A, B * C).T
    b = jnp.concatenate([x, x[:, ::2]], axis=1)
    c = jnp.pad(x, ((0, 0), (1, 1), (2, 0)))
    d = jnp.flip(x, axis=2)
    e, f = jnp.split(x, 2, axis=2)
    g = x + v[None, None, :]
    return a, b, c, d, e * f, g, jnp.expand_dims(v, 0)


def get_inputs():
    r = np.random.default_rng(12)
    return [jnp.asarray(r.standard_normal((A, B, C)), jnp.float32), jnp.asarray(r.standard_normal(C), jnp.float32)]


# Only e·f (half the columns) and x + v compute.
EXPECT = {"vector": A * B * (C // 2) + A * B * C}
