"""Roofline labels never overlap one another, a point or the legend, in the layout and in the PNG."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from solar.backends.label_layout import Box, any_overlap, place_labels

AREA = (50.0, 20.0, 550.0, 370.0)
point = st.tuples(st.floats(AREA[0], AREA[2]), st.floats(AREA[1], AREA[3]))
size = st.tuples(st.floats(10, 120), st.floats(8, 16))


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(point, size), min_size=1, max_size=40))
def test_no_label_overlaps_another_or_a_point(items: list) -> None:
    points = [p for p, _ in items]
    sizes = [s for _, s in items]
    legend = Box(400, 330, 140, 30)
    placed = place_labels(points, sizes, AREA, AREA[2] + 8, point_radius=4, obstacles=[legend])
    boxes = [p.box for p in placed]
    assert len(boxes) == len(points)
    assert not any_overlap(boxes)
    markers = [Box(x - 4, y - 4, 8, 8) for x, y in points]
    for b in boxes:
        assert not any(b.overlaps(m) for m in [*markers, legend]) or b.x >= AREA[2]
        assert b.inside(*AREA) or b.x >= AREA[2]  # inside the plot, or in the margin column
    for (w, h), b in zip(sizes, boxes, strict=True):
        assert (b.w, b.h) == (w, h)


def test_a_free_label_sits_beside_its_point() -> None:
    [spot] = place_labels([(100.0, 100.0)], [(40.0, 10.0)], AREA, AREA[2] + 8)
    assert (spot.box.x, spot.box.y, spot.leader) == (107.0, 95.0, False)  # right of the marker, centred


def test_crowded_points_go_to_the_margin_with_a_leader() -> None:
    points = [(300.0, 200.0)] * 60
    placed = place_labels(points, [(200.0, 14.0)] * 60, AREA, 560.0)
    assert not any_overlap([p.box for p in placed])
    assert any(p.box.x == 560.0 and p.leader for p in placed)


def test_the_png_labels_do_not_overlap(tmp_path: Path) -> None:
    import solar
    from solar.backends.report import draw_roofline

    analysis = solar.analyze(str(Path(__file__).resolve().parents[2] / "examples" / "mlp_heads.sir"),
                             targets=("h100", "b200"))
    fig = draw_roofline(analysis._reports)
    renderer = fig.canvas.get_renderer()
    for ax in fig.axes:
        labels = [t for t in ax.texts if t.get_gid() == "point-label"]
        assert len(labels) == len(analysis.units) + len(analysis.groups)
        boxes = [t.get_window_extent(renderer) for t in labels]
        assert not any(a.overlaps(b) for i, a in enumerate(boxes) for b in boxes[i + 1:])
