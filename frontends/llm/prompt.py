"""The prompts: the IR reference, the grammar and worked examples (the system message), then the task.

Everything the model reads is package data, each file its only copy: docs/ir.md is `solar.docs`, the
examples are `solar.examples` (examples/), the grammar is `solar.grammar`. So a wheel install builds the
same prompts as a checkout, and no copy can drift.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources

from .client import Message

# The examples the prompt shows, chosen to cover what the reference shows only briefly: a linear layer with a
# size parameter, a kernel with locals and several inner passes, narrow floats with casts and slices, and
# indirect access through solar.gather.
EXAMPLES = ("mlp.sir", "softmax.sir", "params.sir", "embedding.sir")


@functools.cache
def reference_text() -> str:
    return resources.files("solar.docs").joinpath("ir.md").read_text(encoding="utf-8")


@functools.cache
def grammar_text() -> str:
    return resources.files("solar.grammar").joinpath("sir.lark").read_text(encoding="utf-8")


@functools.cache
def example_texts() -> tuple[tuple[str, str], ...]:
    root = resources.files("solar.examples")
    return tuple((name, root.joinpath(name).read_text(encoding="utf-8")) for name in EXAMPLES)


RULES = """\
You translate PyTorch programs into SIR, the textual intermediate representation of SOLAR, a speed-of-light
analysis toolchain. SIR is defined by the reference and the grammar below; nothing else is accepted.

What happens to your answer: the SIR in it is parsed, verified, run on seeded inputs and compared with the
original program's outputs. It is never executed as Python. On any failure you get the exact diagnostic and
try again, within a small budget of attempts.

Rules:
- Answer with one ```sir fenced block holding exactly what is asked for; a sentence before it is fine.
- Write one solar.kernel per framework op, as an eager library would run it (a softmax is one kernel with
  its passes inside). The IR is used to count FLOPs and bytes, so do no more work than the op needs: no
  redundant passes, no dense loops over work that is not done.
- Loop bounds and indices are affine in loop indices and size parameters; indirect access (indices taken
  from data) is solar.gather / solar.scatter at the composition level.
- Keep every signature you are given exactly: argument order and types, result types, size parameters.
- Narrow floats (bf16, f16) accumulate in f32, as eager libraries do; conversions are explicit (cast<T>).
"""


@functools.cache
def system_prompt() -> str:
    parts = [RULES, "\n# The SIR reference (docs/ir.md)\n\n", reference_text(),
             "\n\n# The grammar (Lark, LALR; the parser is strict)\n\n```lark\n", grammar_text(), "```\n",
             "\n# Worked examples\n"]
    for name, text in example_texts():
        parts.append(f"\n{name}:\n```sir\n{text.rstrip()}\n```\n")
    return "".join(parts)


@dataclass(frozen=True)
class Interface:
    """The entry function the model must write (whole-program mode): its signature and where each argument
    comes from, the size parameters it must declare, and the sizes validation runs at."""

    signature: str  # `solar.func @forward(%x: tensor<BATCHx4xf32>, ...) -> tensor<...>`
    arguments: Sequence[str]  # `%x = input 0`, `%p_fc_weight = parameter fc.weight`
    params: dict[str, int]  # size parameter -> full-size value
    sizes: dict[str, int]  # size parameter -> value used for validation


def _source_block(source: str, source_name: str) -> str:
    return f"The program ({source_name}):\n\n```python\n{source.rstrip()}\n```\n"


def whole_request(source: str, source_name: str, iface: Interface) -> str:
    params = ", ".join(f"{k} = {v}" for k, v in iface.params.items())
    lines = [f"Translate this PyTorch program into one SIR module. {_source_block(source, source_name)}"]
    if params:
        lines.append(f"The module must declare the size parameters [{params}] and use them wherever those sizes "
                     "appear (validation rebinds them to " +
                     ", ".join(f"{k}={v}" for k, v in iface.sizes.items()) + ").\n")
    lines.append("Its entry function (the first function, or the one named @main) must have exactly this "
                 f"signature:\n\n```\n{iface.signature}\n```\n")
    lines.append("Where its arguments come from: " + "; ".join(iface.arguments) + ".\n")
    lines.append("It returns the model's outputs in order. Answer with the whole module in one ```sir block.")
    return "\n".join(lines)


@dataclass(frozen=True)
class HoleSpec:
    """One function of a hybrid translation that the model writes."""

    name: str  # the function symbol, without '@'
    op: str  # `aten.sort.default`
    call: str  # `aten.sort.default(self=%x, dim=1, descending=False)`
    where: str  # `model.py:8: a = torch.sort(x, dim=1)[0]`, or ''
    returns: str  # which outputs of the op the function returns
    signature: str
    reason: str  # why the deterministic frontend left it


def hybrid_request(source: str, source_name: str, skeleton: str, holes: Sequence[HoleSpec],
                   params: dict[str, int]) -> str:
    names = ", ".join(f"@{h.name}" for h in holes)
    parts = [f"The deterministic translator turned this PyTorch program into SIR except for {len(holes)} "
             f"op(s) it cannot translate. {_source_block(source, source_name)}",
             "The module so far; each function whose body is `// TO WRITE` is a call site's callee, and its "
             "signature is fixed by the surrounding IR:\n",
             f"```sir\n{skeleton.rstrip()}\n```\n"]
    for h in holes:
        at = f"\n  source: {h.where}" if h.where else ""
        parts.append(f"@{h.name} computes `{h.call}`{at}\n  returns: {h.returns}\n  why it is left to you: "
                     f"{h.reason}\n  signature:\n```\n{h.signature}\n```\n")
    if params:
        parts.append("The function bodies may use the module's size parameters (" +
                     ", ".join(f"{k} = {v}" for k, v in params.items()) + ").\n")
    parts.append(f"Answer with one ```sir block holding only the solar.func definitions of {names} (no "
                 "solar.module around them), with exactly those signatures. You may add helper functions "
                 "under new names.")
    return "\n".join(parts)


_STAGE_HINTS = {
    "extract": "Put the SIR in one ```sir fenced block.",
    "size": "Your answer was too long; answer with the SIR only.",
    "parse": "Line and column numbers count from the first line inside your ```sir block.",
    "verify": "Line and column numbers count from the first line inside your ```sir block.",
    "interface": "Keep the required signature and size parameters.",
    "run": "The IR was run on the validation inputs and stopped with this error.",
    "compare": "The IR ran, but its outputs differ from the original program's on the same inputs.",
}


def retry_message(attempt: int, stage: str, diagnostic: str, what: str) -> str:
    """The feedback for a failed attempt: the stage, the exact diagnostic, and what to send back."""
    return (f"Attempt {attempt} was rejected ({stage}):\n\n```\n{diagnostic.rstrip()}\n```\n\n"
            f"{_STAGE_HINTS.get(stage, '')} Answer again with {what} in one ```sir block.")


def first_messages(user: str) -> list[Message]:
    return [{"role": "system", "content": system_prompt()}, {"role": "user", "content": user}]
