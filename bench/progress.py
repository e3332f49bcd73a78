"""The batch progress bar (rich, on stderr): problems done of all, the one running, violations so far."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn


class BatchProgress:
    def __init__(self, console: Console | None = None) -> None:
        self.console = console or Console(stderr=True)
        self.progress = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                 TimeElapsedColumn(), TimeRemainingColumn(), TextColumn("{task.fields[status]}"),
                                 console=self.console)
        self.task: Any = None
        self.violations = 0
        self.failed = 0

    def start(self, total: int, completed: int) -> BatchProgress:
        self.progress.start()
        self.task = self.progress.add_task("solar-bench", total=total, completed=completed, status="")
        return self

    def started(self, task: Any) -> None:
        self.progress.update(self.task, description=f"solar-bench {task.key}")

    def advance(self, rec: dict[str, Any]) -> None:
        self.violations += len(rec.get("violations", []))
        self.failed += rec.get("status") != "ok"
        self.progress.update(self.task, advance=1, status=f"violations {self.violations}, failed {self.failed}")

    def stop(self) -> None:
        self.progress.update(self.task, description="solar-bench")
        self.progress.stop()
