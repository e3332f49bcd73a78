"""Writes hostile variants of nvsolar_graph.yaml into the folder given (issue 28's adversarial findings)."""

import sys
from pathlib import Path

out = Path(sys.argv[1])
out.mkdir(parents=True, exist_ok=True)
graph = (Path(__file__).parent / "nvsolar_graph.yaml").read_text()
SUM_SHAPES = "tensor_shapes: {inputs: [[32, 128]], outputs: [[32]]}"
RELU_SHAPES = "tensor_shapes: {inputs: [[32, 128]], outputs: [[32, 128]]}"
variants = {
    "bomb": "a: &a [1, 2, 3, 4, 5, 6, 7, 8, 9]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\nlayers: {}\n",
    "int-output": graph.replace("outputs: [TinyMLP.relu_0.Output]", "outputs: [1]"),
    "solar-list": graph + "solar: [1]\n",
    "solar-nope": graph + "solar: {outputs: [nope]}\n",
    "nested-names": graph.replace("inputs: [TinyMLP.relu_0.Output]", "inputs: [[TinyMLP.relu_0.Output]]"),
    "two-arrows": graph.replace("einsum_equation: AB->A\n", "einsum_equation: A->B->A\n"),
    "huge-int": graph.replace(SUM_SHAPES, "tensor_shapes: {inputs: [[32, 128]], outputs: [[" + "9" * 5000 + "]]}"),
    "wide-int": graph.replace(SUM_SHAPES, "tensor_shapes: {inputs: [[32, 128]], outputs: [[" + "9" * 30 + "]]}"),
    "deep": "layers: " + "[" * 500 + "]" * 500 + "\n",
    "mismatch": graph.replace(RELU_SHAPES, "tensor_shapes: {inputs: [[32, 128]], outputs: [[32, 127]]}"),
    "same-name": graph.replace("  sum_0:", "  relu_0:"),
    "same-output": graph.replace("outputs: [TinyMLP.sum_0.Output]", "outputs: [TinyMLP.relu_0.Output]"),
    "dtype": graph.replace("torch.float32", "torch.quantum"),
    "short-bindings": graph.replace(
        "  sum_0:\n", "  sum_0:\n    solar: {subscripts: 'ij->i', bindings: [], result: Y, body: ['Y += A']}\n"),
}
for name, text in variants.items():
    (out / f"{name}.yaml").write_text(text)
(out / "not-utf8.yaml").write_bytes(graph.encode()[:120] + b"\xff" + graph.encode()[120:])
(out / "a-directory.yaml").mkdir(exist_ok=True)
