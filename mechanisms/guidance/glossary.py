"""The terms the guided release page explains, in the steward's words. Where a term concerns some
mechanisms, their names come from the registry (``needs_delta``, ``gaussian_mode``), so a new mechanism
appears here without an edit. Public text only."""

from __future__ import annotations

from mechanisms import registry


def approximate_mechanisms() -> str:
    """The mechanisms that need a delta, in words: those always approximate-DP, then the Gaussian modes."""
    classes = [registry.get(name) for name in registry.names()]
    always = [cls.name for cls in classes if cls.needs_delta]
    modes = [cls.name for cls in classes if cls.gaussian_mode and not cls.needs_delta]
    parts = always + ([f"the Gaussian modes of {', '.join(modes)}"] if modes else [])
    return ", ".join(parts[:-1]) + (" and " if len(parts) > 1 else "") + parts[-1] if parts else "none"


def terms() -> tuple[tuple[str, str], ...]:
    """(term, meaning) pairs, in the order the page lists them."""
    return (
        (
            "ε (epsilon)",
            "the privacy loss charged to the budget: how much the synthetic table can reveal about any one "
            "person. Smaller is more private and noisier.",
        ),
        (
            "δ (delta)",
            "a tiny probability that the ε guarantee does not hold; approximate-DP mechanisms "
            f"({approximate_mechanisms()}) need one, far below 1 / rows.",
        ),
        (
            "marginals",
            "the counts of the table over one column (1-way) or a pair of columns (2-way): its frequency "
            "tables and cross-tabulations.",
        ),
        (
            "TVD",
            "total variation distance between a synthetic and the real marginal: the share of rows that sit in "
            "the wrong cell (0% identical, 100% nothing in common). 3% 2-way TVD: about 3 rows in 100 land in "
            "the wrong cell of a two-column cross-tabulation.",
        ),
        (
            "rho (ρ)",
            "the budget in zero-concentrated DP, the accounting several approximate-DP mechanisms use inside "
            "(each one's privacy report says which); dpportal converts it from your ε and δ, and the ledger "
            "always charges ε and δ.",
        ),
    )
