"""`python -m hlotune.train ARGS` is `hlotune train ARGS`, exit codes and all: torchrun starts a
module, so this is the name to give it.

    torchrun --nproc_per_node=2 -m hlotune.train --data builtin:layout/train --out runs/ddp
"""

from hlotune.spellings import become

become(["train"])
