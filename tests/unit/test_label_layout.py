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


def _first_free(points: list, sizes: list, area: tuple, margin_x: float, radius: float, gap: float,
                obstacles: list[Box]) -> list[tuple[Box, bool]]:
    """The placement rule tested against every box placed so far (what the grid must agree with)."""
    from solar.backends.label_layout import _DIRECTIONS, _RINGS

    blocked = [Box(x - radius, y - radius, 2 * radius, 2 * radius) for x, y in points] + obstacles
    out, column_y = [], area[1]
    for (px, py), (w, h) in zip(points, sizes, strict=True):
        spot = None
        for ring in range(_RINGS):
            reach = radius + gap + ring * (h + gap)
            for dx, dy in _DIRECTIONS:
                box = Box(px + dx * reach - (w if dx < 0 else w / 2 if dx == 0 else 0),
                          py + dy * reach - (h if dy < 0 else h / 2 if dy == 0 else 0), w, h)
                if box.inside(*area) and not any(box.overlaps(b) for b in blocked):
                    spot = (box, ring > 1)
                    break
            if spot:
                break
        if spot is None:
            spot = (Box(margin_x, column_y, w, h), True)
            column_y += h + gap
        blocked.append(spot[0])
        out.append(spot)
    return out


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(point, size), min_size=1, max_size=60), st.floats(1, 8))
def test_the_grid_places_labels_where_testing_every_box_would(items: list, radius: float) -> None:
    points = [p for p, _ in items]
    sizes = [s for _, s in items]
    legend = [Box(400, 330, 140, 30), Box(-1e7, 0, 2e7, 5)]  # one obstacle far wider than the grid allows
    placed = place_labels(points, sizes, AREA, AREA[2] + 8, point_radius=radius, obstacles=legend)
    expected = _first_free(points, sizes, AREA, AREA[2] + 8, radius, 3.0, legend)
    assert [(p.box, p.leader) for p in placed] == expected
