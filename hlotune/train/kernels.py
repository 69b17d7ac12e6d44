"""The old spelling `python -m hlotune.train.kernels`, for one release: the tool is now
`hlotune rebuild kernel-model`, and its code is in kernels/training.py."""

from hlotune.spellings import python_m

if __name__ == "__main__":
    python_m("hlotune.train.kernels", ["rebuild", "kernel-model"])
