"""Private-PGM's mirror descent (``mbi``, JAX): the graphical model that best fits the noisy
measurements, with the PUBLIC row count n as its total (post-processing). No inference is hand-written:
the steps are mbi's, compiled as one program per model structure."""

from __future__ import annotations

from typing import Sequence

from .backend import release_freed_memory
from .constraints import StructuralZero, constraint_cliques, to_mbi
from .junction_tree import JunctionTreeSize
from .measurement import Measurements

_COMPILED = {}


def _compiled_estimate(mbi):
    """Private-PGM's MirrorDescent with its Armijo line search (mbi's ``_init``/``_step``/``_finalize``
    arithmetic, its marginal oracle and loss), compiled as ONE program per model structure, and with
    the marginals it already has carried from step to step.

    mbi's own ``estimate`` runs the set-up and finishing steps op by op, and JAX compiles every op anew
    for every new shape: about 60 small compilations per AIM round plus three programs, most of AIM's
    time (docs/mechanisms/aim.md). And mbi's ``_step`` starts every step by computing the marginals of
    the current potentials, which the previous step has just computed: the trial point's marginals mu2
    when its step was accepted (the potentials became theta2), the step's own mu when it was not (the
    potentials did not move). Carrying them does one message-passing pass per step instead of two
    (``_finalize``'s pass is the carried marginals too) and gives the same iterates: the loss, the
    gradient, the sufficient-decrease test and the step sizes are mbi's, on the same marginals
    (tests/mechanisms/pgm/test_pgm.py compares with mbi's ``estimate``). The starting point's marginals come
    from an extra first loop step that keeps the potentials (always accepted, step size unchanged), so
    the program traces the oracle once, not twice: XLA's compile time is most of AIM's at small epsilon."""
    if "run" not in _COMPILED:
        import jax
        import jax.numpy as jnp

        from mbi.estimation import _extract_potentials

        def run(estimator, domain, loss_fn, known_total, warm, iters, constraints=()):
            oracle = estimator._oracle(loss_fn.cliques, domain, constraints=constraints)
            potentials = _extract_potentials(warm, domain, loss_fn.cliques)
            alpha = 2.0 / (loss_fn.lipschitz * known_total)  # mbi's initial Armijo step

            value_and_grad = jax.value_and_grad(loss_fn)

            def step(i, state):
                # step 0 only computes the starting point's marginals (theta2 = theta, always kept), so the
                # program holds ONE copy of the oracle (message passing), which is most of its compile time;
                # the loss and its gradient are computed once per step, at the trial point, and carried
                # the branches are lax.cond, not element-wise selects over the three clique vectors: the same
                # values, and XLA compiles the program in 40% less time (credit_default_taiwan's round-42 model:
                # 7.4 -> 4.8 CPU s at level 2; adult's round 30: 1.65 -> 1.03 s at level 0)
                mu, theta, alpha, loss, grad = state
                first = i == 0
                theta2 = jax.lax.cond(first, lambda: theta, lambda: theta - alpha * grad)
                mu2 = oracle(theta2, known_total)
                loss2, grad2 = value_and_grad(mu2)
                accept = first | (loss - loss2 >= 0.5 * alpha * grad.dot(mu - mu2))
                alpha2 = jax.lax.select(first, alpha, jax.lax.select(accept, 1.01 * alpha, 0.5 * alpha))
                return jax.lax.cond(
                    accept, lambda: (mu2, theta2, alpha2, loss2, grad2), lambda: (mu, theta, alpha2, loss, grad)
                )

            zero = jax.tree_util.tree_map(jnp.zeros_like, potentials)  # replaced at step 0
            mu, theta, *_ = jax.lax.fori_loop(
                0,
                iters + 1,
                step,
                (zero, potentials, jnp.asarray(alpha, dtype=jnp.float64), jnp.zeros((), jnp.float64), zero),
            )
            return mbi.MarkovRandomField(potentials=theta, marginals=mu, total=known_total, constraints=constraints)

        static = ("estimator", "domain")
        _COMPILED["run"] = {
            0: jax.jit(run, static_argnames=static),  # XLA_DEFAULT_FLAGS' level 0
            2: jax.jit(run, static_argnames=static, compiler_options={"xla_backend_optimization_level": 2}),
        }
        # level 0 (small, compile-bound programs): mbi's CPU default, Hugin message passing, the cheaper to
        # compile; level 2 (large, execution-bound): mbi's message_passing_implicit, which never holds the
        # super-cliques' tables and ran 2.3x faster on credit_default_taiwan (IMPLICIT_MAX_CLIQUES_PER_NODE)
        _COMPILED["estimator"] = {
            0: mbi.estimation.MirrorDescent(marginal_oracle=mbi.marginal_oracles.message_passing_hugin),
            2: mbi.estimation.MirrorDescent(marginal_oracle=mbi.marginal_oracles.message_passing_implicit),
            # declared rules (structural zeros, -inf potentials): Shafer-Shenoy, which mbi recommends for them (Hugin's
            # belief subtraction gives -inf - -inf)
            "zeros": mbi.estimation.MirrorDescent(marginal_oracle=mbi.marginal_oracles.message_passing_shafer_shenoy),
        }
    return _COMPILED["run"], _COMPILED["estimator"]


# A program whose iterations touch at least this many MiB x iterations is compiled at XLA's optimisation level 2:
# about 2.7 s more compiling, iterations twice as fast. Measured (benchmarks/estimate_speed.py, one thread):
# a 21.6 MiB model of credit_default_taiwan, 250 iterations: level 0 3.4 s compile + 29.2 s, level 2 6.1 s + 13.6 s.
OPTIMISE_MIB_ITERS = 1000.0


# Level-2 programs run mbi's message_passing_implicit (potentials kept in their cliques) when the measured cliques
# number at most this many per junction-tree clique, else Hugin: implicit recomputes each measured clique's
# marginal from all of its super-clique's inputs. Same seed and path, one thread: credit_default_taiwan at 1
# (24 columns, 2.7 measured cliques per tree clique at round 42) Hugin 595 s, implicit 471 s; california_housing
# at 10 (10 columns, a few large tree cliques holding most of its measured marginals) Hugin 272 s, implicit 320 s.
IMPLICIT_MAX_CLIQUES_PER_NODE = 3


def optimisation_level(model_mib: float, iters: int) -> int:
    """XLA optimisation level for an estimate over a ``model_mib`` junction tree: 2 where execution
    outweighs the longer compile (``OPTIMISE_MIB_ITERS``), else XLA_DEFAULT_FLAGS' 0."""
    return 2 if model_mib * iters >= OPTIMISE_MIB_ITERS else 0


def estimate(
    mbi,
    sizes: dict[str, int],
    names: Sequence[str],
    measurements: Measurements,
    *,
    total: int,
    iters: int,
    warm_start=None,
    zeros: Sequence[StructuralZero] = (),
):
    """Private-PGM mirror descent over the noisy measurements (post-processing): ``iters`` steps with
    mbi's Armijo line search from zero potentials or from ``warm_start``'s, the public n as total.

    ``zeros``: the schema's declared rules as structural zeros (:mod:`.constraints`), passed to Private-PGM as
    ``mbi.Constraint`` objects: the model is fitted with zero probability on the forbidden cells (a junction-tree
    clique on each rule's columns), and the returned model carries them. Rules are public: no privacy cost."""
    import jax.numpy as jnp

    domain = mbi.Domain(list(names), [sizes[a] for a in names])
    runs, estimators = _compiled_estimate(mbi)
    loss_fn = mbi.marginal_loss.from_linear_measurements(measurements.to_mbi(mbi), domain)
    constraints = to_mbi(mbi, domain, zeros)
    warm = None if warm_start is None else warm_start.potentials  # expanded inside the program
    structure = (
        tuple(loss_fn.cliques) + tuple(constraint_cliques(constraints)),
        None if warm is None else tuple(warm.cliques),
    )
    if _COMPILED.get("structure", structure)[0] != structure[0]:
        for run in runs.values():
            run.clear_cache()  # a new model structure: earlier programs will not be called again (memory)
    _COMPILED["structure"] = structure
    mib = JunctionTreeSize(list(names), [sizes[a] for a in names]).size_mb(
        list(loss_fn.cliques) + constraint_cliques(constraints)
    )
    level = optimisation_level(mib, iters)
    estimator = estimators[level] if not constraints else estimators["zeros"]
    # the implicit oracle only where each junction-tree clique holds few measured cliques
    if level == 2 and not constraints:
        nodes = len(mbi.junction_tree.make_junction_tree(domain, loss_fn.cliques)[0].nodes)
        if len(loss_fn.cliques) > IMPLICIT_MAX_CLIQUES_PER_NODE * nodes:
            estimator = estimators[0]
    model = runs[level](
        estimator, domain, loss_fn, float(total), warm, jnp.asarray(int(iters)), constraints
    )  # iters traced: one program
    release_freed_memory()
    return model


def release_programs() -> None:
    """A fit is over (its model is plain arrays now): drop the compiled estimation programs, which no
    later job reuses (each model structure compiles its own), and give the freed memory back."""
    if "run" in _COMPILED:
        for run in _COMPILED["run"].values():
            run.clear_cache()
        _COMPILED.pop("structure", None)
    release_freed_memory()
