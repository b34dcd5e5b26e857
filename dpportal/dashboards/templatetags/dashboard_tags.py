"""{% chart "id" figure %}: a plotly div plus its figure as a json_script element (drawn by
static/dashboards/dashboards.js; no inline JavaScript)."""

from __future__ import annotations

from django import template
from django.utils.html import format_html, json_script

register = template.Library()


@register.simple_tag
def chart(cid: str, figure: dict, css: str = ""):
    data_id = f"{cid}-data"
    title = ((figure.get("layout") or {}).get("title") or {}).get("text", "chart")
    return format_html(
        '<div class="dash-chart {}" id="{}" data-source="{}" role="img" aria-label="{}"></div>{}',
        css,
        cid,
        data_id,
        title,
        json_script(figure, data_id),
    )


@register.filter
def pct(value) -> str:
    try:
        return f"{100 * float(value):.1f}%"
    except (TypeError, ValueError):
        return "n/a"


@register.filter
def points(value) -> str:
    """A difference of two shares in percentage points: 0.201 -> "20.1 points"."""
    try:
        return f"{100 * float(value):.1f} points"
    except (TypeError, ValueError):
        return "n/a"


@register.filter
def num(value, digits: int = 3) -> str:
    try:
        return f"{float(value):.{int(digits)}f}"
    except (TypeError, ValueError):
        return "n/a"


@register.filter
def get(mapping, key):
    """``mapping[key]`` in a template (keys such as "0.01" that the dot syntax cannot name)."""
    try:
        return mapping.get(key)
    except AttributeError:
        return None


@register.filter
def tally(values) -> str:
    """``["private", "private", "shadow"]`` -> "2 private, 1 shadow" (first-seen order)."""
    counts: dict = {}
    for v in values or ():
        counts[v] = counts.get(v, 0) + 1
    return ", ".join(f"{n} {v}" for v, n in counts.items())
