"""lit configuration for SOLAR's golden tests (`lit -v tests/lit`).

Each test is a `.sir` (or `.test`) file whose `// RUN:` lines call `solar-opt` and `FileCheck`; see
../../shared/DESIGN.md and docs/ir.md. Outputs go under `tests/lit/Output/` (gitignored).
"""

# ruff: noqa: F821  (lit injects `config` and `lit_config`)

import os
import shutil
import sys

import lit.formats

config.name = "SOLAR"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".sir", ".test"]
# Inputs of tests that are not tests themselves (e.g. files RUN lines read) live in `Inputs/` folders.
config.excludes = ["Inputs", "Output", "lit.cfg.py", "README.md"]
config.test_source_root = os.path.dirname(os.path.abspath(__file__))
config.test_exec_root = os.path.join(config.test_source_root, "Output")

# Tools come from PATH (lit's default environment already carries it); keep the cache locations.
for var in ("HOME", "XDG_CACHE_HOME", "SOLAR_CACHE_DIR", "VIRTUAL_ENV"):
    if var in os.environ:
        config.environment[var] = os.environ[var]
# Diagnostics and tracebacks must not depend on the user's settings.
config.environment.pop("SOLAR_DEBUG", None)
config.environment["PYTHONIOENCODING"] = "utf-8"
config.environment["NO_COLOR"] = "1"


def _require(tool: str, hint: str) -> str:
    path = shutil.which(tool, path=config.environment.get("PATH", os.environ.get("PATH", "")))
    if path is None:
        lit_config.fatal(f"'{tool}' is not on PATH; {hint}")
    return path


solar_opt = _require("solar-opt", "install SOLAR first (pip install -e '.[dev]') and activate its venv")
filecheck = _require("filecheck", "install the 'filecheck' package (pip install filecheck)")

# `%python`: the interpreter running lit (for small checks the internal shell cannot express).
config.substitutions.append(("%python", sys.executable))
# Longest names first, so that `%solar-opt` is not half-replaced by a shorter pattern.
config.substitutions.append(("%solar-opt", solar_opt))
config.substitutions.append(("%FileCheck", filecheck))
config.substitutions.append(("%filecheck", filecheck))
# Bare `solar-opt`, `FileCheck` and `filecheck` in RUN lines, as in LLVM's suites. Word boundaries keep
# them from matching inside paths or options (e.g. `--check-prefix`, `tests/lit/solar-opt/`).
config.substitutions.append((r"(?<![-\w/.%])solar-opt(?![-\w/.])", solar_opt))
config.substitutions.append((r"(?<![-\w/.%])FileCheck(?![-\w/.])", filecheck))
config.substitutions.append((r"(?<![-\w/.%])filecheck(?![-\w/.])", filecheck))

# No per-test timeout: a limit that passes on an idle machine trips on a loaded one (make test runs beside
# other work), and a hung test is rarer than a slow one. Speed is measured in benchmarks/, not here.
