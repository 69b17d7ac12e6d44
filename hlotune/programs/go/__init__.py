"""GO-scale graphs (Zhou et al. 2020's benchmarks) built in JAX: `go:NAME[@VARIANT]` specs.

    rnnlm      LSTM language model, unrolled over time
    nmt        LSTM encoder-decoder with attention, unrolled
    txl        Transformer-XL-like LM with segment memory, unrolled over segments
    inception  Inception-like CNN (parallel convolution branches)
    amoebanet  AmoebaNet-like CNN (NAS cells of two-branch blocks)
    wavenet    WaveNet-like dilated causal convolution stacks

Each is a zoo Workload (hlotune.programs.zoo.base) at sizes `tiny` (tests: a few hundred ops), `small`
(one to a few thousand ops) and `large` (10k to 50k ops as a `-train` step); VARIANT is the
zoo's `SIZE[-bBATCH][-train]`. Loops are unrolled in Python so each step is its own ops in the
entry computation, as in GO's graphs. They live apart from hlotune.programs.zoo so that the zoo's
compile-and-run tests, which iterate every zoo workload, stay cheap.
"""

from __future__ import annotations

from hlotune.programs.go import conv, rnn, transformer_xl, wavenet
from hlotune.programs.program import GO_PREFIX, Program
from hlotune.programs.variants import resolve_workload
from hlotune.programs.zoo.base import Workload

GO_WORKLOADS: dict[str, Workload] = {
    w.name: w
    for w in (rnn.RNNLM, rnn.NMT, transformer_xl.WORKLOAD, conv.INCEPTION, conv.AMOEBANET,
              wavenet.WORKLOAD)
}


def load_go_program(spec: str, *, abstract: bool = False) -> Program:
    """The program of a `go:NAME[@SIZE[-bBATCH][-train]]` spec (default size: tiny). With
    `abstract`, its arguments are shapes (jax.ShapeDtypeStruct): the simulator and the
    featurizer need only the graph, and making real parameters for the large sizes takes
    minutes of random-number kernels."""
    resolved = resolve_workload(spec, GO_PREFIX, GO_WORKLOADS, "GO graph")
    fn, args = resolved.workload.program(resolved.size, train=resolved.train, batch=resolved.batch,
                                         abstract=abstract)
    return Program(resolved.name, fn, args)
