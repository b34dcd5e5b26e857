"""The secure-noise static check, extended to the web platform: no code under ``dpportal/`` draws
randomness from a sampler other than ``mechanisms/noise.py`` (the mechanisms/ scan lives in
tests/mechanisms/test_noise.py), no job is ever given seeded (test) noise, and each job gets its
own secure Noise with a fresh OS-entropy generator."""

from __future__ import annotations

import re
from pathlib import Path

from dpportal.releases import services as release_services
from tests.web.personas import run_release

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
    for planted in ("x = np.random.laplace(0, 1)\n", "import random\n", "noise=Noise.seeded(1)\n",
                    "t = torch.randn(3)\n", "v = scipy.stats.norm.rvs()\n"):
        assert SAMPLERS.search(planted) or SEEDED.search(planted), planted
    assert not SAMPLERS.search("rng = np.random.default_rng(release.pk)\n")


def test_each_job_gets_its_own_secure_noise(world, monkeypatch):
    seen = []
    real_build = release_services.build

    def spy(*args, **kwargs):
        mech = real_build(*args, **kwargs)
        if kwargs.get("noise") is not None:  # planning builds without noise; the job builds with it
            seen.append(kwargs["noise"])
        return mech

    monkeypatch.setattr(release_services, "build", spy)
    for _ in range(2):
        assert run_release(world.dataset, world.owner, epsilon="0.1", rows=5).status == "done"
    assert len(seen) == 2 and all(n.secure for n in seen)
    assert seen[0] is not seen[1]
    assert seen[0].rng.bit_generator.state != seen[1].rng.bit_generator.state
