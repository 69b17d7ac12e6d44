"""A copy of an hlotune-measured dataset with the extended node features (docs/features.md).

The built-in collections are featurized with the 140 TpuGraphs columns. Their graphs are the
programs' own, so featurizing each program again with `extended=True` gives the same nodes in
the same order plus the extra columns: this copies every npz (and its JSON) from SRC to DST with
those columns appended, checking that the first 140 columns and the opcodes agree. Nothing is
measured; a model trained on DST reads `node_feat_dim` 188 from the data.

    python benchmarks/extended_dataset.py builtin:layout /tmp/builtin-extended/layout
    python benchmarks/cost_model_table.py --collection layout --root /tmp/builtin-extended
"""

from __future__ import annotations

import json
import shutil
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np

import harness
from hlotune.compiler.configs.layouts import LayoutSpace
from hlotune.data.builtin import resolve
from hlotune.data.npz import read_sample, write_sample
from hlotune.hlo.featurize import featurize
from hlotune.programs import load_program


def extend(npz: Path, out: Path) -> None:
    sample = read_sample(npz)
    program = load_program(json.loads(npz.with_suffix(".json").read_text())["program"])
    graph = featurize(LayoutSpace(program).graph, extended=True, progress=False)
    base = sample.graph.node_feat.shape[1]
    if not (np.array_equal(graph.node_opcode, sample.graph.node_opcode)
            and np.allclose(graph.node_feat[:, :base], sample.graph.node_feat)):
        raise SystemExit(f"{npz}: the program's graph today is not the one collected")
    write_sample(out, replace(sample, graph=replace(sample.graph, node_feat=graph.node_feat)))
    shutil.copyfile(npz.with_suffix(".json"), out.with_suffix(".json"))


def main() -> None:
    parser = harness.parser(__doc__)
    parser.add_argument("source", type=resolve,
                        help="a dataset folder or builtin:COLLECTION: every npz below it is copied")
    parser.add_argument("out", type=Path)
    args = parser.parse_args()
    for npz in sorted(args.source.rglob("*.npz")):
        target = args.out / npz.relative_to(args.source)
        if not target.exists():  # resumable
            extend(npz, target)
            print(f"{target}", file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()
