"""DP-MERF, Figure 1 of Harder et al. (2021): the 5 x 5 Gaussian grid with 5 classes at (1, 1e-5).

25 Gaussians with means on {-4, -2, 0, 2, 4}^2 and standard deviation 0.2 (the paper's sigma = 0.2;
its grid spacing is not stated, 2 is assumed here), 4,000 points each, 10% held out -> 90,000
training rows. Gaussian (i, j) belongs to class (i + 2 j) mod 5, so every class has 5 modes spread
over the grid (the paper's assignment is not given). Public schema: x, y in [-5, 5], label in
{0..4}. NLL(x, y) = -log p(x, y) with p(x, y) = sum_{j in C_y} (1/25) N(x | mu_j, 0.2^2 I), the
paper's measure, averaged over synthetic rows (lower is better; real test rows give the floor).

Writes a PNG (real | synthetic, coloured by class; no plotting library needed) and a JSON.

    python -m benchmarks.reproduce.dpmerf_grid                      # bandwidth: public median heuristic
    python -m benchmarks.reproduce.dpmerf_grid --bandwidth 0.05     # a narrower kernel (unit-scaled coordinates)
    python -m benchmarks.reproduce.dpmerf_grid --quick              # 9,000 rows, 200 steps
"""

from __future__ import annotations

import argparse
import json
import math
import os
import struct
import time
import zlib

import numpy as np
import pandas as pd

from mechanisms.synthesizers.dpmerf import DPMERF
from mechanisms.noise import Noise
from mechanisms.schema import Column, Schema
from mechanisms.source import TableSource

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "benchmarks", "out")
IMG = os.path.join(ROOT, "docs", "img")
STD = 0.2
GRID = np.array([(x, y) for y in (-4, -2, 0, 2, 4) for x in (-4, -2, 0, 2, 4)], dtype=float)
CLASS_OF = np.array([(i + 2 * j) % 5 for j in range(5) for i in range(5)])
COLOURS = np.array([(228, 26, 28), (55, 126, 184), (77, 175, 74), (152, 78, 163), (255, 127, 0)], dtype=np.uint8)
SCHEMA = Schema(
    columns=(
        Column("x", "continuous", lower=-5.0, upper=5.0),
        Column("y", "continuous", lower=-5.0, upper=5.0),
        Column("label", "categorical", categories=tuple("01234")),
    )
)


def make_data(per_gaussian: int, rng: np.random.Generator) -> tuple[pd.DataFrame, pd.DataFrame]:
    comp = np.repeat(np.arange(25), per_gaussian)
    xy = GRID[comp] + rng.normal(0, STD, (len(comp), 2))
    frame = pd.DataFrame({"x": xy[:, 0], "y": xy[:, 1], "label": CLASS_OF[comp].astype(str)})
    frame = frame.sample(frac=1.0, random_state=0).reset_index(drop=True)
    cut = int(0.9 * len(frame))
    return frame.iloc[:cut].reset_index(drop=True), frame.iloc[cut:].reset_index(drop=True)


def nll(frame: pd.DataFrame) -> float:
    """Mean of -log p(x, y) under the true mixture (eq. 20)."""
    xy = frame[["x", "y"]].to_numpy(float)
    y = frame["label"].astype(int).to_numpy()
    d2 = ((xy[:, None, :] - GRID[None, :, :]) ** 2).sum(axis=2)
    logn = -d2 / (2 * STD**2) - math.log(2 * math.pi * STD**2) - math.log(25)
    logn = np.where(CLASS_OF[None, :] == y[:, None], logn, -np.inf)
    top = logn.max(axis=1, keepdims=True)
    return float(-np.mean(top[:, 0] + np.log(np.exp(logn - top).sum(axis=1))))


def write_png(path: str, panels: list[pd.DataFrame], size: int = 400) -> None:
    """Scatter plots side by side as an RGB PNG (zlib + struct only)."""
    img = np.full((size, size * len(panels) + 10 * (len(panels) - 1), 3), 255, dtype=np.uint8)
    for k, frame in enumerate(panels):
        xy = frame[["x", "y"]].to_numpy(float)
        px = np.clip(((xy[:, 0] + 5) / 10 * (size - 2)).astype(int), 0, size - 2) + k * (size + 10)
        py = np.clip(((5 - xy[:, 1]) / 10 * (size - 2)).astype(int), 0, size - 2)
        col = COLOURS[frame["label"].astype(int).to_numpy()]
        for dx in (0, 1):
            for dy in (0, 1):
                img[py + dy, px + dx] = col
        if k:
            img[:, k * (size + 10) - 10 : k * (size + 10)] = 200
    raw = b"".join(b"\x00" + row.tobytes() for row in img)
    chunk = lambda tag, data: (
        struct.pack(">I", len(data))
        + tag
        + data  # noqa: E731
        + struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF)
    )
    with open(path, "wb") as fh:
        fh.write(
            b"\x89PNG\r\n\x1a\n"
            + chunk(b"IHDR", struct.pack(">IIBBBBB", img.shape[1], img.shape[0], 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw, 9))
            + chunk(b"IEND", b"")
        )


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bandwidth", type=float, default=None, help="kernel length scale on [0,1]-scaled x, y")
    ap.add_argument("--epochs", type=int, default=None)
    ap.add_argument("--features", type=int, default=1000)
    ap.add_argument("--hidden", default=None, help="e.g. 64,32 (default: the mechanism's)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    train, test = make_data(400 if args.quick else 4000, rng)
    epochs = args.epochs or (200 if args.quick else next(p.default for p in DPMERF.params if p.name == "epochs"))
    params = dict(target="label", features=args.features, epochs=epochs, hidden=args.hidden)
    if args.bandwidth:
        params["bandwidth"] = args.bandwidth
    mech = DPMERF(SCHEMA, epsilon=1.0, delta=1e-5, noise=Noise.seeded(args.seed + 1), **params)
    raw = train.astype(str)
    t0, c0 = time.perf_counter(), time.process_time()
    mech.fit(TableSource.from_frame(SCHEMA, raw))
    fit_s, cpu_s = time.perf_counter() - t0, time.process_time() - c0
    synth = mech.sample(len(test))
    tag = f"bw{args.bandwidth}" if args.bandwidth else "bw-heuristic"
    if args.epochs:
        tag += f"_e{args.epochs}"
    if args.hidden:
        tag += f"_h{args.hidden.replace(',', '-')}"
    res = {
        "n_train": len(train),
        "params": params,
        "epsilon": 1.0,
        "delta": 1e-5,
        "nll_synthetic": nll(synth),
        "nll_real_test": nll(test),
        "class_shares_synthetic": synth["label"].value_counts(normalize=True).sort_index().round(4).to_dict(),
        "fit_seconds": fit_s,
        "fit_cpu_seconds": cpu_s,
        "load_average": os.getloadavg(),
        "report": mech.report(),
    }
    os.makedirs(OUT, exist_ok=True)
    os.makedirs(IMG, exist_ok=True)
    suffix = f"{tag}{'_quick' if args.quick else ''}"
    png = os.path.join(IMG, f"dpmerf_grid_{suffix}.png")
    write_png(png, [test, synth])
    res["png"] = os.path.relpath(png, ROOT)
    with open(os.path.join(OUT, f"dpmerf_grid_{suffix}.json"), "w") as fh:
        json.dump(res, fh, indent=1, default=float)
    print(json.dumps({k: res[k] for k in ("nll_synthetic", "nll_real_test", "fit_seconds", "fit_cpu_seconds", "png")}))


if __name__ == "__main__":
    main()
