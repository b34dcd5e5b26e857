"""Benchmarks of dpportal's mechanisms and of the running system (slow; not part of `make test`).

Run from the repository root as modules, ``python -m benchmarks.<group>.<name>``: ``harness`` (dpportal
against SmartNoise Synth, reports and charts), ``reproduce`` (each mechanism against its paper),
``calibration`` (the product's predictions against measurements), ``system`` (workers, evaluation speed,
the privacy risk report). ``python -m benchmarks.report`` writes docs/benchmarks/ from docs/data/."""
