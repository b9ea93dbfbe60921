"""cont-transformer: continuous-in-depth networks (Stateful ODE-Nets) on PyTorch."""

from .basis import BASES, fit_points, get_basis, interpolation_matrix, projection_matrix
from .integrators import SCHEMES, ButcherTableau, get_scheme, odeint
from .ode_block import OdeBlock
from .transform import change_basis, refine, set_num_steps

__all__ = [
    "BASES",
    "SCHEMES",
    "ButcherTableau",
    "OdeBlock",
    "change_basis",
    "fit_points",
    "get_basis",
    "get_scheme",
    "interpolation_matrix",
    "odeint",
    "projection_matrix",
    "refine",
    "set_num_steps",
]
