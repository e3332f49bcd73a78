"""Twins scaled by counts (bench/twins.py): a model of L alike layers from its 2- and 3-layer twins, each
unit's or group's terms scaled before its roofline, against the L-layer model written out."""

from __future__ import annotations

import math
from fractions import Fraction

from hypothesis import given
from hypothesis import strategies as st

from solar.bench.twins import Terms, scaled_seconds

terms = st.tuples(*[st.floats(0, 1e-3, allow_nan=False) for _ in range(3)])


def model(layers: int, prefix: list[Terms], per_layer: list[Terms], base: Terms, step: Terms
          ) -> tuple[list[Terms], list[str]]:
    """Fixed units (the embedding, the head), `per_layer` units in each layer, and one group spanning every
    layer whose terms grow by `step` a layer; with their keys."""
    grown = tuple(b + layers * s for b, s in zip(base, step, strict=True))
    parts = [*prefix, *(per_layer * layers), grown]
    keys = [f"p{i}" for i in range(len(prefix))] + [f"g{j}" for j in range(len(per_layer))] * layers + ["span"]
    return parts, keys


@given(prefix=st.lists(terms, max_size=3), per_layer=st.lists(terms, min_size=1, max_size=4), base=terms,
       step=terms, layers=st.integers(3, 80))
def test_scaled_twins_are_the_full_model(prefix: list[Terms], per_layer: list[Terms], base: Terms, step: Terms,
                                         layers: int) -> None:
    small, large = model(2, prefix, per_layer, base, step), model(3, prefix, per_layer, base, step)
    scaled = scaled_seconds(*small, *large, Fraction(layers - 2))
    full, _ = model(layers, prefix, per_layer, base, step)
    assert math.isclose(scaled, sum(max(t) for t in full), rel_tol=1e-9, abs_tol=1e-15)
    # Σ of rooflines ≥ the roofline of the sums (the whole graph's, with the same counts).
    whole = max(sum(t[i] for t in full) for i in range(3))
    assert scaled >= whole * (1 - 1e-9)


def test_a_group_spanning_every_layer_takes_its_roofline_at_full_counts() -> None:
    """Tensor 1 + 2n, memory 6 + n seconds at n layers: memory-bound in both twins (8 > 5, 9 > 7), so scaling
    their times gives 8 + 30·1 = 38 at 32 layers, below the 65 of tensor work that 32 layers hold."""
    small, large = [(5.0, 0.0, 8.0)], [(7.0, 0.0, 9.0)]
    assert scaled_seconds(small, ["g"], large, ["g"], Fraction(30)) == 65.0
