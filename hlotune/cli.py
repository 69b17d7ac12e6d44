"""The `hlotune` command: one entry point, one subcommand per stage of the pipeline."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from hlotune import __version__
from hlotune.errors import HlotuneError
from hlotune.opt.commands import add_commands as add_opt_commands
from hlotune.report.commands import add_commands as add_report_commands
from hlotune.tuning.commands import add_commands as add_tune_commands

DEFAULT_PROGRAM = "zoo:transformer@tiny-train"


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        return args.run(args)
    except HlotuneError as error:
        print(f"hlotune: error: {error}", file=sys.stderr)
        return 1
    except BrokenPipeError:  # `hlotune inspect ... | head`: the reader left, nothing to report
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except KeyboardInterrupt:
        print("hlotune: interrupted", file=sys.stderr)
        return 130
    except Exception as error:  # a bug, not bad input: still one line unless debugging
        if os.environ.get("HLOTUNE_DEBUG"):
            raise
        print(
            f"hlotune: internal error: {type(error).__name__}: {error} "
            "(set HLOTUNE_DEBUG=1 for the traceback)",
            file=sys.stderr,
        )
        return 3


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="hlotune",
        description="ML for ML compilers: TpuGraphs-compatible graphs of XLA programs, "
        "learned cost models and autotuning.",
    )
    parser.add_argument("--version", action="version", version=f"hlotune {__version__}")
    commands = parser.add_subparsers(title="commands", required=True, metavar="COMMAND")
    _add_featurize(commands)
    _add_inspect(commands)
    _add_collect(commands)
    _add_train(commands)
    _add_evaluate(commands)
    _add_predict(commands)
    _add_zoo(commands)
    _add_bench(commands)
    add_opt_commands(commands)
    add_tune_commands(commands)
    add_report_commands(commands)
    return parser


def _add_featurize(commands) -> None:
    featurize = commands.add_parser(
        "featurize",
        help="turn a program, HLO text or .pb into TpuGraphs arrays",
        description="Featurize SRC into TpuGraphs arrays (node_feat 140, node_opcode, "
        "edge_index, node_splits; plus the configs of a raw TpuGraphs record) and print a "
        "summary. SRC: zoo:NAME[@VARIANT], path/to/file.py:FACTORY, an HLO text file, or a .pb "
        "(HloModuleProto or raw TpuGraphs record).",
    )
    featurize.add_argument("source", nargs="?", default=DEFAULT_PROGRAM, metavar="SRC",
                           help=f"what to featurize (default: {DEFAULT_PROGRAM})")
    featurize.add_argument("-o", "--output", type=Path,
                           help="write OUT.npz (a folder when SRC holds several modules)")
    featurize.add_argument("--optimized", action="store_true",
                           help="featurize the module after XLA:CPU's optimisation passes")
    featurize.add_argument("--extended", action="store_true",
                           help="append the extended features (docs/features.md)")
    featurize.add_argument("--json", action="store_true", help="print one JSON object per module")
    featurize.set_defaults(run=_featurize)


def _add_inspect(commands) -> None:
    inspect = commands.add_parser(
        "inspect",
        help="describe and validate TpuGraphs files",
        description="Describe every TpuGraphs file at PATH (a file or a dataset folder): nodes, "
        "edges, configs, configurable nodes, opcode histogram, runtime statistics and the "
        "validation result. Exit code 0 only if every file is valid.",
    )
    inspect.add_argument("path", metavar="PATH", help="a file, a folder or builtin:flags|layout[/SPLIT]")
    inspect.add_argument("--json", action="store_true", help="print one JSON object per file")
    inspect.set_defaults(run=_inspect)


def _add_collect(commands) -> None:
    collect = commands.add_parser(
        "collect",
        help="measure programs under many compiler configs into a dataset",
        description="Compile and measure each PROGRAM under --configs configurations of one "
        "space (flags: XLA options; layout: per-tensor layouts) on this machine, and write "
        "OUT/NAME.npz (TpuGraphs format, with every sample) and OUT/NAME.json (noise floor, "
        "failures, machine). Re-running the same command resumes where it stopped.",
    )
    collect.add_argument("--space", choices=("flags", "layout"), required=True)
    collect.add_argument("--program", nargs="+", required=True, metavar="SPEC",
                         help="zoo:NAME[@VARIANT] or path/to/file.py:FACTORY")
    collect.add_argument("--configs", type=int, default=64, help="configs per program (default 64)")
    collect.add_argument("--samples", type=int, default=30, help="samples per config (default 30)")
    collect.add_argument("--seed", type=int, default=0)
    collect.add_argument("--search", choices=("random", "default"), default="random",
                         help="layout sampler: uniform (random) or around the default (default)")
    collect.add_argument("--batch", type=int, default=8, help="configs measured together")
    collect.add_argument("--out", type=Path, required=True, metavar="DIR")
    collect.add_argument("--json", action="store_true", help="print one JSON object per program")
    collect.set_defaults(run=_collect)


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
    train.add_argument("--epochs", type=int, default=20)
    train.add_argument("--loss", default="pairwise_hinge",
                       help="mse, pairwise_hinge, pairwise_logistic, listmle, or weighted "
                       "combinations like mse:1,pairwise_hinge:1 (default pairwise_hinge)")
    train.add_argument("--seed", type=int, default=0)
    train.add_argument("--configs-per-batch", type=int, default=16)
    train.add_argument("--lr", type=float, default=1e-3)
    train.add_argument("--layers", type=int, default=3, help="GraphSAGE layers")
    train.add_argument("--hidden", type=int, default=64)
    train.add_argument("--join", choices=("early", "late"), default="late",
                       help="where graph-level configs (tile, flags) join")
    train.add_argument("--attention", action="store_true", help="cross-config attention")
    train.add_argument("--layout-join", choices=("nodes", "late"), default="nodes",
                       help="layout configs join at their nodes before message passing (nodes) "
                       "or meet the nodes' final embeddings (late: much faster ranking)")
    train.add_argument("--prune-hops", type=int,
                       help="layout: propagate configs only within this many hops")
    train.add_argument("--collapse-chains", action="store_true",
                       help="collapse chains of nodes with one operand, one user and no config "
                       "(kept in the model: eval and predict collapse too)")
    train.add_argument("--drop-duplicate-configs", action="store_true",
                       help="keep identical configs of a graph once (the median runtime one)")
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
    train.set_defaults(run=_train)


def _add_evaluate(commands) -> None:
    evaluate = commands.add_parser(
        "eval",
        help="score a model's rankings on labelled data",
        description="Top-K error, Kendall tau and OPA per graph and averaged, with the noise "
        "ceiling where the files keep their samples. M: a model folder, baseline:random, "
        "baseline:analytical, baseline:gbdt (trained on builtin:COLLECTION/train when first "
        "asked for) or baseline:gbdt@DIR (trained on DIR).",
    )
    evaluate.add_argument("--model", required=True, metavar="M")
    evaluate.add_argument("--data", required=True, metavar="D")
    evaluate.add_argument("--protocol", choices=("all", "paper"), default="all",
                          help="paper: score only the official config indices (--eval-indices)")
    evaluate.add_argument("--eval-indices", type=Path, metavar="JSON",
                          help="TpuGraphs eval_indices/{xla,nlp}_{default,random}.json")
    evaluate.add_argument("--json", action="store_true", help="print one JSON object last")
    evaluate.add_argument("--predictions", action="store_true",
                          help="with --json: each graph's runtimes and predicted scores too "
                          "(for hlotune report --eval)")
    evaluate.set_defaults(run=_eval)


def _add_predict(commands) -> None:
    predict = commands.add_parser(
        "predict",
        help="write a Kaggle submission CSV",
        description="Rank every graph's configs under D (labelled or not) and write the Kaggle "
        "'Fast or Slow' CSV: ID,TopConfigs, top 5 for tile, the full ranking for layout.",
    )
    predict.add_argument("--model", required=True, metavar="M")
    predict.add_argument("--data", required=True, metavar="D")
    predict.add_argument("--csv", required=True, type=Path, metavar="OUT")
    predict.set_defaults(run=_predict)


def _add_zoo(commands) -> None:
    zoo = commands.add_parser("zoo", help="the built-in JAX programs")
    zoo_commands = zoo.add_subparsers(title="zoo commands", required=True, metavar="COMMAND")
    zoo_list = zoo_commands.add_parser(
        "list", help="list the workloads, their sizes and variants",
        description="Every built-in workload with its sizes. A program is zoo:NAME@VARIANT, "
        "VARIANT = SIZE[-bBATCH][-train]: e.g. zoo:resnet@small-b16-train.",
    )
    zoo_list.add_argument("--json", action="store_true", help="one JSON object per workload")
    zoo_list.set_defaults(run=_zoo_list)


def _add_bench(commands) -> None:
    bench = commands.add_parser("bench", help="benchmarks of hlotune itself")
    bench_commands = bench.add_subparsers(title="benchmarks", required=True, metavar="BENCH")
    scale = bench_commands.add_parser(
        "scale", help="training memory and time on one graph of N nodes",
        description="Build a graph of N nodes from real zoo programs' HLO (layout-like configs, "
        "synthetic runtimes), train a few steps on it whole (full) or by graph segment "
        "training (gst), and report nodes, edges, mode, peak_rss_mb, step_s and configs. "
        "Run each size in a fresh process: peak RSS is the process's.",
    )
    scale.add_argument("--nodes", type=int, required=True, metavar="N")
    scale.add_argument("--mode", choices=("gst", "full"), required=True)
    scale.add_argument("--steps", type=int, default=3, help="training steps (default 3)")
    scale.add_argument("--configs", type=int, default=4, help="configs per step (default 4)")
    scale.add_argument("--segment-size", type=int, default=20_000, help="gst (default 20000)")
    scale.add_argument("--segments-sampled", type=int, default=1, help="gst (default 1)")
    scale.add_argument("--max-rss-mb", type=float, help="stop (exit 2) past this RSS")
    scale.add_argument("--cache", type=Path, metavar="DIR", help="keep the built graphs here")
    scale.add_argument("--json", action="store_true", help="print one JSON object last")
    scale.set_defaults(run=_bench_scale)


def _bench_scale(args: argparse.Namespace) -> int:
    from dataclasses import asdict

    from hlotune.bench.scale import ScaleSettings, run

    result = run(ScaleSettings(
        nodes=args.nodes, mode=args.mode, steps=args.steps, configs=args.configs,
        segment_size=args.segment_size, segments_sampled=args.segments_sampled,
        max_rss_mb=args.max_rss_mb, cache=args.cache,
    ))
    if args.json:
        print(json.dumps(asdict(result)))
    else:
        print(f"{result.nodes:,} nodes, {result.edges:,} edges, {result.mode}: peak RSS "
              f"{result.peak_rss_mb:,.0f} MB, {result.step_s:.2f} s/step "
              f"({result.configs} configs per step, synthetic runtimes)")
    return 0


def _featurize(args: argparse.Namespace) -> int:
    from hlotune.data.npz import write_sample
    from hlotune.hlo.sources import load_samples
    from hlotune.inspect import describe, format_inspection

    samples = load_samples(args.source, optimized=args.optimized, extended=args.extended)
    targets = _output_paths(args.output, samples)
    for sample, target in zip(samples, targets):
        if target is not None:
            write_sample(target, sample)
        info = describe(sample, str(target or sample.name), [])
        print(json.dumps(info.to_json()) if args.json else format_inspection(info))
    return 0


def _output_paths(output: Path | None, samples) -> list[Path | None]:
    if output is None:
        return [None] * len(samples)
    if len(samples) == 1:
        return [output if output.suffix == ".npz" else output / f"{samples[0].name}.npz"]
    if output.suffix == ".npz":
        raise HlotuneError(
            f"SRC holds {len(samples)} modules: give -o a folder, not the file {output}"
        )
    return [output / f"{sample.name}.npz" for sample in samples]


def _inspect(args: argparse.Namespace) -> int:
    from hlotune.inspect import format_inspection, inspect_path

    all_valid = True
    for info in inspect_path(args.path):
        all_valid &= info.valid
        print(json.dumps(info.to_json()) if args.json else format_inspection(info), flush=True)
    return 0 if all_valid else 1


def _collect(args: argparse.Namespace) -> int:
    from dataclasses import asdict

    from hlotune.collect.collector import CollectSettings, collect

    settings = CollectSettings(
        space=args.space, configs=args.configs, samples=args.samples, seed=args.seed,
        search=args.search, batch=args.batch,
    )
    for spec in args.program:
        result = collect(spec, settings, args.out)
        if args.json:
            print(json.dumps(asdict(result)), flush=True)
        else:
            print(
                f"{result.program}: {result.configs} configs ({result.failed} failed) in "
                f"{result.seconds:.1f} s, noise floor {result.noise_floor:.1%}, "
                f"spread {result.spread:.2f}x -> {result.path}"
                + (" (resumed)" if result.resumed else ""),
                flush=True,
            )
    return 0


def _train(args: argparse.Namespace) -> int:
    from hlotune.models.config import ModelConfig
    from hlotune.train import train

    model_config = ModelConfig(
        hidden_dim=args.hidden, num_layers=args.layers, join=args.join, layout_join=args.layout_join,
        cross_config_attention=args.attention, prune_hops=args.prune_hops,
        collapse_chains=args.collapse_chains,
    )
    result = train(
        args.data, args.valid, args.out, epochs=args.epochs, loss=args.loss, seed=args.seed,
        configs_per_batch=args.configs_per_batch, lr=args.lr, model_config=model_config,
        graphs_per_step=args.graphs_per_step, drop_duplicate_configs=args.drop_duplicate_configs,
        gst=_gst_settings(args), resume=args.resume,
    )
    if os.environ.get("RANK", "0") != "0":  # torchrun: rank 0 reports
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


def _eval(args: argparse.Namespace) -> int:
    from hlotune.data.dataset import Dataset
    from hlotune.evaluate import evaluate, format_evaluation
    from hlotune.metrics import load_eval_indices
    from hlotune.scorers import load_scorer

    if args.protocol == "paper" and args.eval_indices is None:
        raise HlotuneError("--protocol paper needs --eval-indices (TpuGraphs eval_indices/*.json)")
    indices = load_eval_indices(args.eval_indices) if args.protocol == "paper" else None
    result = evaluate(Dataset(args.data), load_scorer(args.model), eval_indices=indices,
                      predictions=args.predictions)
    print(json.dumps(result.to_json()) if args.json else format_evaluation(result, args.model, args.data))
    return 0


def _predict(args: argparse.Namespace) -> int:
    from hlotune.data.dataset import Dataset
    from hlotune.data.kaggle import submission_id, top_configs, write_submission
    from hlotune.scorers import load_scorer

    score = load_scorer(args.model)
    dataset = Dataset(args.data)
    rows = {}
    for index, sample in enumerate(dataset):
        info = dataset.info_of(index)
        if sample.collection not in ("tile", "layout") or info.source is None:
            raise HlotuneError(
                f"{dataset.paths[index]}: a Kaggle row needs a TpuGraphs tile or layout file "
                "under .../tile/SOURCE/... or .../layout/SOURCE/SEARCH/..."
            )
        row = submission_id(sample.collection, info.source, info.search, sample.name)
        rows[row] = top_configs(score(sample), sample.collection)
    write_submission(args.csv, rows)
    print(f"{len(rows)} rows -> {args.csv}")
    return 0


def _zoo_list(args: argparse.Namespace) -> int:
    from hlotune.program import zoo_variants
    from hlotune.zoo import WORKLOADS

    for name, workload in WORKLOADS.items():
        if args.json:
            print(json.dumps({"name": name, "description": workload.description,
                              "sizes": workload.sizes, "variants": zoo_variants(name)}))
            continue
        print(f"zoo:{name:<12} {workload.description}")
        for size, shape in workload.sizes.items():
            print(f"    @{size:<6} " + ", ".join(f"{k}={v}" for k, v in shape.items()))
    if not args.json:
        print("variants: SIZE[-bBATCH][-train], e.g. zoo:resnet@small-b16-train")
    return 0


if __name__ == "__main__":
    sys.exit(main())
