"""`hlotune train` and `hlotune ensemble`: train a cost model, and put several into one seed
ensemble.

`python -m hlotune.train` (the entry point torchrun starts) is `hlotune train`. Heavy modules
(torch) load inside the handlers so that `--help` stays fast.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

from typing import TYPE_CHECKING

from hlotune.errors import HlotuneError
from hlotune.progress import add_quiet

if TYPE_CHECKING:
    from hlotune.models.settings import ModelSettings
    from hlotune.train.trainer import TrainSettings


def add_commands(commands) -> None:
    _add_train(commands)
    _add_ensemble(commands)


def _add_train(commands) -> None:
    train = commands.add_parser(
        "train",
        help="train a GNN cost model on TpuGraphs-format data",
        description="Train a GraphSAGE cost model on the graphs under --data (one collection; "
        "folders or builtin:flags|layout/train), validating on --valid each epoch. OUT gets "
        "model/ (the best model), checkpoint/ (resume with --resume), log.csv and curves.png.",
    )
    train.add_argument("--data", nargs="+", required=True, metavar="DIR")
    train.add_argument("--valid", metavar="DIR")
    train.add_argument("--out", required=True, type=Path, metavar="MODEL_DIR")
    train.add_argument("--seed", type=int, default=0)
    add_recipe_arguments(train)
    train.add_argument("--joint-data", nargs="+", default=(), metavar="DIR",
                       help="the other space's graphs (e.g. builtin:layout/train for flags --data): "
                       "train a companion model on them jointly, sharing the node layers; it is "
                       "saved to OUT/joint-model (docs/cost_model.md)")
    train.add_argument("--joint-weight", type=float, default=1.0, metavar="W",
                       help="weight of the companion's loss (default 1)")
    train.add_argument("--graphs-per-step", type=int, default=1,
                       help="graphs per optimizer step (per process under torchrun)")
    gst = train.add_argument_group(
        "graph segment training", "Train on segments of about --segment-size nodes (docs/scale.md)"
    )
    gst.add_argument("--segment-size", type=int, metavar="N", help="nodes per segment: turns GST on")
    gst.add_argument("--segments-sampled", type=int, metavar="K",
                     help="segments backpropagated per step (default 1)")
    gst.add_argument("--partition", choices=("metis", "node_splits", "topological"),
                     help="how to cut a graph into segments (default metis)")
    gst.add_argument("--segment-dropout", type=float, metavar="P",
                     help="drop stale segment embeddings with probability P (default 0)")
    train.add_argument("--resume", action="store_true", help="continue the run in OUT")
    train.add_argument("--json", action="store_true", help="print the result as one JSON object")
    add_quiet(train)
    train.set_defaults(run=_train)


def add_recipe_arguments(parser) -> None:
    """The model and optimisation options, shared by `hlotune train` and the GNN that
    `hlotune cv` trains per fold (`recipe_settings` and `recipe_model_settings` read them
    back)."""
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--loss", default="pairwise_hinge",
                        help="mse, pairwise_hinge, pairwise_logistic, listmle, or weighted "
                        "combinations like mse:1,pairwise_hinge:1 (default pairwise_hinge)")
    parser.add_argument("--configs-per-batch", type=int, default=16)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--layers", type=int, default=3, help="graph layers")
    parser.add_argument("--conv", choices=("sage", "gat", "gin", "gps"), default="sage",
                        help="graph layer: GraphSAGE, GATv2, GIN or GraphGPS, each over both edge "
                        "directions (docs/cost_model.md)")
    parser.add_argument("--hidden", type=int, default=64)
    parser.add_argument("--join", choices=("early", "late"), default="late",
                        help="where graph-level configs (tile, flags) join")
    parser.add_argument("--attention", action="store_true", help="cross-config attention")
    parser.add_argument("--layout-join", choices=("nodes", "late", "sites"), default="nodes",
                        help="layout configs join at their nodes before message passing (nodes) "
                        "or meet the nodes' final embeddings (late: much faster ranking; sites: "
                        "late, the sites of a config attending to each other first)")
    parser.add_argument("--prune-hops", type=int,
                        help="layout: propagate configs only within this many hops")
    parser.add_argument("--config-layers", type=int,
                        help="configs join before only the last N layers; the first run once per "
                        "graph, and layouts propagate only N hops (fast ranking)")
    parser.add_argument("--drop-edge", type=float, default=0.0, metavar="P",
                        help="DropEdge: each training step removes this fraction of edges")
    parser.add_argument("--residual", action="store_true",
                        help="add each graph layer's input to its output")
    parser.add_argument("--instance-norm", action="store_true",
                        help="normalise each graph layer's output over the graph's nodes (not "
                        "with pruning)")
    parser.add_argument("--config-softmax", action="store_true",
                        help="cross-config layer: a softmax over the config axis with a learnt "
                        "temperature (the Kaggle winner's; --attention is multi-head attention)")
    parser.add_argument("--test-permutations", type=int, metavar="P",
                        help="with a cross-config layer, score configs in random groups of "
                        "--configs-per-batch, P draws averaged (test-time averaging)")
    parser.add_argument("--analytical-prior", action="store_true",
                        help="add a learnt multiple of the analytical baseline's cost to each score: "
                        "the network learns what the rule misses")
    parser.add_argument("--init-from", type=Path, metavar="MODEL_DIR",
                        help="start the node layers from this model's (e.g. the other space's, "
                        "pretrained:flags), the configs' layers and head fresh")
    parser.add_argument("--relative-targets", action="store_true",
                        help="train on log runtimes relative to the other configs of the graph's "
                        "batch (matters for mse; ranking losses are unchanged)")
    parser.add_argument("--collapse-chains", action="store_true",
                        help="collapse chains of nodes with one operand, one user and no config "
                        "(kept in the model: eval and predict collapse too)")
    parser.add_argument("--drop-duplicate-configs", action="store_true",
                        help="keep identical configs of a graph once (the median runtime one)")


def recipe_settings(args: argparse.Namespace, **fields) -> TrainSettings:
    """The training options of `add_recipe_arguments`, with `fields` (what the command sets
    besides: seed, GST, ...), as the TrainSettings `hlotune.train.train` takes."""
    from hlotune.train.trainer import TrainSettings

    return TrainSettings(
        epochs=args.epochs, loss=args.loss, configs_per_batch=args.configs_per_batch, lr=args.lr,
        drop_duplicate_configs=args.drop_duplicate_configs, relative_targets=args.relative_targets,
        init_from=_init_from(args.init_from), **fields,
    )


def recipe_model_settings(args: argparse.Namespace) -> ModelSettings:
    """The architecture options of `add_recipe_arguments` as a ModelSettings."""
    from hlotune.models.settings import ModelSettings

    return ModelSettings(
        hidden_dim=args.hidden, num_layers=args.layers, conv=args.conv, join=args.join,
        layout_join=args.layout_join, cross_config_attention=args.attention, prune_hops=args.prune_hops,
        config_layers=args.config_layers, drop_edge=args.drop_edge, collapse_chains=args.collapse_chains,
        residual=args.residual, instance_norm=args.instance_norm, config_softmax=args.config_softmax,
        test_group_size=None if args.test_permutations is None else args.configs_per_batch,
        test_permutations=1 if args.test_permutations is None else args.test_permutations,
        analytical_prior=args.analytical_prior,
    )


def _init_from(folder: Path | None) -> Path | None:
    """`pretrained:NAME` names a shipped model folder here too."""
    if folder is None or not str(folder).startswith("pretrained:"):
        return folder
    from hlotune.models.files import pretrained_folder

    return pretrained_folder(str(folder).removeprefix("pretrained:"))


def _add_ensemble(commands) -> None:
    ensemble = commands.add_parser(
        "ensemble", help="put trained models into one seed ensemble",
        description="Copy trained models (model folders or `hlotune train` outputs, typically "
        "one recipe trained with several --seed) into OUT, which then scores as one model "
        "wherever a model folder does: each member's scores standardised per graph, averaged.",
    )
    ensemble.add_argument("models", nargs="+", type=Path, metavar="MODEL_DIR")
    ensemble.add_argument("--out", required=True, type=Path, metavar="DIR")
    add_quiet(ensemble)
    ensemble.set_defaults(run=_ensemble)


def _ensemble(args: argparse.Namespace) -> int:
    from hlotune.models.ensemble import write_ensemble
    from hlotune.models.files import model_folder

    members = [model_folder(m) for m in args.models]
    out = write_ensemble(args.out, members)
    if not args.quiet:
        print(f"ensemble of {len(members)} models -> {out}")
    return 0


def _train(args: argparse.Namespace) -> int:
    from dataclasses import asdict

    from hlotune.train import train

    settings = recipe_settings(
        args, seed=args.seed, graphs_per_step=args.graphs_per_step, gst=_gst_settings(args),
        joint_data=args.joint_data, joint_weight=args.joint_weight,
    )
    result = train(args.data, args.valid, args.out, settings, model_settings=recipe_model_settings(args),
                   resume=args.resume, progress=not args.quiet)
    if os.environ.get("RANK", "0") != "0":  # torchrun: rank 0 reports
        return 0
    if args.json:
        print(json.dumps(asdict(result), default=str))  # model_dir is a Path
        return 0
    best = f"best epoch {result.best_epoch}" + (
        f" (valid {result.best_value:.3f})" if result.best_value is not None else "")
    print(f"trained {result.epochs_run} epochs, {best}"
          + (", stopped early" if result.stopped_early else "") + f" -> {result.model_dir}")
    return 0


def _gst_settings(args: argparse.Namespace):
    from hlotune.train.gst import GSTSettings

    given = {
        "segments_sampled": args.segments_sampled,
        "partition": args.partition,
        "dropout": args.segment_dropout,
    }
    given = {name: value for name, value in given.items() if value is not None}
    if args.segment_size is None:
        if given:
            raise HlotuneError("--segments-sampled, --partition and --segment-dropout need "
                               "--segment-size")
        return None
    return GSTSettings(args.segment_size, **given)
