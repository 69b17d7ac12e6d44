"""Numerical algorithms as programs, `numerics:NAME[@SIZE]` (SIZE: tiny, small or base):

    heat        heat equation, explicit finite-difference stencil steps
    nbody       gravitational n-body, velocity Verlet
    spectral    2-D Navier-Stokes vorticity, pseudo-spectral with RK4
    cg          Darcy flow by Jacobi-preconditioned conjugate gradients
    montecarlo  option pricing on geometric Brownian motion paths
    kalman      Kalman filter over a time series (lax.scan)
    sor         Poisson by red-black successive over-relaxation

Loops, FFTs, scans, random numbers and solvers as scientists write them: held out of every
training set (hlotune.data.builtin names none of them), so the tuner is benchmarked on programs
unlike the models it learnt from. hlotune.programs.numerics.base says what one is.
"""

from __future__ import annotations

from hlotune.programs.numerics import cg, heat, kalman, montecarlo, nbody, sor, spectral
from hlotune.programs.numerics.base import Numeric
from hlotune.programs.program import NUMERICS_PREFIX, Program
from hlotune.programs.variants import resolve_workload

NUMERICS: dict[str, Numeric] = {
    module.WORKLOAD.name: module.WORKLOAD for module in (heat, nbody, spectral, cg, montecarlo, kalman, sor)
}


def load_numerics_program(spec: str) -> Program:
    resolved = resolve_workload(spec, NUMERICS_PREFIX, NUMERICS, "numerics program")
    return Program(resolved.name, *resolved.workload.program(resolved.size, batch=resolved.batch))


__all__ = ["NUMERICS", "Numeric", "load_numerics_program"]
