"""A seeded mutation fuzzer for SIR: mutate the examples and lit inputs, run each mutant in-process through
parse → verify → lift-einsum → fuse → sol, and report every input that ends in an internal error (any
exception other than a diagnostic) or in an error without a location.

    python tests/unit/sir_fuzz.py --seed 1 --count 20000 --save crashers/   # look for new crashers

Every crasher it finds is fixed and kept as a lit test under tests/lit/fuzz/ (test_fuzz.py runs a fixed seed in
the suite).
"""

from __future__ import annotations

import argparse
import random
import re
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from solar.ir.diagnostics import DiagnosticError, SourceManager
from solar.ir.opt_driver import OptOptions, process, split_input
from solar.ir.source import decode_source
from solar.passes import registry

ROOT = Path(__file__).resolve().parents[2]
PIPELINE = "lift-einsum,fuse,sol{target=h100 annotate=false}"

# Replacement material: extremes and near-misses of what SIR holds.
_NUMBERS = ["0", "1", "-1", "2", "3", "7", "64", "4096", "9223372036854775807", "9223372036854775808",
            "99999999999999999999", "-9223372036854775809", "1e308", "1e-320", "0.0", "-0.0", "nan", "inf"]
_WORDS = ["f32", "bf16", "i64", "i1", "f8e4m3", "tensor<4xf32>", "tensor<0xf32>", "tensor<Mx4xf32>", "%x", "%y",
          "%i", "%j", "%t", "@f", "@k", "max", "min", "exp", "select", "cast<i32>", "affine.for", "affine.if",
          "solar.for", "solar.if", "solar.yield", "solar.return", "step", "to", "+=", "max=", "*=", "=", "(", ")",
          "[", "]", "{", "}", ",", ":", "->", "//", "\"", "\\", "\t", "\n", "\ufeff", "\u00e9", "M", "N",
          "loc(\"a\":1:2)"]
_TOKEN = re.compile(r"%[\w.]+|@[\w.]+|[A-Za-z_][\w.]*(?:<[^>\n]*>)?|-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?|\S")


def corpus() -> list[str]:
    """The examples and every lit input (each `// -----` chunk on its own), in a fixed order."""
    files = sorted(ROOT.glob("examples/*.sir")) + sorted(
        p for p in ROOT.glob("tests/lit/**/*.sir") if "Output" not in p.parts)
    out: list[str] = []
    for path in files:
        text = path.read_text(encoding="utf-8")
        out.extend(chunk for chunk, _ in split_input(text) if "solar." in chunk)
    return out


def mutate(text: str, rng: random.Random, tokens: list[str]) -> str:
    """One to three random edits of `text`: token replacements, deletions, duplications, swaps, extremes."""
    for _ in range(rng.randint(1, 3)):
        spans = [m.span() for m in _TOKEN.finditer(text)]
        if not spans:
            return text + rng.choice(_WORDS)
        a, b = rng.choice(spans)
        kind = rng.randrange(9)
        if kind == 0:  # a token becomes another token of the corpus
            text = text[:a] + rng.choice(tokens) + text[b:]
        elif kind == 1:  # a number becomes an extreme
            nums = [s for s in spans if re.fullmatch(r"-?\d[\w.+-]*", text[s[0]:s[1]])]
            if nums:
                a, b = rng.choice(nums)
            text = text[:a] + rng.choice(_NUMBERS) + text[b:]
        elif kind == 2:  # delete a token
            text = text[:a] + text[b:]
        elif kind == 3:  # delete a span of tokens
            c, d = rng.choice(spans)
            lo, hi = min(a, c), max(b, d)
            text = text[:lo] + text[hi:]
        elif kind == 4:  # duplicate a line
            lines = text.split("\n")
            k = rng.randrange(len(lines))
            lines.insert(k, lines[k])
            text = "\n".join(lines)
        elif kind == 5:  # swap two lines
            lines = text.split("\n")
            i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
            lines[i], lines[j] = lines[j], lines[i]
            text = "\n".join(lines)
        elif kind == 6:  # insert a word
            text = text[:a] + rng.choice(_WORDS) + text[a:]
        elif kind == 7:  # a token becomes a word
            text = text[:a] + rng.choice(_WORDS) + text[b:]
        else:  # repeat a token (deep nesting, long chains)
            text = text[:a] + text[a:b] * rng.randint(2, 40) + text[b:]
    return text


@dataclass
class Finding:
    index: int
    kind: str  # "internal" or "unlocated"
    detail: str
    text: str


@dataclass
class FuzzStats:
    inputs: int = 0
    parsed: int = 0  # parsed and verified, so went through the passes
    errors: int = 0  # ended in diagnostics
    seconds: float = 0.0
    findings: list[Finding] = field(default_factory=list)


def run_one(text: str, passes: list, file: str = "fuzz.sir") -> tuple[bool, list[str]]:
    """(whether the passes ran, the unlocated error messages); raises on an internal error."""
    sources = SourceManager()
    result = process(text, file, 1, passes, OptOptions(), sources, lambda s: None, lambda s: None)
    unlocated = [d.message for d in result.diagnostics.diagnostics
                 if d.severity == "error" and (d.loc.line < 1 or d.loc.file in ("", "<unknown>"))]
    return result.ok, unlocated


def inputs(seed: int, count: int) -> Iterator[str]:
    rng = random.Random(seed)
    base = corpus()
    tokens = sorted({m.group() for t in base for m in _TOKEN.finditer(t)})
    for _ in range(count):
        yield mutate(rng.choice(base), rng, tokens)


def fuzz(seed: int, count: int) -> FuzzStats:
    passes = registry.parse_pipeline(PIPELINE)
    stats = FuzzStats()
    start = time.process_time()
    for k, text in enumerate(inputs(seed, count)):
        stats.inputs += 1
        try:
            # Bytes as a file holds them: a mutant may hold a lone surrogate, which is no UTF-8.
            decoded = decode_source(text.encode("utf-8", errors="surrogatepass"), "fuzz.sir")
        except DiagnosticError as err:
            if any(d.loc.line < 1 for d in err.diagnostics):
                stats.findings.append(Finding(k, "unlocated", err.diagnostics[0].message, text))
            stats.errors += 1
            continue
        try:
            ran, unlocated = run_one(decoded, passes)
        except RecursionError as err:
            stats.findings.append(Finding(k, "internal", f"RecursionError: {err}", text))
            continue
        except Exception as err:  # what the tools would report as "internal error" (exit 2)
            stats.findings.append(Finding(k, "internal", f"{type(err).__name__}: {err}", text))
            continue
        stats.parsed += ran
        stats.errors += not ran
        if unlocated:
            stats.findings.append(Finding(k, "unlocated", unlocated[0], text))
    stats.seconds = time.process_time() - start
    return stats


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--count", type=int, default=5000)
    p.add_argument("--save", metavar="DIR", help="write each finding's input there")
    args = p.parse_args(argv)
    stats = fuzz(args.seed, args.count)
    print(f"{stats.inputs} inputs in {stats.seconds:.1f} s CPU ({stats.parsed} through every pass, {stats.errors} "
          f"ending in diagnostics); {len(stats.findings)} findings")
    for f in stats.findings:
        print(f"  #{f.index} {f.kind}: {f.detail[:200]}")
        if args.save:
            out = Path(args.save)
            out.mkdir(parents=True, exist_ok=True)
            (out / f"seed{args.seed}-{f.index}.sir").write_text(f.text, encoding="utf-8", errors="surrogatepass")
    return 1 if stats.findings else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
