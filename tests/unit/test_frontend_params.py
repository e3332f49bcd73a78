"""One size, one parameter: torch translations name size parameters after the source's globals and make
every dimension a global sizes one parameter; other dims after the input's argument and axis
(frontends/size_names.py, torch_symbols.py)."""

from __future__ import annotations

from pathlib import Path

import torch

from solar.frontends.torch_export import callable_problem, translate_problem
from solar.frontends.torch_symbols import SymbolNames, arg_axis_name, source_size_names

KV_CACHES = '''
"""Two decode layers reading their own key/value caches: export proves k0, v0 equal and k1, v1 equal,
but not k0 and k1; the source sizes them all with one global."""
import torch

batch_size = 2
cache_len = 24
dim = 16


class Model(torch.nn.Module):
    def forward(self, q, k0, v0, k1, v1):
        a = torch.softmax(q @ k0.transpose(1, 2), dim=-1) @ v0
        return torch.softmax(a @ k1.transpose(1, 2), dim=-1) @ v1


def get_inputs():
    return [torch.randn(batch_size, 1, dim), *(torch.randn(batch_size, cache_len, dim) for _ in range(4))]


def get_init_inputs():
    return []
'''


def test_source_names_follow_the_globals() -> None:
    names = source_size_names({"batch_size": 16, "seq_len": 512, "hidden_dim": 64, "n": 7, "T1": 9,
                               "flag": True, "_private": 99, "a": 3, "b": 3, "one": 1})
    assert names[16] == "BATCH" and names[512] == "SEQ_LEN" and names[64] == "HIDDEN"
    assert names[7].startswith("\0") and names[9].startswith("\0")  # too short, or a kernel's tensor name
    assert 3 not in names and 1 not in names and True not in names.values()  # ambiguous, size 1, a bool


def test_symbols_of_one_global_are_one_parameter() -> None:
    syms = SymbolNames({48: "CACHE_LEN", 16: "\0B"})
    for sym, dim, hint, arg in [("s0", 0, 16, 0), ("s1", 1, 48, 1), ("s2", 1, 48, 2), ("s3", 0, 16, 1),
                                ("s4", 1, 7, 1)]:
        syms.declare(sym, dim, hint, arg)
    assert syms.names == {"s0": "BATCH", "s1": "CACHE_LEN", "s2": "CACHE_LEN", "s3": "BATCH", "s4": "DIM1"}
    assert syms.where["CACHE_LEN"] == [(1, 1), (2, 1)]


def test_kv_cache_lengths_are_one_parameter(tmp_path: Path) -> None:
    src = tmp_path / "kv.py"
    src.write_text(KV_CACHES)
    tr = translate_problem(str(src), dynamic="all")
    assert tr.params == {"BATCH": 2, "DIM": 16, "CACHE_LEN": 24}
    assert sorted(tr.param_dims["CACHE_LEN"]) == [(1, 1), (2, 1), (3, 1), (4, 1)]


def test_positions_name_dims_before_values() -> None:
    """A caller that knows its inputs (an LLM server's ids and caches) names dims by position; positions of
    one name are one parameter whatever their example sizes."""
    syms = SymbolNames({(0, 1): "PROMPT", (1, 2): "CTX", (2, 2): "CTX", 8: "BATCH"})
    for sym, dim, hint, arg in [("s0", 0, 8, 0), ("s1", 1, 8, 0), ("s2", 2, 30, 1), ("s3", 2, 30, 2)]:
        syms.declare(sym, dim, hint, arg)
    assert syms.names == {"s0": "BATCH", "s1": "PROMPT", "s2": "CTX", "s3": "CTX"}


class _IdsAndMask(torch.nn.Module):
    def forward(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        return ids.float() * mask


def test_without_globals_names_follow_the_argument_and_axis() -> None:
    """forward(ids, mask) with no module-level sizes: the batch is BATCH, the sequence `ids` axis 1, and
    the mask's sequence (export proves it equal to the ids') the same parameter."""
    problem = callable_problem(_IdsAndMask(), [torch.zeros(2, 5, dtype=torch.int64), torch.ones(2, 5)], "m")
    tr = translate_problem(problem, dynamic="all")
    assert tr.params == {"BATCH": 2, "IDS_1": 5}
    assert tr.param_dims == {"BATCH": [(0, 0), (1, 0)], "IDS_1": [(0, 1), (1, 1)]}


def test_generated_names() -> None:
    syms = SymbolNames()
    for sym, dim, arg, name in [("s0", 0, 0, "ids"), ("s1", 1, 0, "ids"), ("s2", 0, 1, "mask"),
                                ("s3", 2, 1, "mask"), ("s4", 1, 2, "args_0"), ("s5", 1, 3, "x-y")]:
        syms.declare(sym, dim, 7, arg, name)
    assert syms.names == {"s0": "BATCH", "s1": "IDS_1", "s2": "MASK_0", "s3": "MASK_2", "s4": "DIM1",
                          "s5": "X_Y_1"}
    assert arg_axis_name("ids", 1) == "IDS_1" and arg_axis_name("_", 0) == "" and arg_axis_name("input", 0) == ""
