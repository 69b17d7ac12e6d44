"""What XLA:CPU is told: a CompileConfig's flags, tensor layouts and per-kernel options, and
which of them the installed XLA takes."""
