"""The secure-noise static check, extended to the web platform: no code under ``dpportal/`` draws
randomness from a sampler other than ``mechanisms/noise.py`` (the mechanisms/ scan lives in
tests/mechanisms/test_noise.py), no job is ever given seeded (test) noise, and each job gets its
own secure Noise with a fresh OS-entropy generator."""

from __future__ import annotations

import re
from pathlib import Path

from dpportal.releases import services as release_services
from tests.personas import run_release

ROOT = Path(__file__).resolve().parents[2]
# As tests/mechanisms/test_noise.py, minus `secrets.`: dpportal uses it for API tokens and keys only.
SAMPLERS = re.compile(
    r"np\.random\.(?!default_rng|Generator|SeedSequence)[a-z_]+\(|numpy\.random\.(?!default_rng|Generator|SeedSequence)"
    r"[a-z_]+\(|^\s*import random\b|^\s*from random import|scipy\.stats\.[a-z_]+\.rvs\(|\.rvs\(|torch\.(?:rand|randn|"
    r"normal|manual_seed)\(",
    re.M,
)
SEEDED = re.compile(r"Noise\.seeded\(|Noise\(\s*secure\s*=\s*False|secure\s*=\s*False")


def _sources():
    for path in sorted((ROOT / "dpportal").rglob("*.py")):
        if "migrations" not in path.parts:
            yield path


def test_no_other_sampler_and_no_seeded_noise_in_the_platform():
    bad = {}
    for path in _sources():
        text = path.read_text()
        hits = [m.group(0) for m in SAMPLERS.finditer(text)] + [m.group(0) for m in SEEDED.finditer(text)]
        if hits:
            bad[str(path.relative_to(ROOT))] = hits
    assert not bad, f"randomness in dpportal/ outside mechanisms/noise.py: {bad}"


def test_the_scan_catches_planted_samplers():
    for planted in (
        "x = np.random.laplace(0, 1)\n",
        "import random\n",
        "noise=Noise.seeded(1)\n",
        "t = torch.randn(3)\n",
        "v = scipy.stats.norm.rvs()\n",
    ):
        assert SAMPLERS.search(planted) or SEEDED.search(planted), planted
    assert not SAMPLERS.search("rng = np.random.default_rng(release.pk)\n")


def test_each_job_gets_its_own_secure_noise(world, monkeypatch):
    seen = []
    real_build = release_services.worker.build

    def spy(*args, **kwargs):
        mech = real_build(*args, **kwargs)
        if kwargs.get("noise") is not None:  # planning builds without noise; the job builds with it
            seen.append(kwargs["noise"])
        return mech

    monkeypatch.setattr(release_services.worker, "build", spy)
    for _ in range(2):
        assert run_release(world.dataset, world.owner, epsilon="0.1", rows=5).status == "done"
    assert len(seen) == 2 and all(n.secure for n in seen)
    assert seen[0] is not seen[1]
    assert seen[0].rng.bit_generator.state != seen[1].rng.bit_generator.state
    keys = [n.private_rng.bit_generator.state["state"]["key"] for n in seen]  # Philox keys from secrets
    assert not (keys[0] == keys[1]).all()


# -- private choices never come from the stream that draws published rows -----------

import ast  # noqa: E402

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from mechanisms.noise import Noise  # noqa: E402

# ``noise.rng`` also draws the published rows, so it may only serve draws that are data-independent or
# post-processing of a DP release. Outside sample()/sample_sets(), each use is listed here with why.
PUBLIC_RNG_USES = {
    (
        "synthesizers/density_lp/__init__.py",
        "_reference_points",
    ): "reference points from public cells or the RELEASED noisy mu",
    ("synthesizers/density_lp/__init__.py", "_product_points"): "reference points from the RELEASED noisy marginals",
    (
        "synthesizers/density_lp/__init__.py",
        "_bernstein_points",
    ): "points from the RELEASED noisy Bernstein coefficients",
    (
        "synthesizers/dpmerf/__init__.py",
        "_draw_features",
    ): "random Fourier features: data-independent (the bound holds for any)",
    (
        "synthesizers/dpmerf/__init__.py",
        "_train",
    ): "generator training on the RELEASED noisy embedding (post-processing)",
    (
        "synthesizers/pmse/__init__.py",
        "_fit",
    ): "the fixed synthetic normals Z: data-independent (Theorem 2 holds for every Z)",
}
SAMPLING = {"sample", "sample_sets"}


def _rng_uses(text: str) -> list[tuple[str, int]]:
    """(innermost enclosing function, line) of every ``noise.rng`` / ``<x>.noise.rng`` access."""
    tree = ast.parse(text)
    out = []

    def visit(node, func):
        for child in ast.iter_child_nodes(node):
            name = child.name if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) else func
            if (
                isinstance(child, ast.Attribute)
                and child.attr == "rng"
                and (
                    (isinstance(child.value, ast.Attribute) and child.value.attr == "noise")
                    or (isinstance(child.value, ast.Name) and child.value.id == "noise")
                )
            ):
                out.append((func, child.lineno))
            visit(child, name)

    visit(tree, "<module>")
    return out


def _violations(name: str, text: str) -> list[str]:
    return [
        f"{name}:{line} in {func}()"
        for func, line in _rng_uses(text)
        if func not in SAMPLING and (name, func) not in PUBLIC_RNG_USES
    ]


def test_mechanisms_draw_private_choices_from_private_rng_only():
    bad = []
    for path in sorted((ROOT / "mechanisms").rglob("*.py")):
        name = path.relative_to(ROOT / "mechanisms").as_posix()
        if name != "noise.py":
            bad += _violations(name, path.read_text())
    assert not bad, (
        "noise.rng (the published-rows stream) used for what may be a private choice; use "
        f"noise.private_rng, or list a data-independent use in PUBLIC_RNG_USES: {bad}"
    )
    for name in ("kdtree", "privhp", "pmse"):
        assert "private_rng" in (ROOT / "mechanisms" / "synthesizers" / name / "__init__.py").read_text(), name


@pytest.mark.parametrize(
    "planted",
    [
        "def _fit(self, source):\n    rng = self.noise.rng\n    m = binomial(rng, 10, 0.1)\n",
        "def _setup_hashing(self):\n    self.hash_a = self.noise.rng.integers(0, 2 ** 64, size=3)\n",
        "def metropolis(score, noise):\n    step = noise.rng.standard_normal(3)\n",
    ],
)
def test_the_private_choice_scan_catches_the_old_code(planted):
    """The exact patterns kdtree, PrivHP and pMSE once had."""
    assert _violations("synthesizers/kdtree/__init__.py", planted)


def test_private_rng_is_a_separate_stream_from_rng():
    seeded = Noise.seeded(5)
    assert not np.array_equal(seeded.rng.random(8), seeded.private_rng.random(8))
    again = Noise.seeded(5)
    again.rng.random(8)
    assert np.array_equal(Noise.seeded(5).private_rng.random(8), again.private_rng.random(8))  # reproducible
    a, b = Noise.secure_backend(), Noise.secure_backend()
    assert not np.array_equal(a.private_rng.random(8), b.private_rng.random(8))
    assert type(a.private_rng.bit_generator).__name__ == "Philox"


@pytest.mark.parametrize(
    "name,params",
    [
        ("kdtree-grid", {"width": 0.05, "threshold": 1.0}),
        ("kdtree-adaptive", {"tau": 1.0, "threshold": 1.0}),
        ("privhp", {"depth": 12, "pruning_level": 4}),
    ],
)
def test_fit_consumes_nothing_from_the_published_rows_stream(name, params):
    """kdtree's Binomial counts and empty-cell choices, PrivHP's hashes: fit() leaves noise.rng untouched
    (it once consumed it)."""
    import pandas as pd

    from mechanisms import registry
    from mechanisms.schema import Column, Schema
    from mechanisms.source import TableSource

    schema = Schema(
        columns=(Column("x", "continuous", lower=0.0, upper=1.0), Column("y", "continuous", lower=0.0, upper=1.0))
    )
    frame = pd.DataFrame(np.random.default_rng(0).random((300, 2)).round(4).astype(str), columns=["x", "y"])
    noise = Noise.secure_backend()  # privacy noise from OpenDP (seeded test noise would use rng itself)
    before = dict(noise.rng.bit_generator.state)
    registry.get(name)(schema, epsilon=1.0, noise=noise, **params).fit(TableSource.from_frame(schema, frame))
    assert noise.rng.bit_generator.state == before
