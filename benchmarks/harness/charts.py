"""Charts of utility against epsilon from a benchmarks/harness/compare.py result file (runs in the BENCH venv).

    .venv-bench/bin/python -m benchmarks.harness.charts benchmarks/out/compare-full.json [--prefix bench]

One PNG per dataset under docs/img/ (``<prefix>-<dataset>.png``): 2-way TVD (lower is better) and
TSTR (higher is better) against epsilon on a log axis, one line per mechanism with the standard
deviation over repetitions as error bars; dpportal's mechanisms solid, SmartNoise's peers dashed,
peers run at one epsilon only (the slow ones) as single markers. Plotly draws the figures; kaleido
renders the PNG with the system Chromium (``BROWSER_PATH``, default /usr/bin/chromium), which is why
this lives in the benchmark venv and not in the product's.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
IMG = ROOT / "docs" / "img"


def series(results: list[dict], dataset: str, metric: str) -> dict[str, list[tuple[float, float, float]]]:
    """mechanism label -> [(epsilon, mean, sd)] over the successful runs."""
    vals = defaultdict(lambda: defaultdict(list))
    for r in results:
        if r["dataset"] == dataset and r.get("status") == "ok" and r.get(metric) is not None:
            label = r["mechanism"] if r["family"] == "dpportal" else f"SmartNoise {r['mechanism'].upper()}"
            vals[label][float(r["epsilon"])].append(float(r[metric]))
    out = {}
    for label, by_eps in vals.items():
        out[label] = [
            (e, statistics.fmean(v), statistics.stdev(v) if len(v) > 1 else 0.0) for e, v in sorted(by_eps.items())
        ]
    return out


def chart(results: list[dict], dataset: str, path: Path) -> bool:
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    panels = [("tvd_2way", "2-way TVD (lower is better)"), ("tstr", "TSTR (higher is better)")]
    data = {m: series(results, dataset, m) for m, _ in panels}
    if not data["tvd_2way"]:
        return False
    has_tstr = bool(data["tstr"])
    fig = make_subplots(
        rows=1, cols=2 if has_tstr else 1, subplot_titles=[t for m, t in panels if m == "tvd_2way" or has_tstr]
    )
    palette = [
        "#1f77b4",
        "#2ca02c",
        "#17becf",
        "#9467bd",
        "#8c564b",
        "#e377c2",
        "#d62728",
        "#ff7f0e",
        "#7f7f7f",
        "#bcbd22",
        "#000000",
        "#aec7e8",
    ]
    labels = sorted({lb for d in data.values() for lb in d}, key=lambda s: (s.startswith("SmartNoise"), s))
    colour = {lb: palette[i % len(palette)] for i, lb in enumerate(labels)}
    for col, (metric, _) in enumerate(panels[: 2 if has_tstr else 1], start=1):
        for label in labels:
            pts = data[metric].get(label)
            if not pts:
                continue
            peer = label.startswith("SmartNoise")
            fig.add_trace(
                go.Scatter(
                    x=[p[0] for p in pts],
                    y=[p[1] for p in pts],
                    error_y=dict(type="data", array=[p[2] for p in pts], visible=True, thickness=1),
                    mode="lines+markers" if len(pts) > 1 else "markers",
                    name=label,
                    legendgroup=label,
                    showlegend=col == 1 or label not in data["tvd_2way"],
                    line=dict(color=colour[label], dash="dash" if peer else "solid", width=2),
                    marker=dict(symbol="diamond" if peer else "circle", size=9 if len(pts) == 1 else 7),
                ),
                row=1,
                col=col,
            )
        fig.update_xaxes(type="log", title_text="epsilon", tickvals=[0.1, 1, 10], row=1, col=col)
    fig.update_layout(
        title=f"{dataset}: utility against epsilon (mean ± sd over repetitions)",
        width=1200 if has_tstr else 750,
        height=480,
        template="plotly_white",
        margin=dict(l=50, r=20, t=70, b=50),
    )
    fig.write_image(str(path), scale=1)
    return True


def main(argv=None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    prefix = "bench"
    if "--prefix" in args:
        i = args.index("--prefix")
        prefix = args[i + 1]
        del args[i : i + 2]
    os.environ.setdefault("BROWSER_PATH", "/usr/bin/chromium")
    results = []
    for a in args:
        results += json.loads(Path(a).read_text())["results"]
    IMG.mkdir(parents=True, exist_ok=True)
    for ds in dict.fromkeys(r["dataset"] for r in results):
        path = IMG / f"{prefix}-{ds}.png"
        if chart(results, ds, path):
            print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
