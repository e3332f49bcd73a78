"""What a SOLAR process does around its heavy imports and at its end, to cut fixed costs that every command
of a torch translation pays (benchmarks/pipeline.py measures them).

- `bulk_imports()`: torch, its dynamo (which torch.export loads) and the frontends create about a million
  objects. The cyclic garbage collector walks them again and again while they are made (a fifth of the
  CPU time of `import torch`), and every later full collection walks them again, though a module's objects
  are never garbage. Under `bulk_imports` the collector is off; after it, what exists is moved to the
  permanent generation (`gc.freeze`), so later collections only walk what the work creates.
- `bulk_objects()`: the same for a command's parsed input (a ResNet-101's module is 140,000 objects, which
  live through the whole pipeline): a tenth of `solar-opt --lift-einsum --fuse --sol` on it went to
  collections, during the parse and after it, that found nothing to free (solar.ir.opt_driver.process).
- `fewer_collections()`: the work on that input collects its young objects less often.
- `exit_now(code)`: the interpreter's teardown frees every one of those objects one by one (about a second
  of CPU after torch is imported). A command that has written and flushed its outputs exits at once
  instead. Nothing of SOLAR's needs an exit handler: outputs are written atomically and closed before.
"""

from __future__ import annotations

import contextlib
import gc
import os
import sys
from collections.abc import Iterator

# Whether `bulk_objects` froze the heap. `gc.get_freeze_count()` would say as much, but it walks the whole
# permanent generation (millions of objects once torch is imported): asked once per input, it made the
# in-process fuzzer's 5,000 parses a hundred times slower in a suite that had imported torch.
_frozen = False


@contextlib.contextmanager
def bulk_objects(freeze: bool = True) -> Iterator[None]:
    """Runs the block (imports, a parse) without the cyclic collector, then freezes what exists (see the
    module), unless told not to."""
    global _frozen
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if freeze:
            gc.freeze()
            _frozen = True
        if enabled:
            gc.enable()


def heap_frozen() -> bool:
    """Whether `bulk_objects` froze objects that `unfreeze_heap` has not yet given back: O(1)."""
    return _frozen


def unfreeze_heap() -> None:
    """Gives every frozen object back to the collector's oldest generation."""
    global _frozen
    gc.unfreeze()
    _frozen = False


bulk_imports = bulk_objects  # torch and the frontends


@contextlib.contextmanager
def fewer_collections(young: int = 20_000) -> Iterator[None]:
    """Runs the block with the collector's youngest generation collected every `young` new objects instead
    of every 700: a pipeline over a network makes hundreds of thousands of objects that live to its end
    (models, einsums, counts), and the collections that walk them find little to free (3 % of
    `solar-opt --lift-einsum --fuse --sol` on a DenseNet-201). Garbage still goes, a little later."""
    before = gc.get_threshold()
    gc.set_threshold(max(young, before[0]), *before[1:])
    try:
        yield
    finally:
        gc.set_threshold(*before)


def exit_now(code: int) -> None:
    """Flushes stdout and stderr (and logging's handlers, when logging is loaded), then ends the process with
    `code` without the interpreter's teardown. Under a profiler or a tracer (`python -m cProfile`, coverage),
    which write their results at exit, it exits the ordinary way."""
    if sys.getprofile() is not None or sys.gettrace() is not None:
        sys.exit(code)
    logging = sys.modules.get("logging")
    if logging is not None:
        with contextlib.suppress(Exception):
            logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BrokenPipeError:
            with contextlib.suppress(OSError):  # a reader that went away (`| head`): nothing left to flush
                os.dup2(os.open(os.devnull, os.O_WRONLY), stream.fileno())
        except (OSError, ValueError, AttributeError):
            pass
    os._exit(code)
