"""What `hlotune fleet` keeps beside the tunes themselves: the tuning time each program cost, and
each decision's speedup verified beside jax.jit, where the program runs, rather than in the
batch that chose it (its report, final_check.py, can still carry luck)."""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass

from hlotune.tuning.storage.connection import Connection

_KEY = "program = ? AND machine = ? AND jax = ? AND jaxlib = ?"
# A decision applies only where its verification beside jax.jit found it at least this much
# faster: less is within the verification's own spread. In the fleet benchmark the two
# decisions verified between 0.99x and 1.02x ran 0.91x and 0.97x where applied
# (docs/results/tuning.md).
VERIFIED_FLOOR = 1.02


@dataclass(frozen=True)
class Verification:
    """A decision's executable timed beside jax.jit's, interleaved, in one process."""

    config_key: str
    jit_ns: float  # per call, median over rounds
    tuned_ns: float
    rounds: int
    timestamp: float

    @property
    def speedup(self) -> float:
        return self.jit_ns / self.tuned_ns

    @property
    def applies(self) -> bool:
        """hlotune.jit applies the decision: it was verified at least VERIFIED_FLOOR faster."""
        return self.speedup >= VERIFIED_FLOOR


class FleetLog:
    """Part of TuningDatabase (sql.py), on its connection and scope."""

    _sql: Connection
    _scope: tuple[str, str, str]

    def record_tune(self, fingerprint: str, budget: int, measured: int, seconds: float) -> None:
        """One tune of the program: its budget, the configs it measured, its seconds."""
        with self._sql.writing():
            self._sql.execute(f"INSERT INTO tunes VALUES ({', '.join('?' * 8)})",
                              (fingerprint, *self._scope, budget, measured, seconds, time.time()))

    def tuning_seconds(self, fingerprint: str) -> float:
        """Every tune's seconds on the program here."""
        row = self._sql.execute(f"SELECT COALESCE(SUM(seconds), 0) FROM tunes WHERE {_KEY}",
                                (fingerprint, *self._scope)).fetchone()
        return float(row[0])

    def verify(self, fingerprint: str, verification: Verification) -> None:
        """The old name of record_verification, for one release."""
        warnings.warn("TuningDatabase.verify is deprecated: use TuningDatabase.record_verification",
                      DeprecationWarning, stacklevel=2)
        self.record_verification(fingerprint, verification)

    def record_verification(self, fingerprint: str, verification: Verification) -> None:
        """A kept config timed beside jax.jit (tuning/verification.py)."""
        with self._sql.writing():
            self._sql.execute(
                f"INSERT INTO verifications VALUES ({', '.join('?' * 9)})",
                (fingerprint, *self._scope, verification.config_key, verification.jit_ns,
                 verification.tuned_ns, verification.rounds, verification.timestamp))

    def verification(self, fingerprint: str, config_key: str) -> Verification | None:
        """The latest verification of `config_key` on the program here."""
        row = self._sql.execute(
            f"SELECT config, jit_ns, tuned_ns, rounds, timestamp FROM verifications WHERE {_KEY} "
            f"AND config = ? ORDER BY {self._sql.order} DESC", (fingerprint, *self._scope, config_key)).fetchone()
        return None if row is None else Verification(*row)
