"""SmartNoise's MST with its tree selection's 2-way estimates computed in closed form (benchmark venv only).

SmartNoise Synth's MST scores every column pair on the model fitted to the 1-way measurements alone, asking
Private-PGM (``mbi``) for each pair's marginal by variable elimination: 820 eliminations of 39 columns on a
41-column table (census_like), each compiled anew, which did not finish in 25 minutes on the shared 2-core
machine. A model of 1-way cliques only is a product of its 1-way marginals, so a pair's marginal is their
outer product divided by the total, and a count vector read outside a compiled estimate is read through
numpy (each new shape compiled a JAX reshape): the same numbers, computed directly. Nothing else changes
(the measurements, the noise, the selection, the final estimate and the sampling are SmartNoise's own).

    .venv-bench/bin/python -m benchmarks.harness.smartnoise_product <peers_runner arguments>
"""

from __future__ import annotations

import runpy


def patch() -> None:
    import jax
    import numpy as np
    from mbi import Factor
    from mbi.markov_random_field import MarkovRandomField

    project, datavector = MarkovRandomField.project, Factor.datavector

    def product_project(self, attrs):
        attrs = (attrs,) if isinstance(attrs, str) else tuple(attrs)
        cliques = self.marginals.cliques
        if self.marginals.supports(attrs) or len(attrs) < 2 or any(len(cl) != 1 for cl in cliques):
            return project(self, attrs)
        one = {a: np.asarray(self.marginals.arrays[(a,)].values, dtype=float) for a in attrs}
        out = one[attrs[0]]
        for a in attrs[1:]:  # independent columns: P(a, b) = P(a) P(b), counts scaled by the total
            out = np.multiply.outer(out, one[a]) / float(self.total)
        return Factor(self.domain.project(attrs), out)

    def numpy_datavector(self, flatten: bool = True):
        if isinstance(self.values, jax.core.Tracer):  # inside a compiled estimate: as before
            return datavector(self, flatten)
        values = np.array(self.values)  # a writable copy (SmartNoise scales the counts in place)
        return values.reshape(-1) if flatten else values

    MarkovRandomField.project = product_project
    Factor.datavector = numpy_datavector


if __name__ == "__main__":
    patch()
    runpy.run_module("benchmarks.harness.peers_runner", run_name="__main__")
