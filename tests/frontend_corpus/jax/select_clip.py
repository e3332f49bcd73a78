"""jnp.where (select_n), jnp.clip (clamp / max-min), comparisons and boolean logic."""
import jax.numpy as jnp
import numpy as np

B, D = 5, 7


def forward(x, y):
    m = (x > 0) & ~(y < -0.5)
    return jnp.where(m, x, y), jnp.clip(x, -0.3, 0.4), jnp.where(x == y, 1.0, 0.0), m | (x <= y)


def get_inputs():
    r = np.random.default_rng(11)
    return [jnp.asarray(r.standard_normal((B, D)), jnp.float32), jnp.asarray(r.standard_normal((B, D)), jnp.float32)]


N = B * D
# gt, lt (and, not: logic); select 1; clip: max, min 2; eq, select 2; le 1 (or: logic).
EXPECT = {"vector": N * (2 + 1 + 2 + 2 + 1)}
