"""Plots of measured figures, written as PNG files (matplotlib, no display needed)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

Series = Mapping[str, Sequence[tuple[float, float]]]


def panels_png(
    path: Path,
    title: str,
    panels: Sequence[tuple[str, str, Series, bool]],
    x_label: str,
) -> None:
    """One row of line charts sharing an x axis: (title, y label, {series: points}, log y)."""
    figure, axes = plt.subplots(1, len(panels), figsize=(5 * len(panels), 4), squeeze=False)
    for axis, (panel_title, y_label, series, log_y) in zip(axes[0], panels, strict=True):
        for name, points in sorted(series.items()):
            xs, ys = zip(*sorted(points), strict=True) if points else ((), ())
            axis.plot(xs, ys, marker="o", label=name)
        axis.set_title(panel_title, fontsize=10)
        axis.set_xlabel(x_label)
        axis.set_ylabel(y_label)
        if log_y:
            axis.set_yscale("log")
        axis.grid(True, alpha=0.3)
        axis.legend(fontsize=7)
    figure.suptitle(title)
    save_png(figure, path, dpi=100)


def save_png(figure: Any, path: Path, *, dpi: int) -> None:
    """Lay out, write through a temporary file (no half-written PNG) and close ``figure``."""
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp.png")
    figure.savefig(tmp, dpi=dpi)
    plt.close(figure)
    tmp.replace(path)
