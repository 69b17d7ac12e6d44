"""`python -m hlotune.train ARGS` = `hlotune train ARGS`, the entry point torchrun starts:

    torchrun --nproc_per_node=2 -m hlotune.train --data builtin:layout/train --out runs/ddp
"""

import sys

from hlotune.cli import main

sys.exit(main(["train", *sys.argv[1:]]))
