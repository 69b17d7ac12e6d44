"""`hlotune eval`, `hlotune cv` and `hlotune predict`: score a model's rankings on labelled
data, cross-validate one, and write a Kaggle submission.

With --json, stdout holds one object: an Evaluation, a CrossValidation, or {"csv", "rows"}.
Heavy modules (torch) load inside the handlers so that `hlotune --help` stays fast.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from hlotune.errors import HlotuneError
from hlotune.progress import add_quiet, progress_bar
from hlotune.spellings import moved
from hlotune.train.commands import add_recipe_arguments, recipe_model_settings, recipe_settings

DEFAULT_FOLDS = 4  # the built-in collections' 43 families: 10 or 11 a fold


def add_commands(commands) -> None:
    """Register `eval`, `cv` and `predict` on the main parser's subparsers."""
    _add_eval(commands)
    _add_cv(commands)
    _add_predict(commands)


def _add_eval(commands) -> None:
    evaluate = commands.add_parser(
        "eval",
        help="score a model's rankings on labelled data",
        description="Top-K error, Kendall tau and OPA per graph and averaged, with the noise "
        "ceiling where the files keep their samples. M: a model folder, baseline:random, "
        "baseline:analytical, baseline:gbdt[-rank] (trained on builtin:COLLECTION/train when "
        "first asked for) or baseline:gbdt[-rank]@DIR (trained on DIR).",
    )
    evaluate.add_argument("--model", required=True, metavar="M")
    evaluate.add_argument("--data", required=True, nargs="+", metavar="D",
                          help="folders, files or builtin:flags|layout[/SPLIT], pooled")
    evaluate.add_argument("--protocol", choices=("all", "paper"), default="all",
                          help="paper: score only the official config indices (--eval-indices)")
    evaluate.add_argument("--eval-indices", type=Path, metavar="JSON",
                          help="TpuGraphs eval_indices/{xla,nlp}_{default,random}.json")
    evaluate.add_argument("--json", action="store_true", help="print the result as one JSON object")
    evaluate.add_argument("--predictions", action="store_true",
                          help="with --json: each graph's runtimes and predicted scores too "
                          "(for hlotune report --eval)")
    add_quiet(evaluate)
    listed = len(evaluate._actions)
    evaluate.add_argument("--cv", choices=("family",))  # the old spelling of `hlotune cv`
    _add_cv_arguments(evaluate, evaluate)
    for action in evaluate._actions[listed:]:  # unlisted: they go with the old spelling
        action.help = argparse.SUPPRESS
    evaluate.set_defaults(run=_eval)


def _add_cv(commands) -> None:
    cv = commands.add_parser(
        "cv",
        help="cross-validate a model, leaving whole families out",
        description="Leave-family-out cross-validation on D's labelled graphs, pooled: the "
        "families are dealt into --folds folds, and each fold is scored by M trained on the "
        "other folds; per fold and mean ± std of eval's metrics. M: gnn (trained by the "
        "training options below without validation, its last epoch scored), "
        "baseline:gbdt[-rank], or an untrained baseline (baseline:analytical, baseline:random).",
    )
    cv.add_argument("--model", required=True, metavar="M")
    cv.add_argument("--data", required=True, nargs="+", metavar="D",
                    help="folders, files or builtin:flags|layout[/SPLIT], pooled")
    _add_cv_arguments(cv, cv.add_argument_group(
        "training options", "how --model gnn is trained in each fold (those of hlotune train)"))
    cv.add_argument("--json", action="store_true", help="print the result as one JSON object")
    add_quiet(cv)
    cv.set_defaults(run=_cross_validate)


def _add_cv_arguments(parser, training) -> None:
    """The options of `cv` that `eval` has not (the training options on `training`), which the
    old spelling `eval --cv` takes too."""
    parser.add_argument("--folds", type=int, metavar="K", help=f"folds (default {DEFAULT_FOLDS})")
    parser.add_argument("--seed", type=int, metavar="S",
                        help="deals the families and seeds gnn training (default 0)")
    add_recipe_arguments(training)


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


def _eval(args: argparse.Namespace) -> int:
    if args.cv is not None:
        return _old_cross_validate(args)
    if args.folds is not None or args.seed is not None:
        raise HlotuneError("--folds and --seed are options of hlotune cv")
    from hlotune.data.dataset import Dataset
    from hlotune.data.metrics import load_eval_indices
    from hlotune.evaluation.evaluate import evaluate, format_evaluation
    from hlotune.evaluation.scorers import load_scorer

    if args.protocol == "paper" and args.eval_indices is None:
        raise HlotuneError("--protocol paper needs --eval-indices (TpuGraphs eval_indices/*.json)")
    indices = load_eval_indices(args.eval_indices) if args.protocol == "paper" else None
    scorer = load_scorer(args.model)  # before the data: a missing model or extra fails first
    graphs = progress_bar(Dataset(args.data), show=not args.quiet, desc="eval", unit="graph",
                          leave=False)
    result = evaluate(graphs, scorer, eval_indices=indices,
                      predictions=args.predictions)
    data = " ".join(args.data)
    print(json.dumps(result.to_json()) if args.json else format_evaluation(result, args.model, data))
    return 0


def _old_cross_validate(args: argparse.Namespace) -> int:
    """`eval --cv family`, cross-validation's spelling before it had its own command."""
    moved("eval --cv", "hlotune cv")
    if args.protocol != "all" or args.eval_indices is not None or args.predictions:
        raise HlotuneError("--cv scores every config of every graph: no --protocol paper, "
                           "--eval-indices or --predictions")
    return _cross_validate(args)


def _cross_validate(args: argparse.Namespace) -> int:
    from hlotune.evaluation.crossval import cross_validate, format_cross_validation

    result = cross_validate(
        args.data, args.model, folds=DEFAULT_FOLDS if args.folds is None else args.folds,
        seed=args.seed or 0, settings=recipe_settings(args), model_settings=recipe_model_settings(args),
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
