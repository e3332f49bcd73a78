"""Exports (docs/exports.md): the NVIDIA SOLAR einsum graph (schema, equations, round trip through
`solar-translate --from nvsolar-yaml`), Timeloop problems (dimensions, projections, coefficients) and the
Graphviz text (rendered when the `dot` program is installed)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
import yaml
from test_reorder_einsum import run_pipeline

from solar.backends.export_dot import emit_dot
from solar.backends.export_nvsolar import emit_nvsolar
from solar.backends.export_timeloop import problem, timeloop_problems
from solar.frontends.nvsolar_yaml import GraphImportError, translate_nvsolar
from solar.ir import EinsumOp, ModuleOp, load
from solar.ir.analysis.counts import einsum_counts

REPO_ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ["matmul", "conv2d", "softmax", "mlp", "layernorm", "rmsnorm", "bmm_bf16", "mlp_heads"]
TCONV = REPO_ROOT / "tests" / "lit" / "lift-einsum" / "transposed-conv.sir"
REQUIRED = {"type": str, "einsum_equation": str, "elementwise_op": str, "reduction_op": str, "is_real_einsum": bool,
            "is_einsum_supportable": bool, "tensor_names": dict, "tensor_types": dict, "tensor_shapes": dict,
            "connections": dict}
RANK = re.compile(r"\([A-Z0-9+-]+\)|[A-Z][0-9]*")


def lifted(name: str) -> ModuleOp:
    module, _ = run_pipeline(load(str(REPO_ROOT / "examples" / f"{name}.sir")), "lift-einsum")
    return module


def graph_of(module: ModuleOp) -> dict:
    return yaml.safe_load(emit_nvsolar(module))


@pytest.mark.parametrize("name", EXAMPLES)
def test_nvsolar_layers_follow_the_schema(name: str) -> None:
    doc = graph_of(lifted(name))
    assert set(doc) >= {"model_name", "layers"} and isinstance(doc["layers"], dict)
    ids = set(doc["layers"])
    for lid, layer in doc["layers"].items():
        for key, kind in REQUIRED.items():
            assert isinstance(layer[key], kind), (lid, key)
        for key in ("tensor_names", "tensor_types", "tensor_shapes", "connections"):
            assert set(layer[key]) == {"inputs", "outputs"}, (lid, key)
        assert len(layer["tensor_names"]["inputs"]) == len(layer["tensor_types"]["inputs"]) \
            == len(layer["tensor_shapes"]["inputs"])
        assert layer["reduction_op"] in ("add", "max", "min", "mul", "none")
        assert all(t in ("input", "weight", "bias", "output") for side in ("inputs", "outputs")
                   for t in layer["tensor_types"][side])
        assert set(layer["connections"]["inputs"]) | set(layer["connections"]["outputs"]) <= ids
        if layer["type"] == "start":
            assert layer["tensor_shapes"]["inputs"] == [] and len(layer["tensor_shapes"]["outputs"]) == 1
            continue
        # Ranks in SOLAR's convention (a capital, optionally a number; windows in parentheses), one per dim.
        lhs, rhs = layer["einsum_equation"].split("->")
        terms = lhs.split(",")
        assert len(terms) == len(layer["tensor_shapes"]["inputs"])
        for term, shape in zip([*terms, rhs], [*layer["tensor_shapes"]["inputs"], *layer["tensor_shapes"]["outputs"]],
                               strict=True):
            assert "".join(RANK.findall(term)) == term, term
            assert len(RANK.findall(term)) == len(shape), (lid, term, shape)


def equations(module: ModuleOp) -> dict[str, str]:
    return {lid: layer["einsum_equation"] for lid, layer in graph_of(module)["layers"].items()
            if layer["type"] != "start"}


def test_nvsolar_equations_of_matmul_conv_transposed_conv_and_softmax() -> None:
    assert equations(lifted("matmul")) == {"matmul": "IK,KJ->IJ"}
    conv = graph_of(lifted("conv2d"))["layers"]["conv2d.1"]
    assert (conv["type"], conv["einsum_equation"], conv["is_real_einsum"]) == (
        "conv2d", "NC(P+R)(Q+S),KCRS->NKPQ", True)
    assert conv["solar"]["subscripts"] == "nc(2p+2r-1)(2q+2s-1),kcrs->nkpq"
    tconv, _ = run_pipeline(load(str(TCONV)), "lift-einsum")
    layer = graph_of(tconv)["layers"]["tconv"]
    assert (layer["type"], layer["einsum_equation"]) == ("convtranspose1d", "NC(P-R),CKR->NKP")
    soft = graph_of(lifted("softmax"))["layers"]
    got = {lid: (soft[lid]["einsum_equation"], soft[lid]["elementwise_op"], soft[lid]["reduction_op"])
           for lid in ("softmax.0", "softmax.1", "softmax.2")}
    assert got == {"softmax.0": ("IJ->I", "copy", "max"), "softmax.1": ("IJ,I->I", "exp", "add"),
                   "softmax.2": ("IJ,I,I->IJ", "div", "none")}


def totals(module: ModuleOp) -> tuple[int, int, int]:
    params = [p.name for p in module.params]
    counts = [einsum_counts(op, params, module.param_values()) for op in module.walk() if isinstance(op, EinsumOp)]
    return (sum(c.points for c in counts), sum(c.flops for c in counts),
            sum(sum(c.bytes_read.values()) + c.bytes_written for c in counts))


@pytest.mark.parametrize("name", EXAMPLES)
def test_export_then_import_gives_the_same_counts(name: str) -> None:
    module = lifted(name)
    back = translate_nvsolar(emit_nvsolar(module), f"{name}.yaml")
    assert totals(back) == totals(module)
    assert totals(module)[1] > 0


def test_import_reports_what_the_notation_cannot_express() -> None:
    with pytest.raises(GraphImportError, match="not valid YAML"):
        translate_nvsolar("layers: [", "bad.yaml")
    with pytest.raises(GraphImportError, match="expected a mapping with 'model_name' and 'layers'"):
        translate_nvsolar("- 1\n", "bad.yaml")
    doc = graph_of(lifted("mlp"))
    layer = next(v for v in doc["layers"].values() if v["type"] != "start")
    del layer["solar"]
    layer["elementwise_op"] = "gelu_tanh"
    with pytest.raises(GraphImportError, match="has no SIR equivalent") as info:
        translate_nvsolar(yaml.safe_dump(doc, sort_keys=False), "g.yaml")
    assert info.value.line > 1


# ---- Timeloop -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["matmul", "conv2d", "softmax", "mlp", "lifted_attention"])
def test_timeloop_problems_are_well_formed(name: str) -> None:
    module = load(str(REPO_ROOT / "examples" / f"{name}.sir"))
    if name != "lifted_attention":
        module = lifted(name)
    einsums = [op for op in module.walk() if isinstance(op, EinsumOp)]
    problems = timeloop_problems(module)
    assert len(problems) == len(einsums)
    for (_, text), op in zip(problems, einsums, strict=True):
        doc = yaml.safe_load(text)["problem"]
        assert doc["version"] == 0.4
        shape, instance = doc["shape"], doc["instance"]
        dims = shape["dimensions"]
        coefficients = {c["name"]: c["default"] for c in shape.get("coefficients", [])}
        assert set(instance) == set(dims) | set(coefficients)
        assert all(isinstance(instance[d], int) and instance[d] > 0 for d in dims)
        spaces = shape["data_spaces"]
        assert len({s["name"] for s in spaces}) == len(spaces) == len(op.inputs) + 1
        assert spaces[-1].get("read_write") is True and not any(s.get("read_write") for s in spaces[:-1])
        for space, value in zip(spaces, [*[b.value for b in op.inputs], op.results[0]], strict=True):
            assert value.type is not None and len(space["projection"]) <= value.type.rank
            for products in space["projection"]:
                for product in products:
                    assert product[0] in dims and all(c in coefficients for c in product[1:])


def test_timeloop_conv_projection_has_strides_as_coefficients() -> None:
    module = lifted("conv2d")
    op = next(o for o in module.walk() if isinstance(o, EinsumOp) and o.symbol == "conv2d.1")
    doc, notes = problem(op, {})
    shape = doc["problem"]["shape"]
    x = shape["data_spaces"][0]
    assert x["projection"][2] == [["P", "Pcoef"], ["R", "Rcoef"]]  # (2p+2r-1): input row = 2·P + 2·R
    assert {c["name"]: c["default"] for c in shape["coefficients"]} == {"Pcoef": 2, "Rcoef": 2, "Qcoef": 2,
                                                                          "Scoef": 2}
    assert doc["problem"]["instance"]["R"] == 3 and doc["problem"]["instance"]["P"] == 15
    assert any("constant offset -1" in n for n in notes)


# ---- Graphviz -------------------------------------------------------------------------------------------------


def test_dot_has_clusters_labels_and_edges() -> None:
    module, _ = run_pipeline(load(str(REPO_ROOT / "examples" / "mlp.sir")), "lift-einsum,fuse,sol{target=h100}")
    text = emit_dot(module)
    assert "subgraph cluster_group0" in text
    assert '"fc1.1" [label="@fc1.1\\n\\"ik,jk->ij\\"\\nH += X * W\\nFLOPs 67.1M · bytes 2.49M"' in text
    assert "h100-sxm: 502 ns vector" in text
    assert '"arg.x" -> "fc1.1" [label="%x\\n64x512xf32"]' in text


@pytest.mark.skipif(shutil.which("dot") is None, reason="the Graphviz `dot` program is not installed")
@pytest.mark.parametrize("fmt", ["svg", "png"])
def test_dot_renders(fmt: str, tmp_path: Path) -> None:
    import graphviz

    module, _ = run_pipeline(load(str(REPO_ROOT / "examples" / "lifted_attention.sir")), "sol{target=h100}")
    data = graphviz.Source(emit_dot(module)).pipe(format=fmt)
    if fmt == "svg":
        assert b"<svg" in data and b"@scores" in data
    else:
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 1000


def test_import_orders_layers_by_their_tensors() -> None:
    """A graph whose layers are listed consumers first imports as the same program."""
    module = lifted("mlp")
    doc = graph_of(module)
    doc["layers"] = dict(reversed(list(doc["layers"].items())))
    back = translate_nvsolar(yaml.safe_dump(doc, sort_keys=False), "reversed.yaml")
    assert totals(back) == totals(module)
