"""conv_general_dilated in NHWC/HWIO layout with SAME padding and stride 2 (flax's convention)."""
import jax
import jax.numpy as jnp
import numpy as np

N, H, W, CIN, COUT = 2, 9, 8, 3, 4


def forward(x, w):
    return jax.lax.conv_general_dilated(x, w, (2, 2), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))


def get_inputs():
    r = np.random.default_rng(3)
    return [jnp.asarray(r.standard_normal((N, H, W, CIN)), jnp.float32),
            jnp.asarray(r.standard_normal((3, 3, CIN, COUT)), jnp.float32)]


def taps(size: int) -> int:
    out = -(-size // 2)
    pad = max((out - 1) * 2 + 3 - size, 0) // 2
    return sum(1 for p in range(out) for r in range(3) if 0 <= 2 * p + r - pad < size)


EXPECT = {"tensor": 2 * N * COUT * CIN * taps(H) * taps(W), "vector": 0}
