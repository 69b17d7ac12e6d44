"""What hlotune learns about kernels: tile samples, the tile and kernel-label collections, and the kernel program model trained on them.

How the compiler is told a kernel's options (its key, KernelConfig, the pass inside XLA, the
kernel profile) stays in compiler/: a CompileConfig holds a KernelConfig, and the compiler's
spaces and measurements read kernel keys, so those pieces sit below everything here.
"""
