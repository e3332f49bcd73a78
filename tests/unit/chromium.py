"""Debian's Chromium, headless, driven by Selenium: the browser tests of the HTML reports share it."""

from __future__ import annotations

import shutil
from typing import Any

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver")
MISSING = "no Chromium: install Debian's chromium and chromium-driver (.ci/run does)"


def headless_chromium(webdriver: Any, width: int = 1400, height: int = 2000) -> Any:
    """A headless Chromium window of `width` × `height` px that keeps the page's console log."""
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    options = Options()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                f"--window-size={width},{height}"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service(DRIVER), options=options)
