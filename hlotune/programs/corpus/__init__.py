"""The corpus: real programs from maintained libraries, `corpus:NAME[@SIZE[-bBATCH][-train][-bf16]]`
(hlotune.programs.corpus.base says what a corpus model is). One module per source library;
the libraries come with the extra `corpus` and are imported only when a program is built."""

from __future__ import annotations

from hlotune.programs.corpus import haiku_nets, hf, md, mjx
from hlotune.programs.corpus.base import CorpusModel
from hlotune.programs.program import CORPUS_PREFIX, Program
from hlotune.programs.variants import resolve_workload

CORPUS: dict[str, CorpusModel] = {model.name: model for module in (hf, haiku_nets, md, mjx) for model in module.MODELS}


def load_corpus_program(spec: str, *, abstract: bool = False) -> Program:
    resolved = resolve_workload(spec, CORPUS_PREFIX, CORPUS, "corpus program")
    fn, args = resolved.workload.program(
        resolved.size, train=resolved.train, bf16=resolved.bf16, batch=resolved.batch, abstract=abstract
    )
    return Program(resolved.name, fn, args)


__all__ = ["CORPUS", "CorpusModel", "load_corpus_program"]
