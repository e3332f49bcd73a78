"""A model of `layers` alike decoder layers priced from two twins with fewer layers, by counts, not by time.

Each twin is a list of units or groups, each with its three roofline terms (tensor, vector, memory seconds),
which are linear in its counts (FLOPs per precision over a peak, bytes over the bandwidth). Scaling a term is
scaling the counts behind it. The roofline (`max`) is taken only at the full model's counts, per unit or
group, so `Σ max ≥ max Σ` keeps fused ≥ whole graph: scaling times would add the 2-layer twin's time to 30
times a difference of maxima, which is no roofline of any group (a group spanning every layer is memory-bound
at 3 layers and compute-bound at 32).

Units and groups are matched across the twins by what they compute (`sweep.work_key`):
- one found in both twins with the same terms is the same unit (a layer both twins have, the embedding);
- those of a key found in the larger twin only are the added layers' own: each added layer brings them again;
- the remaining ones of a key, paired in program order, are one unit that grows with the layers (a group
  spanning every layer): its counts are scaled to the full model, then its roofline taken.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Hashable, Sequence
from fractions import Fraction

Terms = tuple[float, float, float]  # tensor, vector, memory seconds of one unit or group


def scaled_seconds(small: Sequence[Terms], small_keys: Sequence[Hashable], large: Sequence[Terms],
                   large_keys: Sequence[Hashable], k: Fraction) -> float:
    """The mode's time (Σ of rooflines) of the model with `k` times the layers that `large` adds to `small`
    (k = (layers − small's) / (large's − small's)), each unit's counts scaled before its roofline."""
    by_key: dict[Hashable, tuple[list[Terms], list[Terms]]] = defaultdict(lambda: ([], []))
    for terms, key in zip(small, small_keys, strict=True):
        by_key[key][0].append(terms)
    for terms, key in zip(large, large_keys, strict=True):
        by_key[key][1].append(terms)
    total = 0.0
    for a, b in by_key.values():
        for terms in list(a):  # the same unit in both twins
            if terms in b:
                b.remove(terms)
                a.remove(terms)
                total += max(terms)
        grown = min(len(a), len(b))
        for x, y in zip(a[:grown], b[:grown], strict=True):  # one unit growing with the layers
            total += max(max(0.0, float(p + (q - p) * k)) for p, q in zip(x, y, strict=True))
        for terms in a[grown:]:  # in the smaller twin only (never for alike layers): kept as it is
            total += max(terms)
        # Each added layer brings the larger twin's own units again; their terms sum per layer.
        total += float(k) * sum(max(terms) for terms in b[grown:])
    return total
