"""Judging cost models: the harness behind `hlotune eval` and `hlotune predict`.

    scorers.py    models by name (a folder, pretrained:, baseline:) as Scorers
    evaluate.py   a Scorer's metrics on labelled graphs, beside the noise ceiling
    crossval.py   leave-family-out cross-validation: a model trained and scored per fold

It sits above train/, since cross-validation trains, and below tuning/, whose cost model ranks
with scorers. The metrics themselves are `hlotune.data.metrics`, shared with the trainer's
validation.
"""
