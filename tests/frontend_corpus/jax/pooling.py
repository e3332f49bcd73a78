"""Max and sum pooling with lax.reduce_window (flax's max_pool / avg_pool), padding included."""
import jax
import jax.numpy as jnp
import numpy as np

N, H, W, C = 2, 6, 7, 3


def forward(x):
    mx = jax.lax.reduce_window(x, -jnp.inf, jax.lax.max, (1, 3, 3, 1), (1, 2, 2, 1), "SAME")
    sm = jax.lax.reduce_window(x, 0.0, jax.lax.add, (1, 2, 2, 1), (1, 2, 2, 1), "VALID") / 4.0
    return mx, sm


def get_inputs():
    return [jnp.asarray(np.random.default_rng(14).standard_normal((N, H, W, C)), jnp.float32)]


def taps(size: int) -> int:
    out = -(-size // 2)
    pad = max((out - 1) * 2 + 3 - size, 0) // 2
    return sum(1 for p in range(out) for r in range(3) if 0 <= 2 * p + r - pad < size)


# The max pool runs over H and W of NHWC (the channel dim trails the window dims).
EXPECT = {"vector": N * taps(H) * taps(W) * C + N * (H // 2) * (W // 2) * C * 5}
