"""GO's learning curves: the mean sampled reward per PPO round of each task, for the policy
folders given (their config.json keeps the curve `hlotune opt train` recorded). Rewards are
-log(simulated step time / the default assignment's): 0 is the default, 0.1 about 10% faster.

    python benchmarks/opt_go_curves.py LABEL=DIR [LABEL=DIR ...] [--out docs/img/go_learning_curves.png]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import harness

TASKS = ("place", "schedule", "fuse")


def main(argv: list[str] | None = None) -> None:
    parser = harness.parser(__doc__)
    parser.add_argument("policies", nargs="+", metavar="LABEL=DIR")
    parser.add_argument("--out", type=Path, default=Path("docs/img/go_learning_curves.png"))
    args = parser.parse_args(argv)
    curves = {}
    for item in args.policies:
        label, _, folder = item.partition("=")
        training = json.loads((Path(folder) / "config.json").read_text())["training"]
        if "curve" not in training:
            sys.exit(f"opt_go_curves: error: {folder} keeps no learning curve (retrain it)")
        curves[label] = training["curve"]
    fig, axes = harness.subplots(1, len(TASKS), figsize=(4.2 * len(TASKS), 3.4))
    for ax, task in zip(axes, TASKS):
        for label, curve in curves.items():
            if task in curve:
                ax.plot(range(1, len(curve[task]) + 1), curve[task], marker=".", label=label)
        ax.set_title(f"{task} (SIMULATED)")
        ax.set_xlabel("round (as many iterations as problems)")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("mean sampled reward")
    axes[0].legend()
    harness.save_figure(fig, args.out)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
