"""XLA:CPU as the compiler in the loop: flag, layout and per-kernel options, the config space, its pass inside XLA, measurement and profiles.

Its folders, in the order a config travels:

    configs/      what XLA is told: flags, layouts, per-kernel options, what this XLA takes
    spaces/       a program's configs as genes, and their encoding for the cost models
    xla/          hlotune's pass inside XLA: the module it is handed, its kernels and order
    measurement/  compiling and timing configs in workers a shared machine can trust
    profiles/     where a compiled program's time goes, kernel by kernel (`hlotune profile`)

The modules sat in this folder before 1.2; their old paths (`hlotune.compiler.measure`) import
the moved module, with a DeprecationWarning, for one release.
"""

from __future__ import annotations

from hlotune.deprecation import moved_modules

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
moved_modules(MOVED)
