"""Progress of long or paid work, one machinery for every command: :class:`Meter`.

A meter counts settled items (judged pairs, LLM windows, encoded documents, questions) toward a
total and shows them in one of three styles:

* ``"bar"``: a tqdm bar on stderr (in a notebook, tqdm's widget) with the total, the rate, the
  ETA and, for LLM work, what the *stats* callable says (``40 sent, 88 cached, 0 failed,
  $0.0123``), redrawn as each item settles;
* ``"log"``: no redraws; a line through the logger ``nuggetbench.progress`` at INFO level every
  ``interval`` seconds while the work runs (from a daemon thread, so a line comes even while no
  item settles), and one when it ends (when it wrote one before, or counts LLM work: a step
  shorter than the interval is not news): ``judging: 40/120 pairs (33%), 3.2 pairs/s, 00:12
  elapsed, ETA 00:25; 40 sent, 0 cached, 0 failed, $0.0123``. For a log file or a pipe;
* ``"off"``: nothing is shown (the counts are still kept).

Library code takes ``show_progress: bool`` (a meter of the configured style when true) or a
``progress`` callback (``progress(n)``: *n* more items settled), and never configures logging
handlers or the style: :func:`configure` is the command line's (``nuggetbench.cli``), which picks
``bar`` on a terminal, ``log`` otherwise and ``off`` under ``--no-progress``, and gives the
``nuggetbench.progress`` logger a handler (credentials masked) for the ``log`` style. The default
style of a library caller is ``bar``.

A meter made without a total learns it from the work: :func:`expect` (``expect(progress, n)``:
*n* more items will settle) on a callback that is a meter adds to its total, and does nothing on
a plain function. The work that plans the requests calls it (the judge knows its holes, the nugget
creation its windows), so every bar has a total and an ETA.
"""

from __future__ import annotations

import math
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:  # pragma: no cover
    import logging

__all__ = ["Meter", "configure", "style", "interval", "expect", "meter", "STYLES"]

T = TypeVar("T")

#: The styles of :func:`configure`.
STYLES = ("bar", "log", "off")
#: The logger of the ``log`` style's lines.
LOGGER = "nuggetbench.progress"
_config = {"style": "bar", "interval": 10.0}


def configure(style: str, interval: float = 10.0) -> None:
    """Set the style of the meters made with ``show=True`` and no style of their own, and the
    seconds between two lines of the ``log`` style. The command line's call (once per command);
    library code never calls it.

    Raises:
        ValueError: an unknown style or an interval that is not a positive number.
    """
    if style not in STYLES:
        raise ValueError(f"progress style must be one of {', '.join(STYLES)}, got {style!r}")
    if not (isinstance(interval, (int, float)) and math.isfinite(interval) and interval > 0):
        raise ValueError(f"progress interval must be a number of seconds > 0, got {interval!r}")
    _config.update(style=style, interval=float(interval))


def style() -> str:
    """The configured style (``bar`` unless :func:`configure` said otherwise)."""
    return str(_config["style"])


def interval() -> float:
    """Seconds between two lines of the ``log`` style."""
    return float(_config["interval"])


def expect(progress: Any, n: int) -> None:
    """Tell *progress* that *n* more items will settle: a :class:`Meter` made without a total adds
    them to its total; a plain callback (or ``None``) ignores it."""
    grow = getattr(progress, "expect", None)
    if callable(grow):
        grow(n)


def _clock(seconds: float) -> str:
    seconds = int(max(0, seconds))
    h, rest = divmod(seconds, 3600)
    return f"{h}:{rest // 60:02d}:{rest % 60:02d}" if h else f"{rest // 60:02d}:{rest % 60:02d}"


class Meter:
    """Count settled items toward a total and show them (see the module docstring).

    Args:
        desc: what is counted, shown first (``judging``).
        total: items expected; ``None``: learnt from :meth:`expect` (the work's plan).
        unit: the items' name (``pairs``; tqdm's ``unit``).
        show: whether to show anything (``False``: the style ``off``).
        stats: a callable returning a short text shown after the counts (LLM requests sent,
            cached and failed, and the running cost: :meth:`~nuggetbench.llm.cache.UsageLedger.brief`).
        style: ``bar``, ``log`` or ``off``; default: :func:`style`.
        every: seconds between two ``log`` lines; default: :func:`interval`.
        logger: the logger of the ``log`` lines (default ``nuggetbench.progress``).

    Use it as a context manager, as a callback (``meter(n)`` is ``meter.update(n)``) or over an
    iterable (:meth:`iterate`). Thread-safe.
    """

    def __init__(
        self,
        desc: str,
        total: int | None = None,
        unit: str = "it",
        *,
        show: bool = True,
        stats: Callable[[], str] | None = None,
        style: str | None = None,
        every: float | None = None,
        logger: logging.Logger | None = None,
    ):
        self.desc = desc
        self.unit = unit.strip() or "it"
        self.total = total
        self.n = 0
        self.stats = stats
        self.style = (style or str(_config["style"])) if show else "off"
        if self.style not in STYLES:
            raise ValueError(f"progress style must be one of {', '.join(STYLES)}")
        self.every = float(every if every is not None else _config["interval"])
        self._logger = logger
        self._fixed = total is not None  # a total given here is not grown by expect()
        self._lock = threading.Lock()
        self._started = time.monotonic()
        self._closed = False
        self._bar: Any = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._ticks = 0
        if self.style == "log":
            self._thread = threading.Thread(target=self._ticker, name="progress", daemon=True)
            self._thread.start()
        elif total is not None:
            self._drawn()  # a known total: the bar shows from the start

    def _drawn(self) -> Any:
        """The tqdm bar of the ``bar`` style, drawn from creation when the total is given, else
        from the first count or :meth:`expect` on (a bar drawn before the work has planned its
        items would show no total); ``None`` in the other styles. The caller holds the lock."""
        if self._bar is None and self.style == "bar" and not self._closed:
            from tqdm.auto import tqdm  # lazy: keeps `nuggetbench --help` light

            self._bar = tqdm(
                total=self.total,
                desc=self.desc,
                initial=self.n,
                unit=f" {self.unit}",  # "3.20 pairs/s"
                file=sys.stderr,
                smoothing=0.1,
                dynamic_ncols=True,
            )
        return self._bar

    # --- counting ---------------------------------------------------------------------
    def update(self, n: int = 1) -> None:
        """*n* more items settled."""
        with self._lock:
            self.n += n
            bar = self._drawn()
            if bar is not None:
                self._postfix()
                bar.update(n)

    __call__ = update

    def expect(self, n: int) -> None:
        """*n* more items will settle (ignored when the total was given at creation)."""
        with self._lock:
            if self._fixed:
                return
            self.total = (self.total or 0) + int(n)
            if self._bar is not None:
                self._bar.total = self.total
                self._bar.refresh()
            else:
                self._drawn()

    def set_description(self, desc: str) -> None:
        """Rename what is counted (a stage's current step)."""
        with self._lock:
            self.desc = desc
            if self._bar is not None:
                self._bar.set_description(desc)

    def iterate(self, items: Iterable[T]) -> Iterator[T]:
        """Yield *items*, counting each one as it is handed out."""
        for item in items:
            yield item
            self.update(1)

    # --- showing ----------------------------------------------------------------------
    def _postfix(self) -> None:
        """The stats after the bar's counts, as of this count (caller holds the lock; tqdm
        redraws at most every 0.1 s)."""
        if self.stats is not None:
            self._bar.set_postfix_str(self.stats(), refresh=False)

    def line(self, *, final: bool = False) -> str:
        """The ``log`` style's line: counts, share, rate, elapsed time, ETA, then the stats."""
        with self._lock:
            n, total = self.n, self.total
        elapsed = time.monotonic() - self._started
        if total is None and not n and not final:  # the work has not planned its items yet
            return f"{self.desc}: starting, {_clock(elapsed)} elapsed"
        counted = f"{n}/{total}" if total else f"{n}"
        share = f" ({n / total:.0%})" if total else ""
        rate = n / elapsed if elapsed > 0 else 0.0
        speed = (
            f"{rate:.3g} {self.unit}/s" if rate >= 1 or not n else f"{1 / rate:.3g} s/{self.unit}"
        )
        parts = [f"{self.desc}: {counted} {self.unit}{share}", speed, f"{_clock(elapsed)} elapsed"]
        if final:
            parts[0] = f"{self.desc}: done, {counted} {self.unit}"
        elif total and n and total > n:
            parts.append(f"ETA {_clock((total - n) / rate)}")
        text = ", ".join(parts)
        if self.stats is not None:
            text += f"; {self.stats()}"
        return text

    def _log(self, text: str) -> None:
        if self._logger is None:
            import logging  # lazy: the command line imports this module for every command

            self._logger = logging.getLogger(LOGGER)
        self._logger.info("%s", text)

    def _ticker(self) -> None:
        while not self._stop.wait(self.every):
            self._ticks += 1
            self._log(self.line())

    def close(self) -> None:
        """Stop showing: the bar is left at its final state, the ``log`` style writes its last
        line (see the module docstring). Closing twice does nothing."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            if self._bar is not None:
                if self.stats is not None:
                    self._bar.set_postfix_str(self.stats(), refresh=False)
                self._bar.close()
        if self._thread is not None:
            self._stop.set()
            self._thread.join()
            if self._ticks or self.stats is not None:  # a short step's end is no news in a log
                self._log(self.line(final=True))

    def __enter__(self) -> Meter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<Meter {self.desc!r} {self.n}/{self.total} {self.unit} ({self.style})>"


def meter(desc: str, total: int | None = None, unit: str = "it", *, show: bool = True, **kw: Any):
    """A :class:`Meter` (the same arguments): ``with meter("judging", unit="pairs") as m:``."""
    return Meter(desc, total, unit, show=show, **kw)
