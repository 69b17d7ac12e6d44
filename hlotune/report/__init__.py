"""Reports people look at: a tuning database or an evaluation as one self-contained HTML page.

    hlotune report [--db PATH] [PROGRAM] --out FILE.html     (tuning.py)
    hlotune report --eval EVAL.json --out FILE.html           (evaluation.py)
"""
