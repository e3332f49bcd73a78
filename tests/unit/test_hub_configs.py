"""Hugging Face models named in a program (KernelBench level 4's `from_pretrained`), built from their config.json
alone: an offline cache in tmp holding config files only, never weights, never the network."""

from __future__ import annotations

import hashlib
import http.server
import json
import os
import re
import subprocess
import sys
import threading
from pathlib import Path
from typing import ClassVar

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from solar.frontends.hub_configs import HubConfigError, config_path, configs_only, store_config  # noqa: E402

DATA = Path(__file__).parent / "data"
CONFIGS = DATA / "hub_configs"
PROGRAMS = DATA / "hub_programs"
TINY = "solar-test/tiny-gpt2"


def _config_text(name: str) -> str:
    return (CONFIGS / (name.replace("/", "--") + ".json")).read_text(encoding="utf-8")


@pytest.fixture()
def hub_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An offline hub cache holding the config.json of every model in data/hub_configs, and nothing else."""
    cache = tmp_path / "hub"
    for file in CONFIGS.iterdir():
        store_config(file.stem.replace("--", "/"), file.read_text(encoding="utf-8"), str(cache))
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    configs_only()
    return cache


def _gpt2_parameters(embed: int, layers: int, vocab: int, positions: int) -> int:
    """GPT-2's parameters (the LM head tied to the token embedding): embeddings, per layer two layer norms,
    the fused QKV and output projections and the 4x MLP, each with a bias, and the final layer norm."""
    per_layer = 2 * 2 * embed + (3 * embed * embed + 3 * embed) + (embed * embed + embed) \
        + (4 * embed * embed + 4 * embed) + (4 * embed * embed + embed)
    return vocab * embed + positions * embed + layers * per_layer + 2 * embed


def test_config_path_reads_the_cache_offline(hub_cache: Path) -> None:
    path = config_path("facebook/opt-1.3b")
    assert path.startswith(str(hub_cache)) and path.endswith("config.json")
    assert json.loads(Path(path).read_text())["ffn_dim"] == 8192
    assert os.listdir(os.path.dirname(path)) == ["config.json"]  # nothing else was fetched


def test_a_missing_config_is_one_line_naming_the_model_and_the_cache(hub_cache: Path) -> None:
    with pytest.raises(HubConfigError) as err:
        config_path("solar-test/no-such-model")
    assert str(err.value) == (
        f"solar-test/no-such-model: no config.json in the Hugging Face cache ({hub_cache}), and the hub may not "
        "be asked (HF_HUB_OFFLINE): fetch it once with `hf download solar-test/no-such-model config.json` where "
        "there is a network")
    with pytest.raises(HubConfigError, match="not a local path nor a Hugging Face model name"):
        config_path("two//slashes")


def test_a_local_folder_needs_its_config(tmp_path: Path) -> None:
    with pytest.raises(HubConfigError, match=r"a folder without config.json: a model is built from its config"):
        config_path(str(tmp_path))
    (tmp_path / "config.json").write_text(_config_text(TINY))
    assert config_path(str(tmp_path)) == str(tmp_path / "config.json")


def test_from_pretrained_builds_from_the_config_on_the_current_device(hub_cache: Path) -> None:
    from transformers import AutoConfig, AutoModelForCausalLM, GPT2LMHeadModel

    with torch.device("meta"):
        model = AutoModelForCausalLM.from_pretrained(TINY)
    assert isinstance(model, GPT2LMHeadModel) and not model.training  # eval, as from_pretrained returns it
    params = {id(p): p for p in model.parameters()}.values()
    assert all(p.device.type == "meta" and p.dtype == torch.float32 for p in params)
    assert sum(p.numel() for p in params) == _gpt2_parameters(32, 2, 96, 64) == 30592
    # 124,439,808: GPT-2 small's published parameter count, from its config alone.
    with torch.device("meta"):
        gpt2 = GPT2LMHeadModel.from_pretrained("gpt2")
    assert sum(p.numel() for p in {id(p): p for p in gpt2.parameters()}.values()) == 124_439_808
    # Config overrides and the dtype: the config's own ("auto", transformers 5) or the one asked.
    with torch.device("meta"):
        opt = AutoModelForCausalLM.from_pretrained("facebook/opt-1.3b", num_hidden_layers=2)
        wide = AutoModelForCausalLM.from_pretrained(TINY, config=AutoConfig.from_pretrained(TINY), n_layer=3,
                                                    dtype=torch.bfloat16, output_loading_info=True)
    assert len(opt.model.decoder.layers) == 2 and next(opt.parameters()).dtype == torch.float16
    model, info = wide
    assert len(model.transformer.h) == 3 and next(model.parameters()).dtype == torch.bfloat16
    assert info["missing_keys"] == []


def test_an_auto_class_without_this_model_type_is_one_line(hub_cache: Path) -> None:
    from transformers import AutoModelForImageClassification

    with pytest.raises(HubConfigError, match=r"^gpt2: AutoModelForImageClassification cannot build this model: "):
        AutoModelForImageClassification.from_pretrained("gpt2")


def test_a_program_naming_its_model_translates_as_the_model_given_as_a_config(hub_cache: Path) -> None:
    from transformers import GPT2Config, GPT2LMHeadModel

    from solar.frontends.torch_export import TorchProblem, load_problem, translate_problem
    from solar.ir.printer import print_module

    named = translate_problem(load_problem(str(PROGRAMS / "tiny_gpt2_lm.py")))
    config = GPT2Config(**json.loads(_config_text(TINY)))

    class Direct(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lm = GPT2LMHeadModel(config).eval()

        def forward(self, ids: torch.Tensor) -> torch.Tensor:
            return self.lm(ids).logits

    direct = translate_problem(TorchProblem(Direct, lambda: [torch.zeros(2, 16, dtype=torch.long)],
                                            "tiny_gpt2_lm"))
    def code(module: object) -> str:  # the IR without source locations (the two forwards are on other lines)
        return re.sub(r' loc\("[^"]*":\d+:\d+\)', "", print_module(module))

    assert code(named.module) == code(direct.module)
    assert named.params == {"BATCH": 2}
    # wte, wpe, 12 per layer, ln_f, and the LM head (tied to wte; export names it too).
    assert sum(1 for a in named.args if a.kind == "parameter") == 2 + 12 * 2 + 2 + 1


def test_solar_translate_validates_a_named_model(hub_cache: Path, tmp_path: Path) -> None:
    from solar.tools.solar_translate import main

    out = tmp_path / "lm.sir"
    assert main([str(PROGRAMS / "tiny_gpt2_lm.py"), "-o", str(out)]) == 0
    text = out.read_text()
    assert "// Validation: passed" in text and "solar.module @tiny_gpt2_lm" in text


def test_solar_translate_names_the_missing_model_at_its_line(hub_cache: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    from solar.tools.solar_translate import main

    program = PROGRAMS / "absent_model.py"
    assert main([str(program), "--no-validate"]) == 1
    err = capsys.readouterr().err.splitlines()
    assert err[0] == (f"{program}:10:9: error: solar-test/no-such-model: no config.json in the Hugging Face cache "
                      f"({hub_cache}), and the hub may not be asked (HF_HUB_OFFLINE): fetch it once with "
                      "`hf download solar-test/no-such-model config.json` where there is a network")
    assert err[1].strip() == 'self.encoder = AutoModel.from_pretrained("solar-test/no-such-model")'
    assert len(err) == 3 and "Traceback" not in "".join(err)


class _Hub(http.server.BaseHTTPRequestHandler):
    """A hub on 127.0.0.1 that serves one config.json for any model and answers 404 for every other file;
    it remembers each request."""

    body = json.dumps({"model_type": "gpt2", "n_embd": 32, "n_head": 4, "n_layer": 2}).encode()
    requests: ClassVar[list[str]] = []

    def _headers(self) -> bool:
        self.requests.append(f"{self.command} {self.path}")
        found = self.path.endswith("/resolve/main/config.json")
        self.send_response(200 if found else 404)
        if found:
            self.send_header("X-Repo-Commit", "c" * 40)
            self.send_header("ETag", f'"{hashlib.sha1(self.body).hexdigest()}"')
            self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(self.body) if found else 0))
        self.end_headers()
        return found

    def do_HEAD(self) -> None:
        self._headers()

    def do_GET(self) -> None:
        if self._headers():
            self.wfile.write(self.body)

    def log_message(self, *_: object) -> None:
        pass


def test_with_a_network_only_the_config_is_fetched(tmp_path: Path) -> None:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Hub)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    cache = tmp_path / "hub"
    # huggingface_hub reads HF_ENDPOINT once, when imported: a process of its own.
    env = {**os.environ, "HF_ENDPOINT": f"http://127.0.0.1:{server.server_address[1]}", "HF_HUB_CACHE": str(cache),
           "HF_HUB_OFFLINE": "0", "TRANSFORMERS_OFFLINE": "0"}
    code = "from solar.frontends.hub_configs import config_path; print(config_path('solar-test/fetched'))"
    try:
        run = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    finally:
        server.shutdown()
    assert run.returncode == 0, run.stderr
    path = Path(run.stdout.strip())
    assert path == cache / "models--solar-test--fetched" / "snapshots" / ("c" * 40) / "config.json"
    assert json.loads(path.read_text())["n_embd"] == 32
    model_requests = [r for r in _Hub.requests if "/solar-test/fetched/" in r]
    assert model_requests and all(r.endswith("/resolve/main/config.json") for r in model_requests)
    blobs = list((cache / "models--solar-test--fetched" / "blobs").iterdir())  # every file downloaded
    assert len(blobs) == 1 and blobs[0].read_bytes() == _Hub.body


def test_solar_llm_prices_a_hub_model_by_name(hub_cache: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from solar.tools.solar_llm import run

    llama = (DATA / "hf_configs" / "tiny-llama.json").read_text(encoding="utf-8")
    path = store_config("solar-test/tiny-llama", llama, str(hub_cache))
    assert run(["solar-test/tiny-llama", "--phase", "decode", "--no-validate"]) == 0
    # 4 layers x 2 kv heads x 8 (head dim) x 2 (keys and values) x 2 bytes (bfloat16)
    out = capsys.readouterr().out.replace("\n", "")  # the header wraps at the console's width
    assert out.startswith(f"{path}: llama, 4 layers, hidden 32, 4 heads (2 key-value), bfloat16; KV cache 256 B "
                          "per token")


def test_solar_llm_names_a_missing_hub_model_before_torch_is_imported(tmp_path: Path) -> None:
    probe = ("import sys\nfrom solar.tools.solar_llm import run\n"
             "print(run(['solar-test/absent']), 'torch' in sys.modules)\n")
    env = {**os.environ, "HF_HUB_CACHE": str(tmp_path), "HF_HUB_OFFLINE": "1"}
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, env=env)
    assert done.stdout.split() == ["1", "False"]
    assert done.stderr == (f"solar-llm: error: solar-test/absent: no config.json in the Hugging Face cache "
                           f"({tmp_path}), and the hub may not be asked (HF_HUB_OFFLINE): fetch it once with "
                           "`hf download solar-test/absent config.json` where there is a network\n")


def test_reformer_says_which_line_of_the_model_cannot_export(hub_cache: Path) -> None:
    from solar.frontends.diagnostics import TranslationError
    from solar.frontends.torch_export import load_problem, translate_problem

    # Its axial position encodings are cut to `position_ids.max().item()`: a size only the data fixes.
    with pytest.raises(TranslationError) as err:
        translate_problem(load_problem(str(PROGRAMS / "tiny_reformer_lm.py")))
    first = str(err.value).splitlines()[0]
    assert re.search(r"tiny_reformer_lm.py:19:9: error: aten.slice.Tensor \(at transformers/models/reformer/"
                     r"modeling_reformer.py:\d+\) reads floordiv, whose size depends on the data: ", first)


def test_a_config_transformers_does_not_know_is_one_line(hub_cache: Path) -> None:
    from transformers import AutoConfig

    path = store_config("solar-test/unknown-type", '{"model_type": "no_such_family", "hidden_size": 8}',
                        str(hub_cache))
    with pytest.raises(HubConfigError) as err:
        AutoConfig.from_pretrained("solar-test/unknown-type")
    message = str(err.value)
    assert message.startswith(f"solar-test/unknown-type: transformers cannot read its config ({path}): ")
    assert "no_such_family" in message and "\n" not in message


def test_auto_classes_imported_before_the_interception_are_intercepted_too(tmp_path: Path) -> None:
    """An AutoModel* class that transformers made before `configs_only()` (its own copy of from_pretrained)
    builds from the config as well: in a fresh process, import the class first, then intercept."""
    code = ("from transformers import AutoModelForImageClassification as A\n"
            "from solar.frontends.hub_configs import HubConfigError, configs_only\n"
            "configs_only()\n"
            "try:\n    A.from_pretrained('gpt2')\nexcept HubConfigError as err:\n    print('one line:', err)\n")
    env = {**os.environ, "HF_HUB_CACHE": str(tmp_path / "hub"), "HF_HUB_OFFLINE": "1"}
    for file in CONFIGS.iterdir():
        store_config(file.stem.replace("--", "/"), file.read_text(encoding="utf-8"), str(tmp_path / "hub"))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert out.stdout.startswith("one line: gpt2: AutoModelForImageClassification cannot build this model: "), \
        out.stdout + out.stderr
