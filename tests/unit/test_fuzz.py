"""The seeded mutation fuzzer in the suite (issue 14, item 8): 5,000 mutants of the examples and lit inputs,
in-process through parse → verify → lift-einsum → fuse → sol. None may end in an internal error (an exception
other than a diagnostic), and every error must be located. Crashers it found live in tests/lit/fuzz/."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from sir_fuzz import corpus, fuzz, inputs, mutate
from surface_fuzz import LONG_RUN, SEED

COUNT = max(5000, LONG_RUN)  # SOLAR_FUZZ_EXAMPLES: a longer run (docs/design/fuzzing.md)


def test_mutants_never_crash_and_every_error_is_located() -> None:
    stats = fuzz(seed=SEED, count=COUNT)
    print(f"fuzz: {stats.inputs} inputs in {stats.seconds:.1f} s CPU; {stats.parsed} through every pass")
    assert stats.inputs == COUNT
    report = "\n".join(f"#{f.index} {f.kind}: {f.detail}\n{f.text}" for f in stats.findings[:3])
    assert not stats.findings, report
    # The mutants reach the passes, not only the parser: a fuzzer stuck at syntax errors would test little.
    assert stats.parsed > COUNT // 20
    assert stats.errors > COUNT // 2


def test_the_fuzzer_is_seeded() -> None:
    assert list(inputs(7, 20)) == list(inputs(7, 20))
    assert list(inputs(7, 20)) != list(inputs(8, 20))


def test_corpus_covers_examples_and_lit_inputs() -> None:
    texts = corpus()
    assert len(texts) > 200
    assert any("@gru" in t for t in texts)  # examples/rnn.sir
    assert any("expected-error" in t for t in texts)  # lit invalid inputs


def test_mutations_change_the_text() -> None:
    import random

    base = corpus()[0]
    rng = random.Random(3)
    assert sum(mutate(base, rng, ["x"]) != base for _ in range(50)) >= 45
