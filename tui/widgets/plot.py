"""A small terminal line plot: improvement over steps, one marker per model."""

from __future__ import annotations

MARKERS = "●▲■◆✚✖★"


def ascii_plot(series: dict[str, list[tuple[int, float]]], width: int = 60, height: int = 12) -> str:
    """Plot (step, value) series on a character grid with a y-axis and a legend.

    Pure text so it renders in any terminal, in snapshots, and in tests.
    """
    points = [(x, y) for pts in series.values() for x, y in pts]
    if not points:
        return "No scored steps yet: run `labcoat score --all-steps` on these runs."
    xs, ys = [p[0] for p in points], [p[1] for p in points]
    x0, x1 = min(xs), max(xs)
    y0, y1 = min(min(ys), 0.0), max(max(ys), 0.0)
    if y1 - y0 < 1e-12:
        y1 = y0 + 1.0
    grid = [[" "] * width for _ in range(height)]

    def cell(x: float, y: float) -> tuple[int, int]:
        col = 0 if x1 == x0 else round((x - x0) / (x1 - x0) * (width - 1))
        row = height - 1 - round((y - y0) / (y1 - y0) * (height - 1))
        return row, col

    zero_row, _ = cell(x0, 0.0)
    grid[zero_row] = ["┄"] * width
    for (name, pts), marker in zip(sorted(series.items()), MARKERS * 4, strict=False):
        for x, y in pts:
            r, c = cell(x, y)
            grid[r][c] = marker
    labels = {0: f"{y1:+.0%}", height - 1: f"{y0:+.0%}", zero_row: "0%"}
    pad = "\u00a0"  # terminals and Textual keep non-breaking spaces at a line's start
    lines = [labels.get(i, "").rjust(7, pad) + " │" + "".join(row) for i, row in enumerate(grid)]
    lines.append(pad * 8 + "└" + "─" * width)
    lines.append(pad * 9 + f"step {x0}".ljust(width - 8) + f"step {x1}")
    legend = "   ".join(f"{m} {name}" for name, m in zip(sorted(series), MARKERS * 4, strict=False))
    return "\n".join(lines + ["", legend])
