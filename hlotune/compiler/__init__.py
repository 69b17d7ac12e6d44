"""XLA:CPU as the compiler in the loop: flag, layout and per-kernel options, the config space, its pass inside XLA, measurement and profiles."""
