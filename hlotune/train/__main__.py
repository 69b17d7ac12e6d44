"""`python -m hlotune.train ARGS` = `hlotune train ARGS`, the entry point torchrun starts:

    torchrun --nproc_per_node=2 -m hlotune.train --data builtin:layout/train --out runs/ddp
"""

import argparse
import sys

from hlotune.errors import HlotuneError
from hlotune.train.commands import add_commands


def _main() -> int:
    parser = argparse.ArgumentParser(prog="python -m hlotune.train")
    add_commands(parser.add_subparsers(required=True))
    args = parser.parse_args(["train", *sys.argv[1:]])
    try:
        return args.run(args)
    except HlotuneError as error:
        print(f"hlotune: error: {error}", file=sys.stderr)
        return 1


sys.exit(_main())
