"""``burnpack view``: a model, a checkpoint directory or a change as one self-contained HTML page.

``build_page`` gathers the report (``burnpack.view.report``) and renders it
(``burnpack.view.page``); ``burnpack.view.stats`` streams exact statistics over a tensor.
"""

from __future__ import annotations

from pathlib import Path

from ..core.progress import ProgressSetting
from ..core.reader import load
from ..core.source import FileSource, Folder
from ..interop.inputs import open_input
from .page import render
from .report import checkpoint_report, diff_report, is_checkpoint_directory, pack_report, page_data

__all__ = ["build_page"]


def _title(source: str) -> str:
    return Path(source.rstrip("/")).name or source


def build_page(first: str, second: str | None = None, *, stats: bool = True, progress: ProgressSetting = None) -> str:
    """The self-contained HTML page ``burnpack view`` writes.

    Args:
        first: One input: a pack, any format ``convert`` reads, a URL, or a Burn checkpoint directory.
        second: A second input: the page is then the diff of the two (tensors of the second).
        stats: Compute each tensor's statistics; False builds the page from the metadata alone (no
            tensor bytes read for one input).
        progress: Shows each pass over tensor bytes (comparing, the norms of unchanged tensors,
            the epochs' changes, the statistics): a callable fed the bytes read, or a setting of
            ``burnpack.core.progress.progress_for``.

    Returns:
        The page's HTML.

    Raises:
        BurnpackError: An input cannot be read (its format's error).
        OSError: An input does not exist or cannot be opened.
    """
    if second is None and is_checkpoint_directory(first):
        report, newest = checkpoint_report(first, stats=stats, progress=progress)
        pack = None
        if newest is not None:  # read, as every file of the directory, only from inside it
            with load(FileSource(newest, folder=Folder(first))) as model:
                pack = pack_report(model, str(newest), stats=stats, progress=progress)
        return render(page_data(_title(first), checkpoint=report, pack=pack))
    if second is None:
        with open_input(first) as a:
            data = page_data(_title(first), pack=pack_report(a, first, stats=stats, progress=progress))
    else:
        with open_input(first) as a, open_input(second) as b:
            diff = diff_report(a, b, first, second, progress=progress)
            pack = pack_report(b, second, stats=stats, progress=progress)
            data = page_data(f"{_title(first)} vs {_title(second)}", diff=diff, pack=pack)
    return render(data)


def write_page(html: str, target: Path) -> None:
    """Write ``html`` to ``target`` atomically (a reader never sees half a page)."""
    from ..core.atomic import atomic_file

    with atomic_file(target) as stream:
        stream.write(html.encode("utf-8"))
