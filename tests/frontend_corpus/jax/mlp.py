"""A two-layer MLP: dot_general, bias broadcast, relu (jax.nn.relu is a custom_jvp call, inlined)."""
import jax
import jax.numpy as jnp
import numpy as np

B, IN, HID, OUT = 8, 16, 32, 4


def forward(x, w1, b1, w2):
    return jax.nn.relu(x @ w1 + b1) @ w2


def get_inputs():
    r = np.random.default_rng(0)
    return [jnp.asarray(r.standard_normal(s), jnp.float32) for s in [(B, IN), (IN, HID), (HID,), (HID, OUT)]]


# bias add and relu: 1 each per hidden element.
EXPECT = {"tensor": 2 * B * HID * IN + 2 * B * OUT * HID, "vector": 2 * B * HID}
