"""The old spelling `python -m hlotune.collect.kernel_labels`, for one release: the tool is now
`hlotune rebuild kernel-labels`, and its code is in kernels/label_collection.py."""

from hlotune.spellings import python_m

if __name__ == "__main__":
    python_m("hlotune.collect.kernel_labels", ["rebuild", "kernel-labels"])
