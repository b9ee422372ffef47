"""The envelope's statuses on the host side, defined once here: the probes run on hosts without the collection, so they
cannot import the controller's definition (plugins/module_utils/envelope_statuses.py); a test pins this copy to it."""
from __future__ import annotations

OK = "ok"
PARTIAL = "partial"          # something was measured and something failed (data.errors says what)
UNAVAILABLE = "unavailable"  # what the probe measures is absent on this host
ERROR = "error"
TIMEOUT = "timeout"
STATUSES = (OK, PARTIAL, UNAVAILABLE, ERROR, TIMEOUT)
