"""The data-dependent ops' invariants: their comparison counts are lower bounds no larger than what the best
known algorithms need, and the executor's results are what the definitions say, on generated inputs."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from solar.backends.executor import run
from solar.ir import parse_and_verify
from solar.ir.analysis.selection_counts import ceil_log2_factorial


def merge_insertion(n: int) -> int:
    """Comparisons Ford–Johnson merge insertion needs to sort n elements in the worst case."""
    return sum(math.ceil(math.log2(3 * k / 4)) for k in range(1, n + 1))


@given(st.integers(1, 3000))
def test_sort_bound_is_below_merge_insertion_and_above_n_minus_1(n: int) -> None:
    assert n - 1 <= ceil_log2_factorial(n) <= merge_insertion(n)


@given(st.integers(1, 2000), st.data())
def test_topk_and_kthvalue_bounds_are_below_known_algorithms(n: int, data: st.DataObject) -> None:
    k = data.draw(st.integers(1, n))
    topk = (n - k) + ceil_log2_factorial(k)
    tournament = n - 1 + (k - 1) * math.ceil(math.log2(n)) if n > 1 else 0
    assert n - 1 <= topk <= tournament
    kth = n - 1 + min(k - 1, n - k)
    assert kth <= 3 * n  # the Dor–Zwick selection needs about 2.95·n


PROGRAM = """
solar.func @f(%x: tensor<{r}x{n}xf32>) -> (tensor<{r}x{n}xf32>, tensor<{r}x{n}xi64>, tensor<{r}x{k}xf32>,
                                       tensor<{r}xf32>, tensor<{r}x{n}xf32>) {{
  %v, %i = solar.sort %x {{axis = 1, descending = {desc}}} : (tensor<{r}x{n}xf32>, tensor<{r}x{n}xi64>)
  %tv, %ti = solar.topk %x {{k = {k}, axis = 1}} : (tensor<{r}x{k}xf32>, tensor<{r}x{k}xi64>)
  %kv, %ki = solar.kthvalue %x {{k = {k}, axis = 1}} : (tensor<{r}xf32>, tensor<{r}xi64>)
  %c = solar.cummin %x {{axis = 1}} : tensor<{r}x{n}xf32>
  solar.return %v, %i, %tv, %kv, %c
}}
"""


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 4), st.integers(1, 12), st.booleans(), st.data())
def test_executor_follows_the_definitions(r: int, n: int, desc: bool, data: st.DataObject) -> None:
    k = data.draw(st.integers(1, n))
    # Few distinct values, so that ties (and the stable order among them) are exercised.
    x = np.array(data.draw(st.lists(st.integers(-3, 3), min_size=r * n, max_size=r * n)), np.float32).reshape(r, n)
    module = parse_and_verify(PROGRAM.format(r=r, n=n, k=k, desc=str(desc).lower()))
    v, i, tv, kv, c = run(module, [x])
    order = np.argsort(-x if desc else x, axis=1, kind="stable")
    assert np.array_equal(i, order) and np.array_equal(v, np.take_along_axis(x, order, axis=1))
    assert np.array_equal(tv, -np.sort(-x, axis=1)[:, :k])
    assert np.array_equal(kv, np.sort(x, axis=1)[:, k - 1])
    assert np.array_equal(c, np.minimum.accumulate(x, axis=1))
