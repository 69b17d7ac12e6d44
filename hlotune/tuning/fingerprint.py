"""A program's identity for the tuning database: what it computes, not what it is called.

`zoo:mlp@small` or `model.py:make` name code that changes; a measurement is only reusable for
the same computation on the same argument shapes. So the fingerprint hashes the lowered
(unoptimised) HloModuleProto, which changes whenever the computation does, and the arguments'
shapes and dtypes. Parts of the proto that say where and when it was made, not what it
computes, are left out: the module id (a per-process counter), the stack-frame table (it holds
the caller's whole Python stack) and each instruction's metadata (source lines, op names).
"""

from __future__ import annotations

import hashlib

import numpy as np

from hlotune.hlo import lowering
from hlotune.hlo import wire
from hlotune.programs import Program

# Field numbers of XLA's hlo.proto.
_MODULE_ID, _MODULE_STACK_FRAMES, _MODULE_COMPUTATIONS = 5, 17, 3
_COMPUTATION_INSTRUCTIONS = 2
_INSTRUCTION_METADATA = 7


def program_fingerprint(program: Program) -> str:
    """sha256 (hex) of the lowered HLO module proto (what it computes) and the flat
    arguments' shapes and dtypes."""
    import jax

    digest = hashlib.sha256()
    module = wire.decode(lowering.lowered_proto(program.fn, program.args))
    _hash_fields(digest, module, skip={_MODULE_ID, _MODULE_STACK_FRAMES, _MODULE_COMPUTATIONS})
    for computation in wire.iter_messages(module, _MODULE_COMPUTATIONS):
        _hash_fields(digest, computation, skip={_COMPUTATION_INSTRUCTIONS})
        for instruction in wire.iter_messages(computation, _COMPUTATION_INSTRUCTIONS):
            _hash_fields(digest, instruction, skip={_INSTRUCTION_METADATA})
    for leaf in jax.tree_util.tree_leaves(program.args):
        digest.update(f"{np.dtype(leaf.dtype).name}{list(np.shape(leaf))};".encode())
    return digest.hexdigest()


def _hash_fields(digest, fields: wire.Fields, skip: set[int]) -> None:
    """Every field but `skip`, in field-number order, each value length-prefixed."""
    for number in sorted(fields.keys() - skip):
        for value in fields[number]:
            data = value if isinstance(value, bytes) else str(value).encode()
            digest.update(f"{number}:{len(data)}:".encode() + data)
