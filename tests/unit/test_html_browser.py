"""The HTML report in a real browser (Debian's headless Chromium through Selenium): three examples' reports
open with no console error, show the JSON report's totals, sort their tables, and render a non-blank page
(the screenshot stays under the test's temporary folder, for CI to keep)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from chromium import CHROMIUM, DRIVER, MISSING, headless_chromium

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ("mlp.sir", "layernorm.sir", "causal_attention.sir")

pytestmark = pytest.mark.skipif(CHROMIUM is None or DRIVER is None, reason=MISSING)
webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed (pip install -e .[dev])")


@pytest.fixture(scope="module")
def browser():  # type: ignore[no-untyped-def]
    driver = headless_chromium(webdriver)
    yield driver
    driver.quit()


def _reports(example: str, tmp: Path) -> tuple[Path, dict]:
    html, js = tmp / "report.html", tmp / "report.json"
    subprocess.run([sys.executable, "-m", "solar.tools.solar_opt", str(ROOT / "examples" / example), "--lift-einsum",
                    "--fuse", "--sol=h100,b200", "--sol-report", str(js), "--report", str(html), "-o", os.devnull],
                   check=True, capture_output=True, text=True, cwd=ROOT)
    return html, json.loads(js.read_text())


def _api_report(tmp: Path) -> tuple[Path, dict]:
    """A report made by the Python API from a live module: with source lines and library frames."""
    import torch

    import solar

    class Block(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.up = torch.nn.Linear(32, 64)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.tanh(self.up(x)) * 2

    analysis = solar.analyze(Block(), (torch.randn(8, 32),), targets=("h100", "b200"))
    html = tmp / "report.html"
    analysis.to_html(str(html))
    return html, analysis.to_json()


@pytest.mark.parametrize("example", [*EXAMPLES, "api"])
def test_report_in_chromium(browser, example: str, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from selenium.webdriver.common.by import By

    html, doc = _api_report(tmp_path) if example == "api" else _reports(example, tmp_path)
    browser.get(html.as_uri())
    errors = [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]
    assert errors == []
    # The totals in the page are the JSON report's, exactly.
    for t in doc["targets"]:
        for mode, res in t["modes"].items():
            cell = browser.find_element(By.ID, f"total-{t['name']}-{mode}")
            assert float(cell.get_attribute("data-value")) == res["time_s"]
    # Sorting: a click on the SOL header orders the units by time, a second click reverses.
    name = doc["targets"][0]["name"]
    table = browser.find_element(By.ID, f"units-{name}")
    times = sorted(u["time_s"] for u in doc["targets"][0]["units"])
    header = table.find_elements(By.TAG_NAME, "th")[6]

    def column() -> list[float]:
        return [float(r.find_elements(By.TAG_NAME, "td")[6].get_attribute("data-value"))
                for r in table.find_elements(By.CSS_SELECTOR, "tbody tr")]

    header.click()
    assert column() == times
    header.click()
    assert column() == times[::-1]
    # Labels of the roofline never overlap (their boxes, as drawn).
    for svg in browser.find_elements(By.CSS_SELECTOR, ".roofline svg"):
        boxes = [tuple(map(float, e.get_attribute("data-box").split(",")))
                 for e in svg.find_elements(By.CSS_SELECTOR, "text.point-label")]
        assert not any(a[0] < b[0] + b[2] and b[0] < a[0] + a[2] and a[1] < b[1] + b[3] and b[1] < a[1] + a[3]
                       for i, a in enumerate(boxes) for b in boxes[i + 1:])
    if example == "api":  # the lines table shows the user's line and the library frame inside it
        lines = browser.find_element(By.ID, f"lines-{name}").text
        assert "return torch.tanh(self.up(x)) * 2 ← torch/nn/modules/linear.py:" in lines  # HTML folds spaces
        assert len(doc["targets"][0]["source_lines"]) == 1
    # As a person sees it: the verdict first, and no sideways scrolling at 1,000 px or 1,400 px.
    verdict = browser.find_element(By.ID, "verdict")
    assert verdict.text.startswith("Verdict\nOn ")
    assert verdict.location["y"] < browser.find_element(By.ID, "totals").location["y"]
    if example == "api":  # units named by their module, with the source line beside
        units = browser.find_element(By.ID, f"units-{name}").text
        assert "up" in [r.split(" ")[0] for r in units.splitlines()]
    for width in (1000, 1400):
        browser.set_window_size(width, 2000)
        overflow = browser.execute_script(
            "return document.documentElement.scrollWidth - document.documentElement.clientWidth")
        assert overflow <= 0, (width, overflow)
        shot = tmp_path / f"screenshot-{width}.png"
        assert browser.save_screenshot(str(shot))
        _assert_not_blank(shot)
    browser.set_window_size(1400, 2000)


def _assert_not_blank(path: Path) -> None:
    """Many distinct colours, and not one colour over nearly the whole picture."""
    import matplotlib.image as mpimg
    import numpy as np

    pixels = (mpimg.imread(path)[..., :3] * 255).astype(np.uint8).reshape(-1, 3)
    colours, counts = np.unique(pixels, axis=0, return_counts=True)
    assert len(colours) > 20
    assert counts.max() / counts.sum() < 0.98


def test_measured_point_under_its_roof_in_chromium(browser, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """After `bench()` the roofline shows the achieved point, drawn under the fused SOL's and joined to it."""
    import torch
    from selenium.webdriver.common.by import By

    import solar

    analysis = solar.analyze(torch.nn.Linear(64, 64), (torch.randn(32, 64),), targets=("host",))
    rec = analysis.bench(budget_s=0.05, warmup=1, min_runs=3, lines=False, device="cpu")
    html = tmp_path / "measured.html"
    analysis.to_html(str(html))
    browser.set_window_size(1000, 2000)
    browser.get(html.as_uri())
    (point,) = browser.find_elements(By.CSS_SELECTOR, ".roofline svg circle.measured-point")
    assert point.is_displayed()
    sol_mark = point.find_element(By.XPATH, "preceding-sibling::*[1]")  # the fused SOL's square, drawn before it
    assert sol_mark.tag_name == "rect"
    # Lower on the page is slower: the run (median ÷ SOL = its headroom) sits under the roof it is judged by.
    assert rec["headroom"]["host"]["eager"]["fused"]["median"] > 1
    assert float(point.get_attribute("cy")) > float(sol_mark.get_attribute("y")) + 4
    label = browser.find_element(By.CSS_SELECTOR, ".roofline svg").text
    assert "measured eager" in label and "under the fused SOL" in label
    overflow = browser.execute_script("return document.documentElement.scrollWidth - "
                                      "document.documentElement.clientWidth")
    assert overflow <= 0
    browser.set_window_size(1400, 2000)
