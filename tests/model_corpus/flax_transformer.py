"""A JAX/Flax model: a pre-norm transformer encoder block in `flax.linen` (LayerNorm, multi-head
self-attention, a GELU MLP), parameters from `init` with a fixed key, translated through `jax.make_jaxpr`."""

import jax
import jax.numpy as jnp
import numpy as np
from flax import linen as nn

CONFIG = {"width": 32, "heads": 4, "mlp": 64, "layers": 2}
FULL = {"width": 768, "heads": 12, "mlp": 3072, "layers": 12}
BATCH, SEQ = 2, 8
FULL_INPUT = (8, 512)


class Block(nn.Module):
    width: int
    heads: int
    mlp: int

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        h = nn.LayerNorm()(x)
        x = x + nn.MultiHeadDotProductAttention(num_heads=self.heads, qkv_features=self.width)(h, h)
        h = nn.LayerNorm()(x)
        return x + nn.Dense(self.width)(nn.gelu(nn.Dense(self.mlp)(h)))


class Encoder(nn.Module):
    width: int
    heads: int
    mlp: int
    layers: int

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        for _ in range(self.layers):
            x = Block(self.width, self.heads, self.mlp)(x)
        return nn.LayerNorm()(x)


def build(config: dict | None = None, shape: tuple[int, int] = (BATCH, SEQ)):  # type: ignore[no-untyped-def]
    """The forward function (parameters closed over) and its inputs."""
    c = config or CONFIG
    model = Encoder(c["width"], c["heads"], c["mlp"], c["layers"])
    x = jnp.asarray(np.random.default_rng(0).standard_normal((*shape, c["width"])), jnp.float32)
    params = model.init(jax.random.PRNGKey(0), x)
    return (lambda x: model.apply(params, x)), [x]


forward, _INPUTS = build()


def get_inputs() -> list[jax.Array]:
    return list(_INPUTS)


def expected_tensor_flops(c: dict, b: int, s: int) -> int:
    """2·MACs: q, k, v and output projections, attention scores and value sum over all s² positions, and
    the two MLP layers, per layer."""
    w, m = c["width"], c["mlp"]
    return 2 * c["layers"] * (b * s * (4 * w * w + 2 * w * m) + 2 * b * s * s * w)


EXPECT = {"tensor": expected_tensor_flops(CONFIG, BATCH, SEQ)}
