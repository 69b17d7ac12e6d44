"""Where a program's time goes, kernel by kernel: `hlotune profile`.

The program is measured as any config is (measure.py: timed rounds beside the default, in the
worker), then profiled apart from its timed rounds; the table joins each kernel's time with what
the compiled module says of it (kind, fused ops, source lines).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from hlotune.compiler.configs.config import DEFAULT_CONFIG, CompileConfig
from hlotune.compiler.xla.kernels import kernels_of
from hlotune.compiler.measurement.measure import MeasureSettings, Measurement, measure
from hlotune.errors import HlotuneError
from hlotune.hlo.text import source_lines


@dataclass(frozen=True)
class KernelRow:
    name: str
    key: str  # for per-kernel configs (`{"kernels": {KEY: {...}}}`)
    ms: float  # median per program run, its own time (nested kernels excluded)
    share: float  # of the kernels' summed time
    calls: int  # events per program run (loop bodies repeat)
    kind: str
    ops: list[str]  # the framework ops fused into it
    sources: list[str]  # their source lines, from the module's metadata


@dataclass(frozen=True)
class ProgramProfile:
    program: str
    config: dict
    wall_ms: float  # the median of the timed (unprofiled) rounds
    kernels_ms: float  # the kernels' sum: above wall_ms where kernels overlap on threads
    kernels: list[KernelRow]  # heaviest first
    # a profiled run from its first kernel's start to its last kernel's end: the kernels' sum
    # against it is how much of a run they fill; the rest of wall_ms is dispatch and drift
    span_ms: float = 0.0

    def to_json(self) -> dict:
        return asdict(self)


def profile_program(program: str, config: CompileConfig = DEFAULT_CONFIG, *, runs: int = 10,
                    settings: MeasureSettings = MeasureSettings(rounds=5)) -> ProgramProfile:
    """Time `program` under `config`, then profile `runs` calls of it."""
    return profile_configs(program, [config], runs=runs, settings=settings)[0]


def profile_configs(program: str, configs: list[CompileConfig], *, runs: int = 10,
                    settings: MeasureSettings = MeasureSettings(rounds=5)) -> list[ProgramProfile]:
    """Profile several configs of `program` in one batch, so that their tables compare like
    for like (same worker, interleaved rounds); XLA's default is the batch's own reference."""
    if runs < 1:
        raise HlotuneError(f"--runs must be at least 1, got {runs}")
    settings = MeasureSettings(**{**asdict(settings), "profile_runs": runs})
    result = measure(program, [c for c in configs if not c.is_default], settings)
    candidates = iter(result.measurements)
    return [_profile(program, config, result.defaults[0] if config.is_default else next(candidates))
            for config in configs]


def _profile(program: str, config: CompileConfig, measured: Measurement) -> ProgramProfile:
    if not measured.ok:
        raise HlotuneError(f"{program}: the config {measured.status}: {measured.reason}")
    if measured.profile_error:
        raise HlotuneError(f"{program}: profiling failed: {measured.profile_error}")
    return ProgramProfile(program, config.to_dict(), measured.median_ns / 1e6,
                          sum(measured.kernel_ns.values()) / 1e6, kernel_rows(measured),
                          measured.kernel_span_ns / 1e6)


def kernel_rows(measured: Measurement) -> list[KernelRow]:
    """The profiled kernels, heaviest first; thunks that are not fusions (copies, loops, library
    calls) keep their name and an empty description."""
    described = {kernel.name: kernel for kernel in kernels_of(measured.hlo)}
    sources = source_lines(measured.hlo)
    total = sum(measured.kernel_ns.values()) or 1.0
    rows = []
    for name, ns in sorted(measured.kernel_ns.items(), key=lambda item: -item[1]):
        kernel = described.get(name)
        rows.append(KernelRow(
            name, kernel.key if kernel else "", ns / 1e6, ns / total, measured.kernel_calls.get(name, 1),
            kernel.kind if kernel else "thunk", list(kernel.op_names) if kernel else [],
            list(dict.fromkeys(sources[f] for f in kernel.stack_frames if f in sources)) if kernel else [],
        ))
    return rows


def format_profile(profile: ProgramProfile, top: int = 20) -> str:
    lines = [
        f"{profile.program}: {headline(profile)}",
        f"{'kernel':<32} {'ms':>9} {'share':>6} {'calls':>5}  {'kind':<8} ops / source",
    ]
    for row in profile.kernels[:top]:
        source = row.sources[0] if row.sources else ""
        lines.append(f"{row.name[:32]:<32} {row.ms:9.3f} {row.share:6.1%} {row.calls:5d}  "
                     f"{row.kind:<8} {short_ops(row)}" + (f"  [{source}]" if source else ""))
    if len(profile.kernels) > top:
        lines.append(more_kernels(profile, top))
    return "\n".join(lines)


def headline(profile: ProgramProfile) -> str:
    """The run's time against the kernels' sum: how much of a run the table accounts for."""
    return (f"{profile.wall_ms:.3f} ms a run (timed rounds); kernels sum to "
            f"{profile.kernels_ms:.3f} ms ({profile.kernels_ms / profile.wall_ms:.0%} of the run; "
            "above 100% where kernels overlap on threads), "
            f"{profile.kernels_ms / profile.span_ms:.0%} of a profiled run's "
            f"{profile.span_ms:.3f} ms from its first kernel to its last")


def short_ops(row: KernelRow, limit: int = 4) -> str:
    """The fused ops' last name parts (`jit(f)/jit(relu)/max` -> `max`), the first `limit`."""
    names = ", ".join(op.rsplit("/", 1)[-1] for op in row.ops[:limit])
    return names + (" ..." if len(row.ops) > limit else "")


def more_kernels(profile: ProgramProfile, top: int) -> str:
    """What a table of the `top` heaviest kernels leaves out."""
    rest = profile.kernels[top:]
    return f"... {len(rest)} more kernels, {sum(r.ms for r in rest):.3f} ms"
