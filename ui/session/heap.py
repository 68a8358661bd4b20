"""Keep Python's cycle collector from pausing every session at once.

A full (generation 2) collection walks every tracked object in the process. After the app has imported
Gradio, pandas and the agent framework that is ~200k objects, and a collection took 100-250 ms on this
machine (more objects, such as a local model's, make it longer). Because all sessions share the process
and its GIL, one such pause delays every stream at the same moment: it was the slow 5% of
`bench/ui_load.py` with 16 sessions. Objects that live as long as the process (modules, the app, shared
model weights) are moved out of the collector's reach with ``gc.freeze()``; reference counting still frees
them normally, only cycles among them are never collected (they live for the whole process anyway).
"""

from __future__ import annotations

import gc


def freeze_long_lived_objects() -> int:
    """Collect what is garbage now, then exempt everything still alive from later cycle collections.

    Call it when the objects alive are the process's long-lived ones (after start-up, after loading a model
    shared by all sessions). Returns how many objects are now frozen.
    """
    gc.collect()
    gc.freeze()
    return gc.get_freeze_count()
