"""The fleet: every program `hlotune.jit` recorded in a tuning database, its share of the
recorded time, and the decisions that apply to it (XTAT's AutoFDO loop: record, tune, apply)."""
