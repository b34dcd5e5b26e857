"""Plotly figures as plain dicts ({"data": [...], "layout": {...}}), drawn by static/dashboards/
dashboards.js with the vendored plotly.js (no CDN, no Python plotly import on the request path)."""

from __future__ import annotations

from collections import defaultdict

REAL = "#5f6b7a"
SYNTHETIC = "#2857a4"
OTHER = "#c2572b"
BASE_LAYOUT = {
    "margin": {"l": 50, "r": 10, "t": 36, "b": 60},
    "paper_bgcolor": "rgba(0,0,0,0)",
    "plot_bgcolor": "rgba(0,0,0,0)",
    "legend": {"orientation": "h", "x": 1, "xanchor": "right", "y": 1.0, "yanchor": "bottom"},
}
# Labels are categories, never numbers: plotly otherwise reads labels like "- 50000" and "50000+" as
# numbers and drops or merges the bars of the others.
CATEGORY_AXIS = {"type": "category"}
MAX_LABEL = 24  # category labels are cut to this many characters on axes


def _layout(title: str, **kw) -> dict:
    return {
        **BASE_LAYOUT,
        "title": {"text": title, "font": {"size": 14}, "x": 0, "xanchor": "left", "y": 0.98, "yanchor": "top"},
        **kw,
    }


def _short(labels: list[str]) -> list[str]:
    return [s if len(s) <= MAX_LABEL else s[: MAX_LABEL - 1] + "…" for s in labels]


def column_overlay(col: dict, extra: list[tuple[str, dict]] = (), synthetic_name: str = "synthetic") -> dict:
    """Bar chart of the cell shares of one column: real vs synthetic (vs other releases' synthetic)."""
    labels = _short(col["cells"]["labels"])
    data = [
        {"type": "bar", "name": "real", "x": labels, "y": col["cells"]["real"], "marker": {"color": REAL}},
        {
            "type": "bar",
            "name": synthetic_name,
            "x": labels,
            "y": col["cells"]["synthetic"],
            "marker": {"color": SYNTHETIC},
        },
    ]
    title = f"{col['name']} (TVD {col['tvd']:.3f}"
    for name, other in extra:
        data.append(
            {"type": "bar", "name": name, "x": labels, "y": other["cells"]["synthetic"], "marker": {"color": OTHER}}
        )
        title += f" / {other['tvd']:.3f}"
    return {
        "data": data,
        "layout": _layout(
            title + ")", barmode="group", xaxis=CATEGORY_AXIS, yaxis={"title": {"text": "share"}, "tickformat": ".0%"}
        ),
    }


def heatmap(matrix: list[list[float]], names: list[str], title: str, *, diverging: bool) -> dict:
    names = _short(names)
    trace = {
        "type": "heatmap",
        "z": matrix,
        "x": names,
        "y": names,
        "zmin": -1,
        "zmax": 1,
        "colorscale": "RdBu",
        "reversescale": True,
        "hovertemplate": "%{y} / %{x}: %{z:.3f}<extra></extra>",
    }
    if diverging:
        peak = max((abs(v) for row in matrix for v in row), default=0.0) or 1.0
        trace.update(zmin=-peak, zmax=peak)
    return {
        "data": [trace],
        "layout": _layout(
            title,
            xaxis=CATEGORY_AXIS,
            yaxis={**CATEGORY_AXIS, "autorange": "reversed"},
            margin={"l": 110, "r": 10, "t": 36, "b": 110},
        ),
    }


def tstr_bars(ml: dict) -> dict:
    key = ml["primary_metric"]
    models = [m for m in ml["models"] if m["train"] == "synthetic"]
    real = {m["model"]: m.get(key) for m in ml["models"] if m["train"] == "real"}
    names = [m["model"].split(" (")[0] for m in models]
    data = [
        {
            "type": "bar",
            "name": "train on synthetic",
            "x": names,
            "y": [m.get(key) for m in models],
            "marker": {"color": SYNTHETIC},
        },
        {
            "type": "bar",
            "name": "train on real",
            "x": names,
            "y": [real.get(m["model"]) for m in models],
            "marker": {"color": REAL},
        },
    ]
    label = key.replace("_", " ").upper()
    chance = ml.get("chance", 0.5 if key == "roc_auc" else None)
    extra = {}
    if chance is not None:  # the level of guessing, drawn across the chart
        extra = {
            "shapes": [
                {
                    "type": "line",
                    "xref": "paper",
                    "x0": 0,
                    "x1": 1,
                    "y0": chance,
                    "y1": chance,
                    "line": {"dash": "dash", "color": OTHER, "width": 1},
                }
            ],
            "annotations": [
                {
                    "xref": "paper",
                    "x": 1,
                    "xanchor": "right",
                    "y": chance,
                    "yanchor": "bottom",
                    "text": f"chance {chance:.2f}",
                    "showarrow": False,
                    "font": {"size": 11},
                }
            ],
        }
    return {
        "data": data,
        "layout": _layout(
            f"TSTR: {label} on real test rows (target {ml['target']})",
            barmode="group",
            yaxis={"title": {"text": label}, "range": [0, 1]},
            xaxis={**CATEGORY_AXIS, "tickangle": -30},
            margin={"l": 50, "r": 10, "t": 50, "b": 110},
            **extra,
        ),
    }


def dcr_histogram(privacy: dict) -> dict:
    h = privacy["dcr"]["histogram"]
    edges = h["edges"]
    centers = [(a + b) / 2 for a, b in zip(edges[:-1], edges[1:])]
    width = (edges[1] - edges[0]) if len(edges) > 1 else 1.0
    data = [
        {
            "type": "bar",
            "name": "synthetic rows",
            "x": centers,
            "y": h["synthetic"],
            "width": width,
            "opacity": 0.6,
            "marker": {"color": SYNTHETIC},
        },
        {
            "type": "bar",
            "name": "real holdout rows",
            "x": centers,
            "y": h["holdout"],
            "width": width,
            "opacity": 0.6,
            "marker": {"color": REAL},
        },
    ]
    return {
        "data": data,
        "layout": _layout(
            "Distance to the closest real record (DCR)",
            barmode="overlay",
            xaxis={"title": {"text": "distance"}},
            yaxis={"title": {"text": "rows"}},
        ),
    }


UTILITY_METRICS = [
    ("quality", "Quality score (higher is better)"),
    ("tvd_1way_mean", "1-way TVD (lower is better)"),
    ("tvd_2way_mean", "2-way TVD (lower is better)"),
    ("pmse_cart", "pMSE, CART (lower is better)"),
    ("tstr", "TSTR score (higher is better)"),
]


PALETTE = ["#2857a4", "#c2572b", "#1f7a4d", "#7a3fb0", "#a86400", "#0e7c86", "#b3261e", "#5f6b7a"]
DODGE = 0.03  # releases at the same epsilon are spread by 10^(+-0.03 k) (~7% per step) so none hides another


def _dodged(eps: float, i: int, k: int) -> float:
    return eps * 10 ** (DODGE * (i - (k - 1) / 2))


def _eps_ticks(values: list[float]) -> dict:
    """Tick labels at the epsilons released (and nothing else: plotly's log axis labels minor ticks
    "2" and "5", which read as epsilons that were never used)."""
    ticks = sorted(set(values))
    return {"tickvals": ticks, "ticktext": [f"{v:g}" for v in ticks]}


def utility_vs_epsilon(points: list[dict], key: str, title: str) -> dict:
    """Per mechanism: one marker per evaluated release (releases at the same epsilon side by side) and
    a line through the mean at each epsilon."""
    by_mech: dict[str, list[dict]] = defaultdict(list)
    for p in points:
        if p["summary"].get(key) is not None:
            by_mech[p["mechanism"]].append(p)
    data = []
    for n, (mech, pts) in enumerate(sorted(by_mech.items())):
        color = PALETTE[n % len(PALETTE)]
        at: dict[float, list[dict]] = defaultdict(list)
        for p in sorted(pts, key=lambda p: (p["epsilon"], p["id"])):
            at[p["epsilon"]].append(p)
        xs, ys, text = [], [], []
        for eps, group in at.items():
            for i, p in enumerate(group):
                xs.append(_dodged(eps, i, len(group)))
                ys.append(p["summary"][key])
                text.append(f"release {p['id']}<br>ε {p['epsilon']:g}")
        data.append(
            {
                "type": "scatter",
                "mode": "markers",
                "name": mech,
                "legendgroup": mech,
                "x": xs,
                "y": ys,
                "text": text,
                "marker": {"color": color, "size": 8},
                "hovertemplate": "%{text}<br>%{y:.4f}<extra>" + mech + "</extra>",
            }
        )
        eps_sorted = sorted(at)
        data.append(
            {
                "type": "scatter",
                "mode": "lines",
                "name": mech,
                "legendgroup": mech,
                "showlegend": False,
                "x": eps_sorted,
                "y": [sum(p["summary"][key] for p in at[e]) / len(at[e]) for e in eps_sorted],
                "line": {"color": color},
                "hoverinfo": "skip",
            }
        )
    axis = {"title": {"text": "ε"}, "type": "log", **_eps_ticks([p["epsilon"] for p in points])}
    return {"data": data, "layout": _layout(title, xaxis=axis, yaxis={"rangemode": "tozero"})}


def accuracy_curve(guide: dict, budget: dict) -> dict | None:
    """Predicted error against epsilon (log axis) for the chosen mechanism, with the remaining budget,
    the epsilon asked for and the accepted error marked (the guided release page; ``guide`` is
    ``releases.guidance.recommendation_for``'s answer with a curve). A plotly figure as plain data."""

    curve = guide["curve"]
    pts = curve["points"]
    if not pts:
        return None
    xs, ys = [p["epsilon"] for p in pts], [p["score"] for p in pts]
    top = max(ys) * 1.05
    data = [
        {
            "type": "scatter",
            "mode": "lines",
            "name": f"{curve['mechanism']}: predicted error",
            "x": xs,
            "y": ys,
            "line": {"color": "#2857a4"},
            "hovertemplate": "ε %{x}<br>predicted %{y:.1%}<extra></extra>",
        }
    ]
    if budget.get("set") and budget["epsilon"]["remaining_float"] > 0:
        e = budget["epsilon"]["remaining_float"]
        data.append(
            {
                "type": "scatter",
                "mode": "lines",
                "name": f"remaining budget ε {budget['epsilon']['remaining']}",
                "x": [e, e],
                "y": [0, top],
                "line": {"color": "#c2572b", "dash": "dash"},
                "hoverinfo": "name",
            }
        )
    e = guide["epsilon"]
    data.append(
        {
            "type": "scatter",
            "mode": "markers",
            "name": f"ε asked: {e:g}",
            "x": [e],
            "y": [next((m["score"] for m in guide["mechanisms"] if m["mechanism"] == curve["mechanism"]), None)],
            "marker": {"color": "#2857a4", "size": 10},
        }
    )
    if curve.get("target_error"):
        t = curve["target_error"]
        data.append(
            {
                "type": "scatter",
                "mode": "lines",
                "name": f"accepted error {t:.1%}",
                "x": [xs[0], xs[-1]],
                "y": [t, t],
                "line": {"color": "#5f6b7a", "dash": "dot"},
                "hoverinfo": "name",
            }
        )
    title = f"Predicted error of {curve['mechanism']} against ε"
    ticks = [t for t in (0.01, 0.03, 0.1, 0.3, 1, 3, 10, 30, 100) if xs[0] <= t <= xs[-1]]
    return {
        "data": data,
        "layout": _layout(
            title,
            xaxis={"title": {"text": "ε"}, "type": "log", "tickvals": ticks, "ticktext": [f"{t:g}" for t in ticks]},
            yaxis={"title": {"text": "predicted error"}, "tickformat": ".0%", "rangemode": "tozero"},
        ),
    }
