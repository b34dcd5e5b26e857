"""Tables with error bars: the crosstabs a release publishes, each cell with its noisy count, a consistent
estimate, a standard error and a 95% interval.

* ``measured`` -- :func:`measured_tables`: the noisy marginals a fitted baseline, MST or AIM release
  already measured, with the model's answer beside each cell (post-processing: no privacy cost).
* ``residual`` -- ResidualPlanner (Xiao, He, Zhang & Kifer, NeurIPS 2023): the least-noise Gaussian
  measurement of a set of marginal tables, its exact replace-one cost and the exact variance of every cell.
* ``cells`` -- the tables' JSON form and the exact intervals of discrete noise.
"""

from .measured import measured_tables

__all__ = ["measured_tables"]
