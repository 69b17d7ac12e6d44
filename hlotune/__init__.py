"""hlotune: machine learning for ML compilers (TpuGraphs graphs, cost models, XLA autotuning).

The top-level API mirrors the `hlotune` command; heavy imports (jax) wait until first use.
"""

from __future__ import annotations

from hlotune.lazy import lazy_attributes

__version__ = "0.1.0"

_API = {
    "autotune": ("hlotune.tuning.autotune", "autotune"),
    "compiled": ("hlotune.tuning.compiled", "compiled"),
    "cross_validate": ("hlotune.evaluation.crossval", "cross_validate"),
    "featurize_source": ("hlotune.hlo.sources", "featurize_source"),
    "inspect": ("hlotune.hlo.inspection", "inspect"),
    "install": ("hlotune.fleet.jitted", "install"),
    "jit": ("hlotune.fleet.jitted", "jit"),
    "load_program": ("hlotune.programs", "load_program"),
    "read_sample": ("hlotune.data.npz", "read_sample"),
    "write_sample": ("hlotune.data.npz", "write_sample"),
    "Dataset": ("hlotune.data.dataset", "Dataset"),
    "tune": ("hlotune.tuning.tuner", "tune"),
    "uninstall": ("hlotune.fleet.jitted", "uninstall"),
}
# Old name -> new, kept one release: `featurize` was easily taken for hlo.featurize.featurize,
# which turns one graph into arrays, where this reads a source's samples.
_RENAMED = {"featurize": "featurize_source"}

__all__ = ["__version__", *_API]


__getattr__ = lazy_attributes(__name__, _API, _RENAMED)
