"""Elementwise primitives: exp, log, log1p, tanh, logistic, erf, sqrt, abs, sign, floor, integer_pow,
pow, rem, max, min, and jax.nn.gelu (tanh approximation) / silu."""
import jax
import jax.numpy as jnp
import numpy as np

B, D = 4, 6


def forward(x, y):
    p = jnp.abs(x) + 1.0
    return (jnp.exp(x) + jnp.log(p) - jnp.log1p(p), jnp.tanh(x) * jax.nn.sigmoid(y), jax.scipy.special.erf(x),
            jnp.sqrt(p), jnp.sign(x) * jnp.floor(y), x ** 3, jnp.power(p, y), jnp.fmod(x, p), jnp.maximum(x, y),
            jnp.minimum(x, 0.5), jax.nn.gelu(x), jax.nn.silu(y))


def get_inputs():
    r = np.random.default_rng(10)
    return [jnp.asarray(r.standard_normal((B, D)), jnp.float32), jnp.asarray(r.standard_normal((B, D)), jnp.float32)]


N = B * D
# abs, add 2; exp, log, log1p, add, sub 5; tanh, logistic, mul 3; erf 1; sqrt 1; sign, floor, mul 3; x³ 2;
# pow 1; rem 9 (the quotient formed in each branch of its truncation); max 1; min 1; gelu(tanh) 9; silu 2.
EXPECT = {"vector": N * (2 + 5 + 3 + 1 + 1 + 3 + 2 + 1 + 9 + 1 + 1 + 9 + 2)}
