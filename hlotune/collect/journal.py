"""An append-only JSON-lines journal that makes collection resumable.

Every finished round of every batch is one line, flushed and fsynced when it lands, so a kill
loses at most the round in flight. The first line records the settings: resuming with other
settings would mix incomparable measurements, so it is refused.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from hlotune.errors import HlotuneError


class Journal:
    def __init__(self, path: Path, settings: dict[str, Any]) -> None:
        self.path = path
        self.rounds: dict[int, dict[str, list[list[int]]]] = {}  # batch -> id -> samples per round
        self.batches: dict[int, dict[str, Any]] = {}  # finished batches
        if path.exists():
            self._replay(settings)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._append({"settings": settings})

    def _replay(self, settings: dict[str, Any]) -> None:
        data = self.path.read_bytes()
        if not data.endswith(b"\n"):  # the line in flight when the process died: drop it
            data = data[: data.rfind(b"\n") + 1]
            with open(self.path, "r+b") as stream:
                stream.truncate(len(data))
        for number, line in enumerate(data.decode("utf-8", "replace").splitlines(), 1):
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                raise HlotuneError(f"{self.path}:{number}: corrupt journal line") from None
            if "settings" in record and record["settings"] != settings:
                raise HlotuneError(
                    f"{self.path}: collected with other settings ({record['settings']}); "
                    "use another --out folder or delete the journal"
                )
            if "round" in record:
                batch = self.rounds.setdefault(record["batch"], {})
                for id, samples in record["samples"].items():
                    batch.setdefault(id, []).append(samples)
            if "done" in record:
                self.batches[record["batch"]] = record["done"]

    def record_round(self, batch: int, round_index: int, samples: dict[str, list[int]]) -> None:
        self._append({"batch": batch, "round": round_index, "samples": samples})

    def record_batch(self, batch: int, summary: dict[str, Any]) -> None:
        self._append({"batch": batch, "done": summary})
        self.batches[batch] = summary

    def _append(self, record: dict[str, Any]) -> None:
        with open(self.path, "a") as stream:
            stream.write(json.dumps(record) + "\n")
            stream.flush()
            os.fsync(stream.fileno())
