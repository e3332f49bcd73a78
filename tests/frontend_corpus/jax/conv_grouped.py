"""conv_general_dilated in NCHW with feature groups, dilation and explicit padding; bias and tanh."""
import jax
import jax.numpy as jnp
import numpy as np

N, CIN, COUT, S, G = 2, 4, 6, 10, 2


def forward(x, w, b):
    y = jax.lax.conv_general_dilated(x, w, (1, 1), [(2, 2), (2, 2)], rhs_dilation=(2, 2),
                                     feature_group_count=G)
    return jnp.tanh(y + b[None, :, None, None])


def get_inputs():
    r = np.random.default_rng(4)
    return [jnp.asarray(r.standard_normal((N, CIN, S, S)), jnp.float32),
            jnp.asarray(r.standard_normal((COUT, CIN // G, 3, 3)), jnp.float32),
            jnp.asarray(r.standard_normal(COUT), jnp.float32)]


TAPS = sum(1 for p in range(S) for r in range(3) if 0 <= p + 2 * r - 2 < S)
EXPECT = {"tensor": 2 * N * COUT * (CIN // G) * TAPS * TAPS, "vector": 2 * N * COUT * S * S}
