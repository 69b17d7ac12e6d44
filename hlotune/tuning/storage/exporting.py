"""A tune's decision in the formats users apply it with: JSON, a compiler_options dict, or an
XLA_FLAGS string. Layouts and per-kernel options are not XLA options: the two flag formats drop
them, and the note says so."""

from __future__ import annotations

import json

from hlotune.compiler.measurement.machine import Machine
from hlotune.errors import HlotuneError
from hlotune.tuning.storage.base import Decision, Export

EXPORT_FORMATS = ("json", "compiler_options", "xla_flags")


class Exporting:
    """Part of TuningDatabase (sql.py), reading its decisions and names."""

    machine: Machine

    def export(self, fingerprint: str, fmt: str) -> Export:
        """The chosen config of the latest tune of the program, in the format `fmt`."""
        if fmt not in EXPORT_FORMATS:
            raise HlotuneError(f"unknown export format {fmt!r}: use {', '.join(EXPORT_FORMATS)}")
        best = self.decision(fingerprint)
        if best is None:
            raise HlotuneError(f"{self.name_of(fingerprint)}: not tuned on this machine yet (run hlotune tune)")
        config = best.chosen
        numerics = ("the tuned config changes numerics by design (it was searched with "
                    "--allow-numerics-change)" if config.flags.changes_numerics else "")
        if fmt == "json":
            return Export(json.dumps(self._export_json(best), indent=1), numerics)
        sites, kernels = len(config.layout.layouts), len(config.kernels.partitions) + len(config.kernels.fusion)
        parts = [f"{sites} tensor layout(s)"] * bool(sites) + [f"{kernels} kernel option(s)"] * bool(kernels)
        unsaid = (
            f"the tuned config also sets {' and '.join(parts)}, which XLA options cannot "
            "express: use --format json and hlotune.compiled(fn, *args, config=...), or "
            "TuneResult.compiled() in Python"
            if parts else ""
        )
        note = "; ".join(text for text in (numerics, unsaid) if text)
        if fmt == "compiler_options":
            return Export(json.dumps(config.flags.compiler_options(), sort_keys=True), note)
        return Export(config.flags.xla_flags(), note)

    def _export_json(self, best: Decision) -> dict:
        return {
            "program": self.name_of(best.fingerprint),
            "fingerprint": best.fingerprint,
            "machine": self.machine.to_dict(),
            "config": best.chosen.to_dict(),
            "numerics": best.chosen.numerics,
            "compiler_options": best.chosen.flags.compiler_options(),
            "xla_flags": best.chosen.flags.xla_flags(),
            "kept_default": best.kept_default,
            "speedup": best.speedup,
            "found_speedup": best.found_speedup,
            "confirmed_speedup": best.confirmed_speedup,
            "rounds": best.rounds,
            "noise": best.noise_floor,
            "candidate": best.candidate.to_dict(),
            "strategy": best.strategy,
            "space": best.space,
            "timestamp": best.timestamp,
        }
