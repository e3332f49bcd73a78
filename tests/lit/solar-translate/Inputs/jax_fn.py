import jax
import jax.numpy as jnp
import numpy as np


def forward(x, w):
    return jax.nn.softmax(x @ w, axis=-1)


def get_inputs():
    r = np.random.default_rng(0)
    return [jnp.asarray(r.standard_normal((4, 8)), jnp.float32), jnp.asarray(r.standard_normal((8, 3)), jnp.float32)]
