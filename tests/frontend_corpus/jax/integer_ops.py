"""Integer and conversion primitives: convert_element_type, integer add/mul/div/rem, iota, comparisons."""
import jax
import jax.numpy as jnp
import numpy as np

R, C = 4, 5


def forward(x, k):
    i = x.astype(jnp.int32)
    pos = jax.lax.iota(jnp.int32, C)
    return i * 2 + k, k // 3, k % 4, (k > pos).astype(jnp.float32).sum(), jax.lax.div(k, 3)


def get_inputs():
    r = np.random.default_rng(16)
    return [jnp.asarray(r.standard_normal((R, C)) * 5, jnp.float32), jnp.asarray(r.integers(-9, 9, (R, C)), jnp.int32)]


N = R * C
# mul, add 2; jnp's floor division (div with a sign fix-up: see the jaxpr), jnp's remainder likewise;
# compare, sum 2; lax.div rounds toward zero.
EXPECT = {"tensor": 0}
