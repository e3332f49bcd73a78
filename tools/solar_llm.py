"""solar-llm: serving bounds of a language model from its Hugging Face config or a KernelBench-style file
(docs/llm.md).

    solar-llm config.json --target h100,b200 --batch 1,8,64 --context 1024..131072*2
    solar-llm config.json --phase prefill --prompt 2048 --json out.json --plot out.png
    solar-llm config.json --tensor-parallel 8 --generate 256 --cache static
    solar-llm model.py --batch 1,8 --context 4096
    solar-llm Qwen/Qwen2-7B                      # a hub model by name: its config.json only (cache or fetch)
    solar-llm config.json --no-validate          # skip validating each step at reduced sizes (on by default)

The model is built on the meta device (no weights; a hub name fetches its config.json alone, unless cached).
Exit status: 0 done; 1 a bad config, size or option (one line, no output file lost); 2 an internal error.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections.abc import Sequence

from solar.tools._entry import Parser, UsageError, add_version, run_main

PROG = "solar-llm"
# A diagnostic located in a file (`FILE:LINE[:COL]: error: ...`) is printed as it is; any other problem gets
# the tool's prefix: one `error:` either way.
_LOCATED = re.compile(r"^\S[^\n]*?:\d+(?::\d+)?: error: ")


def build_parser() -> Parser:
    p = Parser(prog=PROG, allow_abbrev=False,
               description="Prefill and decode bounds (TTFT, TPOT, tokens/s, memory fit) of an LLM config.")
    add_version(p, PROG)
    p.add_argument("config", help="a Hugging Face config.json (a local file), a hub model's name (org/name: its "
                                   "config.json alone, cached or fetched) or a KernelBench-style FILE.py")
    p.add_argument("--target", default="h100", help="targets, comma-separated (default h100)")
    p.add_argument("--phase", default="both", help="prefill, decode or both (default)")
    p.add_argument("--batch", default="1", help="batch sizes: a list and ranges, e.g. 1,8,64 or 1..256*2")
    p.add_argument("--prompt", default="512", help="prefill prompt lengths (default 512)")
    p.add_argument("--context", default="1024", help="decode cache lengths (default 1024)")
    p.add_argument("--generate", type=int, default=1, metavar="G",
                   help="decode: the mean TPOT over contexts P .. P+G-1 (default 1)")
    p.add_argument("--tensor-parallel", type=int, default=1, metavar="N", help="chips the model is split over")
    p.add_argument("--dtype", help="float32, bfloat16 or float16 (default: the config's)")
    p.add_argument("--cache", default="dynamic", choices=("dynamic", "static"),
                   help="the cache class: dynamic (DynamicCache, default) or static (StaticCache)")
    p.add_argument("--all-logits", action="store_true", help="prefill computes every position's logits")
    p.add_argument("--cache-aware", action="store_true",
                   help="add the cache-aware mode at the targets' L2 (a tiling search per point: slower)")
    p.add_argument("--no-validate", dest="validate", action="store_false",
                   help="skip validating each step at reduced sizes against the model (on by default; seconds "
                        "per phase)")
    # Validation is the default: --validate is kept, a no-op, for scripts that pass it.
    p.add_argument("--validate", dest="validate", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--json", metavar="FILE", help="write every point as JSON")
    p.add_argument("--plot", metavar="FILE.png", help="latency and throughput against batch")
    return p


def _check_args(args: argparse.Namespace) -> None:
    """What can be checked before torch and transformers are imported (seconds): a mistyped config path, a
    config whose file alone shows it broken (not UTF-8 or JSON, a size missing, too large or not dividing
    the heads, an unknown dtype), or an output that cannot be written answers at once."""
    if not os.path.exists(args.config) and not args.config.endswith((".json", ".py")):
        # A hub model by name (org/name): its config.json from the Hugging Face cache, or that file alone
        # fetched (frontends/hub_configs.py); never its weights.
        from solar.frontends.hub_configs import HubConfigError, config_path

        try:
            args.config = config_path(args.config)
        except HubConfigError as err:
            raise UsageError(str(err)) from None
    if os.path.isdir(args.config):
        raise UsageError(f"{args.config}: is a directory, not a config.json or a Python file")
    if not os.path.isfile(args.config):
        raise UsageError(f"{args.config}: cannot read: no such file")
    from solar.ir.outputs import OutputError, check_writable

    for what, path in (("--json", args.json), ("--plot", args.plot)):
        if path:
            try:
                check_writable(path, what)
            except OutputError as err:
                raise UsageError(str(err)) from None
    if not args.config.endswith(".py"):
        from solar.frontends.llm_config_checks import DTYPE_NAMES, LlmError, check_fields, read_config

        if args.dtype is not None and args.dtype not in DTYPE_NAMES:
            raise UsageError(f"--dtype {args.dtype}: expected one of {', '.join(DTYPE_NAMES)}")
        try:
            check_fields(args.config, read_config(args.config), args.dtype)
        except LlmError as err:
            raise UsageError(str(err)) from None


def _error(message: str) -> None:
    text = message.strip()
    sys.stderr.write(f"{text}\n" if _LOCATED.match(text) else f"{PROG}: error: {text}\n")


def run(argv: Sequence[str]) -> int:
    try:
        args = build_parser().parse_args(argv)
        _check_args(args)
    except UsageError as err:
        _error(str(err))
        return 1
    # Imported after parsing: --help and usage errors stay fast (torch and transformers are slow to load).
    from solar.backends.sweep import SweepError
    from solar.backends.sweep_spec import sizes
    from solar.bench.llm_report import LlmRequest, analyse_llm, phases_of, plot, render, write_json
    from solar.frontends.llm_models import LlmError
    from solar.targets.loader import TargetError, load_target

    try:
        request = LlmRequest(args.config, [load_target(t.strip()) for t in args.target.split(",") if t.strip()],
                             phases_of(args.phase), sizes(args.batch, "--batch"), sizes(args.prompt, "--prompt"),
                             sizes(args.context, "--context"), args.generate, args.tensor_parallel,
                             all_logits=args.all_logits, dtype=args.dtype, cache_aware=args.cache_aware,
                             validate=args.validate, cache=args.cache)
        analysis = analyse_llm(request, warn=lambda line: sys.stderr.write(f"{PROG}: warning: {line}\n"))
        sys.stdout.write(render(analysis))
        if args.json:
            write_json(analysis, args.json)
        if args.plot:
            plot(analysis, args.plot)
    except (LlmError, SweepError, TargetError, OSError) as err:
        _error(str(err))
        return 1
    return 0


def main() -> None:
    run_main(PROG, run)


if __name__ == "__main__":
    main()
