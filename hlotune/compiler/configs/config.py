"""One point of the combined search space: XLA flags, tensor layouts and per-kernel options."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hlotune.compiler.configs.flags import DEFAULT_FLAGS, FlagConfig
from hlotune.compiler.configs.kernel_config import DEFAULT_KERNELS, KernelConfig
from hlotune.compiler.configs.layouts import DEFAULT_LAYOUT, LayoutConfig
from hlotune.errors import HlotuneError


@dataclass(frozen=True)
class CompileConfig:
    """Value object: hashable, and `key` is canonical JSON (the same config, the same key).

    `kernels` appears in the dict only when set, so the keys of flag and layout configs stored
    before per-kernel options existed still find their records."""

    flags: FlagConfig = field(default=DEFAULT_FLAGS)
    layout: LayoutConfig = field(default=DEFAULT_LAYOUT)
    kernels: KernelConfig = field(default=DEFAULT_KERNELS)

    def to_dict(self) -> dict[str, Any]:
        parts = {"flags": self.flags.to_dict(), "layout": self.layout.to_dict()}
        return parts | ({"kernels": self.kernels.to_dict()} if not self.kernels.is_default else {})

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> CompileConfig:
        unknown = set(values) - {"flags", "layout", "kernels"}
        if unknown:
            raise HlotuneError(
                f"unknown config part {sorted(unknown)[0]!r}: use flags, layout and kernels"
            )
        return cls(
            FlagConfig.from_dict(values.get("flags", {})),
            LayoutConfig.from_dict(values.get("layout", {})),
            KernelConfig.from_dict(values.get("kernels", {})),
        )

    @property
    def key(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)

    @property
    def is_default(self) -> bool:
        return self.flags.is_default and self.layout.is_default and self.kernels.is_default

    @property
    def numerics(self) -> str:
        """"changing" if an option changes results by design (opt-in when tuning), else
        "preserving" (layouts never change results)."""
        return "changing" if self.flags.changes_numerics else "preserving"


DEFAULT_CONFIG = CompileConfig()


def load_config(config: CompileConfig | dict | str | Path) -> CompileConfig:
    """A config given as itself, its dict, JSON text, or a JSON file; a dict holding "config"
    (what `hlotune db export --format json` prints) gives that."""
    if isinstance(config, CompileConfig):
        return config
    if isinstance(config, Path) or (isinstance(config, str) and not config.lstrip().startswith("{")):
        try:
            config = Path(config).read_text()
        except OSError as error:
            raise HlotuneError(f"cannot read the config {config}: {error.strerror}") from None
    if isinstance(config, str):
        try:
            config = json.loads(config)
        except json.JSONDecodeError as error:
            raise HlotuneError(f"the config is not JSON: {error}") from None
    if not isinstance(config, dict):
        raise HlotuneError(f"a config is a JSON object, got {type(config).__name__}")
    return CompileConfig.from_dict(config.get("config", config))
