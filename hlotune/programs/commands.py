"""`hlotune zoo list`: the programs a spec can name, with their sizes and variants.

With --json, stdout holds one object per workload: name, source, library, version,
description, sizes and variants. The tables (and jax) load inside the handler so that `hlotune
--help` stays fast.
"""

from __future__ import annotations

import argparse
import json

MISSING = 'not installed: pip install "hlotune[corpus]"'


def add_commands(commands) -> None:
    """Register `zoo` and its `list` on the main parser's subparsers."""
    zoo = commands.add_parser("zoo", help="the built-in JAX programs, the corpus and the numerics")
    zoo_commands = zoo.add_subparsers(title="zoo commands", required=True, metavar="COMMAND")
    zoo_list = zoo_commands.add_parser(
        "list", help="list the zoo's, the corpus's and the numerics' programs, their sizes and variants",
        description="Every built-in workload (zoo:NAME), corpus model (corpus:NAME, real "
        "models from maintained libraries, the extra [corpus]) and numerical algorithm "
        "(numerics:NAME, benchmarks kept out of training) with its source library, version and "
        "sizes. A program is zoo:NAME@VARIANT or corpus:NAME@VARIANT, VARIANT = "
        "SIZE[-bBATCH][-train][-bf16]: e.g. zoo:resnet@small-b16-train; or numerics:NAME@SIZE.",
    )
    zoo_list.add_argument("--json", action="store_true", help="one JSON object per workload")
    zoo_list.set_defaults(run=_zoo_list)


def _zoo_list(args: argparse.Namespace) -> int:
    from importlib.metadata import version

    from hlotune.programs.corpus import CORPUS
    from hlotune.programs.numerics import NUMERICS
    from hlotune.programs.variants import corpus_variants, numerics_variants, zoo_variants
    from hlotune.programs.zoo import WORKLOADS

    rows = [("zoo", name, workload, "hlotune", version("hlotune"), zoo_variants(name))
            for name, workload in WORKLOADS.items()]
    rows += [("corpus", name, model, model.library, model.version, corpus_variants(name))
             for name, model in CORPUS.items()]
    rows += [("numerics", name, program, "hlotune", version("hlotune"), numerics_variants(name))
             for name, program in NUMERICS.items()]
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
              "corpus:hf-bert@base-b8-train-bf16 (-bf16: corpus models only); numerics:heat@small (a size only)")
    return 0
