"""The HTML report's embedded JSON report stays inside its <script> element whatever text it carries: a
`</script>` would end the element early, and `<!--` followed by `<script>` would make the browser skip the
real end tag (the HTML tokenizer's "script data double escaped" state), swallowing the page's own script."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from solar.backends.html_report import render_html

START = '<script type="application/json" id="solar-report">'


def _embedded(page: str) -> str:
    body = page[page.index(START) + len(START):]
    return body[:body.index("</script")]  # where a browser ends the element (no `<` inside: no other state)


def test_comment_openers_and_end_tags_are_escaped() -> None:
    hostile = "<!--<script>alert(1)</script>--> </SCRIPT> <\u2028"
    doc = {"module": "m", "targets": [], "params": {}, "note": hostile}
    text = _embedded(render_html(doc))
    assert "<" not in text
    assert json.loads(text) == doc


@given(st.text(alphabet="<!-/>scriptSCRIPT \"\\", max_size=40))
def test_any_text_round_trips_and_never_opens_a_tag(note: str) -> None:
    doc = {"module": "m", "targets": [], "params": {}, "note": note}
    text = _embedded(render_html(doc))
    assert "<" not in text
    assert json.loads(text)["note"] == note
