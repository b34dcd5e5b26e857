"""What each mechanism parameter changes for the data steward: accuracy, time, memory.

The ParamSpec ``help`` names the parameter as the paper does; the release form shows the steward's text
first and the paper's under it (the API and ``python -m mechanisms list`` show both). Each mechanism's
texts are its ``steward_help`` (in its package's guide.py, read through ``Mechanism.help``); the texts that
several mechanisms share are here.
"""

from __future__ import annotations

NOISE_TYPE_HELP = (
    "Noise family. 'laplace': pure epsilon-DP, no delta. 'gaussian': needs a delta but adds much less "
    "noise when many columns or tables share the budget (the recommendation picks it when it predicts "
    "better). No effect on time."
)
