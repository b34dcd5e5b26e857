"""The ``cell_count`` attack: the informed attacker on the marginals the refit measured."""

from __future__ import annotations

import numpy as np

MAX_MARGINAL_CELLS = 1_000_000  # marginals larger than this are left out of the cell-count attack
CELL_ROUNDS = 1  # interference-cancellation rounds (more did not help on adult: over-confident feedback)
HEAVY_TAILS = 1.5  # excess kurtosis of a marginal's residuals above which they are taken as Laplace
CELL_CLIP = 6.0  # log-odds cap when a round's estimate feeds the next (damps over-confidence)


def measured_marginals(mech, names: list[str]) -> list[tuple[int, ...]]:
    """The marginals a cell-based mechanism measured (public structure of its fitted model): every
    one-way marginal, plus MST's tree edges and AIM's selected cliques when the refit has them."""
    index = {n: j for j, n in enumerate(names)}
    out = [(j,) for j in range(len(names))]
    extra = list(getattr(mech, "edges", None) or [])
    extra += [c for c, _ in (getattr(mech, "selected", None) or []) if isinstance(c, (list, tuple))]
    for clique in extra:
        if isinstance(clique, (list, tuple)) and len(clique) > 1 and all(c in index for c in clique):
            m = tuple(sorted(index[c] for c in clique))
            if m not in out:
                out.append(m)
    return out


def cell_count_scores(
    cells_a: np.ndarray,
    cells_b: np.ndarray,
    fixed_cells: np.ndarray,
    synthetic_cells: np.ndarray,
    n_train: int,
    marginals: list[tuple[int, ...]],
    sizes: list[int],
    rounds: int = CELL_ROUNDS,
) -> np.ndarray:
    """The informed attacker's statistic per pair (a, b): it knows every training record but which one
    of each pair is in, so it knows each cell's count up to the coins. On every measured marginal it
    compares the synthetic count in a's cell and in b's cell (scaled to the training size) with the
    count it expects, and sums (residual at a - residual at b) / their variance over the marginals:
    T, the log-likelihood ratio of "a is in" up to a factor 2 under a Gaussian approximation. The
    variance holds the other pairs' coins, the noise (estimated from all cells) and the sampling
    error. The expectation starts at half a record per target; later rounds put each other pair at its
    current probability (interference cancellation), so records in common cells also tell."""
    scale = n_train / max(len(synthetic_cells), 1)
    flat: list[tuple] = []
    for m in marginals:
        dims = [int(sizes[j]) for j in m]
        total = int(np.prod(dims))
        if total > MAX_MARGINAL_CELLS:
            continue

        def f(c, m=m, dims=dims):
            return np.ravel_multi_index(tuple(np.clip(c[:, j], 0, sizes[j] - 1) for j in m), dims)

        fa, fb = f(cells_a), f(cells_b)
        disc = fa != fb
        if not disc.any():
            continue
        fixed_count = (np.bincount(f(fixed_cells), minlength=total) + np.bincount(fa[~disc], minlength=total)).astype(
            float
        )
        observed = np.bincount(f(synthetic_cells), minlength=total) * scale
        flat.append((total, fa, fb, disc, fixed_count, observed))
    T = np.zeros(len(cells_a))
    for _ in range(max(rounds, 1)):
        p = 1.0 / (1.0 + np.exp(-np.clip(2 * T, -CELL_CLIP, CELL_CLIP)))  # P(a is in) so far
        new = np.zeros(len(cells_a))
        for total, fa, fb, disc, fixed_count, observed in flat:
            a, b, pd_ = fa[disc], fb[disc], p[disc]
            expected = (
                fixed_count
                + np.bincount(a, weights=pd_, minlength=total)
                + np.bincount(b, weights=1 - pd_, minlength=total)
            )
            pv = pd_ * (1 - pd_)
            coin_var = np.bincount(a, weights=pv, minlength=total) + np.bincount(b, weights=pv, minlength=total)
            sampling = (expected + 1.0) * scale
            resid = observed - expected
            touched = expected > 0
            noise_var = max(float(np.mean(resid[touched] ** 2 - coin_var[touched] - sampling[touched])), 0.25)
            # this pair's own coin is the signal: its expectation and variance are taken back out
            ra = resid[a] + pd_ - 0.5
            rb = resid[b] - pd_ + 0.5
            var = coin_var[a] + coin_var[b] - 2 * pv + sampling[a] + sampling[b] + 2 * noise_var
            z = resid[touched] / np.sqrt(coin_var[touched] + sampling[touched] + noise_var)
            if float(np.mean(z**4) / max(np.mean(z**2) ** 2, 1e-12)) - 3.0 > HEAVY_TAILS:
                # Laplace-like residuals: the likelihood ratio of a shift is a clipped difference
                va = coin_var[a] - pv + sampling[a] + noise_var
                vb = coin_var[b] - pv + sampling[b] + noise_var
                new[disc] += 0.5 * (np.clip(2 * ra, -1, 1) / np.sqrt(va / 2) - np.clip(2 * rb, -1, 1) / np.sqrt(vb / 2))
            else:
                new[disc] += (ra - rb) / var
        T = new
    return T
