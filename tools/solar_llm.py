"""solar-llm: serving bounds of a language model from its Hugging Face config or a KernelBench-style file
(docs/llm.md).

    solar-llm config.json --target h100,b200 --batch 1,8,64 --context 1024..131072*2
    solar-llm config.json --phase prefill --prompt 2048 --json out.json --plot out.png
    solar-llm config.json --tensor-parallel 8 --generate 256 --cache static
    solar-llm model.py --batch 1,8 --context 4096
    solar-llm config.json --weights int4 --group-size 128 --kv-cache-dtype fp8   # docs/quantization.md
    solar-llm config.json --tensor-parallel 4 --pipeline-parallel 2 --generate 128
    solar-llm config.json --slo ttft=500ms,tpot=30ms --throughput 2000 --target h100,b200   # a search
    solar-llm Qwen/Qwen2-7B                      # a hub model by name: its config.json only (cache or fetch)
    solar-llm config.json --no-validate          # skip validating each step at reduced sizes (on by default)
    solar-llm config.json --phase train --batch 8 --prompt 2048 --optimizer adamw   # docs/training.md

The model is built on the meta device (no weights; a hub name fetches its config.json alone, unless cached).
Exit status: 0 done; 1 a bad config, size or option (one line, no output file lost); 2 an internal error.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from solar.tools._entry import Parser, UsageError, add_precision_floor, add_version, check_precision_floor, run_main

if TYPE_CHECKING:
    from solar.bench.llm_flags import Split

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
    p.add_argument("--phase", default="both", help="prefill, decode or both (default); train: one training step")
    p.add_argument("--optimizer", default="adamw", help="--phase train: adamw (default), adam, sgd or none")
    p.add_argument("--batch", help="batch sizes: a list and ranges, e.g. 1,8,64 or 1..256*2 (default 1)")
    p.add_argument("--prompt", default="512", help="prefill prompt lengths (default 512)")
    p.add_argument("--context", default="1024", help="decode cache lengths (default 1024)")
    p.add_argument("--generate", type=int, default=1, metavar="G",
                   help="decode: the mean TPOT over contexts P .. P+G-1 (default 1)")
    p.add_argument("--tensor-parallel", type=int, metavar="N", help="chips each layer is split over (default 1)")
    p.add_argument("--pipeline-parallel", type=int, metavar="N", help="pipeline stages of the layers (default 1)")
    p.add_argument("--expert-parallel", type=int, metavar="N", help="ranks the routed experts split over (default 1)")
    p.add_argument("--data-parallel", type=int, default=1, metavar="N", help="replicas of the deployment")
    p.add_argument("--slo", metavar="ttft=T,tpot=T",
                   help="search deployments whose bounds meet these latencies (units s, ms, us)")
    p.add_argument("--throughput", type=float, metavar="TOKENS_PER_S",
                   help="with --slo: output tokens/s over all replicas (default: one replica)")
    p.add_argument("--quantize-options", default="none", metavar="LIST",
                   help="with --slo: quantizations searched, e.g. none,fp8,int4+kv=fp8 (default none)")
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
    p.add_argument("--weights", help="quantized weights: int8, int4, fp8, nvfp4 or mxfp4 (default: the config's "
                                     "quantization_config, else none)")
    p.add_argument("--group-size", type=int, default=0, metavar="N",
                   help="elements per scale along the reduction axis (default: the format's; int4 128)")
    p.add_argument("--kv-cache-dtype", help="the KV cache stored as fp8, int8 or int4")
    p.add_argument("--activations", help="fp8: contractions read fp8 activations (the fp8 tensor peak); nvfp4 or "
                   "mxfp4 with the same --weights: W4A4 (the fp4 tensor peak); int8 with --weights int8: W8A8 "
                   "(the int8 tensor peak)")
    add_precision_floor(p, "prefill and decode: ")
    p.add_argument("--verbose", action="store_true", help="show the libraries' warnings while validating")
    p.add_argument("--json", metavar="FILE", help="write every point as JSON")
    p.add_argument("--plot", metavar="FILE.png", help="latency and throughput against batch")
    p.add_argument("--report", metavar="FILE.html", help="an HTML page: phase figures, plots, per-operator tables")
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

    for what, path in (("--json", args.json), ("--plot", args.plot), ("--report", args.report)):
        if path:
            try:
                check_writable(path, what)
            except OutputError as err:
                raise UsageError(str(err)) from None
    check_precision_floor(args.precision_floor)
    if args.precision_floor and (args.slo or args.phase == "train"):
        raise UsageError("--precision-floor prices the prefill and decode points; not with --slo or --phase train")
    if args.report and args.slo:
        raise UsageError("--report draws the serving tables of the points asked; with --slo use --json or --plot")
    args.quantize = _quantize_options(args)
    from solar.bench.llm_slo import check_search_flags
    from solar.frontends.llm_config_checks import LlmError as FlagError

    try:
        check_search_flags(args.slo, args.throughput, args.quantize_options, args.data_parallel)
    except FlagError as err:
        raise UsageError(str(err)) from None
    if not args.config.endswith(".py"):
        from solar.frontends.llm_config_checks import (
            DTYPE_NAMES,
            LlmError,
            check_fields,
            declared_counts,
            read_config,
        )

        if args.dtype is not None and args.dtype not in DTYPE_NAMES:
            raise UsageError(f"--dtype {args.dtype}: expected one of {', '.join(DTYPE_NAMES)}")
        try:
            raw = read_config(args.config)
            check_fields(args.config, raw, args.dtype)
        except LlmError as err:
            raise UsageError(str(err)) from None
        args.declared = declared_counts(raw)


def _quantize_options(args: argparse.Namespace) -> object | None:
    """--weights, --group-size, --kv-cache-dtype and --activations as --quantize's options (None: none given,
    so a config's own quantization_config decides)."""
    if args.weights is None and args.kv_cache_dtype is None and args.activations is None and not args.group_size:
        return None
    from solar.frontends.llm_quantization import DEFAULT_EXCLUDE
    from solar.passes.quantize import QuantizeError, QuantizeOptions, check_options

    options = QuantizeOptions(args.weights or "none", args.group_size, args.kv_cache_dtype or "none",
                              args.activations or "none", exclude=DEFAULT_EXCLUDE)
    try:
        check_options(options)
    except QuantizeError as err:
        raise UsageError(str(err).replace("weights format", "--weights format").replace(
            "kv_cache format", "--kv-cache-dtype format").replace("activations format", "--activations format")) \
            from None
    if args.group_size and options.weights == "none":
        raise UsageError("--group-size needs --weights")
    return options


def _error(message: str) -> None:
    text = message.strip()
    sys.stderr.write(f"{text}\n" if _LOCATED.match(text) else f"{PROG}: error: {text}\n")


# Flags a search keeps when given and searches when not, so "not given" must differ from the default value.
SEARCHED_FLAGS = {"batch": "1", "tensor_parallel": 1, "pipeline_parallel": 1, "expert_parallel": 1}


def _with_defaults(args: argparse.Namespace) -> argparse.Namespace:
    args.declared = None  # the config file's counts (`_check_args`: a JSON config)
    args.given = {name for name in SEARCHED_FLAGS if getattr(args, name) is not None}
    for name, default in SEARCHED_FLAGS.items():
        if getattr(args, name) is None:
            setattr(args, name, default)
    return args


def run(argv: Sequence[str]) -> int:
    try:
        args = _with_defaults(build_parser().parse_args(argv))
        _check_args(args)
    except UsageError as err:
        _error(str(err))
        return 1
    if args.phase == "train":
        return _train(args)
    if args.optimizer != "adamw":
        _error(f"--optimizer {args.optimizer}: an optimizer prices a training step (--phase train)")
        return 1
    # The flags, and the split against the counts the config file declares, answer before torch and
    # transformers load (seconds); what needs the model's config is checked once it is built.
    from solar.backends.sweep_spec import SweepError, sizes
    from solar.bench.llm_flags import check_split_counts, phases_of
    from solar.frontends.llm_config_checks import LlmError
    from solar.targets.loader import TargetError, load_target

    try:
        targets = [load_target(t.strip()) for t in args.target.split(",") if t.strip()]
        phases = phases_of(args.phase)
        batches, prompts = sizes(args.batch, "--batch"), sizes(args.prompt, "--prompt")
        contexts = sizes(args.context, "--context")
        split = _asked_split(args)
        if args.declared is not None and split is not None:
            check_split_counts(args.declared, split)
    except (LlmError, SweepError, TargetError, OSError) as err:
        _error(str(err))
        return 1
    from solar.bench.llm_plot import plot_llm as plot
    from solar.bench.llm_report import LlmRequest, analyse_llm, render, write_json

    try:
        request = LlmRequest(args.config, targets, phases, batches, prompts, contexts, args.generate,
                             args.tensor_parallel, args.pipeline_parallel, args.expert_parallel, args.data_parallel,
                             all_logits=args.all_logits, dtype=args.dtype, cache_aware=args.cache_aware,
                             validate=args.validate, cache=args.cache, quantize=args.quantize,
                             verbose=args.verbose, precision_floor=args.precision_floor)
        if args.slo:
            return _search(args)
        analysis = analyse_llm(request, warn=lambda line: sys.stderr.write(f"{PROG}: warning: {line}\n"))
        sys.stdout.write(render(analysis))
        if args.json:
            write_json(analysis, args.json)
        if args.plot:
            plot(analysis, args.plot)
        if args.report:
            from solar.bench.llm_html import write_llm_html

            write_llm_html(analysis, args.report, " ".join([PROG, *argv]))
    except (LlmError, SweepError, TargetError, OSError) as err:
        _error(str(err))
        return 1
    return 0


def _asked_split(args: argparse.Namespace) -> Split | None:
    """The split this run checks against the model: the one asked, or a search's fixed flags (None where a
    search fixes none: it searches every split)."""
    from solar.bench.llm_flags import Split, searched_split

    if args.slo:
        fixed = searched_split(_given_split(args))
        return fixed if fixed.replica_chips != 1 else None
    return Split(args.tensor_parallel, args.pipeline_parallel, args.expert_parallel, args.data_parallel)


def _given_split(args: argparse.Namespace) -> tuple[int | None, int | None, int | None]:
    """The (tensor, pipeline, expert) flags given (None: not given, which a search searches)."""
    tensor, pipeline, expert = (getattr(args, f) if f in args.given else None
                                for f in ("tensor_parallel", "pipeline_parallel", "expert_parallel"))
    return tensor, pipeline, expert


def _train(args: argparse.Namespace) -> int:
    """`--phase train`: one training step priced from twins (solar.llm_training, docs/training.md)."""
    splits = {"--pipeline-parallel": args.pipeline_parallel, "--expert-parallel": args.expert_parallel}
    for flag, value in splits.items():
        if value != 1:
            _error(f"{flag} with --phase train: not supported yet (--tensor-parallel and --data-parallel are)")
            return 1
    if args.slo:
        _error("--slo searches serving deployments, not training steps")
        return 1
    from solar.backends.sweep import SweepError
    from solar.backends.sweep_spec import sizes
    from solar.frontends.llm_models import LlmError
    from solar.llm_training import LlmTrainingRequest, llm_training, render_training, write_training_json
    from solar.targets.loader import TargetError, load_target

    try:
        request = LlmTrainingRequest(args.config, [load_target(t.strip()) for t in args.target.split(",")
                                                   if t.strip()], sizes(args.batch, "--batch"),
                                     sizes(args.prompt, "--prompt"), args.optimizer, args.dtype, args.validate,
                                     args.data_parallel, args.verbose, args.tensor_parallel)
        result = llm_training(request)
        sys.stdout.write(render_training(result))
        if args.json:
            write_training_json(result, args.json)
    except (LlmError, SweepError, TargetError, OSError) as err:
        _error(str(err))
        return 1
    return 0


def _search(args: argparse.Namespace) -> int:
    """`--slo`: the Pareto front of the deployments that meet it (bench/llm_search.py)."""
    from solar.bench.llm_search import plot_search, render_search, search_from_flags, write_search_json

    result = search_from_flags(args.config, args.target, args.slo, args.throughput, args.quantize_options,
                               args.batch if "batch" in args.given else None, args.prompt, args.generate,
                               _given_split(args), args.dtype, args.cache)
    sys.stdout.write(render_search(result))
    if args.json:
        write_search_json(result, args.json)
    if args.plot:
        plot_search(result, args.plot)
    return 0


def main() -> None:
    run_main(PROG, run)


if __name__ == "__main__":
    main()
