"""XLA:CPU as the compiler in the loop, in the order a config travels:

    configs/      what XLA is told: flags, layouts, per-kernel options, what this XLA takes
    spaces/       a program's configs as genes, and their encoding for the cost models
    xla/          hlotune's pass inside XLA: the module it is handed, its kernels and order
    measurement/  compiling and timing configs in workers a shared machine can trust
    profiles/     where a compiled program's time goes, kernel by kernel (`hlotune profile`)

The modules sat in this folder before 1.2; their old paths (`hlotune.compiler.measure`) import
the moved module, with a DeprecationWarning, for one release.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import warnings

_GROUPS = {
    "configs": ("config", "flags", "layouts", "kernel_config", "xla_support"),
    "spaces": ("space", "kernel_space", "fusion_space", "fusion_features", "encode"),
    "xla": ("hook", "kernels", "thunks", "fusion_rewrite", "schedule", "persistent_cache"),
    "measurement": ("measure", "worker", "worker_session", "zygote", "in_process", "call_timing",
                    "argument_files", "output_check", "machine"),
    "profiles": ("kernel_profile", "program_profile", "commands"),
}
MOVED = {f"{__name__}.{module}": f"{__name__}.{group}.{module}"
         for group, modules in _GROUPS.items() for module in modules}


class _MovedModule(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Imports a module's pre-1.2 path as its new one: the same module object, so its state
    and classes are shared (isinstance holds across both names)."""

    def find_spec(self, name, path=None, target=None):
        return importlib.machinery.ModuleSpec(name, self) if name in MOVED else None

    def create_module(self, spec):
        return None

    def exec_module(self, module) -> None:
        new = MOVED[module.__name__]
        warnings.warn(f"{module.__name__} is deprecated: use {new}", DeprecationWarning, stacklevel=2)
        sys.modules[module.__name__] = importlib.import_module(new)  # what the import returns


if not any(isinstance(finder, _MovedModule) for finder in sys.meta_path):
    sys.meta_path.append(_MovedModule())
