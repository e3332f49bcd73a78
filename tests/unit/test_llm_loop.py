"""The pieces of the LLM loop that need no model: extracting SIR from a reply, the parse/verify/interface
diagnostics, the work guard, the prompts and the package data they are built from."""

from __future__ import annotations

import os
from pathlib import Path

os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"

import pytest

from solar.frontends.llm import prompt
from solar.frontends.llm.loop import (
    CandidateError,
    check_params,
    check_work,
    extract_sir,
    parse_candidate,
    signature_problems,
)
from solar.ir import parse_and_verify, tensor

REPO = Path(__file__).resolve().parents[2]
FUNC = "solar.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {\n  solar.return %x\n}\n"


# ---- extraction ---------------------------------------------------------------------------------------


def test_extract_takes_the_sir_block() -> None:
    reply = f"Sure, here it is:\n\n```sir\n{FUNC}```\n\nIt returns its input."
    assert extract_sir(reply) == FUNC


def test_extract_joins_several_sir_blocks_and_ignores_others() -> None:
    reply = f"```python\nx = 1\n```\n```sir\n{FUNC}```\nand\n```sir\n// second\n```"
    assert extract_sir(reply) == FUNC + "// second\n"


def test_extract_accepts_a_lone_untagged_block_or_bare_sir() -> None:
    assert extract_sir(f"```\n{FUNC}```") == FUNC
    assert extract_sir(f"// comment first\n{FUNC}") == f"// comment first\n{FUNC}"


def test_extract_takes_an_unclosed_block_to_the_end() -> None:
    # A reply cut by the token limit: what is there is parsed, and the parser says where it stops.
    assert extract_sir(f"```sir\n{FUNC}") == FUNC


@pytest.mark.parametrize(("reply", "says"), [
    ("I cannot help with that.", "holds no ```sir block and is not SIR (it begins: 'I cannot help"),
    ("```python\nimport os\nos.system('rm -rf /')\n```", "has no ```sir block (it has ```python)"),
    ("", "holds no ```sir block"),
])
def test_extract_rejects_garbage_with_a_diagnostic(reply: str, says: str) -> None:
    with pytest.raises(CandidateError) as info:
        extract_sir(reply)
    assert info.value.stage == "extract" and says in info.value.diagnostic


# ---- parse, verify, interface ----------------------------------------------------------------------------


def test_parse_error_names_the_line_in_the_reply() -> None:
    with pytest.raises(CandidateError) as info:
        parse_candidate("solar.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {\n  solar.return %x,\n}\n")
    assert info.value.stage == "parse"
    assert info.value.diagnostic.startswith("response.sir:3:1: error:")
    assert "^" in info.value.diagnostic  # the source line and a caret, as solar-opt prints them


def test_verifier_error_is_the_verifier_message() -> None:
    sir = "solar.func @f(%x: tensor<4xf32>) -> tensor<8xf32> {\n  solar.return %x\n}\n"
    with pytest.raises(CandidateError) as info:
        parse_candidate(sir)
    assert info.value.stage == "verify"
    assert "response.sir:2:" in info.value.diagnostic and "tensor<8xf32>" in info.value.diagnostic


def test_fragment_sees_the_module_size_parameters() -> None:
    sir = "solar.func @f(%x: tensor<Bx4xf32>) -> tensor<Bx4xf32> {\n  solar.return %x\n}\n"
    with pytest.raises(CandidateError):
        parse_candidate(sir)  # B is undeclared on its own
    assert parse_candidate(sir, params={"B": 8}).funcs[0].name == "f"


def test_signature_and_parameter_problems() -> None:
    problems = signature_problems("@f", [tensor("4xf32")], [tensor("4xf32")], [tensor("4xf32"), tensor("2xi64")],
                                  [tensor("4xf16")])
    assert problems == ["@f takes 1 argument(s), it must take 2", "result 0 of @f is tensor<4xf32>, it must be "
                        "tensor<4xf16>"]
    m = parse_and_verify("solar.module @m [B = 2] {\n" + FUNC + "}\n")
    assert check_params(m, {"B": 16, "S": 4}) == [
        "the size parameter B must default to 16 (the program's size), not 2",
        "the module must declare the size parameter S = 4"]


def test_work_guard_rejects_runaway_loops() -> None:
    m = parse_and_verify("""solar.module @m [N = 4] {
  solar.func @f(%x: tensor<Nxf32>) -> tensor<f32> {
    %s = solar.kernel @spin(%x as X) -> (S: tensor<f32>) {
      affine.for %i = 0 to N {
        affine.for %j = 0 to 1000000 {
          affine.for %k = 0 to %j + 1 {
            S[] += X[%i]
          }
        }
      }
    }
    solar.return %s
  }
}
""")
    check_work(m, {"N": 4}, limit=10**13)
    with pytest.raises(CandidateError) as info:
        check_work(m, {"N": 4})
    assert info.value.stage == "run" and "kernel @spin iterates about 4e+12 points" in info.value.diagnostic


# ---- prompts -------------------------------------------------------------------------------------------


def test_system_prompt_carries_reference_grammar_and_examples() -> None:
    text = prompt.system_prompt()
    assert "# SIR: the SOLAR intermediate representation" in text
    assert "```lark\n" in text and "module_decl:" in prompt.grammar_text()
    for name in prompt.EXAMPLES:
        assert f"\n{name}:\n```sir\n" in text
    assert "never executed as Python" in text


def test_the_prompt_reads_the_one_copy_of_each_file() -> None:
    """The prompt reads docs/ir.md and examples/ as package data (`solar.docs`, `solar.examples`): the files
    of the repository themselves, with no second copy to keep in sync."""
    assert prompt.reference_text() == (REPO / "docs" / "ir.md").read_text(encoding="utf-8")
    assert dict(prompt.example_texts()) == {
        name: (REPO / "examples" / name).read_text(encoding="utf-8") for name in prompt.EXAMPLES}
    assert not (REPO / "frontends" / "llm" / "data").exists()
    for name, text in prompt.example_texts():
        parse_and_verify(text, name)


def test_retry_message_carries_the_diagnostic_verbatim() -> None:
    diag = "response.sir:8:15: error: expected ',' or ']', found 'max'\n        m1[%i max= X\n              ^\n"
    msg = prompt.retry_message(2, "parse", diag, "the whole corrected module")
    assert diag.rstrip() in msg and "Attempt 2 was rejected (parse)" in msg
    assert "count from the first line inside your ```sir block" in msg
