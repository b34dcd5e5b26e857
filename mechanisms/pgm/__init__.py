"""Select-measure-generate on Private-PGM: the pieces AIM and MST share, split as upstream ``mbi``
splits them.

* ``measurement`` -- :class:`CellTable`, the private table as public cell indices (``Schema.to_cells``)
  and its exact marginal counts (only ``fit`` holds one); :func:`measure`, a marginal's counts plus
  discrete Gaussian noise through :class:`~mechanisms.noise.Noise` (OpenDP's exact sampler in
  production); :class:`Measurements`, the noisy measurements so far, repeated measurements of one
  marginal pooled by inverse variance (the same least-squares loss, so the same estimate) so that the
  estimator's compiled program is reused when a marginal is measured again.
* ``estimation`` -- :func:`estimate`, Private-PGM (``mbi``, JAX) mirror descent: the graphical model
  that best fits the noisy measurements, with the PUBLIC row count n as its total. No inference is
  hand-written.
* ``model`` -- :class:`ModelTables`, the estimated model as plain arrays (the junction tree's clique
  marginals), the private summary that is stored, and :meth:`ModelTables.sample`, numpy sampling of
  synthetic cells from it (post-processing, drawn from ``Noise.rng``).
* ``marginal_oracles`` -- :func:`candidate_marginals`, the model's marginals of the cliques AIM may
  select next; ``junction_tree`` -- :class:`JunctionTreeSize`, the model size of a set of cliques.
* ``constraints`` -- :func:`structural_zeros`, the schema's declared rules as zero cells of the model
  (``mbi.Constraint``): public, fitted inside the estimate so that sampling needs no rejection.
* ``backend`` -- :func:`load_mbi`: JAX is imported inside ``fit`` only (never by the web process),
  after the job's thread limit is set.

Everything after the noisy counts (estimation, sampling, oracles) is post-processing; the privacy of
one measurement is stated in ``measurement``. Tuning constants are read in their own module: patch
them there.
"""

from .backend import XLA_DEFAULT_FLAGS, load_mbi, release_freed_memory, xla_default_flags
from .constraints import StructuralZero, rule_columns, structural_zeros
from .estimation import estimate, optimisation_level, release_programs
from .junction_tree import JunctionTreeSize
from .marginal_oracles import Factor, candidate_marginals, eliminate, model_cliques, pair_marginals
from .measurement import (
    QUALITY_L1_SENSITIVITY,
    CellTable,
    Clique,
    Measurement,
    Measurements,
    measure,
    rho_of_measurement,
    sigma_for_rho,
)
from .model import ModelTables

__all__ = [
    "StructuralZero",
    "rule_columns",
    "structural_zeros",
    "XLA_DEFAULT_FLAGS",
    "load_mbi",
    "release_freed_memory",
    "xla_default_flags",
    "estimate",
    "optimisation_level",
    "release_programs",
    "JunctionTreeSize",
    "Factor",
    "candidate_marginals",
    "eliminate",
    "model_cliques",
    "pair_marginals",
    "QUALITY_L1_SENSITIVITY",
    "CellTable",
    "Clique",
    "Measurement",
    "Measurements",
    "measure",
    "rho_of_measurement",
    "sigma_for_rho",
    "ModelTables",
]
