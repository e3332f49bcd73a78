"""The scaled twin (frontends/scaled_reference.py): validation builds a wide model small, from scaled
constructor arguments, only where its weights and IR are the original's but for sizes."""

from __future__ import annotations

from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from solar.frontends import scaled_reference as sr  # noqa: E402
from solar.frontends.torch_export import load_problem, translate_problem  # noqa: E402
from solar.tools.solar_translate import main as translate_main  # noqa: E402

WIDE = '''
import torch
from torch import nn


class Model(nn.Module):
    def __init__(self, width, hidden, heads):
        super().__init__()
        self.heads = heads
        self.up = nn.Linear(width, hidden)
        self.down = nn.Linear(hidden, width)

    def forward(self, x):
        h = torch.relu(self.up(x))
        b, t, d = h.shape
        h = h.view(b, t, self.heads, d // self.heads).softmax(-1).reshape(b, t, d)
        return self.down(h)


def get_inputs():
    return [torch.randn(8, 6, 256)]


def get_init_inputs():
    return [256, 512, 4]
'''


@pytest.fixture
def every_model_wide(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests use small models: every one counts as wide enough for a twin."""
    monkeypatch.setattr(sr, "TWIN_MIN_WEIGHT_BYTES", 0)


def _write(tmp_path: Path, text: str) -> str:
    path = tmp_path / "model.py"
    path.write_text(text)
    return str(path)


def test_scale_factor_keeps_small_arguments_and_divisibility() -> None:
    assert sr.scale_factor([256, 512, 4]) == 16  # 256/16 = 16, the least a scaled size becomes
    assert sr.scale_factor([3, 2, 1]) == 1  # kernel sizes, strides: nothing to scale
    assert sr.scale_factor([96, 4096]) == 4  # 96/8 = 12 would fall below 16
    assert sr.scale_factor([100]) == 4  # 100/8 is not an integer
    assert sr.scale_factor([True, 128]) == 8  # a bool is not a size


def test_sizes_inside_lists_scale_too() -> None:
    """An MLP built as Model(16384, [32768, 32768], 16384): its layer sizes are sizes too."""
    args = [16384, [32768, 32768], 16384, (3, 128)]
    assert sr.scale_factor(args) == 8  # 128/8 = 16 is the least
    assert sr._scaled(args, 8) == [2048, [4096, 4096], 2048, (3, 16)]
    assert sr.scale_factor([[100], 64]) == 4


MLP = '''
import torch
from torch import nn


class Model(nn.Module):
    def __init__(self, width, layers, out):
        super().__init__()
        mods, current = [], width
        for size in layers:
            mods += [nn.Linear(current, size), nn.ReLU()]
            current = size
        self.net = nn.Sequential(*mods, nn.Linear(current, out))

    def forward(self, x):
        return self.net(x)


def get_inputs():
    return [torch.randn(4, 256)]


def get_init_inputs():
    return [256, [512, 512], 128]
'''


def test_the_twin_of_an_mlp_scales_its_layer_list(tmp_path: Path, every_model_wide: None) -> None:
    out = tmp_path / "m.sir"
    assert translate_main([_write(tmp_path, MLP), "-o", str(out)]) == 0
    text = out.read_text()
    assert "reference built small: Model(32, [64, 64], 16) instead of Model(256, [512, 512], 128)" in text
    assert "Validation: passed" in text and "tensor<512x512xf32>" in text


def test_the_twin_validates_a_wide_model(tmp_path: Path, every_model_wide: None,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(tmp_path, WIDE)
    out = tmp_path / "m.sir"
    assert translate_main([path, "-o", str(out)]) == 0
    text = out.read_text()
    assert "reference built small: Model(16, 32, 4) instead of Model(256, 512, 4)" in text
    assert "256 -> 16; 512 -> 32 (1/16)" in text
    assert "fixed dims run small in the twin: x dim 2 256 -> 16" in text
    assert "Validation: passed" in text
    # The IR written is the full-size one.
    assert "tensor<512x256xf32>" in text


def test_without_a_twin_the_header_says_why(tmp_path: Path, every_model_wide: None) -> None:
    # The program's structure depends on the width: the twin would drop the ReLU.
    path = _write(tmp_path, WIDE.replace(
        "h = torch.relu(self.up(x))", "h = torch.relu(self.up(x)) if self.up.in_features > 64 else self.up(x)"))
    problem = load_problem(path)
    tr = translate_problem(problem, "all")
    twin, why = sr.plan(problem, tr)
    assert twin is None and "lowers to a different program" in why
    report = sr.validate_torch(problem, tr)
    assert report.ok and any(line.startswith("reference built at full size: the twin") for line in report.details)


def test_weights_that_do_not_scale_alike_keep_the_full_reference(tmp_path: Path, every_model_wide: None) -> None:
    # A weight whose size is not linear in the arguments: 512 elements at full size, 2 in the twin.
    text = WIDE.replace("        self.heads = heads\n", "        self.heads = heads\n"
                        "        self.extra = nn.Parameter(torch.zeros(hidden * hidden // 512))\n")
    path = _write(tmp_path, text.replace("return self.down(h)", "return self.down(h) + self.extra.sum()"))
    problem = load_problem(path)
    twin, why = sr.plan(problem, translate_problem(problem, "all"))
    assert twin is None and "is not the original scaled: parameter extra is [2] in the twin, [512]" in why


def test_a_twin_only_where_it_pays(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # As in a fresh process (another test may have loaded Numba here, which lowers the budget).
    monkeypatch.setattr(sr, "interpret_budget", lambda: 1e6)
    # Width 256, hidden 512: small weights, but at the validation sizes the linears execute 2*10^6
    # statements, too many to run as plain Python: the twin (a second, cheap export) avoids Numba.
    problem = load_problem(_write(tmp_path, WIDE))
    tr = translate_problem(problem, "all")
    assert sr.weight_bytes(tr) == 4 * (2 * 256 * 512 + 512 + 256) < sr.TWIN_MIN_WEIGHT_BYTES
    sizes = {"BATCH": 4, "X_1": 4}
    assert sr.worth_a_twin(tr, sr.prepared(tr.module, sizes))
    twin, _ = sr.plan(problem, tr, "all", sizes)
    assert twin is not None and twin.factor == 16
    # Width 64: the original's kernels run as plain Python at these sizes; a twin would not pay.
    narrow = tmp_path / "narrow"
    narrow.mkdir()
    problem = load_problem(_write(narrow, WIDE.replace("256", "64").replace("[64, 512, 4]", "[64, 64, 4]")))
    tr = translate_problem(problem, "all")
    assert not sr.worth_a_twin(tr, sr.prepared(tr.module, sizes))
    assert sr.plan(problem, tr, "all", sizes) == (None, "")



CLASSIFIER = '''
import torch
from torch import nn


class Model(nn.Module):
    def __init__(self, num_classes):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(48, 4096), nn.ReLU(), nn.Linear(4096, 48))
        self.head = nn.Linear(48, num_classes)

    def forward(self, x):
        return self.head(torch.relu(self.body(x)))


def get_inputs():
    return [torch.randn(4, 48)]


def get_init_inputs():
    return [1024]
'''


def test_no_second_export_for_a_twin_that_keeps_most_of_the_weights(tmp_path: Path, every_model_wide: None,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    # Only the classifier's width scales (a ResNet's num_classes), 1024 -> 16: the twin would keep the body's
    # 397,360 weights of 447,536 and every input's size, so it is not exported at all.
    problem = load_problem(_write(tmp_path, CLASSIFIER))
    tr = translate_problem(problem, "all")
    monkeypatch.setattr("solar.frontends.torch_export.translate_problem",
                        lambda *a, **k: pytest.fail("the twin was exported"))
    twin, why = sr.plan(problem, tr)
    assert twin is None
    assert why == "the twin Model(16) would keep 89% of the weights and every input's size: not worth a second export"
    # A narrow body: the head is most of the weights, and the twin (6% of them) is built as before.
    monkeypatch.undo()
    monkeypatch.setattr(sr, "TWIN_MIN_WEIGHT_BYTES", 0)
    problem = load_problem(_write(tmp_path, CLASSIFIER.replace("4096", "64")))
    twin, why = sr.plan(problem, translate_problem(problem, "all"))
    assert twin is not None and twin.factor == 64, why


def test_a_recurrent_program_with_small_weights_gets_no_twin(tmp_path: Path) -> None:
    from solar.backends.executor import kernel_statements

    # An LSTM validates over a few time steps (its sequence length is a size parameter), its kernels through
    # Numba at the original's widths: a twin's export would cost about as much.
    text = WIDE.replace("self.up = nn.Linear(width, hidden)", "self.up = nn.LSTM(width, hidden, batch_first=True)"
                        ).replace("h = torch.relu(self.up(x))", "h = torch.relu(self.up(x)[0])")
    problem = load_problem(_write(tmp_path, text))
    tr = translate_problem(problem, "all")
    sizes = {name: 4 for name in tr.params}
    # Its cell kernel is too large to run as plain Python, which alone would call for a twin.
    assert kernel_statements(tr.module, sizes) > sr.interpret_budget()
    assert not sr.worth_a_twin(tr, sr.prepared(tr.module, sizes))
    assert sr.plan(problem, tr, "all", sizes) == (None, "")


MASKED = '''
import torch
from torch import nn


class Model(nn.Module):
    def __init__(self, width, max_len):
        super().__init__()
        self.up = nn.Linear(width, width)
        self.register_buffer("mask", torch.tril(torch.ones(max_len, max_len)))

    def forward(self, x):
        t = x.size(1)
        att = torch.softmax((x @ x.transpose(1, 2)).masked_fill(self.mask[:t, :t] == 0, float("-inf")), -1)
        return self.up(att @ x)


seq_len = 128


def get_inputs():
    return [torch.randn(32, seq_len, 256)]


def get_init_inputs():
    return [256, 512]
'''


def test_a_symbolic_dim_bounded_by_a_scaled_argument_shrinks_in_the_twin(tmp_path: Path, every_model_wide: None
                                                                          ) -> None:
    # The sequence (symbolic) is sliced from a mask of max_len: the twin's mask is 512/16 = 32 long, so it is
    # traced at 128/16 = 8 (at 128 its export fails). The batch would become 32/16 = 2, below the validation
    # size: it stays.
    problem = load_problem(_write(tmp_path, MASKED))
    tr = translate_problem(problem, "all")
    assert set(tr.params) == {"BATCH", "SEQ_LEN"}
    twin, why = sr.plan(problem, tr, "all", {"BATCH": 4, "SEQ_LEN": 4})
    assert twin is not None, why
    assert twin.factor == 16 and twin.translation.params == {"BATCH": 32, "SEQ_LEN": 8}
    assert twin.lines[1] == "fixed dims run small in the twin: x dim 2 256 -> 16"  # not the symbolic ones
    report = sr.validate_torch(problem, tr)
    assert report.ok and report.sizes == {"BATCH": 4, "SEQ_LEN": 4}
    assert report.details[-2].startswith("reference built small: Model(16, 32) instead of Model(256, 512)")


def test_symbolic_sizes_in_the_twin() -> None:
    assert sr._symbolic_size(512, 32, 1, 1024) == 16  # at most a scaled argument: divided
    assert sr._symbolic_size(2048, 32, 1, 1024) == 2048  # larger than every scaled argument: as written
    assert sr._symbolic_size(48, 32, 1, 1024) == 48  # not divisible
    assert sr._symbolic_size(32, 32, 1, 1024) == 32  # would become 1, which export specialises
    assert sr._symbolic_size(64, 32, 3, 1024) == 64  # below the least its parameter allows
