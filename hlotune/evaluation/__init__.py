"""Judging cost models: the harness behind `hlotune eval` and `hlotune predict`.

    registry.py   the model names (a folder, pretrained:, baseline:), listed without importing a model
    scorers.py    each name's model as a Scorer
    evaluate.py   a Scorer's metrics on labelled graphs, beside the noise ceiling
    crossval.py   leave-family-out cross-validation: a model trained and scored per fold

It sits above train/, since cross-validation trains, and below tuning/, whose cost model ranks
with scorers. The metrics themselves are `hlotune.data.metrics`, shared with the trainer's
validation.
"""
