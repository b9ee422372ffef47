"""A stored result that the report cannot read back: the one definition of that state, which the dossier shows and the
judge judges. Pure Python.

The store's reader (store/stored_run.py) gives such a result (truncated or empty JSON, over the size bound, a FIFO, a
device, a link, a failed write) status error and a reason that says what is wrong with the file. The judge is handed
a stand-in envelope for it (stand_in_envelope) and makes it that probe's probe_status check, an error with that reason
(judge/host_judgement.py envelope_checks): never an absent probe, and never folded under another cause, since the file, not the
GPU, is what went wrong.
"""
from __future__ import annotations

import errno
from collections.abc import Mapping
from typing import Any, Dict

UNREADABLE_RESULT = "result file unreadable"
# The value of the probe_status check of a result that could not be read (an envelope's own statuses are others).
UNREADABLE_VALUE = "unreadable"
# The key that marks a stand-in envelope (a probe's own envelope never has it: schemas/envelope.schema.json allows no such field).
STAND_IN_KEY = "stored_result"
_AGAIN = "probe the host again in a new run to replace it"


def unreadable_reason(shown: str, why: Any) -> str:
    """The reason of the result file shown (its host's directory and name) that could not be read, from why it could
    not: an OSError (the store's own refusals name the file; the system's get its name and errno), a ValueError (the
    JSON is broken), or words that follow the file's name."""
    if isinstance(why, OSError) and why.strerror:
        code = errno.errorcode.get(why.errno or 0)
        text = why.strerror if shown in why.strerror else "%s: %s%s" % (shown, why.strerror, " (%s)" % code if code else "")
    else:
        text = "%s: %s" % (shown, why)
    return "%s: %s; %s" % (UNREADABLE_RESULT, text, _AGAIN)


def stand_in_envelope(probe: str, reason: str) -> Dict[str, Any]:
    """What the judge is handed for a probe whose stored result could not be read: an error with the reason."""
    return {"probe": probe, "status": "error", "reason": reason, "data": {}, STAND_IN_KEY: UNREADABLE_VALUE}


def is_stand_in(envelope: Any) -> bool:
    return isinstance(envelope, Mapping) and envelope.get(STAND_IN_KEY) == UNREADABLE_VALUE
