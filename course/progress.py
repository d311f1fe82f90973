"""Progress: every attempt and result, in a SQLite file in the course home.

Each write is its own transaction (WAL journal, so ``course watch`` and
``course grade`` may run at once): a kill at any moment loses at most the
result in flight, never the file. A damaged file or one written by a newer
version of the course is refused with a message that says what to do.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path

from course import scoring
from course.scoring import ExerciseScore
from grader.results import ExerciseResult, Status

SCHEMA_VERSION = 3
SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS attempts (
    id INTEGER PRIMARY KEY,
    started REAL NOT NULL,
    finished REAL,
    source TEXT NOT NULL,          -- the directory graded
    counted INTEGER NOT NULL,      -- 1 when it is the student's own workspace
    command TEXT NOT NULL,
    state TEXT NOT NULL,           -- running, done, interrupted
    versions TEXT                  -- JSON: python, jax, jaxlib, hypothesis … that graded it
);
CREATE TABLE IF NOT EXISTS results (
    id INTEGER PRIMARY KEY,
    attempt_id INTEGER NOT NULL REFERENCES attempts(id),
    recorded REAL NOT NULL,
    lesson INTEGER NOT NULL,
    exercise TEXT NOT NULL,
    status TEXT NOT NULL,
    score INTEGER NOT NULL,
    possible INTEGER NOT NULL,
    duration REAL NOT NULL,
    example TEXT
);
CREATE INDEX IF NOT EXISTS results_by_exercise ON results(lesson, exercise, id);
CREATE TABLE IF NOT EXISTS checks (
    result_id INTEGER NOT NULL REFERENCES results(id),
    name TEXT NOT NULL,
    passed INTEGER NOT NULL,
    message TEXT NOT NULL,
    duration REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS hints (lesson INTEGER PRIMARY KEY, shown INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS figures (
    result_id INTEGER NOT NULL REFERENCES results(id),
    check_name TEXT NOT NULL,      -- the name of the check whose evidence holds it
    passed INTEGER NOT NULL,       -- 1 when that check passed
    kind TEXT NOT NULL,            -- the evidence type: bytes, kind_bytes (course.scoring.figures)
    measured INTEGER NOT NULL,     -- bytes sent per device, measured in the compiled program
    expected INTEGER               -- what the check held it against, when it says
);
"""
TABLES = ("meta", "attempts", "results", "checks", "hints")
"""The tables every schema version has (``figures`` came with version 3)."""


MIGRATIONS = {
    2: "ALTER TABLE attempts ADD COLUMN versions TEXT",
    3: """CREATE TABLE IF NOT EXISTS figures (
    result_id INTEGER NOT NULL REFERENCES results(id),
    check_name TEXT NOT NULL,      -- the name of the check whose evidence holds it
    passed INTEGER NOT NULL,       -- 1 when that check passed
    kind TEXT NOT NULL,            -- the evidence type: bytes, kind_bytes (course.scoring.figures)
    measured INTEGER NOT NULL,     -- bytes sent per device, measured in the compiled program
    expected INTEGER               -- what the check held it against, when it says
)""",
}
"""Schema version → the SQL that brings a file from the version before up to it."""


class ProgressError(Exception):
    """The progress file cannot be used; the message says why and what to do."""


def read_only(path: Path) -> str | None:
    """Why the progress file ``path`` cannot be written (it, or the folder it is in,
    is read-only), or None when it can."""
    path = Path(path)
    folder = next((p for p in (path.parent, *path.parents) if p.exists()), None)
    for what in (path, folder):
        if what is not None and what.exists() and not os.access(what, os.W_OK):
            return (
                f"{what} is read-only: the course keeps your progress in {path} and "
                "must be able to write it (and the folder it is in). Make it writable "
                "(chmod u+w), or point --db (COURSE_DB) at a file in a writable folder."
            )
    return None


@dataclass(frozen=True)
class ExerciseState:
    status: str
    """The latest counted status: passed, failed, error, timeout, not started."""
    ever_passed: bool
    attempts: int
    last: float
    """Time of the latest result (seconds since the epoch)."""


class Progress:
    def __init__(self, path: Path, *, read_only: bool = False):
        """Open (or start) the file; ``read_only`` for commands that only read
        it (``course status``), which then work in a read-only workspace too."""
        self.path = Path(path)
        created = False
        if read_only:
            self.db = _connect_read_only(self.path)
        else:
            self._refuse_read_only()
            self.path.parent.mkdir(parents=True, exist_ok=True)
            created = not self.path.exists()
            self.db = sqlite3.connect(self.path, timeout=10.0, isolation_level=None)
        try:
            self.db.execute("PRAGMA busy_timeout = 10000")
            check = self.db.execute("PRAGMA quick_check").fetchone()[0]
            if check != "ok":
                raise sqlite3.DatabaseError(check)
            if not read_only:
                self.db.execute("PRAGMA journal_mode = WAL")
                self.db.execute("PRAGMA foreign_keys = ON")
            version = self._version()
            missing = [t for t in TABLES if (read_only or version is not None) and not self._has(t)]
        except sqlite3.DatabaseError as exc:
            self.db.close()
            if created:  # nothing of ours is in it: leave no empty file behind
                self.path.unlink(missing_ok=True)
            if _full(exc, self.path):
                raise ProgressError(disk_full(self.path)) from None
            self._refuse_read_only()  # it became read-only meanwhile: say so, not "damaged"
            raise ProgressError(
                f"The progress file {self.path} is damaged ({exc}).\n{self._fresh}"
            ) from None
        except ValueError as exc:  # a schema version that is not a number
            self.db.close()
            raise ProgressError(
                f"The progress file {self.path} has an unknown schema version ({exc}); it was not "
                f"written by this course, or was damaged.\n{self._fresh}"
            ) from None
        if missing:
            self.db.close()
            raise ProgressError(
                f"The progress file {self.path} lacks the table(s) {', '.join(missing)}; it was "
                f"not written by this course, or was damaged.\n{self._fresh}"
            )
        if version is not None and version > SCHEMA_VERSION:
            self.db.close()
            raise ProgressError(
                f"The progress file {self.path} was written by a newer version of the course "
                f"(schema {version}; this one knows {SCHEMA_VERSION}).\n"
                "Update the course (git pull && pip install -e .), or point --db at another file."
            )
        try:
            if version is None:  # a new file: the whole schema in one transaction
                self.db.executescript(
                    f"BEGIN IMMEDIATE; {SCHEMA} INSERT OR REPLACE INTO meta "
                    f"VALUES ('schema_version', '{SCHEMA_VERSION}'); COMMIT;"
                )
            elif not read_only:  # a reader leaves an older file as it is; a writer migrates it
                for step in range(version + 1, SCHEMA_VERSION + 1):
                    self.db.executescript(
                        f"BEGIN IMMEDIATE; {MIGRATIONS[step]}; INSERT OR REPLACE INTO meta "
                        f"VALUES ('schema_version', '{step}'); COMMIT;"
                    )
        except sqlite3.OperationalError as exc:  # a full disk: the transaction is rolled back
            if self.db.in_transaction:
                self.db.execute("ROLLBACK")
            self.db.close()
            if created:
                self.path.unlink(missing_ok=True)
            if _full(exc, self.path):
                raise ProgressError(disk_full(self.path)) from None
            raise

    @property
    def _fresh(self) -> str:
        return (
            f"Move it aside and a fresh one will be started:\n"
            f"    mv {self.path} {self.path}.broken\n"
            "Your exercise files are not affected."
        )

    def _refuse_read_only(self) -> None:
        """SQLite needs to write the file and, for its journal, the folder it is in."""
        reason = read_only(self.path)
        if reason:
            raise ProgressError(reason)

    def _has(self, table: str) -> bool:
        return bool(
            self.db.execute(
                "SELECT 1 FROM sqlite_master WHERE type='table' AND name=?", (table,)
            ).fetchone()
        )

    def _version(self) -> int | None:
        if not self._has("meta"):
            return None
        row = self.db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
        return int(row[0]) if row else None

    def _tx(self):
        return _Transaction(self.db, self.path)

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ----------------------------------------------------------- writes

    def start_attempt(
        self, source: str, counted: bool, command: str, versions: dict[str, str] | None = None
    ) -> int:
        """Open an attempt; ``versions`` (see course.versions) says what graded it."""
        with self._tx() as db:
            cur = db.execute(
                "INSERT INTO attempts (started, source, counted, command, state, versions)"
                " VALUES (?, ?, ?, ?, 'running', ?)",
                (time.time(), source, int(counted), command,
                 json.dumps(versions) if versions else None),
            )  # fmt: skip
            return int(cur.lastrowid)

    def record(self, attempt: int, result: ExerciseResult, scored: ExerciseScore) -> None:
        """Record one ExerciseResult (its checks, the figures their evidence holds),
        scored by the registry, in one transaction (rows: :func:`course.scoring.progress_rows`)."""
        rows = scoring.progress_rows(result, scored)
        with self._tx() as db:
            cur = db.execute(
                "INSERT INTO results (attempt_id, recorded, lesson, exercise, status, score, possible, duration, example)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (attempt, time.time(), *rows.result),
            )  # fmt: skip
            db.executemany(
                "INSERT INTO checks VALUES (?, ?, ?, ?, ?)",
                [(cur.lastrowid, *check) for check in rows.checks],
            )
            db.executemany(
                "INSERT INTO figures VALUES (?, ?, ?, ?, ?, ?)",
                [(cur.lastrowid, f.check, int(f.passed), f.kind, f.measured, f.expected)
                 for f in rows.figures],
            )  # fmt: skip

    def finish_attempt(self, attempt: int, state: str = "done") -> None:
        with self._tx() as db:
            db.execute(
                "UPDATE attempts SET finished = ?, state = ? WHERE id = ?",
                (time.time(), state, attempt),
            )

    def next_hint(self, lesson: int, available: int) -> int:
        """The index of the hint to show now (cycling at the end), and count it."""
        with self._tx() as db:
            row = db.execute("SELECT shown FROM hints WHERE lesson = ?", (lesson,)).fetchone()
            shown = row[0] if row else 0
            db.execute("INSERT OR REPLACE INTO hints VALUES (?, ?)", (lesson, shown + 1))
        return shown % available if available else 0

    # ----------------------------------------------------------- reads

    def hint_index(self, lesson: int, available: int) -> int:
        """The hint ``next_hint`` would show now, without counting it (a read-only file)."""
        if not self._has("hints"):
            return 0
        row = self.db.execute("SELECT shown FROM hints WHERE lesson = ?", (lesson,)).fetchone()
        return (row[0] if row else 0) % available if available else 0

    def states(self) -> dict[tuple[int, str], ExerciseState]:
        """Per (lesson, exercise): the latest result of the student's own attempts."""
        rows = self.db.execute(
            """
            SELECT r.lesson, r.exercise, r.status, r.recorded,
                   (SELECT COUNT(*) FROM results r2 JOIN attempts a2 ON a2.id = r2.attempt_id
                     WHERE a2.counted AND r2.lesson = r.lesson AND r2.exercise = r.exercise),
                   (SELECT MAX(r3.status = :passed) FROM results r3 JOIN attempts a3 ON a3.id = r3.attempt_id
                     WHERE a3.counted AND r3.lesson = r.lesson AND r3.exercise = r.exercise)
            FROM results r JOIN attempts a ON a.id = r.attempt_id
            WHERE a.counted AND r.id = (
                SELECT MAX(r4.id) FROM results r4 JOIN attempts a4 ON a4.id = r4.attempt_id
                WHERE a4.counted AND r4.lesson = r.lesson AND r4.exercise = r.exercise)
            """,
            {"passed": str(Status.PASSED)},
        ).fetchall()
        return {
            (lesson, ex): ExerciseState(status, bool(ever), int(n), recorded)
            for lesson, ex, status, recorded, n, ever in rows
        }

    def version_mark(self) -> int:
        """Changes whenever another connection commits to the file (SQLite's
        ``data_version``); this connection's own writes leave it alone."""
        return int(self.db.execute("PRAGMA data_version").fetchone()[0])

    def measurements(self) -> dict[int, str]:
        """Per lesson: the latest figure a passed check measured (bytes sent per
        device) in a passed exercise of the student's own attempts, for the
        completion screen. Read from the figures recorded with each result (typed
        evidence), never from messages; results recorded before schema 3 have none."""
        if not self._has("figures"):  # an older file opened read-only
            return {}
        rows = self.db.execute(
            """
            SELECT r.lesson, r.exercise, f.measured FROM figures f
            JOIN results r ON r.id = f.result_id JOIN attempts a ON a.id = r.attempt_id
            WHERE a.counted AND f.passed AND r.status = :passed
            ORDER BY r.id, f.rowid
            """,
            {"passed": str(Status.PASSED)},
        ).fetchall()
        return {
            lesson: f"{exercise}: {measured:,} bytes per device sent"
            for lesson, exercise, measured in rows
        }

    def attempts(self) -> list[tuple]:
        return self.db.execute(
            "SELECT id, started, finished, source, counted, command, state FROM attempts ORDER BY id"
        ).fetchall()

    def versions(self, attempt: int) -> dict[str, str] | None:
        """What graded ``attempt`` (None for attempts recorded before versions were)."""
        row = self.db.execute("SELECT versions FROM attempts WHERE id = ?", (attempt,)).fetchone()
        return json.loads(row[0]) if row and row[0] else None


def disk_full(path: Path) -> str:
    return (
        f"The disk that holds {path} is full: nothing was recorded, and what the file "
        "held before is intact. Free some space (or point --db / COURSE_DB at a file on "
        "another disk) and run the command again."
    )


def _full(exc: sqlite3.Error, path: Path | None = None) -> bool:
    """SQLite's "database or disk is full" (SQLITE_FULL), or an I/O error (SQLITE_IOERR:
    no room for the WAL index) on a disk with no space left."""
    code = getattr(exc, "sqlite_errorcode", None)
    if code == 13:
        return True
    if code is None or code & 0xFF != 10 or path is None:
        return False
    try:
        st = os.statvfs(next(p for p in (path.parent, *path.parents) if p.exists()))
    except (OSError, StopIteration):
        return False
    return st.f_bavail * st.f_frsize < 1 << 20


def _connect_read_only(path: Path) -> sqlite3.Connection:
    """Open to read. A WAL file needs its shared-memory index, which SQLite cannot make
    in a read-only folder; there, a file whose log is empty (every writer closed) is
    opened as immutable, which needs no index."""
    uri = path.resolve().as_uri()
    db = sqlite3.connect(f"{uri}?mode=ro", uri=True, timeout=10.0, isolation_level=None)
    try:
        db.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchall()
        return db
    except sqlite3.DatabaseError as exc:  # reported by the caller's first statement, unless…
        wal = path.with_name(path.name + "-wal")
        if (
            not isinstance(exc, sqlite3.OperationalError)  # damaged: not a database
            or os.access(path.parent, os.W_OK)
            or (wal.exists() and wal.stat().st_size > 0)
        ):
            return db
        db.close()
        return sqlite3.connect(f"{uri}?immutable=1", uri=True, isolation_level=None)


class _Transaction:
    def __init__(self, db: sqlite3.Connection, path: Path | None = None):
        self.db = db
        self.path = path

    def __enter__(self) -> sqlite3.Connection:
        try:
            self.db.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            if self.path is not None and _full(exc, self.path):
                raise ProgressError(disk_full(self.path)) from None
            raise
        return self.db

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            try:
                self.db.execute("COMMIT")
                return
            except sqlite3.OperationalError as failed:
                exc = failed
        if self.db.in_transaction:
            self.db.execute("ROLLBACK")
        if isinstance(exc, sqlite3.OperationalError) and self.path and _full(exc, self.path):
            raise ProgressError(disk_full(self.path)) from None
        if exc_type is None:
            raise exc
