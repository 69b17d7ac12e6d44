"""GO-style graph optimisation (Zhou et al., NeurIPS 2020): a simulated multi-device machine,
an environment for RL policies, and the heuristic baselines they are compared with.

device.py: the machine; costs.py: the op graph and its roofline costs; simulator.py: one step
on the machine; env.py: the gymnasium environment; baselines.py: placement, scheduling and fusion
heuristics; policy.py and ppo.py: GO's policy and its training; report.py: the results table;
commands.py: `hlotune opt`; pretrained/: the shipped policy. GO-scale graphs (`go:` specs) are
programs like any other: hlotune.programs.go.
"""
