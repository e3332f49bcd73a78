import jax.numpy as jnp
import numpy as np


def forward(x):
    total = jnp.sum(x, axis=0)
    return total.sum(axis=0)  # a 0-d array has no axis 0


def get_inputs():
    return [np.ones((4,), np.float32)]
