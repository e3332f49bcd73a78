"""dot_general with batch dims (jnp.matmul on 3-D, and jnp.einsum with two batch axes), in bfloat16."""
import jax.numpy as jnp
import numpy as np

B, H, M, K, N = 2, 3, 4, 5, 6


def forward(a, b, c, d):
    return jnp.matmul(a, b), jnp.einsum("bhmk,bhkn->bhmn", c, d)


def get_inputs():
    r = np.random.default_rng(15)
    return [jnp.asarray(r.standard_normal((B, M, K)), jnp.float32),
            jnp.asarray(r.standard_normal((B, K, N)), jnp.float32),
            jnp.asarray(r.standard_normal((B, H, M, K)), jnp.bfloat16),
            jnp.asarray(r.standard_normal((B, H, K, N)), jnp.bfloat16)]


EXPECT = {"tensor": 2 * B * M * N * K + 2 * B * H * M * N * K, "vector": 0}
