"""A writer killed halfway through a batch: ``python cut_writer.py ROOT STEPS OLD NEW``.

Moves the page ``OLD`` to ``NEW`` (one batch: put the new path, delete the old) on the test
bucket's prefix for ``ROOT``, and SIGKILLs itself after ``STEPS`` of the batch's objects changed.
"""

import os
import signal
import sys
from pathlib import Path

from hostcore import Change, Delete, Put

sys.path.insert(0, str(Path(__file__).parent))
from test_conformance import s3_storage

root, steps, old, new = Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
storage = s3_storage(root)
real_step = storage._step
done = 0


def step_then_die(*args, **kwargs):
    global done
    result = real_step(*args, **kwargs)
    done += 1
    if done == steps:
        os.kill(os.getpid(), signal.SIGKILL)
    return result


storage._step = step_then_die
data, digest = storage.read_with_hash(old)
storage.apply([Put(new, data, expect=None), Delete(old, expect=digest)], Change("cut", "move_page: cut halfway", moves=((old, new),)))
