"""What a load keeps, out of the garbage collector's full passes while it runs.

A load holds every trace it measured until its end. Python's collector walks every
object it tracks at each full pass, and the traces of a 12 s level at 256 streams are
hundreds of thousands of objects: passes of 50–80 ms, more frequent as the run grows,
each holding the interpreter lock. During one the kernel-stamp reader cannot read, so
tokens that arrive meanwhile merge into one read and lose their own stamps (most of the
merged stamps of such a level fell inside those passes), and the event loop cannot run.

The kept records form no reference cycles, and the passes during a load find next to
nothing (0 objects in most). So while the load runs, what has lived a while is moved
out of the collector's sight every :data:`FREEZE_EVERY_S` (``gc.freeze``); objects that
die are still freed as they die, by their reference counts. When the load ends, all of
it is handed back (``gc.unfreeze``), so a cycle among them is collected as before. A
process that froze objects itself (a pre-forking server) is left as it is.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
from collections.abc import AsyncIterator

__all__ = ["FREEZE_EVERY_S", "kept_out_of_collection"]

FREEZE_EVERY_S = 0.25
"""How often what has lived a while is moved out of the collector's sight."""


@contextlib.asynccontextmanager
async def kept_out_of_collection(every_s: float = FREEZE_EVERY_S) -> AsyncIterator[None]:
    """While the block runs, freeze what the collector tracks every ``every_s``; unfreeze
    it all at the end. Does nothing where the collector is off or something is frozen."""
    if not gc.isenabled() or gc.get_freeze_count():
        yield
        return

    async def freeze() -> None:
        while True:
            await asyncio.sleep(every_s)
            gc.freeze()

    task = asyncio.create_task(freeze())
    try:
        yield
    finally:
        task.cancel()  # asleep: it never freezes again
        gc.unfreeze()
