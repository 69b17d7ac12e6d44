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
from hlotune.progress import add_quiet, progress_bar
from hlotune.report.commands import add_commands as add_report_commands
from hlotune.train.commands import add_commands as add_train_commands
from hlotune.train.commands import add_recipe_arguments, recipe_model_config, recipe_settings
from hlotune.tuning.commands import add_commands as add_tune_commands

DEFAULT_PROGRAM = "zoo:transformer@tiny-train"
DEFAULT_FOLDS = 4  # the built-in collections' 12 families: 3 a fold
EPILOG = """\
conventions:
  --json      stdout holds JSON and nothing else: one object per line where a command
              reports several items (files, modules, programs), else one object
  --quiet     no progress bars or progress messages on stderr (bars are drawn only
              on a terminal: never into logs or pipes)

exit codes:
  0    success
  1    bad input: a missing or invalid file, option value or name, a missing extra
  2    usage: unknown command or option (argparse)
  3    internal error (set HLOTUNE_DEBUG=1 for the traceback)
  130  interrupted (Ctrl-C)
"""


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
        description="ML for ML compilers: TpuGraphs-compatible graphs of XLA programs,\n"
        "learned cost models and autotuning.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"hlotune {__version__}")
    commands = parser.add_subparsers(title="commands", required=True, metavar="COMMAND")
    _add_featurize(commands)
    _add_inspect(commands)
    _add_collect(commands)
    add_train_commands(commands)
    _add_evaluate(commands)
    _add_predict(commands)
    _add_zoo(commands)
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
    add_quiet(featurize)
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
    collect.add_argument("--noise-target", type=float, metavar="F",
                         help="take more rounds until each config's median is known within F "
                         "(95%% confidence interval, relative), up to 100 rounds or 10 minutes a "
                         "batch; the summary says which configs reached it")
    collect.add_argument("--out", type=Path, required=True, metavar="DIR")
    collect.add_argument("--json", action="store_true", help="print one JSON object per program")
    add_quiet(collect)
    collect.set_defaults(run=_collect)




def _add_evaluate(commands) -> None:
    evaluate = commands.add_parser(
        "eval",
        help="score a model's rankings on labelled data",
        description="Top-K error, Kendall tau and OPA per graph and averaged, with the noise "
        "ceiling where the files keep their samples. M: a model folder, baseline:random, "
        "baseline:analytical, baseline:gbdt[-rank] (trained on builtin:COLLECTION/train when "
        "first asked for) or baseline:gbdt[-rank]@DIR (trained on DIR). With --cv family: "
        "leave-family-out cross-validation on D's labelled graphs, pooled: the families are "
        "dealt into --folds folds, and each fold is scored by M trained on the other folds "
        "(M: gnn, trained by the training options below without validation, its last epoch "
        "scored; baseline:gbdt[-rank]; or an untrained baseline); per fold and mean ± std.",
    )
    evaluate.add_argument("--model", required=True, metavar="M")
    evaluate.add_argument("--data", required=True, nargs="+", metavar="D",
                          help="folders, files or builtin:flags|layout[/SPLIT], pooled")
    evaluate.add_argument("--cv", choices=("family",),
                          help="family: leave-family-out cross-validation")
    evaluate.add_argument("--folds", type=int, metavar="K",
                          help=f"with --cv: folds (default {DEFAULT_FOLDS})")
    evaluate.add_argument("--seed", type=int, metavar="S",
                          help="with --cv: deals the families and seeds gnn training (default 0)")
    evaluate.add_argument("--protocol", choices=("all", "paper"), default="all",
                          help="paper: score only the official config indices (--eval-indices)")
    evaluate.add_argument("--eval-indices", type=Path, metavar="JSON",
                          help="TpuGraphs eval_indices/{xla,nlp}_{default,random}.json")
    evaluate.add_argument("--json", action="store_true", help="print the result as one JSON object")
    evaluate.add_argument("--predictions", action="store_true",
                          help="with --json: each graph's runtimes and predicted scores too "
                          "(for hlotune report --eval)")
    add_quiet(evaluate)
    add_recipe_arguments(evaluate.add_argument_group(
        "training options", "how --cv trains --model gnn in each fold (those of hlotune train)"))
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
    predict.add_argument("--json", action="store_true", help="print the result as one JSON object")
    add_quiet(predict)
    predict.set_defaults(run=_predict)


def _add_zoo(commands) -> None:
    zoo = commands.add_parser("zoo", help="the built-in JAX programs and the corpus")
    zoo_commands = zoo.add_subparsers(title="zoo commands", required=True, metavar="COMMAND")
    zoo_list = zoo_commands.add_parser(
        "list", help="list the zoo's and the corpus's programs, their sizes and variants",
        description="Every built-in workload (zoo:NAME) and corpus model (corpus:NAME, real "
        "models from maintained libraries, the extra [corpus]) with its source library, version "
        "and sizes. A program is zoo:NAME@VARIANT or corpus:NAME@VARIANT, VARIANT = "
        "SIZE[-bBATCH][-train][-bf16]: e.g. zoo:resnet@small-b16-train.",
    )
    zoo_list.add_argument("--json", action="store_true", help="one JSON object per workload")
    zoo_list.set_defaults(run=_zoo_list)






def _featurize(args: argparse.Namespace) -> int:
    from hlotune.data.npz import write_sample
    from hlotune.hlo.sources import load_samples
    from hlotune.hlo.inspection import describe, format_inspection

    samples = load_samples(args.source, optimized=args.optimized, extended=args.extended,
                           progress=not args.quiet)
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
    from hlotune.hlo.inspection import format_inspection, inspect_path

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
        search=args.search, batch=args.batch, noise_target=args.noise_target,
    )
    for spec in args.program:
        result = collect(spec, settings, args.out, progress=not args.quiet)
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






def _eval(args: argparse.Namespace) -> int:
    if args.cv is not None:
        return _cross_validate(args)
    if args.folds is not None or args.seed is not None:
        raise HlotuneError("--folds and --seed need --cv family")
    from hlotune.data.dataset import Dataset
    from hlotune.data.metrics import load_eval_indices
    from hlotune.evaluation.evaluate import evaluate, format_evaluation
    from hlotune.evaluation.scorers import load_scorer

    if args.protocol == "paper" and args.eval_indices is None:
        raise HlotuneError("--protocol paper needs --eval-indices (TpuGraphs eval_indices/*.json)")
    indices = load_eval_indices(args.eval_indices) if args.protocol == "paper" else None
    graphs = progress_bar(Dataset(args.data), show=not args.quiet, desc="eval", unit="graph",
                          leave=False)
    result = evaluate(graphs, load_scorer(args.model), eval_indices=indices,
                      predictions=args.predictions)
    data = " ".join(args.data)
    print(json.dumps(result.to_json()) if args.json else format_evaluation(result, args.model, data))
    return 0


def _cross_validate(args: argparse.Namespace) -> int:
    from hlotune.evaluation.crossval import cross_validate, format_cross_validation

    if args.protocol != "all" or args.eval_indices is not None or args.predictions:
        raise HlotuneError("--cv scores every config of every graph: no --protocol paper, "
                           "--eval-indices or --predictions")
    result = cross_validate(
        args.data, args.model, folds=DEFAULT_FOLDS if args.folds is None else args.folds,
        seed=args.seed or 0, settings=recipe_settings(args), model_config=recipe_model_config(args),
        progress=not args.quiet,
    )
    print(json.dumps(result.to_json()) if args.json
          else format_cross_validation(result, " ".join(args.data)))
    return 0


def _predict(args: argparse.Namespace) -> int:
    from hlotune.data.dataset import Dataset
    from hlotune.data.kaggle import submission_id, top_configs, write_submission
    from hlotune.evaluation.scorers import load_scorer

    score = load_scorer(args.model)
    dataset = Dataset(args.data)
    rows = {}
    graphs = progress_bar(dataset, show=not args.quiet, desc="predict", unit="graph", leave=False)
    for index, sample in enumerate(graphs):
        info = dataset.info_of(index)
        if sample.collection not in ("tile", "layout") or info.source is None:
            raise HlotuneError(
                f"{dataset.paths[index]}: a Kaggle row needs a TpuGraphs tile or layout file "
                "under .../tile/SOURCE/... or .../layout/SOURCE/SEARCH/..."
            )
        row = submission_id(sample.collection, info.source, info.search, sample.name)
        rows[row] = top_configs(score(sample), sample.collection)
    write_submission(args.csv, rows)
    print(json.dumps({"csv": str(args.csv), "rows": len(rows)}) if args.json
          else f"{len(rows)} rows -> {args.csv}")
    return 0


MISSING = 'not installed: pip install "hlotune[corpus]"'


def _zoo_list(args: argparse.Namespace) -> int:
    from importlib.metadata import version

    from hlotune.programs.corpus import CORPUS
    from hlotune.programs.variants import corpus_variants, zoo_variants
    from hlotune.zoo import WORKLOADS

    rows = [("zoo", name, workload, "hlotune", version("hlotune"), zoo_variants(name))
            for name, workload in WORKLOADS.items()]
    rows += [("corpus", name, model, model.library, model.version, corpus_variants(name))
             for name, model in CORPUS.items()]
    for source, name, workload, library, installed, variants in rows:
        if args.json:
            print(json.dumps({"name": name, "source": source, "library": library,
                              "version": installed, "description": workload.description,
                              "sizes": workload.sizes, "variants": variants}))
            continue
        print(f"{source}:{name:<16} {workload.description} [{library} {installed or MISSING}]")
        for size, shape in workload.sizes.items():
            print(f"    @{size:<6} " + ", ".join(f"{k}={v}" for k, v in shape.items()))
    if not args.json:
        print("variants: SIZE[-bBATCH][-train][-bf16], e.g. zoo:resnet@small-b16-train, "
              "corpus:hf-bert@base-b8-train-bf16 (-bf16: corpus models only)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
