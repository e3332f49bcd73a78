"""Hugging Face models named in a program, built from their `config.json` alone (no weights).

A program may build its model as KernelBench level 4 does, `AutoModelForCausalLM.from_pretrained("gpt2")` in
`Model.__init__`. A bound needs the shapes only, and transformers refuses `from_pretrained` on the meta
device (and would read, or download, every weight on the CPU). Once `configs_only()` has installed the
interception (program_files.import_file does, before running a program that uses transformers; it stays for
the rest of the process: SOLAR never wants a model's weights):

- `AutoConfig.from_pretrained(name)` and `PretrainedConfig.from_pretrained(name)` read `config.json` from the
  local Hugging Face cache, or, with a network and without `HF_HUB_OFFLINE`, fetch that one file;
- `AutoModel*.from_pretrained(name)` and `PreTrainedModel.from_pretrained(name)` become `from_config` with
  that config, on whatever device is current (the meta device while SOLAR exports), in the dtype
  `from_pretrained` would have used, in eval mode as `from_pretrained` returns it.

When no `config.json` can be found the program fails with one line naming the model and the cache
(HubConfigError).
"""

from __future__ import annotations

import copy
import os
from collections.abc import Callable
from typing import Any

from .diagnostics import ProgramError

CONFIG_FILE = "config.json"
# Arguments of `from_pretrained` that say where and how to read files: the config lookup takes the first ones,
# the rest only concern weights (none are read).
_HUB_ARGS = ("cache_dir", "revision", "subfolder", "token", "local_files_only", "force_download", "proxies")
_WEIGHT_ARGS = ("state_dict", "device_map", "max_memory", "offload_folder", "offload_state_dict",
                "offload_buffers", "low_cpu_mem_usage", "use_safetensors", "weights_only", "variant", "from_tf",
                "from_flax", "mirror", "_fast_init", "ignore_mismatched_sizes", "key_mapping", "gguf_file",
                "adapter_kwargs", "adapter_name", "code_revision", "_from_auto", "_commit_hash", "tp_plan",
                "tp_size", "device_mesh", "use_kernels", "kernel_config", "generation_config",
                "quantization_config", "use_auth_token", "resume_download")
_BUILD_ARGS = ("attn_implementation", "experts_implementation", "trust_remote_code")


class HubConfigError(ProgramError):
    """No config.json for a model a program names, or one transformers cannot build a model from."""


def hub_cache() -> str:
    """The Hugging Face hub cache as huggingface_hub resolves it, read from the environment now (its own
    constants are read once, when it is imported)."""
    if os.environ.get("HF_HUB_CACHE"):
        return os.path.expanduser(os.environ["HF_HUB_CACHE"])
    if os.environ.get("HUGGINGFACE_HUB_CACHE"):
        return os.path.expanduser(os.environ["HUGGINGFACE_HUB_CACHE"])
    home = os.environ.get("HF_HOME") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "huggingface")
    return os.path.join(os.path.expanduser(home), "hub")


def hub_offline() -> bool:
    """Whether the hub may not be asked (HF_HUB_OFFLINE, or transformers' TRANSFORMERS_OFFLINE)."""
    return any(os.environ.get(key, "").strip().upper() in ("1", "ON", "YES", "TRUE")
               for key in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"))


def config_path(name: str | os.PathLike[str], cache_dir: str | None = None, revision: str | None = None,
                subfolder: str = "", token: Any = None, local_files_only: bool = False, **_: Any) -> str:
    """The `config.json` of model `name`: in a local folder of that name, else in the hub cache, else fetched
    from the hub (that file alone). Raises HubConfigError, one line naming the model and the cache."""
    name = os.fspath(name)
    if os.path.isfile(name):
        return name
    if os.path.isdir(name):
        local = os.path.join(name, subfolder, CONFIG_FILE)
        if os.path.isfile(local):
            return local
        raise HubConfigError(f"{name}: a folder without {os.path.join(subfolder, CONFIG_FILE)}: a model is "
                             "built from its config alone (no weights are read)")
    from huggingface_hub import hf_hub_download, try_to_load_from_cache
    from huggingface_hub.errors import HFValidationError

    cache = os.path.expanduser(cache_dir) if cache_dir else hub_cache()
    filename = f"{subfolder.strip('/')}/{CONFIG_FILE}" if subfolder else CONFIG_FILE
    where = f"{name}: no {filename} in the Hugging Face cache ({cache})"
    try:
        cached = try_to_load_from_cache(name, filename, cache_dir=cache, revision=revision)
    except HFValidationError:
        raise HubConfigError(f"{name}: not a local path nor a Hugging Face model name (org/name)") from None
    if isinstance(cached, str):
        return cached
    if local_files_only or hub_offline():
        raise HubConfigError(f"{where}, and the hub may not be asked (HF_HUB_OFFLINE): fetch it once with "
                             f"`hf download {name} {filename}` where there is a network")
    try:
        return str(hf_hub_download(name, filename, cache_dir=cache, revision=revision, token=token))
    except Exception as err:  # every way the fetch fails is this one line
        raise HubConfigError(f"{where}, and the hub did not give it: {_fetch_failure(err)}") from None


def store_config(name: str, config_json: str, cache: str, commit: str = "0" * 40) -> str:
    """Writes `config_json` (the text of a config.json) into the hub cache `cache` as huggingface_hub lays out
    a download of `name`'s config alone, and returns its path: a machine without a network gets a model's
    config this way (and the tests their offline caches)."""
    folder = os.path.join(cache, "models--" + name.replace("/", "--"))
    snapshot = os.path.join(folder, "snapshots", commit)
    os.makedirs(snapshot, exist_ok=True)
    os.makedirs(os.path.join(folder, "refs"), exist_ok=True)
    with open(os.path.join(folder, "refs", "main"), "w", encoding="utf-8") as f:
        f.write(commit)
    path = os.path.join(snapshot, CONFIG_FILE)
    with open(path, "w", encoding="utf-8") as f:
        f.write(config_json)
    return path


def _fetch_failure(err: Exception) -> str:
    kind = type(err).__name__
    if kind in ("RepositoryNotFoundError", "GatedRepoError"):
        return "no such model, or a gated or private one (log in with `hf auth login`)"
    if kind in ("EntryNotFoundError", "RemoteEntryNotFoundError"):
        return "the model has no config.json"
    if kind == "RevisionNotFoundError":
        return "no such revision"
    first = str(err).strip().splitlines()[0] if str(err).strip() else ""
    return f"{kind}: {first}" if first else kind


# ---- from_pretrained as from_config --------------------------------------------------------------


_originals: dict[str, Any] = {}


def _config(load: Callable[..., Any], cls: Any, name: Any, kwargs: dict[str, Any]) -> Any:
    """`cls.from_pretrained(name, **kwargs)` for a config class, with the config file found as config_path
    finds it."""
    if isinstance(name, (str, os.PathLike)):
        path = config_path(name, **{k: kwargs[k] for k in _HUB_ARGS if k in kwargs})
        for k in _HUB_ARGS:
            kwargs.pop(k, None)
        try:
            return load(cls, os.path.dirname(path) if os.path.basename(path) == CONFIG_FILE else path, **kwargs)
        except (ValueError, KeyError, OSError) as err:  # an unknown model_type, a config needing remote code
            first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
            raise HubConfigError(f"{os.fspath(name)}: transformers cannot read its config ({path}): "
                                 f"{first}") from None
    return load(cls, name, **kwargs)


def _auto_config(cls: Any, name: Any, **kwargs: Any) -> Any:
    return _config(_originals["auto_config"], cls, name, kwargs)


def _pretrained_config(cls: Any, name: Any, **kwargs: Any) -> Any:
    return _config(_originals["pretrained_config"], cls, name, kwargs)


def _default_dtype() -> str | None:
    """What `from_pretrained` uses without a dtype: "auto" (the config's) from transformers 5, float32 before."""
    import transformers

    return "auto" if int(transformers.__version__.split(".")[0]) >= 5 else None


def _model(cls: Any, name: Any, *_model_args: Any, **kwargs: Any) -> Any:
    """`from_pretrained` as `from_config`: the model the weights would fill, built on the current device."""
    import torch
    from transformers import AutoConfig, PretrainedConfig

    config = kwargs.pop("config", None)
    info = kwargs.pop("output_loading_info", False)
    hub = {k: kwargs.pop(k) for k in _HUB_ARGS if k in kwargs}
    for k in _WEIGHT_ARGS:
        kwargs.pop(k, None)
    build = {k: kwargs.pop(k) for k in _BUILD_ARGS if k in kwargs}
    legacy_dtype = kwargs.pop("torch_dtype", None)  # transformers' older name for `dtype`
    dtype = kwargs.pop("dtype", None)
    dtype = legacy_dtype if dtype is None else dtype
    if not isinstance(config, PretrainedConfig):
        remote = {"trust_remote_code": build["trust_remote_code"]} if "trust_remote_code" in build else {}
        config, kwargs = AutoConfig.from_pretrained(config if config is not None else name, **hub, **remote,
                                                    return_unused_kwargs=True, **kwargs)
    else:
        config = copy.deepcopy(config)
        for key in [k for k in kwargs if hasattr(config, k)]:
            setattr(config, key, kwargs.pop(key))
    dtype = dtype if dtype is not None else _default_dtype()
    if dtype == "auto":
        dtype = config.dtype if hasattr(config, "dtype") else getattr(config, "torch_dtype", None)
    if isinstance(dtype, str):
        dtype = getattr(torch, dtype)
    build["dtype"] = dtype if isinstance(dtype, torch.dtype) else torch.get_default_dtype()
    auto = hasattr(cls, "_model_mapping")  # an AutoModel* class: it picks the model class from the config
    if not auto:
        build.pop("trust_remote_code", None)
    try:
        model = cls.from_config(config, **build, **kwargs) if auto else cls._from_config(config, **build, **kwargs)
    except ValueError as err:  # an auto class with no model for this config's type
        first = str(err).strip().splitlines()[0]
        raise HubConfigError(f"{os.fspath(name)}: {cls.__name__} cannot build this model: {first}") from None
    model.eval()
    if info:
        return model, {"missing_keys": [], "unexpected_keys": [], "mismatched_keys": [], "error_msgs": []}
    return model


def configs_only() -> None:
    """Installs the interception (once per process; calling again does nothing)."""
    if _originals:
        return
    from transformers import AutoConfig, PretrainedConfig, PreTrainedModel
    from transformers.models.auto.auto_factory import _BaseAutoModelClass

    _originals["auto_config"] = AutoConfig.from_pretrained.__func__  # type: ignore[attr-defined]
    _originals["pretrained_config"] = PretrainedConfig.from_pretrained.__func__  # type: ignore[attr-defined]
    AutoConfig.from_pretrained = classmethod(_auto_config)  # type: ignore[method-assign,assignment]
    PretrainedConfig.from_pretrained = classmethod(_pretrained_config)  # type: ignore[method-assign,assignment]
    _BaseAutoModelClass.from_pretrained = classmethod(_model)  # type: ignore[method-assign,assignment]
    PreTrainedModel.from_pretrained = classmethod(_model)  # type: ignore[method-assign,assignment]
    # transformers gives each AutoModel* class made so far its own copy of from_pretrained (for its
    # docstring): those made before this call would keep reading weights, so each gets the interception too.
    pending = list(_BaseAutoModelClass.__subclasses__())
    while pending:
        auto_class = pending.pop()
        pending.extend(auto_class.__subclasses__())
        if "from_pretrained" in vars(auto_class):
            auto_class.from_pretrained = classmethod(_model)


__all__ = ["CONFIG_FILE", "HubConfigError", "config_path", "configs_only", "hub_cache", "hub_offline", "store_config"]
