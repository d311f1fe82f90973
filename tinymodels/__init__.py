"""The course's small unsharded models, in plain JAX.

Exercises, solutions and the grader all import them: this package sits
below the grader (it imports neither ``grader`` nor ``course``). Lessons 6,
7 and 9 use the residual MLP in :mod:`tinymodels.mlp`.
"""

from tinymodels.mlp import forward, init_params, layer, loss

__all__ = ["forward", "init_params", "layer", "loss"]
