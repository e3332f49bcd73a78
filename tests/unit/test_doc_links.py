"""Every relative link of the docs resolves: in docs/ (the user guides and docs/design/), README.md and
CONTRIBUTING.md, a link `[text](path)` names a file that exists, and `[text](path#anchor)` (or `(#anchor)`)
a heading of that file, by the anchor GitHub gives it. Guides link to the design pages that moved out of
them, so a page renamed or a section retitled fails here, not in a reader's browser."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
PAGES = sorted([*(REPO_ROOT / "docs").rglob("*.md"), REPO_ROOT / "README.md", REPO_ROOT / "CONTRIBUTING.md"])
FENCE = re.compile(r"^```.*?^```[ \t]*$", re.M | re.S)
INLINE_CODE = re.compile(r"`[^`\n]*`")
LINK = re.compile(r"\[([^\]\n]*)\]\(([^)\s]+)\)")
HEADING = re.compile(r"^#{1,6}[ \t]+(.+?)[ \t]*#*[ \t]*$", re.M)


def _prose(text: str) -> str:
    """The text outside code fences and inline code, where a `[x](y)` is a link."""
    return INLINE_CODE.sub("", FENCE.sub("", text))


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: its rendered text (code marks and link targets gone) lowercased, every
    character but letters, digits, `_`, `-` and spaces dropped, spaces made hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    text = re.sub(r"[^\w\- ]", "", text.lower())
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """Every heading's anchor; a repeated one gets `-1`, `-2`, ... as GitHub numbers them."""
    seen: dict[str, int] = {}
    out: set[str] = set()
    for match in HEADING.finditer(FENCE.sub("", path.read_text(encoding="utf-8"))):
        base = slug(match.group(1))
        count = seen.get(base, 0)
        seen[base] = count + 1
        out.add(base if count == 0 else f"{base}-{count}")
    return out


def _links() -> list[object]:
    params: list[object] = []
    for page in PAGES:
        for match in LINK.finditer(_prose(page.read_text(encoding="utf-8"))):
            target = match.group(2)
            if re.match(r"[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
                continue
            params.append(pytest.param(page, target, id=f"{page.relative_to(REPO_ROOT)}->{target}"))
    return params


def test_slug_is_githubs() -> None:
    assert slug("PyTorch: `frontends/torch_export.py`") == "pytorch-frontendstorch_exportpy"
    assert slug("A language model's step: `solar-llm --phase train`") \
        == "a-language-models-step-solar-llm---phase-train"
    assert slug("Loss scaling (`--amp fp16`)") == "loss-scaling---amp-fp16"


def test_there_are_links_to_design_pages() -> None:
    targets = [param.values[1] for param in _links()]  # type: ignore[attr-defined]
    assert sum(t.startswith("design/") for t in targets) >= 10


@pytest.mark.parametrize(("page", "target"), _links())
def test_link_resolves(page: Path, target: str) -> None:
    path_part, _, anchor = target.partition("#")
    resolved = (page.parent / path_part).resolve() if path_part else page
    assert resolved.exists(), f"{page.relative_to(REPO_ROOT)}: the link {target!r} names no file"
    if anchor:
        assert resolved.is_file() and resolved.suffix == ".md", f"{target!r}: an anchor into a non-markdown page"
        assert anchor in anchors(resolved), \
            f"{page.relative_to(REPO_ROOT)}: {target!r}: {resolved.name} has no heading with the anchor #{anchor}"


DESIGN = REPO_ROOT / "docs" / "design"


def test_every_design_page_names_its_guide_is_indexed_and_linked() -> None:
    """A design page opens with the user guide it backs; that guide links to it, and the index lists it."""
    index = (DESIGN / "README.md").read_text(encoding="utf-8")
    pages = sorted(p for p in DESIGN.glob("*.md") if p.name != "README.md")
    assert len(pages) >= 8
    for page in pages:
        opening = page.read_text(encoding="utf-8").split("\n\n", 2)[1]
        backed = re.search(r"The user's guide is \[[^\]]*\]\(\.\./([a-z-]+\.md)(#[^)]*)?\)", opening)
        assert backed, f"design/{page.name} does not open with the user guide it backs"
        guide = (REPO_ROOT / "docs" / backed.group(1)).read_text(encoding="utf-8")
        assert f"(design/{page.name}" in guide, f"docs/{backed.group(1)} does not link design/{page.name}"
        assert f"]({page.name})" in index, f"design/README.md does not list {page.name}"
