"""A mixture of experts' grouped products, recognised in an exported graph and rewritten as the per-row
products they compute.

Hugging Face's default experts kernel (`grouped_mm_experts_forward`, transformers' integrations/moe.py)
sorts the token-expert pairs by expert and multiplies each group of rows by its expert's weights:

    ids, perm = sort(top_k_index.reshape(-1))                       # the pairs' experts, ascending
    offs = cumsum(histc(ids.to(f), bins=E, min=0, max=E - 1), 0)    # where each expert's group ends
    y = _grouped_mm(x, w, offs)        # x[S, K], w[E, K, N]: row s by w[e] where offs[e-1] <= s < offs[e]

(`transformers::grouped_mm_fallback` where torch's kernel does not apply, with the same arguments). The
group sizes are data, so no static graph holds the groups; but the sorted ids name each row's group
outright: row s lies in group `ids[s]` (for an integer e in [0, E - 1], `histc` with E bins over that range
counts it in bin e, and the ids are sorted, so the group of rows counted for e is the rows holding e). So
`y[s] = x[s] @ w[ids[s]]`, rewritten as

    y = squeeze(bmm(unsqueeze(x, 1), index(w, [ids])), 1)

every row through its expert: the FLOPs are exact for any routing, and the gather of `w` reads, at least,
the experts the ids must name apart (the cost model's `least_distinct_ids`: the k of the top-k the ids are
sorted from). The bin counts and their sum, left with no reader, are removed. Any other form of grouped
product (a bias, an output dtype, offsets of another origin) is left as it was.
"""

from __future__ import annotations

import contextlib
import operator
from typing import Any

import torch
import torch.fx

_ATEN = torch.ops.aten
_GROUPED = ("aten::_grouped_mm", "transformers::grouped_mm_fallback")
_CASTS = ("aten::to", "aten::_to_copy", "prims::convert_element_type")
_SORTS = ("aten::sort",)


def node_op(node: Any) -> str:
    """The ATen schema name of an FX node's op (`aten::sort`); empty for anything else."""
    schema = getattr(getattr(node, "target", None), "_schema", None)
    return schema.name if schema is not None else ""


def _arg(node: torch.fx.Node, index: int, name: str, default: Any = None) -> Any:
    return node.args[index] if len(node.args) > index else node.kwargs.get(name, default)


def rewrite_grouped_experts(ep: torch.export.ExportedProgram) -> int:
    """Rewrites every grouped experts product of `ep`'s graph (module docstring) in place; returns how many."""
    graph = ep.graph
    rewritten = 0
    sorts: dict[torch.fx.Node, None] = {}  # the sorts that grouped the rewritten products, in order
    for node in [n for n in graph.nodes if n.op == "call_function" and node_op(n) in _GROUPED]:
        match = _match(node)
        if match is None:
            continue
        x, w, ids, dead = match
        mode = torch._guards.detect_fake_mode([x.meta["val"]])
        with graph.inserting_before(node):
            rows = graph.call_function(_ATEN.index.Tensor, (w, [ids]))
            lifted = graph.call_function(_ATEN.unsqueeze.default, (x, 1))
            product = graph.call_function(_ATEN.bmm.default, (lifted, rows))
            result = graph.call_function(_ATEN.squeeze.dim, (product, 1))
        with mode if mode is not None else contextlib.nullcontext():
            rows.meta["val"] = _ATEN.index.Tensor(w.meta["val"], [ids.meta["val"]])
            lifted.meta["val"] = _ATEN.unsqueeze.default(x.meta["val"], 1)
            product.meta["val"] = _ATEN.bmm.default(lifted.meta["val"], rows.meta["val"])
            result.meta["val"] = _ATEN.squeeze.dim(product.meta["val"], 1)
        for new in (rows, lifted, product, result):
            new.meta["stack_trace"] = node.meta.get("stack_trace")
        node.replace_all_uses_with(result)
        graph.erase_node(node)
        for old in dead:  # users before what they use
            if not old.users:
                graph.erase_node(old)
        sorts[ids.args[0]] = None  # type: ignore[index]
        rewritten += 1
    for sort in sorts:
        _drop_sort(graph, sort)
    if rewritten:
        ep.graph_module.recompile()
    return rewritten


def _match(node: torch.fx.Node) -> tuple[torch.fx.Node, torch.fx.Node, torch.fx.Node, list[torch.fx.Node]] | None:
    """(the rows, the experts' weights, the rows' sorted expert ids, the nodes that may fall dead) where
    `node` is a grouped product over groups counted from sorted ids, else None."""
    x, w, offs = node.args[0], node.args[1], _arg(node, 2, "offs")
    if node_op(node) == "aten::_grouped_mm" and (_arg(node, 3, "bias") is not None
                                              or _arg(node, 4, "out_dtype") is not None):
        return None
    if not all(isinstance(a, torch.fx.Node) for a in (x, w, offs)):
        return None
    xv, wv = x.meta.get("val"), w.meta.get("val")
    if not isinstance(xv, torch.Tensor) or not isinstance(wv, torch.Tensor) or xv.dim() != 2 or wv.dim() != 3:
        return None
    experts = wv.shape[0]
    if node_op(offs) != "aten::cumsum" or _arg(offs, 1, "dim") not in (0, -1):
        return None
    histc = offs.args[0]
    if not isinstance(histc, torch.fx.Node) or node_op(histc) != "aten::histc":
        return None
    bins, low, high = _arg(histc, 1, "bins", 100), _arg(histc, 2, "min", 0), _arg(histc, 3, "max", 0)
    if not isinstance(experts, int) or bins != experts or low != 0 or high != experts - 1 or experts < 2:
        return None
    chain = [offs, histc]
    ids = histc.args[0]
    while isinstance(ids, torch.fx.Node) and node_op(ids) in _CASTS:
        chain.append(ids)
        ids = ids.args[0]
    # The ids: the sorted values (ascending) of integer expert indices, one per row.
    if not isinstance(ids, torch.fx.Node) or ids.target is not operator.getitem or ids.args[1] != 0:
        return None
    sort = ids.args[0]
    if not isinstance(sort, torch.fx.Node) or node_op(sort) not in _SORTS:
        return None
    descending = sort.kwargs.get("descending", False)
    if sort.target is _ATEN.sort.default and len(sort.args) > 2:
        descending = sort.args[2]
    elif sort.target is _ATEN.sort.stable and len(sort.args) > 3:
        descending = sort.args[3]
    idv = ids.meta.get("val")
    if descending or not isinstance(idv, torch.Tensor) or idv.dim() != 1 or idv.dtype.is_floating_point:
        return None
    if not _same(idv.shape[0], xv.shape[0]):
        return None
    return x, w, ids, chain


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, torch.SymInt) or isinstance(b, torch.SymInt):
        return str(a) == str(b)
    return bool(a == b)


def _drop_sort(graph: torch.fx.Graph, sort: torch.fx.Node) -> bool:
    """Removes the sort that grouped the rows, where all it did was to group them: its sorted ids are read
    only as indices (now row by row), and its permutation `perm` only to gather rows into the sorted order
    (`t[perm]`, and the tokens `h[perm // k]`) and to invert itself (`inv[perm] = arange(n)`, then
    `y[inv]`). Each row's computation is its own, so with no sort at all the rows come in the order of the
    ids and every result is the same: `t[perm]` is `t`, `h[perm // k]` is `h` with each token's row k times
    over, and `y[inv]` is `y`. The sort is HF's way to make groups; grouping needs no comparison sort (a
    serving engine counts rows per expert), so none is priced. Returns whether it was removed."""
    getitems = {u.args[1]: u for u in sort.users if u.target is operator.getitem}
    if len(getitems) != len(sort.users):
        return False
    values, perm = getitems.get(0), getitems.get(1)
    keys = sort.args[0]
    if not isinstance(keys, torch.fx.Node) or values is None:
        return False
    if any(not (_is_assert(u) or _indexes_with(u, values)) for u in values.users):
        return False
    edits: list[tuple[torch.fx.Node, Any]] = []  # (a node, what stands for it: a node or a new op's recipe)
    if perm is not None:
        plan = _perm_uses(perm, keys)
        if plan is None:
            return False
        edits = plan
    values.replace_all_uses_with(keys)
    for node, stand_in in edits:
        if isinstance(stand_in, tuple):  # (rows, k): each row k times over
            rows, times = stand_in
            with graph.inserting_before(node):
                spread = graph.call_function(_ATEN.repeat_interleave.self_int, (rows, times, 0))
            spread.meta.update(val=node.meta["val"], stack_trace=node.meta.get("stack_trace"))
            stand_in = spread
        node.replace_all_uses_with(stand_in)
    fed = _closure(sort)
    for node in reversed(list(graph.nodes)):  # what fell dead, users before what they use
        if (node in fed and not node.users) or (_is_assert(node) and node.args and node.args[0] in fed):
            graph.erase_node(node)
    return True


def _closure(sort: torch.fx.Node) -> set[torch.fx.Node]:
    """The sort and what it feeds up to the gathers it permutes: the nodes the removal leaves dead."""
    out = {sort}
    frontier = [sort]
    while frontier:
        for user in frontier.pop().users:
            if user not in out and (user.target is operator.getitem or node_op(user) in (
                    "aten::floor_divide", "aten::index_put_", "aten::index_put", "aten::index", *_CASTS,
                    "aten::histc", "aten::cumsum", "aten::empty_like", "aten::_assert_tensor_metadata")):
                out.add(user)
                frontier.append(user)
    return out


def _is_assert(node: torch.fx.Node) -> bool:
    return node_op(node) == "aten::_assert_tensor_metadata"


def _indexes_with(node: torch.fx.Node, ids: torch.fx.Node) -> bool:
    """`node` is `t[ids]`, ids the only index, on the first dimension."""
    if node_op(node) != "aten::index" or len(node.args) < 2:
        return False
    indices = node.args[1]
    return isinstance(indices, list | tuple) and len(indices) == 1 and indices[0] is ids and node.args[0] is not ids


def _rows(node: Any) -> Any:
    val = node.meta.get("val") if isinstance(node, torch.fx.Node) else None
    return val.shape[0] if isinstance(val, torch.Tensor) and val.dim() else None


def _perm_uses(perm: torch.fx.Node, keys: torch.fx.Node) -> list[tuple[torch.fx.Node, Any]] | None:
    """What stands for each gather through the permutation once the sort is gone, or None where the
    permutation is used otherwise (see `_drop_sort`)."""
    n = _rows(keys)
    edits: list[tuple[torch.fx.Node, Any]] = []
    for use in perm.users:
        if _is_assert(use) or (node_op(use) == "aten::empty_like" and all(
                node_op(u) in ("aten::index_put_", "aten::index_put") and u.args[0] is use for u in use.users)):
            continue  # the inverse's fresh tensor, checked with the store below
        if _indexes_with(use, perm) and _same(_rows(use.args[0]), n):
            edits.append((use, use.args[0]))  # t[perm] -> t
        elif node_op(use) == "aten::floor_divide" and use.args[0] is perm and isinstance(use.args[1], int):
            times = use.args[1]
            for gather in use.users:
                rows = gather.args[0] if _indexes_with(gather, use) else None
                if rows is None or _rows(rows) is None or not _same(_rows(rows) * times, n):
                    return None
                edits.append((gather, (rows, times)))  # h[perm // k] -> h, each row k times
        elif node_op(use) in ("aten::index_put_", "aten::index_put") and _inverts(use, perm, n):
            for gather in use.users:
                if not _indexes_with(gather, use) or not _same(_rows(gather.args[0]), n):
                    return None
                edits.append((gather, gather.args[0]))  # y[inv] -> y
        else:
            return None
    return edits


def _inverts(store: torch.fx.Node, perm: torch.fx.Node, n: Any) -> bool:
    """`store` is `inv[perm] = arange(n)` into a fresh tensor: the inverse permutation."""
    dest, indices, source = (*store.args, None, None, None)[:3]
    accumulate = _arg(store, 3, "accumulate", False)
    if accumulate or not isinstance(indices, list | tuple) or len(indices) != 1 or indices[0] is not perm:
        return False
    if not isinstance(dest, torch.fx.Node) or node_op(dest) not in ("aten::empty_like", "aten::empty"):
        return False
    if not isinstance(source, torch.fx.Node) or not _same(_rows(source), n):
        return False
    return source.target is _ATEN.arange.default or (source.target is _ATEN.arange.start and source.args[0] == 0)
