"""solar-llm --report (bench/llm_html.py): the page's phase tables are the points' figures exactly, the
per-operator tables add up to the unfused step, the plots draw every context asked and mark the points that
do not fit, and in Chromium the page opens without errors and fits 1,000 px (when a browser is installed)."""

from __future__ import annotations

import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest
from chromium import CHROMIUM, DRIVER, MISSING, headless_chromium

from solar.bench.llm_html import operator_rows, operators_json, render_llm_html, write_llm_html
from solar.bench.llm_report import LlmAnalysis, LlmRequest, analyse_llm
from solar.targets.loader import load_target

ROOT = Path(__file__).resolve().parents[2]
TINY = ROOT / "tests" / "lit" / "solar-llm" / "Inputs" / "tiny-llama.json"


@pytest.fixture(scope="module")
def analysis(tmp_path_factory: pytest.TempPathFactory) -> LlmAnalysis:
    """Two targets: H100, and H100 with 300 kB of memory, where decode at batch 8 and context 256 (620 kB with
    its 524 kB KV cache) does not fit and every other point does (batch 8 at context 64: 226 kB)."""
    small = tmp_path_factory.mktemp("targets") / "small.yaml"
    text = (ROOT / "targets" / "h100-sxm.yaml").read_text()
    text = text.replace("name: h100-sxm\n", "name: small-h100\n").replace("aliases: [h100, h100-sxm5]", "aliases: []")
    small.write_text(text.replace("dram_capacity: {value: 80, unit: GB", "dram_capacity: {value: 300, unit: KB"))
    request = LlmRequest(str(TINY), [load_target("h100"), load_target(str(small))], batches=[1, 8], prompts=[32],
                         contexts=[64, 256], validate=False)
    return analyse_llm(request)


class _Ids(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.ids: dict[str, dict[str, str | None]] = {}
        self.text: list[str] = []
        self.in_script = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.in_script = tag == "script"
        found = dict(attrs)
        if found.get("id"):
            self.ids[str(found["id"])] = found

    def handle_endtag(self, tag: str) -> None:
        self.in_script = False

    def handle_data(self, data: str) -> None:
        if not self.in_script:
            self.text.append(data)


def test_the_page_holds_every_phase_operator_table_and_plot(analysis: LlmAnalysis) -> None:
    page = render_llm_html(analysis, "solar-llm tiny-llama.json --report out.html")
    parsed = _Ids()
    parsed.feed(page)
    for element in ("verdict", "phase-prefill", "phase-decode", "plots-prefill", "plots-decode", "crossovers",
                    "operators-prefill-h100-sxm", "operators-decode-h100-sxm", "operators-decode-small-h100"):
        assert element in parsed.ids, element
    text = "".join(parsed.text)
    assert not re.search(r"\de[+-]\d", text)  # no scientific notation anywhere a person reads
    assert "On h100-sxm, decode at batch 1 and context 64: TPOT at least 29.7 ns, memory-bound" in text
    # The decode plot draws both contexts asked on each target; the small target's unfit points are crossed.
    decode_plots = page.split('id="plots-decode"', 1)[1].split("</div>", 1)[0]
    assert decode_plots.count(">context 64</text>") == 2 and decode_plots.count(">context 256</text>") == 2
    assert decode_plots.count('class="unfit-point"') == 1
    assert "does not fit in 300 kB of small-h100 memory: context 256 at batch 8" in text
    assert "On small-h100, 1 of 6 points do not fit in memory" in text
    assert "On h100-sxm" in text and "On h100-sxm, 1 of" not in text


def test_the_operator_table_adds_up_to_the_unfused_step(analysis: LlmAnalysis) -> None:
    page = render_llm_html(analysis)
    doc = operators_json(page)
    for phase, length in (("prefill", 32), ("decode", 64)):
        point = next(p for p in analysis.points if p.phase == phase and p.target == "h100-sxm" and p.mode == "unfused"
                     and p.batch == 1 and (p.prompt or p.context) == length)
        rows = doc["operators"][phase]["h100-sxm"]["rows"]
        assert sum(r["total_s"] for r in rows) == pytest.approx(point.time_s, rel=1e-12)
        total = re.search(rf'id="operators-{phase}-h100-sxm-total" data-value="([^"]+)"', page)
        assert total is not None and float(total.group(1)) == pytest.approx(point.time_s, rel=1e-12)
        by_name = {r["operator"]: r for r in rows}
        # Each decoder layer's projection runs once per layer (4), the head once; names carry no layer index.
        assert by_name["lm.model.layers.*.self_attn.q_proj"]["count"] == 4
        assert by_name["lm.lm_head"]["count"] == 1
        assert by_name["lm.model.layers.*.self_attn · scaled_dot_product_attention"]["ops"] == [
            "scaled_dot_product_attention"]
    # Decode at batch 1, context 64: q_proj is a 32×32 bf16 matmul of one token, 2·32·32 = 2048 FLOPs.
    rows = {r.name: r for r in operator_rows(analysis.steps["decode"], 4, load_target("h100"), 1, 64)}
    assert rows["lm.model.layers.*.self_attn.q_proj"].flops_tensor == 2048
    assert rows["lm.lm_head"].flops_tensor == 2 * 32 * 128  # hidden 32 → vocabulary 128


def test_the_page_is_the_points_exactly(analysis: LlmAnalysis, tmp_path: Path) -> None:
    path = tmp_path / "llm.html"
    path.write_text("an older report")
    write_llm_html(analysis, str(path))
    page = path.read_text()
    doc = operators_json(page)
    assert len(doc["points"]) == len(analysis.points) == 2 * (2 * 1 + 2 * 2) * 3  # targets × points × modes
    prefill = page.split('id="phase-prefill"', 1)[1].split("</table>", 1)[0]
    values = [float(v) for v in re.findall(r'<td data-value="([^"]+)">[^<]*s</td>', prefill)]
    times = [p.time_s for p in analysis.points if p.phase == "prefill"]
    assert all(any(v == pytest.approx(t, rel=1e-15) for v in values) for t in times)


def test_cli_report_errors_are_one_line(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-dir" / "out.html"
    for extra, message in (
            (["--report", str(missing)], f"solar-llm: error: cannot write --report '{missing}'"),
            (["--report", str(tmp_path / "x.html"), "--slo", "tpot=30ms"],
             "solar-llm: error: --report draws the serving tables of the points asked; with --slo use --json or "
             "--plot")):
        run = subprocess.run([sys.executable, "-m", "solar.tools.solar_llm", str(TINY), *extra], capture_output=True,
                             text=True, timeout=120)
        assert run.returncode == 1
        assert run.stderr.startswith(message) and run.stderr.count("\n") == 1, run.stderr




@pytest.mark.skipif(CHROMIUM is None or DRIVER is None, reason=MISSING)
def test_the_page_in_chromium(analysis: LlmAnalysis, tmp_path: Path) -> None:
    webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed (pip install -e .[dev])")
    from selenium.webdriver.common.by import By

    path = tmp_path / "llm.html"
    write_llm_html(analysis, str(path))
    browser = headless_chromium(webdriver)
    try:
        browser.get(path.as_uri())
        assert [e for e in browser.get_log("browser") if e["level"] == "SEVERE"] == []
        summary = browser.find_element(By.ID, "verdict")
        assert summary.text.startswith("Summary\nOn h100-sxm, prefill at batch 1 and prompt 32: TTFT at least ")
        table = browser.find_element(By.ID, "operators-decode-h100-sxm")
        names = [r.find_elements(By.TAG_NAME, "td")[0].text for r in table.find_elements(By.CSS_SELECTOR, "tbody tr")]
        assert "lm.model.layers.*.self_attn.q_proj" in names
        for width in (1000, 1400):
            browser.set_window_size(width, 2000)
            overflow = browser.execute_script(
                "return document.documentElement.scrollWidth - document.documentElement.clientWidth")
            assert overflow <= 0, (width, overflow)
            assert browser.save_screenshot(str(tmp_path / f"llm-{width}.png"))
    finally:
        browser.quit()


def test_the_png_plot_draws_every_length_and_phase(analysis: LlmAnalysis, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    from solar.bench.llm_plot import plot_llm as plot
    from solar.bench.llm_plot import texts_of

    drawn: list[str] = []
    original = Figure.savefig

    def capture(fig: Figure, *args: object, **kwargs: object) -> None:
        fig.canvas.draw()
        drawn.extend(texts_of(fig))
        original(fig, *args, **kwargs)

    monkeypatch.setattr(Figure, "savefig", capture)
    png = tmp_path / "llm.png"
    plot(analysis, str(png))
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    for label in ("prefill: TTFT bound (fused)", "decode: TPOT bound (fused)", "h100-sxm, prompt 32",
                  "h100-sxm, context 64", "h100-sxm, context 256", "small-h100, context 256",
                  "does not fit in memory"):
        assert label in drawn, label
    assert not any(re.search(r"\de[+-]\d|10\^|\$", t) for t in drawn), drawn
    assert any(t.endswith(" ns") for t in drawn)  # times in the formatter's units
