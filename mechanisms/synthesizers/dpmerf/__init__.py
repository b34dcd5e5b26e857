"""DP-MERF: differentially private mean embeddings with random features (Harder, Adamczewski &
Park, AISTATS 2021, ``papers/dp-merf.txt``), Algorithm 1 with the heterogeneous-data variant of
Section 4.3.

Steps of :meth:`DPMERF._fit` (they read like Algorithm 1):

1. sigma: the noise multiplier for the Gaussian releases, calibrated to (epsilon, delta) by the RDP
   accountant (``accounting.calibrate_gaussian_rdp``; 2 releases in labeled mode, 1 otherwise).
2. Features h(x), all from PUBLIC facts: numeric columns are scaled to [0, 1] on the schema bounds
   (``Schema.to_unit``) and mapped through D random Fourier features of a Gaussian kernel,
   phi(x) = sqrt(2/D) [cos(W x), sin(W x)] with the D/2 rows of W ~ N(0, I / l^2), so ||phi(x)|| = 1
   exactly; the bandwidth l defaults to the median heuristic over uniform draws on the public box
   [0,1]^d_num (never over data). Categorical columns (other than the target) are one-hot encoded
   and divided by sqrt(d_cat), d_cat = number of categorical feature columns, so that block also
   has norm exactly 1: h(x) = [phi(x_num); onehot(x_cat) / sqrt(d_cat)] (eq. 19).
3. The mean embedding (eq. 14/15, with h in place of phi): labeled mode (a categorical ``target``
   column) releases the D_h x C matrix U = (1/n) sum_i h(x_i) y_i^T, unlabeled mode the vector
   (1/n) sum_i h(x_i); Gaussian noise of standard deviation sigma x Delta_mu.
4. Labeled mode only: the class counts m with Gaussian noise of standard deviation sigma x sqrt(2)
   (eq. 17), then the reweighted embedding U*[:, c] = (n / m~_c) U~[:, c] (eq. 18), a noisy
   class-conditional mean embedding.
5. The generator (an MLP on [z, onehot(y)]) is trained by Adam to minimise ||U* - mu_Q||_F^2, mu_Q
   the same embedding of a fresh generated batch each step (eq. 16). This reads only the released
   U~ and m~: post-processing.

Privacy (replace-one neighbours, n public):

* Embedding. Neighbours D, D' share n - 1 rows, so U(D) - U(D') = (h(x) y^T - h(x') y'^T) / n and
  ||U(D) - U(D')||_F <= (||h(x)|| + ||h(x')||) / n = 2 max ||h|| / n, because
  ||h(x) y^T||_F = ||h(x)|| for a one-hot y. ||h||^2 = [numeric columns exist] + [categorical
  feature columns exist], so Delta_mu = 2/n for all-numeric or all-categorical features and
  2 sqrt(2)/n for heterogeneous ones (paper Supplementary F and G). Same in unlabeled mode.
* Class counts. Replacing a record moves one unit between two classes: Delta_m = sqrt(2) in L2
  (Supplementary E).
* Each release is a Gaussian mechanism with noise multiplier sigma: rho = 1/(2 sigma^2)-zCDP, i.e.
  (alpha, alpha/(2 sigma^2))-RDP, also for OpenDP's lattice Gaussian sampler (its privacy map
  reports exactly this rho). Their composition is converted to (epsilon, delta) by dp-accounting's
  RDP accountant; sigma is the smallest multiplier meeting the request (rounded up).
* Everything after the two releases (reweighting, flooring counts, training, sampling, the
  post-processing undersampling option) only reads the released values: no further cost.
"""

from __future__ import annotations

import math
import os
import time
from typing import Any

import numpy as np
import pandas as pd

from ...accounting import (
    GaussianEvent,
    PrivacyCost,
    calibrate_gaussian_rdp,
    gaussian_pld_epsilon,
    gaussian_rdp_epsilon,
)
from ... import resources
from ...base import Mechanism, NoisyQuery, ParamSpec
from ...schema import Schema
from ...source import TableSource
from . import guide

# -- tuning constants ---------------------------------------------------------------------------
DEFAULT_FEATURES = 1000  # D, paper Table 4 private setting for adult
DEFAULT_EPOCHS = 2000  # Adam steps ("epoch" = one step in the reference code); paper: 8000 for adult
DEFAULT_BATCH_FRACTION = 0.1  # paper Table 4 (adult): generated batch = 0.1 n ...
BATCH_LIMITS = (256, 4096)  # ... clipped to this range so tiny and huge tables stay sensible
LEARNING_RATE = 1e-2  # reference code: Adam, lr 0.01, no schedule, no weight decay
NOISE_DIM = 10  # generator code length (reference code: 10 N(0, 1) inputs)
MIN_HIDDEN = 32  # "auto" hidden widths are (4d, 2d), d = feature columns (reference code), at least (32, 16)
THREADS_ENV = "DPMERF_TORCH_THREADS"  # override the thread count (default: resources.threads_per_job())
BANDWIDTH_DRAWS = 1000  # uniform points on the public box for the median heuristic (~5e5 pairs)
COUNT_FLOOR = 1.0  # noisy class counts are floored here before eq. 18 (post-processing)
EMBED_CHUNK = 20_000  # rows per chunk when computing the data embedding (memory ~ chunk x D)
SAMPLE_CHUNK = 50_000  # rows per generator pass when sampling
PROGRESS_STEPS = 200  # loss records (and progress reports) during training ...
PROGRESS_SECONDS = 1.0  # ... plus a progress report at least this often: the web worker checks for a cancel there


def _torch():
    """torch, limited to this job's share of the cores (mechanisms.resources); DPMERF_TORCH_THREADS,
    when set, overrides the thread count for DP-MERF alone (benchmarks use it)."""
    import torch  # heavy: imported only when DP-MERF is used

    override = os.environ.get(THREADS_ENV, "").strip()
    threads = int(override) if override else resources.threads_per_job()
    if torch.get_num_threads() != threads:
        resources.limit_threads(threads)
    return torch


def median_heuristic_bandwidth(d: int, rng: np.random.Generator, draws: int = BANDWIDTH_DRAWS) -> float:
    """Median pairwise Euclidean distance of ``draws`` uniform points on [0, 1]^d: a bandwidth from
    PUBLIC information only (the schema box after ``to_unit``), never from the data."""
    if d < 1:
        raise ValueError(f"d must be a positive integer, got d={d!r}")
    x = rng.random((draws, d))
    sq = np.sum(x * x, axis=1)
    d2 = sq[:, None] + sq[None, :] - 2.0 * x @ x.T
    iu = np.triu_indices(draws, k=1)
    return float(np.sqrt(max(np.median(np.clip(d2[iu], 0.0, None)), 1e-12)))


def rff(x: np.ndarray, omega: np.ndarray) -> np.ndarray:
    """Random Fourier features sqrt(2/D) [cos(x W^T), sin(x W^T)], D = 2 x len(W): unit norm rows."""
    proj = x @ omega.T
    scale = math.sqrt(1.0 / omega.shape[0])  # sqrt(2 / D) with D = 2 x (number of frequencies)
    return np.concatenate([np.cos(proj), np.sin(proj)], axis=1) * scale


class DPMERF(Mechanism):
    name = "dpmerf"
    title = "DP-MERF (random-feature mean embedding + generator)"
    paper = "Harder, Adamczewski & Park, DP-MERF, AISTATS 2021 (Algorithm 1, Section 4.3)"
    needs_delta = True
    guide = guide  # public inputs only: accuracy and near-uniform rule, run time, steward help, model quality
    speed_rank = 5
    target_structure = "conditional"
    target_how = "learns the other columns given {t}"  # its label-conditional mode
    params = (
        ParamSpec(
            "target",
            "column",
            None,
            "Categorical label column: labeled mode (generator conditioned on "
            "the label, labels drawn from noisy class counts). Empty: unlabeled mode.",
            optional=True,
            kinds=("categorical",),
            empty_means="none: unlabeled mode",
        ),
        ParamSpec(
            "features",
            "int",
            DEFAULT_FEATURES,
            "Number D of random Fourier features (cos + sin, even).",
            minimum=2,
            maximum=100_000,
        ),
        ParamSpec(
            "bandwidth",
            "float",
            None,
            "Gaussian kernel length scale on the [0,1]-scaled numeric columns. "
            "Empty: median heuristic over uniform points on the public box.",
            minimum=1e-4,
            maximum=100.0,
            optional=True,
        ),
        ParamSpec(
            "epochs",
            "int",
            DEFAULT_EPOCHS,
            "Generator training steps (Adam, one fresh batch each).",
            minimum=1,
            maximum=100_000,
        ),
        ParamSpec(
            "batch_size",
            "int",
            None,
            "Generated rows per step. Empty: 0.1 n clipped to 256..4096.",
            minimum=16,
            maximum=100_000,
            optional=True,
        ),
        ParamSpec(
            "hidden",
            "str",
            None,
            "Generator hidden widths, e.g. '200,100'. Empty: (4d, 2d) with d the "
            "number of feature columns (at least 32, 16), as in the reference code.",
            optional=True,
        ),
        ParamSpec(
            "undersample",
            "float",
            1.0,
            "Labeled mode: keep this fraction of the largest noisy class when "
            "drawing synthetic labels (post-processing of the released counts; 1 = off).",
            minimum=1e-3,
            maximum=1.0,
        ),
    )

    def __init__(self, schema: Schema, **kw):
        super().__init__(schema, **kw)
        p = self.params
        if p["features"] % 2:
            raise ValueError(f"features must be even (cos + sin pairs), got features={p['features']}")
        target = p["target"]
        if target is not None and schema.column(target).kind != "categorical":
            raise ValueError(
                f"target must be a categorical column, got target={target!r} of kind {schema.column(target).kind!r}"
            )
        kept = schema.kept
        self._num = [j for j, c in enumerate(kept) if c.is_numeric]
        self._cat = [j for j, c in enumerate(kept) if c.kind == "categorical" and c.name != target]
        self._cat_sizes = [len(kept[j].categories) for j in self._cat]
        self._target = None if target is None else schema.names.index(target)
        if not self._num and not self._cat:
            raise ValueError("DP-MERF needs at least one column besides the target")
        self.hidden = self._hidden_widths(p["hidden"])
        self.n_classes = len(kept[self._target].categories) if self.labeled else 1
        self.sigma = calibrate_gaussian_rdp(self.epsilon, self.delta, count=self.n_releases)

    # -- public facts ---------------------------------------------------------------------------
    @property
    def labeled(self) -> bool:
        return self._target is not None

    @property
    def n_releases(self) -> int:
        return 2 if self.labeled else 1

    @property
    def out_dim(self) -> int:
        return len(self._num) + sum(self._cat_sizes)

    @property
    def feature_norm(self) -> float:
        """max ||h(x)||: 1 per block (RFF block, scaled one-hot block)."""
        return math.sqrt(int(bool(self._num)) + int(bool(self._cat)))

    def embedding_sensitivity(self, n: int) -> float:
        """L2 sensitivity of the mean embedding under replace-one: 2 max||h|| / n."""
        return 2.0 * self.feature_norm / n

    def planned_memory_bytes(self, n: int) -> int:
        """Peak memory, conservatively, from public facts (schema, n, parameters): the table, the
        data embedding step (a k x k identity per categorical column of k levels, chunk x D_h
        features, the D_h x C embedding) and generator training (float32 activations of one batch
        through every layer, kept for backward, and the weights with Adam's two moments)."""
        d_h = (self.params["features"] if self._num else 0) + sum(self._cat_sizes)
        C, chunk = self.n_classes, min(int(n), EMBED_CHUNK)
        embed = 8 * (max(self._cat_sizes, default=0) ** 2 + C * C + 3 * chunk * (d_h + C) + 2 * d_h * C)
        batch = max(
            int(np.clip(round(DEFAULT_BATCH_FRACTION * n), *BATCH_LIMITS))
            if self.params["batch_size"] is None
            else self.params["batch_size"],
            C,
        )
        widths = [NOISE_DIM + (C if self.labeled else 0), *self.hidden, self.out_dim]
        weights = sum(a * b + b for a, b in zip(widths, widths[1:]))
        train = 4 * (3 * batch * (sum(widths) + 2 * d_h) + 4 * weights + 2 * d_h * C)
        return super().planned_memory_bytes(n) + embed + train

    def _hidden_widths(self, spec: str | None) -> tuple[int, ...]:
        if spec is None:
            d = len(self._num) + len(self._cat)
            return (max(4 * d, MIN_HIDDEN), max(2 * d, MIN_HIDDEN // 2))
        try:
            widths = tuple(int(w) for w in spec.split(",") if w.strip())
        except ValueError:
            widths = ()
        if not widths or any(w < 1 or w > 10_000 for w in widths):
            raise ValueError(f"hidden must be comma-separated widths in 1..10000, got hidden={spec!r}")
        return widths

    # -- Algorithm 1 ----------------------------------------------------------------------------
    def _fit(self, source: TableSource) -> None:
        t0 = time.perf_counter()
        self._measure(source)
        self.progress(0.03, "noisy mean embedding released")
        self.seconds_release = time.perf_counter() - t0
        self._train()  # post-processing from here on
        self.seconds_train = time.perf_counter() - t0 - self.seconds_release

    def _measure(self, source: TableSource) -> None:
        """Steps 1-4's private part: the public features, then the noisy embedding and counts."""
        self.n = source.n
        self._draw_features()  # public: bandwidth + frequencies
        self.progress(0.01, "random features drawn")
        self.embedding, self.counts = self._release(*self._embed(source.frame()))  # steps 2-3 (private)
        self._noisy_queries = self._queries()

    def _measure_only(self, source: TableSource) -> None:
        """The two noisy releases without the generator's training (the risk report's check)."""
        self._measure(source)

    def _draw_features(self) -> None:
        p, rng = self.params, self.noise.rng
        d_num = len(self._num)
        if d_num:
            self.bandwidth = p["bandwidth"] if p["bandwidth"] is not None else median_heuristic_bandwidth(d_num, rng)
            self.omega = rng.normal(0.0, 1.0 / self.bandwidth, (p["features"] // 2, d_num))
        else:
            self.bandwidth, self.omega = None, np.zeros((0, 0))

    def _features_np(self, unit: np.ndarray) -> np.ndarray:
        """h(x) for rows of a ``to_unit`` matrix (numeric in [0,1], categorical codes)."""
        blocks = []
        if self._num:
            blocks.append(rff(unit[:, self._num], self.omega))
        if self._cat:
            scale = 1.0 / math.sqrt(len(self._cat))
            for j, k in zip(self._cat, self._cat_sizes):
                blocks.append(np.eye(k)[unit[:, j].astype(np.int64)] * scale)
        return np.concatenate(blocks, axis=1)

    def _labels(self, unit: np.ndarray) -> np.ndarray:
        """One-hot labels y (rows x C) of ``to_unit`` rows; one column of ones unlabeled."""
        y = unit[:, self._target].astype(np.int64) if self.labeled else np.zeros(len(unit), np.int64)
        return np.eye(self.n_classes)[y]

    def _embed(self, frame: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
        """Exact (1/n) sum h(x_i) y_i^T (D_h x C; C = 1 unlabeled) and the class counts."""
        unit = self.schema.to_unit(frame)
        n, C = len(unit), self.n_classes
        total, counts = None, np.zeros(C, dtype=np.int64)
        for start in range(0, n, EMBED_CHUNK):
            part = unit[start : start + EMBED_CHUNK]
            y = self._labels(part)
            part_sum = self._features_np(part).T @ y
            total = part_sum if total is None else total + part_sum
            counts += y.sum(axis=0).astype(np.int64)
        return total / n, counts

    def _release(self, exact_embedding: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The only private output: the Gaussian-noised embedding (eq. 15) and, labeled, class counts (eq. 17)."""
        embedding = self.noise.gaussian_float(exact_embedding, scale=self.sigma * self.embedding_sensitivity(self.n))
        if not self.labeled:
            return embedding, np.array([float(self.n)])  # n is public
        return embedding, self.noise.gaussian_float(counts.astype(float), scale=self.sigma * math.sqrt(2.0))

    def _queries(self) -> list[NoisyQuery]:
        """The two releases as linear queries (:class:`~mechanisms.base.NoisyQuery`): the embedding, a
        record contributing h(x) y^T / n (flattened like ``embedding``), and in labeled mode the class
        counts, a record contributing its one-hot label."""
        n = self.n

        def embedding(frame: pd.DataFrame) -> np.ndarray:
            unit = self.schema.to_unit(frame)
            h = self._features_np(unit)
            return (h[:, :, None] * self._labels(unit)[:, None, :]).reshape(len(unit), -1) / n

        out = [
            NoisyQuery(
                np.asarray(self.embedding, float).ravel(),
                self.sigma * self.embedding_sensitivity(n),
                "gaussian",
                dense=embedding,
            )
        ]
        if self.labeled:
            out.append(
                NoisyQuery(
                    np.asarray(self.counts, float),
                    self.sigma * math.sqrt(2.0),
                    "gaussian",
                    dense=lambda frame: self._labels(self.schema.to_unit(frame)),
                )
            )
        return out

    def target_embedding(self) -> np.ndarray:
        """Eq. 18: each noisy class column scaled by n / m~_c (counts floored at COUNT_FLOOR)."""
        if not self.labeled:
            return self.embedding
        return self.embedding * (self.n / np.maximum(self.counts, COUNT_FLOOR))[None, :]

    def label_probabilities(self) -> np.ndarray:
        """Synthetic label distribution: floored noisy counts, largest class scaled by ``undersample``."""
        w = np.maximum(np.asarray(self.counts, float), COUNT_FLOOR)
        w[np.argmax(w)] *= self.params["undersample"]
        return w / w.sum()

    # -- generator (post-processing) ------------------------------------------------------------
    def _build_generator(self):
        torch = _torch()
        nn = torch.nn
        layers, width = [], NOISE_DIM + (self.n_classes if self.labeled else 0)
        for h in self.hidden:
            layers += [nn.Linear(width, h), nn.BatchNorm1d(h), nn.ReLU()]
            width = h
        layers.append(nn.Linear(width, self.out_dim))
        return nn.Sequential(*layers)

    def _decode_torch(self, raw):
        """Generator output -> (numeric unit values via sigmoid, list of softmax blocks)."""
        torch = _torch()
        k = len(self._num)
        num = torch.sigmoid(raw[:, :k])
        blocks, start = [], k
        for size in self._cat_sizes:
            blocks.append(torch.softmax(raw[:, start : start + size], dim=1))
            start += size
        return num, blocks

    def _features_torch(self, raw, omega):
        """h of a generated batch: RFF of the numeric block, softmax probabilities / sqrt(d_cat).
        (The categorical kernel is linear, so the softmax's embedding equals the expected embedding
        of the one-hot category sampled from it: the decoding in ``sample`` is unbiased.)"""
        torch = _torch()
        num, blocks = self._decode_torch(raw)
        parts = []
        if self._num:
            proj = num @ omega.T
            parts += [torch.cos(proj) / math.sqrt(omega.shape[0]), torch.sin(proj) / math.sqrt(omega.shape[0])]
        if self._cat:
            parts += [b / math.sqrt(len(self._cat)) for b in blocks]
        return torch.cat(parts, dim=1)

    def _batch_size(self) -> int:
        b = self.params["batch_size"]
        if b is None:
            b = int(np.clip(round(DEFAULT_BATCH_FRACTION * self.n), *BATCH_LIMITS))
        return b

    def _inputs(self, torch, labels, gen, device):
        z = torch.randn(len(labels), NOISE_DIM, generator=gen, device=device)
        if not self.labeled:
            return z
        return torch.cat([z, torch.nn.functional.one_hot(labels, self.n_classes).float()], dim=1)

    def _train(self) -> None:
        torch = _torch()
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        self.device = device.type
        seed = int(self.noise.rng.integers(2**62))
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            net = self._build_generator().to(device)
        gen = torch.Generator(device=device)
        gen.manual_seed(seed + 1)
        omega = torch.as_tensor(self.omega, dtype=torch.float32, device=device)
        target = torch.as_tensor(self.target_embedding(), dtype=torch.float32, device=device)
        C = self.n_classes
        per_class = max(1, math.ceil(self._batch_size() / C))  # stratified: every class, equal share
        labels = torch.arange(C, device=device).repeat_interleave(per_class)
        opt = torch.optim.Adam(net.parameters(), lr=LEARNING_RATE)
        epochs = self.params["epochs"]
        every = max(1, epochs // PROGRESS_STEPS)
        net.train()
        losses = []
        last_report = time.monotonic()
        for step in range(epochs):
            feats = self._features_torch(net(self._inputs(torch, labels, gen, device)), omega)
            mu_q = feats.reshape(C, per_class, -1).mean(dim=1).T  # D_h x C class-conditional means
            loss = torch.sum((target - mu_q) ** 2)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            on_schedule = (step + 1) % every == 0 or step + 1 == epochs
            if on_schedule:
                losses.append(float(loss.detach()))
            if on_schedule or time.monotonic() - last_report >= PROGRESS_SECONDS:
                last_report = time.monotonic()
                self.progress(0.03 + 0.97 * (step + 1) / epochs, f"training generator: step {step + 1}/{epochs}")
        self.final_loss = losses[-1]
        net.eval()
        self._net = net.cpu()

    # -- sampling -------------------------------------------------------------------------------
    def sample(self, n: int) -> pd.DataFrame:
        n = self._check_rows(n)
        torch = _torch()
        rng = self.noise.rng
        gen = torch.Generator()
        gen.manual_seed(int(rng.integers(2**62)))
        if self.labeled:
            labels = rng.choice(self.n_classes, size=n, p=self.label_probabilities())
        else:
            labels = np.zeros(n, dtype=np.int64)
        unit = np.zeros((n, len(self.schema.kept)))
        net = self._net
        net.eval()
        for start in range(0, n, SAMPLE_CHUNK):
            lab = labels[start : start + SAMPLE_CHUNK]
            with torch.no_grad():
                num, blocks = self._decode_torch(net(self._inputs(torch, torch.as_tensor(lab), gen, "cpu")))
            rows = slice(start, start + len(lab))
            if self._num:
                unit[rows, self._num] = num.numpy().astype(float)
            for j, probs in zip(self._cat, blocks):
                unit[rows, j] = _sample_rows(probs.numpy().astype(float), rng)  # categorical draw
        if self.labeled:
            unit[:, self._target] = labels
        return self.schema.from_unit(unit)

    # -- privacy report ---------------------------------------------------------------------------
    def privacy_cost(self) -> PrivacyCost:
        details = {
            "accountant": "RDP (dp-accounting), Gaussian mechanisms composed",
            "gaussian_releases": self.n_releases,
            "noise_multiplier_sigma": self.sigma,
            "zcdp_rho": self.n_releases / (2 * self.sigma**2),
            "rdp_epsilon": gaussian_rdp_epsilon(self.sigma, self.delta, count=self.n_releases),
            "pld_epsilon_second_opinion": gaussian_pld_epsilon(self.sigma, self.delta, count=self.n_releases),
            "embedding_l2_sensitivity": f"2 x {self.feature_norm:.4g} / n",
            "class_counts_l2_sensitivity": math.sqrt(2) if self.labeled else None,
        }
        if self.fitted and hasattr(self, "n"):
            details["embedding_noise_std"] = self.sigma * self.embedding_sensitivity(self.n)
            details["class_counts_noise_std"] = self.sigma * math.sqrt(2) if self.labeled else None
        caveats = [
            "random features and the kernel bandwidth come from public facts only (schema bounds), "
            "so the release is the noisy embedding (and noisy class counts); generator training and sampling "
            "are post-processing",
            "with the paper's sum kernel, the released embedding holds the (class-conditional) joint distribution "
            "of the numeric columns and the one-way (class-conditional) marginals of each categorical column; "
            "dependencies between categorical columns, and between categorical and numeric columns, are not "
            "in it beyond what the label carries",
            "the generator fits a noisy target by non-convex optimisation: utility is not guaranteed",
        ]
        if self.params["undersample"] < 1:
            caveats.append(
                "undersampling is applied to the released noisy class counts (post-processing), "
                "not to the data as in the paper"
            )
        # the embedding (and the class counts), each with noise std = sigma x its L2 sensitivity
        event = GaussianEvent(self.sigma, 1.0, count=self.n_releases, label="noise multiplier (std / L2 sensitivity)")
        return PrivacyCost(
            epsilon=self.epsilon,
            delta=self.delta,
            guarantee="approximate",
            caveats=tuple(caveats),
            details=details,
            events=(event,),
        )

    def report(self) -> dict:
        out = {
            "mode": "labeled" if self.labeled else "unlabeled",
            "random_features": self.params["features"] if self._num else 0,
            "numeric_columns": len(self._num),
            "categorical_feature_columns": len(self._cat),
            "generator_hidden": list(self.hidden),
        }
        if self.fitted:
            out.update(
                bandwidth=self.bandwidth,
                final_loss=getattr(self, "final_loss", None),
                training_device=getattr(self, "device", None),
                seconds_release=getattr(self, "seconds_release", None),
                seconds_train=getattr(self, "seconds_train", None),
            )
            if self.labeled:
                out["synthetic_label_probabilities"] = self.label_probabilities().round(4).tolist()
        return out

    # -- summary --------------------------------------------------------------------------------
    def summary(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "omega": np.asarray(self.omega),
            "embedding": np.asarray(self.embedding),
            "counts": np.asarray(self.counts, dtype=float),
            "n": int(self.n),
            "bandwidth": self.bandwidth,
            "sigma": self.sigma,
            "hidden": list(self.hidden),
            "final_loss": getattr(self, "final_loss", None),
        }
        for key, tensor in self._net.state_dict().items():
            out[f"gen:{key}"] = tensor.detach().cpu().numpy()
        return out

    def _load_summary(self, summary: dict[str, Any]) -> None:
        torch = _torch()
        self.omega = np.asarray(summary["omega"], dtype=float)
        self.embedding = np.asarray(summary["embedding"], dtype=float)
        self.counts = np.asarray(summary["counts"], dtype=float)
        self.n = int(summary["n"])
        self.bandwidth = summary["bandwidth"]
        self.final_loss = summary.get("final_loss")
        self.hidden = tuple(int(h) for h in summary["hidden"])
        net = self._build_generator()
        state = {k[len("gen:") :]: torch.as_tensor(np.asarray(v)) for k, v in summary.items() if k.startswith("gen:")}
        net.load_state_dict(state)
        net.eval()
        self._net = net


def _sample_rows(probs: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One category index per row of a (rows x K) probability matrix (inverse CDF, vectorised)."""
    cdf = np.cumsum(probs, axis=1)
    u = rng.random(len(probs))[:, None] * cdf[:, -1:]
    return np.minimum((u > cdf).sum(axis=1), probs.shape[1] - 1)
