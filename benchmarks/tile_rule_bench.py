"""What does a tile model learn beyond "fewer partitions run faster"?

On XLA:CPU's kernels (builtin:tile) most kernels run fastest on one thread, so a ranking by the
number of partitions alone, the same for every kernel, already orders much of each kernel's
configs. This prints, per split, that rule's Kendall tau (and with XLA's own choice first among
equals), and for a model, how many test kernels it ranks in exactly the rule's order (a model
that ranks every kernel alike has learnt the rule and nothing of the kernel) and how many
distinct orders it uses.

    python benchmarks/tile_rule_bench.py --model pretrained:tile [--out docs/img/tile_rule_bench.json]
"""

from __future__ import annotations

from collections import Counter

import numpy as np

import harness
from hlotune.data.dataset import Dataset
from hlotune.data.metrics import kendall_tau, target_runtimes
from hlotune.evaluation.scorers import load_scorer

PRODUCT, XLA = 6, 7  # config_feat of an XLA:CPU kernel: the partitions' product, XLA's own choice


def rule_scores(sample, xla_first: bool) -> np.ndarray:
    feat = sample.configs.config_feat
    return feat[:, PRODUCT] - (0.5 * feat[:, XLA] if xla_first else 0.0)


def main() -> None:
    parser = harness.parser(__doc__, out=None)
    parser.add_argument("--model", default="pretrained:tile")
    args = parser.parse_args()
    results: dict = {"rule": {}}
    for split in ("train", "valid", "test"):
        samples = list(Dataset(f"builtin:tile/{split}"))
        results["rule"][split] = {
            "kernels": len(samples),
            "fewer_partitions_first": float(np.mean([kendall_tau(target_runtimes(s), rule_scores(s, False)) for s in samples])),
            "xla_first_then_fewer": float(np.mean([kendall_tau(target_runtimes(s), rule_scores(s, True)) for s in samples])),
        }
    scorer, orders, same = load_scorer(args.model), Counter(), 0
    test = list(Dataset("builtin:tile/test"))
    for sample in test:
        scores = np.asarray(scorer(sample))
        order = tuple(np.argsort(scores, kind="stable"))
        products = tuple(int(p) for p in sample.configs.config_feat[list(order), PRODUCT])
        orders[products] += 1
        same += order == tuple(np.argsort(rule_scores(sample, False), kind="stable"))
    results["model"] = {"name": args.model, "test_kernels": len(test), "orders_by_partitions": len(orders),
                        "most_common": [[list(o), n] for o, n in orders.most_common(3)],
                        "kernels_in_the_rules_order": same}
    for split, row in results["rule"].items():
        print(f"{split}: {row['kernels']} kernels, tau of fewer partitions first {row['fewer_partitions_first']:.3f}, "
              f"XLA's choice first among equals {row['xla_first_then_fewer']:.3f}")
    model = results["model"]
    print(f"{args.model} on the test split: {model['kernels_in_the_rules_order']} of {model['test_kernels']} kernels "
          f"ranked exactly as the rule; {model['orders_by_partitions']} distinct orders of partitions, "
          f"most common {model['most_common'][0]}")
    if args.out:
        harness.write_json(args.out, results)


if __name__ == "__main__":
    main()
