"""Storage: the tuning database and what it keeps (measurements, decisions, claims, the kernel
screen's compile cache and `hlotune.jit`'s recordings), on SQLite or PostgreSQL.

`Database` (base.py) is what the tuner needs; `TuningDatabase(location)` (sql.py) implements it
on a file path or a `postgresql://` URL (locations.py).
"""

from hlotune.tuning.storage.base import Database, Decision, Export, ProgramEntry, Record
from hlotune.tuning.storage.exporting import EXPORT_FORMATS
from hlotune.tuning.storage.fleet_log import Verification
from hlotune.tuning.storage.locations import default_db_location, exists, local_folder, local_stem
from hlotune.tuning.storage.recordings import CallCount, Recording
from hlotune.tuning.storage.sql import CONFIRM_PREFIX, TuningDatabase

__all__ = ["CONFIRM_PREFIX", "EXPORT_FORMATS", "CallCount", "Database", "Decision", "Export",
           "ProgramEntry", "Record", "Recording", "TuningDatabase", "Verification", "default_db_location",
           "exists", "local_folder", "local_stem"]
