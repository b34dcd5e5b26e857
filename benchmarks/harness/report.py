"""Turn a benchmarks/harness/compare.py result file into docs/benchmarks/NAME.md (tables: mean ± sd over
repetitions). ``python -m benchmarks.report`` writes docs/benchmarks/full.md from docs/data/benchmarks-full.json."""

from __future__ import annotations

import json
import statistics
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
METRICS = [
    ("tvd_1way", "1-way TVD ↓"),
    ("tvd_2way", "2-way TVD ↓"),
    ("assoc_diff", "assoc. diff ↓"),
    ("pmse_cart", "pMSE (CART) ↓"),
    ("tstr", "TSTR AUC ↑"),
    ("seconds", "time s"),
    ("peak_rss_mib", "peak MiB"),
]


def _fmt(vals: list[float]) -> str:
    vals = [v for v in vals if v is not None]
    if not vals:
        return "–"
    m = statistics.fmean(vals)
    digits = 1 if m >= 10 else 3
    if len(vals) == 1:
        return f"{m:.{digits}f}"
    return f"{m:.{digits}f} ± {statistics.stdev(vals):.{digits}f}"


def tables(results: list[dict], chart_prefix: str | None = None) -> tuple[str, dict]:
    groups = defaultdict(list)
    status = {}
    for r in results:
        key = (r["dataset"], r["epsilon"], r["family"], r["mechanism"])
        if r.get("status") == "ok":
            groups[key].append(r)
        else:
            status.setdefault(key, r.get("status"))
    lines, best = [], {}
    for ds in dict.fromkeys(r["dataset"] for r in results):
        lines.append(f"\n### {ds}\n")
        if chart_prefix and (ROOT / "docs" / "img" / f"{chart_prefix}-{ds}.png").exists():
            lines.append(f"![{ds}: utility against epsilon](../img/{chart_prefix}-{ds}.png)\n")
        for eps in sorted({r["epsilon"] for r in results if r["dataset"] == ds}):
            lines.append(f"\n**epsilon = {eps}**\n")
            lines.append("| mechanism | " + " | ".join(h for _, h in METRICS) + " |")
            lines.append("|---|" + "---|" * len(METRICS))
            keys = [
                k
                for k in dict.fromkeys((r["dataset"], r["epsilon"], r["family"], r["mechanism"]) for r in results)
                if k[0] == ds and k[1] == eps
            ]
            for k in keys:
                label = ("" if k[2] == "dpportal" else "SmartNoise ") + k[3]
                if k in groups:
                    rows = groups[k]
                    # peak memory only from runs that measured their own peak (VmHWM, benchmarks/harness/memory.py);
                    # older runs' ru_maxrss included the parent evaluation process's memory
                    cells = [
                        _fmt([r.get(m) for r in rows if m != "peak_rss_mib" or r.get("rss") == "hwm"])
                        for m, _ in METRICS
                    ]
                    # "dpportal-paper": the five papers' mechanisms, without the simple baseline
                    for fam in [k[2]] + (["dpportal-paper"] if k[2] == "dpportal" and k[3] != "baseline" else []):
                        b = best.setdefault((ds, eps, fam), {})
                        t2 = statistics.fmean(r["tvd_2way"] for r in rows)
                        if "tvd_2way" not in b or t2 < b["tvd_2way"][0]:
                            b["tvd_2way"] = (t2, k[3], statistics.fmean(r["seconds"] for r in rows))
                        ts = [r["tstr"] for r in rows if r.get("tstr") is not None]
                        if ts and ("tstr" not in b or statistics.fmean(ts) > b["tstr"][0]):
                            b["tstr"] = (statistics.fmean(ts), k[3], statistics.fmean(r["seconds"] for r in rows))
                else:
                    cells = [status.get(k, "–")] + ["–"] * (len(METRICS) - 1)
                lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines), best


def summary(best: dict, ours: str = "dpportal") -> str:
    """Per dataset and epsilon: dpportal's best mechanism against the best peer (any SmartNoise synthesizer
    that ran at that epsilon), on 2-way TVD and on TSTR, each with its release time."""
    out = [
        "| dataset | ε | 2-way TVD: best dpportal | best peer | dpportal − peer | "
        "TSTR: best dpportal | best peer | dpportal − peer |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for ds, eps in dict.fromkeys((k[0], k[1]) for k in best if k[2] != "dpportal-paper"):
        d, p = best.get((ds, eps, ours), {}), best.get((ds, eps, "smartnoise"), {})

        def cell(b, m):
            return f"{b[m][1]} {b[m][0]:.3f} ({b[m][2]:.0f} s)" if m in b else "–"

        def diff(m, better_low):
            if m not in d or m not in p:
                return "–"
            delta = d[m][0] - p[m][0]
            ahead = delta < 0 if better_low else delta > 0
            return f"{delta:+.3f} ({'ahead' if ahead else 'behind' if delta else 'level'})"

        out.append(
            f"| {ds} | {eps} | {cell(d, 'tvd_2way')} | {cell(p, 'tvd_2way')} | {diff('tvd_2way', True)} | "
            f"{cell(d, 'tstr')} | {cell(p, 'tstr')} | {diff('tstr', False)} |"
        )
    return "\n".join(out)


def write_report(path: Path, *more: Path, name: str | None = None, doc: Path | None = None) -> Path:
    """One markdown report from one or more result files (runs split over processes merge here)."""
    data = json.loads(Path(path).read_text())
    meta, results = data["meta"], list(data["results"])
    commands = [meta["command"]]
    for extra in more:
        d = json.loads(Path(extra).read_text())
        results += d["results"]
        commands.append(d["meta"]["command"])
        meta["seconds"] = max(meta["seconds"], d["meta"]["seconds"])
    meta["command"] = "`; `".join(commands)
    if name:
        meta["mode"] = name
    body, best = tables(results, chart_prefix=f"bench-{meta['mode']}")
    doc = doc or ROOT / "docs" / "benchmarks" / f"{meta['mode']}.md"
    doc.parent.mkdir(parents=True, exist_ok=True)
    doc.write_text(
        f"# Benchmark results ({meta['mode']} mode)\n\n"
        f"Command(s), from the repo root: `{meta['command']}`; this page: `python -m benchmarks.report`.\n"
        f"Finished {meta['finished']}, {meta['seconds'] if meta['seconds'] is not None else 'unrecorded'} s in "
        f"all, on the 2-core development machine"
        f"{', ' + str(meta['jobs']) + ' releases at a time, one thread each' if meta.get('jobs', 1) > 1 else ''}.\n"
        f"delta = {meta['delta']} for mechanisms that need it; parameter overrides: `{json.dumps(meta['params'])}`.\n\n"
        "## Best per dataset\n\n"
        + summary(best)
        + "\n\nThe same without the `baseline` (best of the five papers' mechanisms against the best peer):\n\n"
        + summary(best, "dpportal-paper")
        + "\n\n## All runs (mean ± sd over repetitions)\n"
        + body
        + "\n"
    )
    print(f"wrote {doc}")
    return doc


if __name__ == "__main__":
    # python -m benchmarks.harness.report OUT.json [MORE.json ...] [--name NAME]
    args = sys.argv[1:]
    name = None
    if "--name" in args:
        i = args.index("--name")
        name = args[i + 1]
        del args[i : i + 2]
    write_report(*[Path(a) for a in args], name=name)
