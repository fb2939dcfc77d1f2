"""Running ``nogil`` kernels on worker threads, one chunk of queries after another (`pipelined`).

The readers of Python dicts and ranx objects (`tieaware.readers.dicts`, `tieaware.readers.ranx`)
prepare each chunk on the calling thread, holding the GIL (C-level calls on dicts; kernels that
copy ranx's typed dicts, which other threads may change), while worker threads group the chunks
before with kernels compiled with ``nogil=True``. No numba threading layer is involved (its
``workqueue`` layer aborts the process when two threads enter it at once). Each chunk writes its
own part of the outputs, in query order, so the result does not depend on the number of threads.

The number of threads is that of the CPUs this process may run on, at most
``NUMBA_NUM_THREADS`` (set that environment variable to 1 to stay on one core),
the same cores ranx's parallel kernels use; ``evaluate(..., threads=N)`` sets it for
one call (`limited`), as in ranx (0: all).
"""
from __future__ import annotations

import os
import threading
from collections import deque
from collections.abc import Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from contextvars import ContextVar

_LIMIT: ContextVar[int] = ContextVar("tieaware_threads", default=0)


@contextmanager
def limited(threads: int) -> Iterator[None]:
    """Use at most `threads` threads (0: `n_threads`' default) inside this block, in this thread."""
    token = _LIMIT.set(int(threads))
    try:
        yield
    finally:
        _LIMIT.reset(token)


def n_threads() -> int:
    """CPUs this process may use, at most ``NUMBA_NUM_THREADS``, or the `limited` number."""
    available = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    limit = _LIMIT.get() or int(os.environ.get("NUMBA_NUM_THREADS") or 0) or int(available or 1)
    return max(1, min(int(available or 1), limit))


def submit_started(pool: ThreadPoolExecutor, kernel, args: tuple) -> Future:
    """``pool.submit(kernel, *args)``, returning once a worker has started the call (or the future is
    done: cancelled, say). A worker needs the GIL to start a kernel (to pass it its arguments);
    while the calling thread holds the GIL in long C calls (``str.join``, ``struct.pack_into``) the
    worker waits for it up to the interpreter's switch interval (``sys.getswitchinterval``), often
    longer than a chunk's kernel takes."""
    started = threading.Event()

    def call():
        started.set()
        return kernel(*args)

    future = pool.submit(call)
    while not started.wait(0.05) and not future.done():
        pass
    return future


def pipelined(kernel, calls: Iterable[tuple], workers: int) -> Iterator:
    """``kernel(*args)`` for each ``args`` of `calls`, yielded in order, with up to `workers` calls
    running on worker threads while this thread prepares the next arguments (`calls` is consumed here,
    lazily: a reader fills the next chunk holding the GIL while the kernels, which release it, group
    the chunks before). 0 workers: every call on this thread.

    One handover rule: the arguments of call i + `workers` are prepared while calls i .. i + `workers`
    - 1 run, and call i's result is yielded (and handled by the caller) before call i + `workers` is
    started, so a caller may give call i + `workers` the scratch of call i, and memory holds at most
    `workers` + 1 chunks. The kernel is made ready for the first arguments on this thread
    (`tieaware.kernels.backend.Kernel.prepare`)."""
    if workers <= 0:
        for args in calls:
            yield kernel(*args)
        return
    with ThreadPoolExecutor(max_workers=workers) as pool:
        pending: deque[Future] = deque()
        for i, args in enumerate(calls):
            if i == 0:
                kernel.prepare(*args)
            if len(pending) == workers:
                yield pending.popleft().result()
            pending.append(submit_started(pool, kernel, args))
        while pending:
            yield pending.popleft().result()
