"""Progress on stderr for long reads and writes: a redrawn bar on a terminal, plain lines elsewhere.

``progress_for(setting, total, label)`` turns a ``--progress`` setting into a callable fed byte counts:
``"never"`` (or None/False) shows nothing; ``"auto"`` shows a bar only on a terminal and only
for at least :data:`THRESHOLD` bytes; ``"always"`` (or True) shows a bar on a terminal and, when
stderr is a file or a pipe (CI logs), a line at every tenth of the work. A callable is used as is.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import TextIO

from ..errors import OptionError

THRESHOLD = 64 << 20
SETTINGS = ("auto", "always", "never")
ProgressSetting = Callable[[int], None] | bool | str | None
"""What a caller passes as ``progress``: a callable fed the work done, a setting of ``SETTINGS``,
``True`` (``"always"``), ``False`` or ``None`` (``"never"``)."""


def human_size(n: float) -> str:
    """``1536`` → ``1.5 KiB``; bytes stay exact."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{int(n)} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    raise AssertionError


class Progress:
    """Counts work (bytes, unless ``show`` says otherwise) and shows nothing; the base of the
    visible kinds."""

    def __init__(self, total: int, stream: TextIO | None = None, label: str = "writing", show: Callable[[int], str] = human_size) -> None:
        self.total = max(total, 1)
        self.done = 0
        self.stream = stream if stream is not None else sys.stderr
        self.label = label
        self.show = show

    def __call__(self, n: int) -> None:
        self.done += n
        self.update()

    def update(self) -> None:
        """Show the new state (nothing here)."""

    def finish(self) -> None:
        """Close the display (nothing here)."""


class ProgressBar(Progress):
    """A one-line bar redrawn at most ten times a second (for a terminal)."""

    def __init__(self, total: int, stream: TextIO | None = None, label: str = "writing", show: Callable[[int], str] = human_size) -> None:
        super().__init__(total, stream, label, show)
        self._last = 0.0
        self._drawn = -1
        self._width = 0  # of the line drawn last: a shorter one is padded to cover it

    def update(self) -> None:
        now = time.monotonic()
        if now - self._last >= 0.1 or self.done >= self.total:
            self._last = now
            self._draw()

    def _draw(self) -> None:
        if self.done == self._drawn:
            return
        self._drawn = self.done
        frac = min(self.done / self.total, 1.0)
        width = 30
        bar = "#" * int(frac * width) + "-" * (width - int(frac * width))
        line = f"{self.label} [{bar}] {frac * 100:5.1f}% {self.show(self.done)}/{self.show(self.total)}"
        self.stream.write("\r" + line.ljust(self._width))
        self._width = len(line)
        self.stream.flush()

    def finish(self) -> None:
        self._draw()
        self.stream.write("\n")
        self.stream.flush()


class ProgressLines(Progress):
    """A line at every tenth of the work (for logs, where a redrawn bar would be noise)."""

    def __init__(self, total: int, stream: TextIO | None = None, label: str = "writing", show: Callable[[int], str] = human_size) -> None:
        super().__init__(total, stream, label, show)
        self._shown = 0

    def update(self) -> None:
        tenth = min(self.done * 10 // self.total, 10)
        if tenth > self._shown and tenth < 10:
            self._shown = tenth
            print(f"{self.label}: {self.show(self.done)}/{self.show(self.total)} ({tenth * 10}%)", file=self.stream, flush=True)

    def finish(self) -> None:
        print(f"{self.label}: done ({self.show(self.done)})", file=self.stream, flush=True)


def progress_for(
    setting: ProgressSetting, total: int, label: str = "writing", stream: TextIO | None = None, *,
    show: Callable[[int], str] = human_size, threshold: int = THRESHOLD,
) -> Callable[[int], None]:  # fmt: skip
    """The progress display a setting asks for (see the module docstring); always callable.
    ``show`` formats amounts (bytes by default); ``threshold`` is the least work ``auto`` shows."""
    if callable(setting) and not isinstance(setting, Progress):
        return setting
    stream = stream if stream is not None else sys.stderr
    terminal = hasattr(stream, "isatty") and stream.isatty()
    if setting in (None, False, "never"):
        return Progress(total, stream, label, show)
    if setting in (True, "always"):
        return (ProgressBar if terminal else ProgressLines)(total, stream, label, show)
    if setting == "auto":
        return (ProgressBar if terminal and total >= threshold else Progress)(total, stream, label, show)
    raise OptionError(f"progress is one of {', '.join(SETTINGS)}, True, False, None or a callable; got {setting!r}")


def finish(progress: Callable[[int], None]) -> None:
    """End a display made by :func:`progress_for` (a plain callable has nothing to end)."""
    if isinstance(progress, Progress):
        progress.finish()
