"""The generate → parse → verify → run → compare loop.

    outcome = run_loop(client, messages, check, max_attempts=4, what="the whole module")

`check(reply_text, attempt)` turns one reply into a trusted result or raises `CandidateError(stage,
diagnostic)`; the diagnostic goes back to the model verbatim (the parser's `file:line:col: error:` with the
source line and caret, the verifier's messages, the run error, or which output differs, where and by how much),
and the loop asks again until the budget of attempts is spent. The stages, in order:

- *extract*: the ```sir block of the reply (or the whole reply when it is bare SIR); anything else, e.g. a
  Python block, is rejected with a diagnostic. The reply is only ever parsed as SIR: never `exec`ed.
- *parse*, *verify*: `solar.ir`'s parser and verifier, diagnostics as `solar-opt` prints them.
- *interface*: the signature the caller fixed (whole program: the entry function; hybrid: each hole).
- *run*, *compare*: the executor at the validation sizes, against golden outputs computed once, before
  the first request (so a program that cannot run costs no tokens).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

import numpy as np

from solar.ir.diagnostics import DiagnosticEngine, DiagnosticError
from solar.ir.expr_values import evaluate_int
from solar.ir.ops import AffineFor, AffineIf, CallOp, ForOp, KernelOp, KStmt, ModuleOp, Op, Param
from solar.ir.parser import parse_module
from solar.ir.types import TensorType, types_equal
from solar.ir.verifier import verify

from ..timed_run import RunFailed, RunTimeout, run_with_limit
from ..validate import ValidationReport, compare, executor
from .client import LLMClient, LLMError, Message, Transcript
from .prompt import retry_message

T = TypeVar("T")

RESPONSE_FILE = "response.sir"  # the name diagnostics give the model's SIR
# A runaway loop nest (`affine.for %i = 0 to 1000000000000`) would hang validation: kernels are checked for
# their iteration points at the validation sizes first. 1e10 points is minutes of Numba time, far more than
# any program validated at reduced sizes needs.
MAX_POINTS = 10**10


class CandidateError(Exception):
    """One attempt failed at `stage`; `diagnostic` is what the model is shown."""

    def __init__(self, stage: str, diagnostic: str) -> None:
        super().__init__(f"{stage}: {diagnostic}")
        self.stage = stage
        self.diagnostic = diagnostic.rstrip() + "\n"


@dataclass
class Attempt:
    number: int
    stage: str  # where it failed ('ok' for the accepted one)
    diagnostic: str


class LoopFailed(Exception):
    """The budget ran out; carries every attempt's verdict, the last one in the message."""

    def __init__(self, model: str, attempts: list[Attempt]) -> None:
        self.attempts = attempts
        last = attempts[-1] if attempts else Attempt(0, "none", "no attempt was made\n")
        super().__init__(f"no valid translation from {model} after {len(attempts)} attempt(s); the last was "
                         f"rejected ({last.stage}):\n{last.diagnostic}")
        self.last = last


@dataclass
class LoopOutcome(Generic[T]):
    result: T
    attempts: int
    history: list[Attempt] = field(default_factory=list)


# ---- extraction -------------------------------------------------------------------------------------

_FENCE = re.compile(r"^[ \t]*```[ \t]*([A-Za-z0-9_+.-]*)[^\n]*\n(.*?)(?:^[ \t]*```[ \t]*$|\Z)", re.M | re.S)


def extract_sir(text: str) -> str:
    """The SIR in a reply: its ```sir blocks joined in order; else a lone untagged (or ```mlir) block; else the
    whole reply when it reads as SIR. Raises CandidateError('extract') otherwise."""
    blocks = [(m.group(1).lower(), m.group(2)) for m in _FENCE.finditer(text)]
    sir = [body for tag, body in blocks if tag == "sir"]
    if sir:
        return "\n".join(b.rstrip("\n") for b in sir) + "\n"
    plain = [body for tag, body in blocks if tag in ("", "mlir")]
    if len(plain) == 1:
        return plain[0]
    if blocks:
        tags = ", ".join(sorted({f"```{tag}" for tag, _ in blocks}))
        raise CandidateError("extract", f"error: the answer has no ```sir block (it has {tags}); SIR goes in "
                             "one ```sir block, and nothing in the answer is run as code")
    stripped = text.strip()
    first = next((ln.strip() for ln in stripped.splitlines() if ln.strip() and not ln.strip().startswith("//")), "")
    if first.startswith("solar."):
        return stripped + "\n"
    head = stripped[:80].replace("\n", " ")
    raise CandidateError("extract", f"error: the answer holds no ```sir block and is not SIR (it begins: "
                         f"{head!r})")


# ---- parse, verify, interface ------------------------------------------------------------------------


def _errors(engine: DiagnosticEngine) -> str:
    return "".join(engine.format(d) for d in engine.diagnostics if d.severity == "error")


def parse_candidate(sir: str, file: str = RESPONSE_FILE, params: Mapping[str, int | None] | None = None,
                    verify_ir: bool = True) -> ModuleOp:
    """Parses (and verifies) the model's SIR; `params` declares size parameters for a fragment of functions
    written inside a module that declares them."""
    engine = DiagnosticEngine()
    try:
        module = parse_module(sir, file, engine)
    except DiagnosticError as err:
        raise CandidateError("parse", err.format()) from None
    if engine.has_errors:
        raise CandidateError("verify", _errors(engine))
    if params is not None:
        module.params = [Param(k, v) for k, v in params.items()]
    if verify_ir and not verify(module, engine):
        raise CandidateError("verify", _errors(engine))
    return module


def signature_text(name: str, arg_names: Sequence[str], arg_types: Sequence[TensorType],
                   result_types: Sequence[TensorType]) -> str:
    args = ", ".join(f"%{n}: {t}" for n, t in zip(arg_names, arg_types, strict=True))
    res = str(result_types[0]) if len(result_types) == 1 else "(" + ", ".join(map(str, result_types)) + ")"
    return f"solar.func @{name}({args}) -> {res}"


def signature_problems(what: str, arg_types: Sequence[TensorType | None], result_types: Sequence[TensorType],
                       want_args: Sequence[TensorType], want_results: Sequence[TensorType]) -> list[str]:
    out: list[str] = []
    if len(arg_types) != len(want_args):
        out.append(f"{what} takes {len(arg_types)} argument(s), it must take {len(want_args)}")
    else:
        for k, (a, w) in enumerate(zip(arg_types, want_args, strict=True)):
            if a is None or not types_equal(a, w):
                out.append(f"argument {k} of {what} is {a}, it must be {w}")
    if len(result_types) != len(want_results):
        out.append(f"{what} returns {len(result_types)} value(s), it must return {len(want_results)}")
    else:
        for k, (a, w) in enumerate(zip(result_types, want_results, strict=True)):
            if not types_equal(a, w):
                out.append(f"result {k} of {what} is {a}, it must be {w}")
    return out


def check_params(module: ModuleOp, params: Mapping[str, int]) -> list[str]:
    declared = {p.name: p.default for p in module.params}
    out = []
    for name, value in params.items():
        if name not in declared:
            out.append(f"the module must declare the size parameter {name} = {value}")
        elif declared[name] != value:
            out.append(f"the size parameter {name} must default to {value} (the program's size), not "
                       f"{declared[name]}")
    return out


def check_work(module: ModuleOp, sizes: Mapping[str, int], limit: int = MAX_POINTS) -> None:
    """Rejects a module whose kernels run more than `limit` points in all at the validation sizes: each kernel's
    loop nest times the trip counts of the solar.for loops around it (and around the calls that reach it). An
    estimate: bounds that depend on outer indices are taken at the outer index's ends."""
    env = module.param_values()
    env.update(sizes)
    runs: list[tuple[KernelOp, int]] = []
    entry = module.entry
    for func in [entry] if entry is not None else module.funcs:
        _kernel_runs(module, func.body, env, 1, runs, depth=0)
    total = 0
    worst: tuple[KernelOp, int, int] | None = None
    for op, times in runs:
        points = _stmt_points(op.body, env, 1) * times
        total += points
        if worst is None or points > worst[1]:
            worst = (op, points, times)
    if worst is not None and total > limit:
        op, points, times = worst
        loops = f" ({times:.3g} runs inside solar.for loops)" if times != 1 else ""
        whole = f"; the module about {total:.3g}" if total != points else ""
        raise CandidateError("run", f"error: kernel @{op.symbol} iterates about {points:.3g} points{loops} at the "
                             f"validation sizes ({_sizes(sizes)}){whole}, over the limit of {limit:.3g}; loop bounds "
                             "and trip counts must follow the tensor shapes")


def _kernel_runs(module: ModuleOp, block: Sequence[Op], env: dict[str, int], times: int,
                 out: list[tuple[KernelOp, int]], depth: int) -> None:
    """Every kernel reachable from `block`, with how many times it runs (solar.for trips multiplied in)."""
    if depth > 32:  # calls nested this deep (or recursive): the verifier's business, not this estimate's
        return
    for op in block:
        if isinstance(op, KernelOp):
            out.append((op, times))
        elif isinstance(op, ForOp):
            try:
                trips = max(0, evaluate_int(op.upper, env) - evaluate_int(op.lower, env))
            except Exception:
                trips = 1  # bounds this estimate cannot evaluate: not counted
            _kernel_runs(module, op.body, env, times * trips, out, depth + 1)
        elif isinstance(op, CallOp):
            callee = module.lookup(op.callee)
            if callee is not None:
                _kernel_runs(module, callee.body, env, times, out, depth + 1)
        else:
            for region in op.regions:
                _kernel_runs(module, region, env, times, out, depth + 1)


def _sizes(sizes: Mapping[str, int]) -> str:
    return ", ".join(f"{k}={v}" for k, v in sizes.items()) or "no size parameters"


def _extent(loop: AffineFor, env: dict[str, int]) -> int:
    try:
        return max(0, -(-(evaluate_int(loop.upper, env) - evaluate_int(loop.lower, env)) // max(loop.step, 1)))
    except Exception:
        return 1  # bounds this estimate cannot evaluate (solar.for indices): not counted


def _stmt_points(body: Sequence[KStmt], env: dict[str, int], outer: int) -> int:
    total = 0
    for s in body:
        if isinstance(s, AffineFor):
            n = _extent(s, env)
            inner_env = dict(env)
            inner_env["%" + s.var] = 0
            lo = _stmt_points(s.body, inner_env, outer * n)
            inner_env["%" + s.var] = max(n - 1, 0)
            hi = _stmt_points(s.body, inner_env, outer * n)
            total += max(lo, hi)
        elif isinstance(s, AffineIf):
            total += _stmt_points(s.body, env, outer)
        else:
            total += outer
    return total


# ---- golden outputs and the comparison -----------------------------------------------------------------

Case = Callable[[], tuple[Sequence[np.ndarray], Sequence[np.ndarray]]]


@dataclass
class Golden:
    """The original program's run at the validation sizes: the IR's argument arrays and the outputs."""

    args: list[np.ndarray]
    outputs: list[np.ndarray]
    sizes: dict[str, int]
    seed: int
    note: str = ""


def make_golden(case_for: Callable[[dict[str, int]], Case], sizes: dict[str, int], full: dict[str, int],
                seed: int) -> Golden:
    """Runs the original at `sizes`; if it fails there (data indexing past a shrunk dim), at the full sizes.
    Raises LLMError when the original itself cannot run: no model call could fix that."""
    note = ""
    try:
        args, outs = case_for(sizes)()
    except Exception as err:
        if sizes == full:
            raise LLMError(f"the original program failed on the validation inputs: {type(err).__name__}: "
                           f"{err}") from None
        note = f"reduced sizes were tried first, and the original failed there ({type(err).__name__})"
        sizes = dict(full)
        try:
            args, outs = case_for(sizes)()
        except Exception as err2:
            raise LLMError(f"the original program failed on the validation inputs: {type(err2).__name__}: "
                           f"{err2}") from None
    return Golden([np.asarray(a) for a in args], [np.asarray(o) for o in outs], dict(sizes), seed, note)


def _where(actual: np.ndarray, golden: np.ndarray) -> str:
    """Where an output differs most, with both values: what a model needs to find its bug."""
    shape = np.shape(actual)
    a = np.asarray(actual, np.float64).reshape(-1)  # flat, so a 0-d output (a scalar) indexes like the rest
    g = np.asarray(golden, np.float64).reshape(-1)
    diff = np.abs(a - g)
    diff[np.isnan(a) != np.isnan(g)] = np.inf
    diff[np.isnan(a) & np.isnan(g)] = 0.0
    if not diff.size:
        return ""
    k = int(np.nanargmax(diff))
    idx = np.unravel_index(k, shape) if shape else ()
    pos = "[" + ", ".join(str(int(i)) for i in idx) + "]"
    return f"; the largest difference is at {pos}: the IR gives {a.flat[k]:.6g}, the original {g.flat[k]:.6g}"


def check_outputs(module: ModuleOp, golden: Golden, seconds: float | None = None) -> ValidationReport:
    """Runs `module` on the golden arguments and compares every output; raises CandidateError('run' or
    'compare') with the diagnostic, or returns the (passed) report to record in the module. With `seconds`,
    the run happens in a child process killed after that much wall-clock time (`--validate-timeout`)."""
    full = {p.name: p.default for p in module.params if p.default is not None}
    report = ValidationReport(True, golden.seed, dict(golden.sizes), full, note=golden.note)
    check_work(module, golden.sizes)
    try:
        if seconds:
            outs = run_with_limit(module, list(golden.args), golden.sizes or None, seconds)
        else:
            outs = executor()(module, list(golden.args), params=golden.sizes or None)
    except RunTimeout:
        raise CandidateError("run", f"error: running the IR at the validation sizes ({_sizes(golden.sizes)}) took "
                             f"more than {seconds:g} s, the limit (--validate-timeout); the original program "
                             "runs there at once, so the IR does far more work than it") from None
    except RunFailed as err:
        raise CandidateError("run", f"error: {err}") from None
    except Exception as err:
        raise CandidateError("run", f"error: {type(err).__name__}: {err}") from None
    entry = module.entry
    types = entry.result_types if entry is not None else []
    if len(outs) != len(golden.outputs):
        raise CandidateError("compare", f"error: the IR returns {len(outs)} output(s), the original "
                             f"{len(golden.outputs)}")
    problems = []
    for k, (a, g, t) in enumerate(zip(outs, golden.outputs, types, strict=False)):
        check = compare(a, g, t.dtype, k)
        report.outputs.append(check)
        if not check.ok:
            a_arr, g_arr = np.asarray(a), np.asarray(g)
            where = _where(a_arr, g_arr) if a_arr.shape == g_arr.shape else ""
            # `why` names the tolerance where values differ, or the shapes where they do.
            problems.append(f"error: output {k} of the program ({check.dtype}{list(check.shape)}) {check.why}; "
                            f"max abs error {check.max_abs_error:.3g}, max rel error {check.max_rel_error:.3g}{where}")
    if problems:
        raise CandidateError("compare", "\n".join(problems) + f"\n(validation inputs: the program's own, at "
                             f"{_sizes(golden.sizes)}, seed {golden.seed})")
    return report


# ---- the loop ---------------------------------------------------------------------------------------


def _as_history(text: str, truncated: bool, length: int, limit: int) -> str:
    """The assistant turn later requests carry: the reply itself, or, for a reply over the size limit, a short
    note (resending it would cost its size again in every later request)."""
    if not truncated:
        return text
    return (f"[my answer here was {length} characters long, over the limit of {limit}, and is not repeated; it "
            f"began: {text[:200]!r}]")


def run_loop(client: LLMClient, messages: list[Message], check: Callable[[str, int], T], max_attempts: int,
             what: str, transcript: Transcript | None = None) -> LoopOutcome[T]:
    """Asks, checks and feeds back until `check` accepts a reply or `max_attempts` replies were rejected.
    `messages` grows with the conversation (each reply, then the diagnostic), so the model sees its history."""
    history: list[Attempt] = []
    for attempt in range(1, max_attempts + 1):
        reply = client.complete(messages)
        messages.append({"role": "assistant", "content": _as_history(reply.text, reply.truncated, reply.length,
                                                                      client.config.max_response_chars)})
        try:
            if reply.truncated:
                raise CandidateError("size", f"error: the answer was {reply.length} characters, over the limit of "
                                     f"{client.config.max_response_chars}; it was cut there")
            result = check(reply.text, attempt)
        except CandidateError as err:
            history.append(Attempt(attempt, err.stage, err.diagnostic))
            if transcript is not None:
                transcript.check(attempt, err.stage, err.diagnostic)
            if attempt < max_attempts:
                messages.append({"role": "user", "content": retry_message(attempt, err.stage, err.diagnostic,
                                                                          what)})
            continue
        history.append(Attempt(attempt, "ok", "accepted\n"))
        if transcript is not None:
            transcript.check(attempt, "ok", "accepted")
        return LoopOutcome(result, attempt, history)
    raise LoopFailed(client.config.model, history)


__all__ = ["MAX_POINTS", "Attempt", "CandidateError", "Golden", "LoopFailed", "LoopOutcome",
           "check_outputs", "check_params", "check_work", "extract_sir", "make_golden", "parse_candidate",
           "run_loop", "signature_problems", "signature_text"]
