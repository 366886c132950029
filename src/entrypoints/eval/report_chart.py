"""The HTML report's chart of accuracy against stated confidence: inline SVG, one bar series per candidate."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

from firmsift.entrypoints.eval import figures as fig

SERIES_CLASSES = 8  # the stylesheet colours series-0 .. series-7 (Okabe-Ito, safe for colour-blind readers)

_LEFT, _RIGHT, _TOP, _PLOT, _BOTTOM = 56, 16, 18, 200, 48
_BAR, _BAR_GAP, _GROUP_PAD = 18, 4, 28


def series_class(index: int) -> str:
    return f"series-{index % SERIES_CLASSES}"


def confidence_chart(candidates: Sequence[Mapping[str, Any]]) -> str:
    """Grouped bars: x = confidence level, y = accuracy of the answers given at that level, with the
    number of answers above each bar. A level with no answers has no bar (a gap, not a 0%)."""
    levels = [level["confidence"] for level in candidates[0]["metrics"]["by_confidence"]] if candidates else []
    group = max(len(candidates), 1) * (_BAR + _BAR_GAP) - _BAR_GAP + _GROUP_PAD
    width, height = _LEFT + group * len(levels) + _RIGHT, _TOP + _PLOT + _BOTTOM
    parts = [f'<svg class="chart" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
             f'viewBox="0 0 {width} {height}" role="img" aria-labelledby="chart-title">',
             '<title id="chart-title">Accuracy by stated confidence, per candidate</title>']
    parts.extend(_axes(width, levels, group))
    for column, level in enumerate(levels):
        for index, candidate in enumerate(candidates):
            figures = candidate["metrics"]["by_confidence"][column]
            x = _LEFT + column * group + _GROUP_PAD // 2 + index * (_BAR + _BAR_GAP)
            parts.append(_bar(x, candidate["name"], index, level, figures))
    parts.append("</svg>")
    return "\n".join(parts)


def _axes(width: int, levels: Sequence[int], group: int) -> list[str]:
    baseline = _TOP + _PLOT
    parts = []
    for tick in (0, 25, 50, 75, 100):
        y = baseline - _PLOT * tick / 100
        parts.append(f'<line class="grid" x1="{_LEFT}" y1="{y:.1f}" x2="{width - _RIGHT}" y2="{y:.1f}"/>')
        parts.append(f'<text class="tick" x="{_LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">{tick}%</text>')
    for column, level in enumerate(levels):
        x = _LEFT + column * group + group / 2
        parts.append(f'<text class="tick" x="{x:.1f}" y="{baseline + 18}" text-anchor="middle">{int(level)}</text>')
    parts.append(f'<line class="axis" x1="{_LEFT}" y1="{baseline}" x2="{width - _RIGHT}" y2="{baseline}"/>')
    parts.append(f'<text class="axis-title" x="{(_LEFT + width - _RIGHT) / 2:.1f}" y="{baseline + 38}" '
                 'text-anchor="middle">stated confidence</text>')
    parts.append(f'<text class="axis-title" x="14" y="{_TOP + _PLOT / 2:.1f}" text-anchor="middle" '
                 f'transform="rotate(-90 14 {_TOP + _PLOT / 2:.1f})">accuracy</text>')
    return parts


def _bar(x: float, name: str, index: int, level: int, figures: Mapping[str, Any]) -> str:
    level, answered = int(level), int(figures["answered"])  # numbers only, never markup
    baseline = _TOP + _PLOT
    centre = x + _BAR / 2
    about = escape(f"{name}, confidence {level}: {fig.confidence_cell(figures)}", quote=True)
    if not answered:
        return (f'<g class="gap" data-confidence="{level}" data-series="{index}"><title>{about}</title>'
                f'<text x="{centre:.1f}" y="{baseline - 4}" text-anchor="middle">–</text></g>')
    accuracy = figures["accuracy"] or 0.0
    # A real 0% keeps a sliver of bar, so it never reads as the gap of a level without answers.
    tall = max(_PLOT * accuracy, 2.0)
    top = baseline - tall
    return (f'<g class="bar" data-confidence="{level}" data-series="{index}"><title>{about}</title>'
            f'<rect class="{series_class(index)}" x="{x:.1f}" y="{top:.1f}" width="{_BAR}" height="{tall:.1f}"/>'
            f'<text class="count" x="{centre:.1f}" y="{top - 4:.1f}" text-anchor="middle">'
            f'{answered}</text></g>')
