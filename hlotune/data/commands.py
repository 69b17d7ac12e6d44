"""`hlotune data`: the built-in collections as public TpuGraphs files, and as shards again."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from hlotune.errors import HlotuneError


def add_commands(commands) -> None:
    """Register `data export` and `data pack` on the main parser's subparsers."""
    data = commands.add_parser(
        "data", help="export collections as TpuGraphs files; pack the built-in datasets",
        description="The built-in datasets live outside the package, as shards in datasets/ "
        "(or $HLOTUNE_DATA), unpacked on first use into ~/.cache/hlotune/datasets.")
    tasks = data.add_subparsers(title="data commands", required=True, metavar="COMMAND")
    export = tasks.add_parser(
        "export", help="write a tile or layout collection as the public TpuGraphs npz files",
        description="Write DATA's graphs with the official TpuGraphs arrays only (no runtime "
        "samples, 140 node features) as OUT/npz/layout/xla/random/SPLIT/*.npz or "
        "OUT/npz/tile/xla/SPLIT/*.npz, the layout tools written for the public dataset expect.")
    export.add_argument("data", metavar="DATA", help="builtin:layout/train, builtin:tile/valid, ... or a folder")
    export.add_argument("--out", type=Path, required=True, metavar="OUT")
    export.add_argument("--split", help="the split folder to write (default: DATA's split, else train)")
    export.add_argument("--json", action="store_true", help="print {\"files\", \"folder\"} as one JSON object")
    export.set_defaults(run=_export)
    pack = tasks.add_parser(
        "pack", help="make shards of an unpacked tree (after `hlotune rebuild dataset`)",
        description="Pack TREE (default: the unpacked tree of the datasets in use) into "
        "OUT's .tar.xz shards and MANIFEST.json, so a collection's new files can be committed.")
    pack.add_argument("--tree", type=Path, metavar="TREE")
    pack.add_argument("--out", type=Path, metavar="OUT", help="default: the datasets folder in use")
    pack.set_defaults(run=_pack)


def _export(args: argparse.Namespace) -> int:
    from hlotune.data.builtin import SPLITS, resolve
    from hlotune.data.dataset import Dataset
    from hlotune.data.export import export_tpugraphs

    folder = resolve(args.data)
    if not folder.is_dir():
        raise HlotuneError(f"{args.data}: no such folder")
    split = args.split or (folder.name if folder.name in SPLITS else "train")
    written = export_tpugraphs(Dataset(folder), args.out, split)
    target = written[0].parent if written else args.out
    if args.json:
        print(json.dumps({"files": len(written), "folder": str(target)}))
    else:
        print(f"wrote {len(written)} TpuGraphs files to {target}")
    return 0


def _pack(args: argparse.Namespace) -> int:
    from hlotune.data.store import Store, pack

    tree, out = args.tree, args.out
    if tree is None or out is None:
        store = Store.find()
        tree, out = tree or store.tree, out or store.folder
    packed = pack(tree, out)
    for shard in packed.shards.values():
        print(f"{shard.file}: {shard.files} files, {shard.bytes / 1e6:.1f} MB")
    print(f"edition {packed.edition}: commit {out}")
    return 0
