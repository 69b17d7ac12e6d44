"""Measure configs of one program on this machine, in a way a shared 2-core box can trust.

Protocol (docs/compiler.md): compile every candidate first, then run interleaved rounds in a
fresh random order, each config `repeats` times per round; replicas of the default config run
in every batch, so the batch reports its own noise floor (the spread of the replicas'
medians). Outputs are checked against the default's. Compiling and running happen in a worker
process (worker_session.py): a config that XLA rejects, crashes on or hangs is recorded as
failed with its reason, and the batch goes on.

With `profile_runs`, each live config is also run that many times under the profiler after
its timed rounds, in `profile_rounds` interleaved rounds of a fresh random order (a kernel's
time is its median over them: one profile session can drift as a timed round can), for each
kernel's time (kernel_profile.py) and the compiled module's text; those runs never enter its
samples.

Two guards against timer noise: where one call of the default is shorter than
`min_sample_s`, a sample times K calls back to back (K chosen per batch from the default's
warm-up call); and with a `noise_target`, rounds go on until every config's median is known
that precisely (its 95% confidence interval) or a cap is reached.

Long runs take fewer rounds (`timed_s`): 30 samples of a 100 ms program cost 3 s an
executable, while what a batch decides from is each executable's own luck (the noise floor),
which more samples of it do not shrink. A batch keeps one executable's timed runs within about
`timed_s` seconds and MIN_ROUNDS rounds; programs under about 70 ms a run keep every round.

With `early_stop` (a racing method's sequential test, as Kernel Tuner's early termination), a
config is timed no more once it is slower than the default beyond doubt: from round
EARLY_STOP_ROUNDS, when the low end of its median's 95% interval exceeds EARLY_STOP_RATIO times
the high end of the default's (all its executables' samples, as `BatchResult.default_ns`; the
margin covers their spread, the noise floor). A tuner never chooses such a config; its median
(from fewer samples) stays its cost, and `Measurement.stopped` says it was cut short. A collection, whose samples are
its labels, measures every config in full.
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from hlotune.compiler.configs.config import DEFAULT_CONFIG, CompileConfig
from hlotune.compiler.measurement.worker_session import WorkerDied, WorkerSession
from hlotune.errors import HlotuneError

OK, FAILED, WRONG_OUTPUT = "ok", "failed", "wrong_output"
# Early stopping: rounds before the first test, and the margin over the default beyond the
# intervals. After 3 rounds of 3 repeats the low end of a median's interval is the 2nd smallest
# of 9 samples, so a stop needs 8 of them slow, at least 2 in every round: a disturbance of one
# or two rounds cannot stop a config. A config within 10% of the default keeps all its samples:
# its median still teaches a search's cost model where the near misses are.
EARLY_STOP_ROUNDS, EARLY_STOP_RATIO = 3, 1.10
# The fewest rounds a long-running program's batch takes under `MeasureSettings.timed_s`: 9
# samples of each executable at the default 3 repeats, and the rounds early stopping waits for.
MIN_ROUNDS = EARLY_STOP_ROUNDS


@dataclass(frozen=True)
class MeasureSettings:
    rounds: int = 10  # at least; more while `noise_target` is not met
    repeats: int = 3  # samples per config per round: rounds * repeats samples (30 by default)
    default_replicas: int = 2  # extra default executables beside the reference
    rtol: float | None = None  # float outputs' tolerance; None: per dtype (output_check.py)
    compile_timeout_s: float = 300.0
    run_timeout_s: float = 120.0  # one config's `repeats` samples
    seed: int = 0
    # A sample times K calls back to back when one call of the default is shorter than this.
    min_sample_s: float = 5e-4
    # More rounds until every live config's median is known within this (relative half-width
    # of its 95% confidence interval), up to `max_rounds` or `time_cap_s` for the batch.
    noise_target: float | None = None
    max_rounds: int = 100
    time_cap_s: float = 600.0
    profile_runs: int = 0  # profiled calls per config and profile round (0: no profile)
    profile_rounds: int = 3
    # Stop timing a config once it is slower than the default beyond doubt (module docstring).
    early_stop: bool = True
    # Fewer rounds for long runs: a batch takes only the rounds that keep one executable's timed
    # runs within about this many seconds, never fewer than MIN_ROUNDS (None: always `rounds`).
    timed_s: float | None = 2.0

    def __post_init__(self) -> None:
        for name in ("rounds", "repeats", "default_replicas"):
            if getattr(self, name) < 1:
                raise HlotuneError(f"{name} must be at least 1, got {getattr(self, name)}")
        if self.profile_runs < 0 or self.profile_rounds < 1:
            raise HlotuneError(f"profile_runs must not be negative and profile_rounds at least 1, "
                               f"got {self.profile_runs} and {self.profile_rounds}")
        if self.noise_target is not None and not self.noise_target > 0:
            raise HlotuneError(f"noise_target must be positive, got {self.noise_target}")
        if self.timed_s is not None and not self.timed_s > 0:
            raise HlotuneError(f"timed_s must be positive, got {self.timed_s}")
        if self.rtol is not None and not self.rtol > 0:
            raise HlotuneError(f"rtol (the output tolerance) must be positive, got {self.rtol}")


@dataclass
class Measurement:
    config: CompileConfig
    status: str = OK
    reason: str = ""
    samples_ns: list[int] = field(default_factory=list)
    compile_s: float = 0.0
    max_rel_error: float = 0.0
    call_ns: int = 0  # one call, timed at warm-up
    converged: bool | None = None  # its median met the noise target (None: no target)
    stopped: bool = False  # timed no more: slower than the default beyond doubt (early_stop)
    # With profile_runs: each kernel's median ns per run and its events per run, a profiled
    # run's span from its first kernel's start to its last kernel's end (median), the compiled
    # module's text (kernels.kernels_of reads it), or why profiling failed.
    kernel_ns: dict[str, float] = field(default_factory=dict)
    kernel_calls: dict[str, int] = field(default_factory=dict)
    kernel_span_ns: float = 0.0
    hlo: str = ""
    profile_error: str = ""

    @property
    def median_ns(self) -> float:
        return float(np.median(self.samples_ns)) if self.samples_ns else float("nan")

    @property
    def median_interval(self) -> tuple[float, float]:
        return median_interval(self.samples_ns)

    @property
    def median_halfwidth(self) -> float:
        """Relative half-width of `median_interval`: its width over twice the median."""
        low, high = self.median_interval
        return (high - low) / (2 * self.median_ns) if math.isfinite(high) else float("inf")

    @property
    def ok(self) -> bool:
        return self.status == OK


def median_interval(samples_ns: Sequence[int]) -> tuple[float, float]:
    """95% confidence interval of the median in ns: the order statistics n/2 -+ 1.96 sqrt(n)/2
    (distribution-free); (0, inf) under 6 samples, too few to bound it."""
    samples = np.sort(samples_ns)
    n = len(samples)
    if n < 6:
        return 0.0, float("inf")
    low = max(int(np.floor(n / 2 - 0.98 * np.sqrt(n))), 0)
    high = min(int(np.ceil(n / 2 + 0.98 * np.sqrt(n))), n - 1)
    return float(samples[low]), float(samples[high])


@dataclass
class BatchResult:
    """The candidates' measurements and the batch's default replicas."""

    measurements: list[Measurement]
    defaults: list[Measurement]  # the reference first, then the replicas
    loop: int = 1  # calls timed together per sample

    @property
    def default_ns(self) -> float:
        """Median over all default samples of the batch."""
        return float(np.median([s for d in self.defaults for s in d.samples_ns]))

    @property
    def noise_floor(self) -> float:
        """(max - min) / min of the default replicas' medians: what "no change" looks like."""
        medians = [d.median_ns for d in self.defaults if d.samples_ns]
        return float(max(medians) / min(medians) - 1.0) if len(medians) > 1 else float("nan")


RoundCallback = Callable[[int, dict[str, list[int]]], None]  # (round, id -> samples)


def measure(
    program: str,
    configs: Sequence[CompileConfig],
    settings: MeasureSettings = MeasureSettings(),
    *,
    prior: dict[str, list[list[int]]] | None = None,
    on_round: RoundCallback | None = None,
) -> BatchResult:
    """Measure `configs` of the program spec `program` (zoo:NAME or file.py:FACTORY) as one
    batch, in a worker of its own (`Measurer.measure` says how)."""
    with Measurer(program, settings) as measurer:
        return measurer.measure(configs, prior=prior, on_round=on_round)


class Measurer:
    """Measures batch after batch of one program's configs in one worker process.

    Loading a program in a worker (building the model, tracing and lowering it) takes seconds,
    for a corpus model longer than a batch's compiles; a collection or a tuning run measures
    several batches of the same program, so they share the worker. Each batch starts from no
    compiled configs, with its own default replicas, as with a fresh worker.
    """

    def __init__(self, program: str, settings: MeasureSettings = MeasureSettings()) -> None:
        self.program, self.settings = program, settings
        self._session: WorkerSession | None = None

    def __enter__(self) -> Measurer:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        if self._session is not None:
            self._session.__exit__()
            self._session = None

    def measure(
        self,
        configs: Sequence[CompileConfig],
        *,
        prior: dict[str, list[list[int]]] | None = None,
        on_round: RoundCallback | None = None,
    ) -> BatchResult:
        """Measure `configs` as one batch.

        Inside a batch, `d0` is the reference default, `d1`... its replicas and `c<i>` is
        `configs[i]`. `prior` (id -> samples of each finished round) resumes an interrupted
        batch: only the remaining rounds run. `on_round` sees each finished round, to journal
        it. With a noise target, rounds go on until every live config meets it or the caps are
        reached; `Measurement.converged` says which did. With `early_stop`, configs slower than
        the default beyond doubt sit out the rounds left (`Measurement.stopped`).
        """
        settings, program = self.settings, self.program
        ids = {f"d{i}": DEFAULT_CONFIG for i in range(settings.default_replicas + 1)}
        ids |= {f"c{i}": config for i, config in enumerate(configs)}
        results = {id: Measurement(config) for id, config in ids.items()}
        rounds_done = _restore(results, prior or {})
        session = self._fresh_session()
        for id, config in ids.items():
            _compile(session, id, config, results[id], settings)
        if not results["d0"].ok:
            raise HlotuneError(f"{program}: the default configuration fails: {results['d0'].reason}")
        rng = random.Random(f"{settings.seed}:{rounds_done}")
        loop = max(1, math.ceil(settings.min_sample_s * 1e9 / max(results["d0"].call_ns, 1)))
        deadline = time.monotonic() + settings.time_cap_s
        round_index = rounds_done
        rounds = _rounds(settings, loop * results["d0"].call_ns)
        while round_index < rounds or (
            _noisy(results, settings) and round_index < settings.max_rounds and time.monotonic() < deadline
        ):
            if settings.early_stop and round_index >= EARLY_STOP_ROUNDS:
                _stop_slow(results)
            round_samples = _run_round(session, results, rng, settings, loop)
            if on_round is not None:
                on_round(round_index, round_samples)
            round_index += 1
        if settings.noise_target is not None:
            for measurement in results.values():
                if measurement.ok:
                    measurement.converged = measurement.median_halfwidth <= settings.noise_target
        if settings.profile_runs:
            _profile_rounds(session, results, rng, settings)
        defaults = [results[id] for id in ids if id.startswith("d")]
        return BatchResult([results[f"c{i}"] for i in range(len(configs))], defaults, loop)

    def compiled_modules(self, configs: Sequence[CompileConfig]) -> list[str | None]:
        """The module XLA compiles for each config, nothing run (what a kernel model screens);
        None where XLA rejects the config or dies on it."""
        session = self._fresh_session()
        texts: list[str | None] = []
        for config in configs:
            try:
                reply = session.module(config)
            except WorkerDied:
                session.restart()
                reply = {"ok": False}
            texts.append(reply["text"] if reply["ok"] else None)
        return texts

    def _fresh_session(self) -> WorkerSession:
        """The worker, started on first use, with no configs compiled."""
        if self._session is None:
            self._session = self._open()
        else:
            self._session.clear()
        return self._session

    def _open(self) -> WorkerSession:
        """A started worker with the program loaded (in_process.py measures in this one)."""
        return WorkerSession(self.program, self.settings).__enter__()


def _rounds(settings: MeasureSettings, sample_ns: float) -> int:
    """The batch's rounds: `settings.rounds`, or fewer where a sample takes `sample_ns` so long
    that they would time one executable for more than `settings.timed_s`."""
    if settings.timed_s is None or sample_ns <= 0:
        return settings.rounds
    affordable = math.ceil(settings.timed_s * 1e9 / (settings.repeats * sample_ns))
    return min(settings.rounds, max(MIN_ROUNDS, affordable))


def _noisy(results: dict[str, Measurement], settings: MeasureSettings) -> bool:
    """Whether a timed config's median is still less certain than the noise target."""
    target = settings.noise_target
    return target is not None and any(_timed(m) and m.median_halfwidth > target for m in results.values())


def _timed(measurement: Measurement) -> bool:
    """Whether a config still takes part in the timed rounds."""
    return measurement.ok and not measurement.stopped


def _stop_slow(results: dict[str, Measurement]) -> None:
    """Stop the candidates whose median is above the default's beyond doubt: the low end of
    its interval over EARLY_STOP_RATIO times the high end of the default's, over all its
    executables' samples. A stop that doubt would not allow costs little: the config keeps a
    median from fewer samples, near what its full samples would say."""
    default = [s for id, m in results.items() if id.startswith("d") and m.ok for s in m.samples_ns]
    default_high = median_interval(default)[1]
    for id, measurement in results.items():
        if not id.startswith("d") and _timed(measurement):
            measurement.stopped = measurement.median_interval[0] > EARLY_STOP_RATIO * default_high


def _restore(results: dict[str, Measurement], prior: dict[str, list[list[int]]]) -> int:
    """Put the samples of finished rounds back; the number of rounds they cover."""
    rounds = len(prior.get("d0", []))
    for id, measurement in results.items():
        for samples in prior.get(id, [])[:rounds]:
            measurement.samples_ns += samples
    return rounds


def _compile(session: WorkerSession, id: str, config: CompileConfig, result: Measurement, settings) -> None:
    try:
        reply = session.compile(id, config)
    except WorkerDied as died:
        result.status, result.reason = FAILED, died.reason
        if id != "d0":
            session.restart()
        return
    if not reply["ok"]:
        result.status, result.reason = FAILED, reply["error"]
        return
    result.compile_s, result.max_rel_error = reply["compile_s"], reply["max_rel_error"]
    result.call_ns = reply["call_ns"]
    if not reply["outputs_match"]:
        result.status, result.reason = WRONG_OUTPUT, reply["mismatch"]
        session.drop(id)


def _profile_rounds(session: WorkerSession, results: dict[str, Measurement], rng: random.Random, settings) -> None:
    """Each live config (the default's replicas too: the kernels' noise) profiled in
    interleaved rounds; each kernel's time is its median over the rounds."""
    per_round: dict[str, list[dict]] = {id: [] for id in results}
    for _ in range(settings.profile_rounds):
        order = [id for id, m in results.items() if m.ok and not m.profile_error]
        rng.shuffle(order)
        for id in order:
            _profile(session, id, results[id], settings.profile_runs, per_round[id])
    for id, replies in per_round.items():
        if replies and not results[id].profile_error:
            rounds = [reply["kernel_ns"] for reply in replies]
            names = set().union(*rounds)
            results[id].kernel_ns = {n: float(np.median([r[n] for r in rounds if n in r])) for n in sorted(names)}
            results[id].kernel_span_ns = float(np.median([reply["span_ns"] for reply in replies]))


def _profile(session: WorkerSession, id: str, result: Measurement, runs: int, rounds: list) -> None:
    """One profile session of a measured config (and its module's text, the first time); a
    failure leaves its timed samples alone and says why."""
    try:
        reply = session.profile(id, runs)
        text = session.hlo(id) if reply["ok"] and not result.hlo else {"ok": True, "text": result.hlo}
    except WorkerDied as died:
        result.profile_error = died.reason
        session.restart()
        return
    if not reply["ok"] or not text["ok"]:
        result.profile_error = reply.get("error") or text.get("error", "")
        return
    rounds.append(reply)
    result.kernel_calls, result.hlo = reply["calls"], text["text"]


def _run_round(
    session: WorkerSession, results: dict[str, Measurement], rng: random.Random, settings, loop: int
) -> dict[str, list[int]]:
    """One round over the live configs in a fresh random order; a crash fails only its config."""
    pending = [id for id, m in results.items() if _timed(m)]
    rng.shuffle(pending)
    round_samples: dict[str, list[int]] = {}
    while pending:
        try:
            for id, samples in session.run(pending, settings.repeats, loop):
                round_samples[id] = samples
                results[id].samples_ns += samples
                pending.remove(id)
        except WorkerDied as died:
            culprit = pending.pop(0)
            results[culprit].status, results[culprit].reason = FAILED, f"while running: {died.reason}"
            if culprit == "d0":
                raise HlotuneError(f"the default configuration crashed: {died.reason}") from None
            session.restart()
    return round_samples
